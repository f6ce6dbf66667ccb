"""The recorder: entries from the engine's own audit events, a replay kept once, and a log that
fails never failing the event's path (logged and counted, written with the next flush)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from bot.audit import AuditEvent, EventFacts
from bot.clock import ManualClock
from bot.core.models import ReasonCode
from bot.metrics import REGISTRY
from bot.reach.log import Kind, MemoryReachLog, ReachEntry
from bot.reach.recording import ReachRecorder, entries_of

T0 = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)
FACTS = EventFacts(tenant="acme", workspace="ws-1", severity="high")


def event(type_: str, *, facts: EventFacts | None = FACTS, **fields: object) -> AuditEvent:
    values: dict = {"person_id": "p-sarah", "attempt": 0, **fields}
    return AuditEvent(type=type_, at=T0, clarification_id="c-1", message="m", facts=facts,
                      **values)


def test_events_as_entries() -> None:
    asked = entries_of(event("delivery", channel="slack"))
    assert [(e.kind, e.platform, e.tenant, e.workspace, e.severity) for e in asked] == [
        (Kind.ASKED, "slack", "acme", "ws-1", "high")]
    skip = entries_of(event("skipped", reason_code=ReasonCode.DELIVERY_FAILED,
                            facts=EventFacts("acme", "ws-1", "high", platform="teams",
                                             cause="MessageWritesBlocked")))
    assert [(e.kind, e.platform, e.reason_code, e.cause) for e in skip] == [
        (Kind.SKIPPED, "teams", "DELIVERY_FAILED", "MessageWritesBlocked")]
    bound = entries_of(event("answer_forwarded", channel="teams",
                             facts=EventFacts("acme", "ws-1", "high", bound=True)))
    assert [e.kind for e in bound] == [Kind.ANSWERED, Kind.BOUND]
    assert len({e.entry_id for e in bound}) == 2
    assert entries_of(event("answer_forwarded", extra={"superseded": "true"})) == []
    assert entries_of(event("delivery", facts=None)) == []  # no facts: not a reach event
    assert entries_of(event("callback_refused", occurrence="x")) == []
    assert entries_of(event("delivery", channel="slack")) == asked  # a replay: the same id


class Failing(MemoryReachLog):
    def __init__(self) -> None:
        super().__init__()
        self.failing = True

    async def add(self, entries: Sequence[ReachEntry]) -> int:
        if self.failing:
            raise ConnectionError("database away")
        return await super().add(entries)


async def test_a_failed_write_is_counted_and_written_later() -> None:
    log = Failing()
    recorder = ReachRecorder(log, clock=ManualClock(T0), retention=timedelta(days=90))
    before = REGISTRY.value("clarify_reach_write_failures_total")
    recorder.seen(event("delivery", channel="slack"))  # never raises, never waits
    assert await recorder.flush() == 0
    assert REGISTRY.value("clarify_reach_write_failures_total") == before + 1
    log.failing = False
    recorder.seen(event("delivery", channel="slack"))  # the same event again
    await recorder.aclose()
    assert [e.kind for e in await log.read()] == [Kind.ASKED]


async def test_housekeeping_expires_past_the_retention() -> None:
    clock = ManualClock(T0)
    log = MemoryReachLog()
    recorder = ReachRecorder(log, clock=clock, retention=timedelta(days=90))
    recorder.seen(event("delivery", channel="slack"))
    await recorder.housekeep()
    assert len(await log.read()) == 1
    clock.advance(timedelta(days=90, hours=2))
    await recorder.housekeep()
    assert await log.read() == []


async def test_a_full_queue_drops_and_counts() -> None:
    recorder = ReachRecorder(MemoryReachLog(), clock=ManualClock(T0),
                             retention=timedelta(days=90), queue_limit=1)
    before = REGISTRY.value("clarify_reach_dropped_total")
    recorder.seen(event("answer_forwarded", channel="slack",
                        facts=EventFacts("acme", "ws-1", "high", bound=True)))
    assert REGISTRY.value("clarify_reach_dropped_total") == before + 1


def test_a_card_keeps_its_zone_and_a_skip_its_cause_group() -> None:
    """The zone is kept on the entries that asked (a card, a digest entry), the cause group on
    skips, and only a group the report knows (``bot.reach.causes.FIXES``)."""
    facts = EventFacts("acme", "ws-1", "high", zone="Europe/Berlin", cause="user_disabled",
                       cause_group="deactivated")
    (asked,) = entries_of(event("delivery", channel="slack", facts=facts))
    (digested,) = entries_of(event("digest_sent", facts=facts))
    (reminded,) = entries_of(event("reminder_sent", channel="slack", facts=facts))
    (skipped,) = entries_of(event("skipped", reason_code=ReasonCode.DELIVERY_FAILED,
                                  facts=facts))
    assert [(e.zone, e.cause_group) for e in (asked, digested, reminded, skipped)] == [
        ("Europe/Berlin", None), ("Europe/Berlin", None), (None, None), (None, "deactivated")]
    odd = EventFacts("acme", "ws-1", "high", cause_group="not_a_group")
    (unknown,) = entries_of(event("skipped", reason_code=ReasonCode.DELIVERY_FAILED, facts=odd))
    assert unknown.cause_group is None
