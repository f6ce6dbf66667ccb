"""Where a person's zone and locale are read from (bot.engine.zones): their platform once a day,
the store in between, this process for a few minutes; a platform that cannot answer now is
asked again next time, and what the process keeps is bounded."""

from __future__ import annotations

from dataclasses import dataclass, field
from zoneinfo import ZoneInfo

import pytest

from bot.channel import Address, ChannelError, Profile
from bot.channels.recording import RecordingChannel
from bot.clock import zone_named
from bot.core.models import Person
from bot.engine import zones as z
from bot.engine.zones import PROCESS_SECONDS, Zones
from bot.settings.clarify import HoursSettings, TenantHours
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
    tick.now += z.PATIENCE_SECONDS  # (not at once: the card that asked waited for it once)
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


# ---------------------------------------------------------------- the one decision

KOLKATA, BERLIN = ZoneInfo("Asia/Kolkata"), ZoneInfo("Europe/Berlin")
NOT_ZONES = ["Mars/Olympus", "", "W. Europe Standard Time", "Pacific Standard Time",
             "europe/berlin", "Europe/", "../../etc/passwd", "/usr/share/zoneinfo/Europe/Berlin",
             "right/UTC", "posix/Europe/Berlin", "localtime", "Factory", "posixrules", " UTC"]


@pytest.mark.parametrize("name", NOT_ZONES)
def test_a_name_that_is_no_iana_zone_counts_as_absent_at_every_step(name: str) -> None:
    """A platform zone, a core zone or a tenant default that names no IANA zone is passed
    over: the next source decides (a Windows name, a path, a file of the database that is no
    place, a name written in the wrong case)."""
    assert zone_named(name) is None
    assert z.decide(name, "Asia/Kolkata", "Europe/Berlin") == KOLKATA
    assert z.decide(None, name, "Europe/Berlin") == BERLIN
    assert z.decide(name, name, name) == ZoneInfo("UTC")


DECISIONS = [
    # (platform, core, tenant default, the zone decided)
    ("Europe/Berlin", "America/New_York", "UTC", "Europe/Berlin"),  # the platform first
    ("Mars/Olympus", "Asia/Kolkata", "Europe/London", "Asia/Kolkata"),  # then the core's
    (None, "Asia/Kathmandu", "Europe/London", "Asia/Kathmandu"),
    (None, "UTC", "America/New_York", "America/New_York"),  # the core's default: none named
    (None, None, "Asia/Jerusalem", "Asia/Jerusalem"),  # then the tenant's default
    ("UTC", "Europe/Berlin", "America/New_York", "UTC"),  # a platform that says UTC means it
    ("Etc/GMT-14", None, "UTC", "Etc/GMT-14"),
    (None, None, "UTC", "UTC"),
]


@pytest.mark.parametrize(("platform", "core", "default", "decided"), DECISIONS)
def test_the_zone_is_the_platforms_then_the_cores_then_the_tenants(
        platform: str | None, core: str | None, default: str, decided: str) -> None:
    """One order for every source: the platform's, the core's (other than its default UTC),
    the tenant's default, UTC."""
    assert z.decide(platform, core, default) == ZoneInfo(decided)


def person(zone: str = "UTC") -> Person:
    return Person.model_validate({"personId": "p-ahmed", "tenantId": "acme",
                                  "displayName": "Ahmed", "timeZone": zone})


@dataclass
class Told(RecordingChannel):
    """A platform that tells one zone for everyone, or cannot be asked now (``down``)."""

    zone: str | None = None
    down: bool = False
    asked: int = 0

    async def profile(self, address: Address) -> Profile | None:
        self.asked += 1
        if self.down:
            raise ChannelError("ratelimited", certain=True, retryable=True)
        return Profile(time_zone=self.zone)


def tenant_zones(platform: Told, default: str = "Europe/London") -> Zones:
    return Zones(MemoryStore(), {"slack": platform},
                 HoursSettings(tenants=(TenantHours(tenant="acme", time_zone=default),)),
                 monotonic=Monotonic())


async def test_an_invalid_platform_zone_leaves_the_cores_zone_not_the_tenants() -> None:
    """Slack says ``Mars/Olympus`` and the core's record says Kolkata: Kolkata, not the
    tenant's London."""
    zones = tenant_zones(Told(zone="Mars/Olympus"))
    decided = await zones.zone("acme", person("Asia/Kolkata"), AHMED)
    assert (decided.zone, decided.told) == (KOLKATA, True)
    # without the core's zone, the tenant's default
    assert (await zones.zone("acme", person(), AHMED)).zone == ZoneInfo("Europe/London")


async def test_a_zone_unknown_now_is_the_cores_else_the_tenants_not_told() -> None:
    """The platform cannot say now: the core's zone holds (told), else the tenant's default,
    which is a guess (not told: a question is held a minute, not to it)."""
    platform = Told(zone="Europe/Berlin", down=True)
    zones = tenant_zones(platform)
    assert await zones.zone("acme", person("Asia/Kolkata"), AHMED) == z.PersonZone(KOLKATA)
    guess = await zones.zone("acme", person(), AHMED)
    assert (guess.zone, guess.told) == (ZoneInfo("Europe/London"), False)
    # asked once for the two: a card's zone and then its locale do not wait twice
    assert platform.asked == 1


async def test_a_lookup_that_failed_is_asked_again_once_the_patience_has_passed() -> None:
    """A platform that could not tell is not asked again for as long as a card waits for it,
    then asked again (and what it says then is the person's zone)."""
    platform = Told(zone="Europe/Berlin", down=True)
    zones = tenant_zones(platform)
    await zones.zone("acme", person(), AHMED)
    platform.down = False
    assert (await zones.zone("acme", person(), AHMED)).told is False
    zones.monotonic.now += z.PATIENCE_SECONDS  # type: ignore[attr-defined]
    assert (await zones.zone("acme", person(), AHMED)).zone == BERLIN
    assert platform.asked == 2
