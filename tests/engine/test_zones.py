"""Where a person's zone and locale are read from (bot.engine.zones): their platform once a day,
the store in between, this process for a few minutes; a platform that cannot answer now is
asked again next time, and what the process keeps is bounded."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from bot.channel import Address, ChannelError, Profile
from bot.channels.recording import RecordingChannel
from bot.engine import zones as z
from bot.engine.zones import PROCESS_SECONDS, Zones
from bot.settings.clarify import HoursSettings
from bot.store.keys import PROFILE_TTL_SECONDS, PROFILES, profile_key
from bot.store.memory import MemoryStore

AHMED = Address(platform="slack", person_id="p-ahmed", user_id="U0AHMED")
PRIYA = Address(platform="slack", person_id="p-priya", user_id="U0PRIYA")


@dataclass
class Platform(RecordingChannel):
    """A platform that tells each user's zone and locale, and counts what it was asked."""

    asked: list[str] = field(default_factory=list)
    down: bool = False

    async def profile(self, address: Address) -> Profile | None:
        self.asked.append(address.user_id)
        if self.down:
            raise ChannelError("ratelimited", certain=True, retryable=True)
        return Profile(time_zone="Europe/Berlin", locale="de-DE")


class CountingStore(MemoryStore):
    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    async def kv_get(self, namespace: str, key: str) -> str | None:
        self.reads += 1
        return await super().kv_get(namespace, key)


class Monotonic:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def zones_of(store: MemoryStore, platform: Platform, monotonic: Monotonic) -> Zones:
    return Zones(store, {"slack": platform}, HoursSettings(), monotonic=monotonic)


async def test_a_profile_is_asked_of_the_platform_once_and_read_from_the_store_once_a_process(
) -> None:
    store, platform, tick = CountingStore(), Platform(), Monotonic()
    zones = zones_of(store, platform, tick)
    first = await zones.profile(AHMED)
    assert (first.time_zone, first.locale) == ("Europe/Berlin", "de-DE")
    # the hours check, the card's locale and the person's next cards: no store read, no ask
    for _ in range(3):
        assert await zones.profile(AHMED) == first
    assert (platform.asked, store.reads) == (["U0AHMED"], 1)
    # kept in the store under a keyed hash of the chat identity, never the id itself
    assert await store.kv_get(PROFILES, profile_key("slack", "U0AHMED")) is not None
    assert "U0AHMED" not in profile_key("slack", "U0AHMED")
    # a few minutes later this process reads the store again; the platform is not asked
    tick.now += PROCESS_SECONDS + 1
    assert await zones.profile(AHMED) == first
    assert (platform.asked, store.reads) == (["U0AHMED"], 3)
    # another process (a replica) reads the store, and does not ask the platform either
    other = zones_of(store, platform, Monotonic())
    assert await other.profile(AHMED) == first and platform.asked == ["U0AHMED"]
    assert PROFILE_TTL_SECONDS == 24 * 3600  # "kept for a day"


async def test_a_platform_that_cannot_answer_now_is_asked_again_next_time() -> None:
    store, platform, tick = CountingStore(), Platform(down=True), Monotonic()
    zones = zones_of(store, platform, tick)
    assert await zones.profile(AHMED) == Profile()  # the core's zone and locale then
    assert await store.kv_get(PROFILES, profile_key("slack", "U0AHMED")) is None
    platform.down = False
    assert (await zones.profile(AHMED)).time_zone == "Europe/Berlin"
    assert platform.asked == ["U0AHMED", "U0AHMED"]


async def test_what_a_process_keeps_is_bounded_least_recently_used_first(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(z, "PROCESS_KEPT", 1)
    store, platform, tick = CountingStore(), Platform(), Monotonic()
    zones = zones_of(store, platform, tick)
    await zones.profile(AHMED)
    await zones.profile(PRIYA)  # Ahmed's goes from the process, not from the store
    reads = store.reads
    await zones.profile(PRIYA)
    assert store.reads == reads
    await zones.profile(AHMED)
    assert store.reads == reads + 1 and platform.asked == ["U0AHMED", "U0PRIYA"]
