"""Asking at the person's own hour (docs/delivery.md, "Working hours"), on the injected clock.

The reference core over HTTP, the engine as production wires it and a recording channel
(tests/engine/conftest.py). The clock starts on Tuesday 1 December 2026 at 01:00 UTC: 02:00 in
Berlin (Ahmed), 20:00 on Monday in New York (Priya), 02:00 in Madrid (Maria, the steward). Time
moves in 20-minute steps, the worker doing whatever is due after each.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pytest

from bot.channel import Address, Message, Profile
from bot.channels.recording import RecordingChannel, SentMessage
from bot.clock import ManualClock
from bot.core.models import DeliveryKind
from bot.engine import held, zones
from bot.engine.handler import JobOutcome
from bot.engine.notices import NOTICES_KIND
from bot.settings import ClarifySettings
from bot.store.base import DeliveryKey
from devcore.client import DevCoreClient
from tests.engine.conftest import Rig, clarify_settings
from tests.engine.kit import Restart, create

TUESDAY_1AM = datetime(2026, 12, 1, 1, 0, tzinfo=UTC)  # 02:00 Berlin, 20:00 (Mon) New York
BERLIN_8AM = datetime(2026, 12, 1, 7, 0, tzinfo=UTC)
NEW_YORK_8AM = datetime(2026, 12, 1, 13, 0, tzinfo=UTC)
STEP = timedelta(minutes=20)
QUESTION = DeliveryKind.QUESTION.value
# what Slack's users.info says of the acme people (the core's record agrees, where it has one)
PLATFORM_ZONES = {"U0AHMED": "Europe/Berlin", "U0PRIYA": "America/New_York",
                  "U0SARAH": "Europe/London", "U0MARIA": "Europe/Madrid"}
# a long hold lives on the heartbeat-lease extension (docs/delivery.md, "Working hours");
# test_working_hours_baseline.py shows a hold on a core without it
pytestmark = pytest.mark.full_contract


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(TUESDAY_1AM)


def hours_on(clarify: dict[str, object] | None = None, **overrides: object
             ) -> ClarifySettings:
    return clarify_settings(hours={"enabled": True, **overrides}, **(clarify or {}))


def hours_rig(make_rig: Callable[..., Rig], channel: RecordingChannel | None = None,
              **overrides: object) -> Rig:
    return make_rig(clarify=hours_on(**overrides), channel=channel or ProfiledChannel())


@dataclass
class ProfiledChannel(RecordingChannel):
    """A channel whose platform tells each user's zone (as Slack's users.info ``tz``)."""

    zones: dict[str, str] = field(default_factory=lambda: dict(PLATFORM_ZONES))
    asked: list[str] = field(default_factory=list)

    async def profile(self, address: Address) -> Profile | None:
        self.asked.append(address.user_id)
        return Profile(time_zone=self.zones.get(address.user_id), locale=None)


@dataclass
class RoundTrip(ProfiledChannel):
    """A platform a send takes a while to reach, as over a network (many turns of the event
    loop, in which the other replica's store and core calls answer)."""

    async def send(self, address: Address, message: Message, *, key: DeliveryKey) -> str:
        for _ in range(200):
            await asyncio.sleep(0)
        return await super().send(address, message, key=key)


def first_card(sent: list[SentMessage], person_id: str, kind: str = QUESTION
               ) -> SentMessage | None:
    return next((s for s in sent if s.address.person_id == person_id and s.key.kind == kind),
                None)


async def until_sent(rig: Rig, person_id: str, *, by: datetime, kind: str = QUESTION
                     ) -> datetime | None:
    """Move time in steps until ``person_id`` has a card of ``kind``: when it first showed."""
    await rig.burst()
    while first_card(rig.channel.sent, person_id, kind) is None:
        if rig.clock.now() >= by:
            return None
        await rig.later(STEP)
    return rig.clock.now()


async def test_a_question_leased_at_2am_berlin_reaches_a_berlin_person_at_8(
        make_rig: Callable[..., Rig]) -> None:
    rig = hours_rig(make_rig)
    await rig.create(authority={"authored_by": ["p-ahmed"]}, severity="normal")
    await rig.burst()
    assert rig.engine.worker.outcomes.get(JobOutcome.HELD) == 1
    assert rig.channel.sent == []
    assert await until_sent(rig, "p-ahmed", by=BERLIN_8AM + STEP) == BERLIN_8AM
    assert len(rig.channel.to("p-ahmed")) == 1


async def test_a_new_york_person_at_8_new_york_time(make_rig: Callable[..., Rig]) -> None:
    rig = hours_rig(make_rig)
    await rig.create(authority={"authored_by": ["p-priya"]}, severity="high")
    assert await until_sent(rig, "p-priya", by=NEW_YORK_8AM + STEP) == NEW_YORK_8AM
    assert len(rig.channel.to("p-priya")) == 1


async def test_both_leased_at_once_each_at_their_own_8(make_rig: Callable[..., Rig]) -> None:
    rig = hours_rig(make_rig)
    await rig.create(authority={"authored_by": ["p-ahmed"]})
    await rig.create(authority={"authored_by": ["p-priya"]})
    assert await until_sent(rig, "p-ahmed", by=BERLIN_8AM) == BERLIN_8AM
    assert rig.channel.to("p-priya") == []
    assert await until_sent(rig, "p-priya", by=NEW_YORK_8AM) == NEW_YORK_8AM


async def test_a_critical_question_goes_at_once(make_rig: Callable[..., Rig]) -> None:
    rig = hours_rig(make_rig)
    await rig.create(authority={"authored_by": ["p-ahmed", "p-sarah"]}, severity="critical")
    await rig.burst()
    assert rig.clock.now() == TUESDAY_1AM
    assert {s.address.person_id for s in rig.channel.sent if s.key.kind == QUESTION} == {
        "p-ahmed", "p-sarah"}
    assert JobOutcome.HELD not in rig.engine.worker.outcomes


async def test_the_escalation_window_starts_when_the_card_goes_out(
        make_rig: Callable[..., Rig]) -> None:
    rig = hours_rig(make_rig)
    cid = await rig.create(authority={"authored_by": ["p-ahmed", "p-sarah"]})
    delivered = await until_sent(rig, "p-ahmed", by=BERLIN_8AM)
    assert delivered == BERLIN_8AM
    # the lease held since 02:00 ends a lease after the card; the next turn is a window later
    c = await rig.bot.get_clarification(clarification_id=cid)
    assert [d.person_id for d in c.deliveries] == ["p-ahmed"]
    await rig.later(timedelta(minutes=2))
    jobs = (await rig.bot.list_jobs(kind="clarify:")).items
    job = next(j for j in jobs if j.payload is not None
               and j.payload.clarification_id == cid)
    assert job.attempts == 1 and job.visible_at is not None
    window = timedelta(hours=48)
    assert BERLIN_8AM + window <= job.visible_at <= BERLIN_8AM + window + timedelta(minutes=2)


async def test_the_platforms_zone_comes_first_and_is_kept_a_day(
        make_rig: Callable[..., Rig]) -> None:
    # the core says Berlin; the platform says Dubai (08:00 there is 04:00 UTC)
    channel = ProfiledChannel(zones={"U0AHMED": "Asia/Dubai"})
    rig = hours_rig(make_rig, channel)
    await rig.create(authority={"authored_by": ["p-ahmed"]})
    dubai_8am = datetime(2026, 12, 1, 4, 0, tzinfo=UTC)
    assert await until_sent(rig, "p-ahmed", by=dubai_8am) == dubai_8am
    assert channel.asked == ["U0AHMED"]  # read once, then from the store


async def test_an_unknown_zone_falls_back_to_the_tenants_default(
        make_rig: Callable[..., Rig]) -> None:
    channel = ProfiledChannel(zones={"U0TOM": "Not/AZone"})  # and the core names none for Tom
    rig = hours_rig(make_rig, channel,
                    tenants=[{"tenant": "acme", "time_zone": "America/New_York"}])
    await rig.create(authority={"authored_by": ["p-tom"]}, workspace="acme-finance")
    assert await until_sent(rig, "p-tom", by=NEW_YORK_8AM) == NEW_YORK_8AM


async def test_tenant_hours_are_the_tenants_own(make_rig: Callable[..., Rig]) -> None:
    rig = hours_rig(make_rig, tenants=[{"tenant": "acme", "start": "10:30", "end": "12:00"}])
    await rig.create(authority={"authored_by": ["p-ahmed"]})
    assert await until_sent(rig, "p-ahmed", by=BERLIN_8AM + timedelta(hours=4)) == \
        datetime(2026, 12, 1, 9, 40, tzinfo=UTC)  # the first step at or after 10:30 Berlin


async def test_the_stewards_notice_follows_the_stewards_hours(
        make_rig: Callable[..., Rig]) -> None:
    # the steward, Maria, works in Los Angeles by her platform: 08:00 there is 16:00 UTC
    channel = ProfiledChannel(zones={**PLATFORM_ZONES, "U0MARIA": "America/Los_Angeles"})
    rig = hours_rig(make_rig, channel)
    await rig.create(authority={"authored_by": ["p-ahmed"]}, severity="high")
    assert await until_sent(rig, "p-ahmed", by=BERLIN_8AM) == BERLIN_8AM
    la_8am = datetime(2026, 12, 1, 16, 0, tzinfo=UTC)
    assert first_card(rig.channel.sent, "p-maria", NOTICES_KIND) is None
    assert await until_sent(rig, "p-maria", by=la_8am, kind=NOTICES_KIND) == la_8am


async def test_a_critical_escalation_reaches_the_steward_at_night(
        make_rig: Callable[..., Rig]) -> None:
    rig = hours_rig(make_rig)
    # nobody of the ranking can be asked: the escalation is at once, critical or not held
    await rig.create(authority={"authored_by": ["p-nobody-here"]}, severity="critical")
    await rig.burst()
    assert [s.address.person_id for s in rig.channel.sent] == ["p-maria"]


async def test_a_normal_escalation_waits_for_the_stewards_morning(
        make_rig: Callable[..., Rig]) -> None:
    rig = hours_rig(make_rig)
    await rig.create(authority={"authored_by": ["p-nobody-here"]}, severity="normal")
    await rig.burst()
    assert rig.channel.sent == []
    assert await until_sent(rig, "p-maria", by=BERLIN_8AM,
                            kind=DeliveryKind.STEWARD_ESCALATION.value) == BERLIN_8AM


async def test_a_digest_that_would_close_at_night_closes_at_the_start_of_the_day(
        make_rig: Callable[..., Rig], clock: ManualClock) -> None:
    # normal questions admitted at 17:40 Berlin open a 30-minute digest window that would
    # close at 18:10: it closes at 08:00 the next morning instead
    rig = make_rig(clarify=hours_on({"digest_threshold": 1}), channel=ProfiledChannel())
    clock.set(datetime(2026, 12, 1, 16, 40, tzinfo=UTC))
    for _ in range(3):
        await rig.create(authority={"authored_by": ["p-ahmed"]})
    await rig.burst()
    digests = DeliveryKind.DIGEST.value
    next_morning = datetime(2026, 12, 2, 7, 0, tzinfo=UTC)
    first = first_card(rig.channel.sent, "p-ahmed")
    sent_at = await until_sent(rig, "p-ahmed", by=next_morning, kind=digests) if first else None
    assert first is not None  # the first went as a card, the rest joined the digest
    assert sent_at == next_morning


async def test_a_worker_killed_while_holding_leaves_the_question_to_go_at_the_hour_once(
        restart: Callable[[RecordingChannel], Restart], clock: ManualClock,
        dev_client: DevCoreClient) -> None:
    channel = ProfiledChannel()
    rig = restart(channel)
    first = rig.worker("w1", clarify=hours_on())
    await create(dev_client, authority={"authored_by": ["p-ahmed"]})
    await first.worker.run_burst()
    assert first.worker.outcomes.get(JobOutcome.HELD) == 1
    # w1 dies here: nothing of it runs again; its hold and lease token are in Redis
    second = rig.worker("w2", clarify=hours_on())
    while clock.now() < BERLIN_8AM:
        assert channel.sent == []
        clock.advance(STEP)
        await second.worker.run_burst()
    assert [s.address.person_id for s in channel.sent] == ["p-ahmed"]
    assert second.leased == 0  # the hold was carried on, never leased again
    for _ in range(6):
        clock.advance(STEP)
        await second.worker.run_burst()
    assert len(channel.sent) == 1


async def test_two_replicas_looking_at_one_hold_at_once_send_one_card(
        restart: Callable[[RecordingChannel], Restart], clock: ManualClock,
        dev_client: DevCoreClient) -> None:
    """Two replicas' housekeeping passes run at the same moment on every step: one claim of
    the hold wins each time, so the lease is extended and, at 08:00, the card sent once (each
    replica would otherwise take the other's reservation for a dead worker's and send)."""
    channel = RoundTrip()
    rig = restart(channel)
    replicas = [rig.worker(name, clarify=hours_on()) for name in ("w1", "w2")]
    await create(dev_client, authority={"authored_by": ["p-ahmed"]})
    await replicas[0].worker.run_burst()
    assert replicas[0].worker.outcomes.get(JobOutcome.HELD) == 1
    while clock.now() < BERLIN_8AM + 3 * STEP:
        clock.advance(STEP)
        await asyncio.gather(*(r.engine.held.flush() for r in replicas))
    assert [s.address.person_id for s in channel.sent] == ["p-ahmed"]
    released = [r.worker.outcomes.get(JobOutcome.ASKED, 0) for r in replicas]
    assert sorted(released) == [0, 1]


@dataclass
class Overlapping(ProfiledChannel):
    """Counts how many sends are on their way at once; each waits (a moment at most) for
    another to join it, as sends over a network overlap."""

    in_flight: int = 0
    most: int = 0
    _joined: asyncio.Event = field(default_factory=asyncio.Event)

    async def send(self, address: Address, message: Message, *, key: DeliveryKey) -> str:
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        if self.in_flight > 1:
            self._joined.set()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._joined.wait(), 1.0)
        try:
            return await super().send(address, message, key=key)
        finally:
            self.in_flight -= 1


async def test_questions_held_till_the_same_hour_go_out_side_by_side(
        make_rig: Callable[..., Rig]) -> None:
    """At 08:00 in a zone every question held for it falls due together: they are released as
    many at once as the worker has slots, not one after another in one housekeeping pass."""
    channel = Overlapping(zones={"U0AHMED": "Europe/Berlin", "U0SARAH": "Europe/Berlin"})
    rig = hours_rig(make_rig, channel)
    await rig.create(authority={"authored_by": ["p-ahmed"]})
    await rig.create(authority={"authored_by": ["p-sarah"]})
    await rig.burst()
    assert rig.engine.worker.outcomes.get(JobOutcome.HELD) == 2 and channel.sent == []
    assert await until_sent(rig, "p-ahmed", by=BERLIN_8AM) == BERLIN_8AM
    assert first_card(channel.sent, "p-sarah") is not None
    assert channel.most == 2


async def test_more_holds_than_one_batch_all_go_out_in_the_pass_at_the_hour(
        make_rig: Callable[..., Rig], monkeypatch: pytest.MonkeyPatch) -> None:
    """Held questions are read from the store a batch at a time (``HOLDS_PER_PASS``, one here):
    the one housekeeping pass at 08:00 releases every question held for it, not one batch."""
    monkeypatch.setattr(held, "HOLDS_PER_PASS", 1)
    rig = hours_rig(make_rig)
    for _ in range(3):
        await rig.create(authority={"authored_by": ["p-ahmed"]})
    await rig.burst()
    assert rig.engine.worker.outcomes.get(JobOutcome.HELD) == 3 and rig.channel.sent == []
    while rig.clock.now() + STEP < BERLIN_8AM:
        await rig.later(STEP)
    assert rig.channel.sent == []
    rig.clock.set(BERLIN_8AM)
    await rig.engine.held.flush()
    assert len([s for s in rig.channel.sent if s.key.kind == QUESTION]) == 3


async def test_a_low_question_is_never_asked_at_any_hour(make_rig: Callable[..., Rig]) -> None:
    rig = hours_rig(make_rig)
    cid = await rig.create(authority={"authored_by": ["p-ahmed"]}, severity="low")
    assert await until_sent(rig, "p-ahmed", by=BERLIN_8AM + timedelta(hours=2)) is None
    assert rig.channel.sent == []
    assert (await rig.bot.get_clarification(clarification_id=cid)).deliveries == []


@dataclass
class PacedChannel(ProfiledChannel):
    """A platform that cannot answer a profile now (Slack's users.info paced in a burst):
    its profile never comes back while ``paced``."""

    paced: bool = True

    async def profile(self, address: Address) -> Profile | None:
        if self.paced:
            await asyncio.Event().wait()
        return await super().profile(address)


async def test_a_zone_that_cannot_be_told_now_holds_the_question_a_minute_not_all_night(
        make_rig: Callable[..., Rig], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(zones, "PATIENCE_SECONDS", 0.01)
    channel = PacedChannel(zones={"U0TOM": "America/New_York"})
    rig = hours_rig(make_rig, channel)  # the tenant's default zone: UTC, a guess
    rig.clock.advance(timedelta(hours=13))  # 14:00 UTC, 09:00 in New York
    await rig.create(authority={"authored_by": ["p-tom"]}, workspace="acme-finance")
    await rig.burst()
    # the core names no zone for Tom and Slack cannot say now: held, not sent on a guess
    assert rig.engine.worker.outcomes.get(JobOutcome.HELD) == 1 and rig.channel.sent == []
    channel.paced = False
    held_at = rig.clock.now()
    assert await until_sent(rig, "p-tom", by=held_at + timedelta(minutes=5)) is not None
    assert rig.clock.now() - held_at <= timedelta(seconds=zones.RETRY_SECONDS) + STEP
    assert len(rig.channel.to("p-tom")) == 1


async def test_a_platform_that_cannot_answer_now_holds_no_critical_card_and_takes_the_cores_zone(
        make_rig: Callable[..., Rig], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(zones, "PATIENCE_SECONDS", 0.01)
    channel = PacedChannel()
    rig = hours_rig(make_rig, channel)
    await rig.create(authority={"authored_by": ["p-sarah"]}, severity="critical")
    # Ahmed's core record names Berlin: 02:00 there, so held till 08:00 Berlin, not a minute
    await rig.create(authority={"authored_by": ["p-ahmed"]})
    await rig.burst()
    assert [s.address.person_id for s in rig.channel.sent if s.key.kind == QUESTION] == [
        "p-sarah"]  # at once, in the core's locale for her
    assert await until_sent(rig, "p-ahmed", by=BERLIN_8AM) == BERLIN_8AM
