"""The reach record's metrics: ``clarify_unreachable_people`` equals the report's cause table
over the window, recomputed by housekeeping at most every few minutes (never on a scrape), and
``clarify_time_to_bound_seconds`` observes a bound question's wait from its first card."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from adapters.slack import schema
from bot.audit import AuditEvent, EventFacts
from bot.clock import ManualClock
from bot.core.models import ReasonCode
from bot.metrics import REGISTRY
from bot.reach.causes import CAUSES
from bot.reach.gauges import GAUGE, UnreachableGauge
from bot.reach.log import Kind, MemoryReachLog, ReachEntry, ReachLog
from bot.reach.postgres import PostgresReachLog
from bot.reach.recording import ReachRecorder
from bot.reach.report import compute

from .test_reach_report import RECORD, T0

H = timedelta(hours=1)


def gauges() -> dict[str, float]:
    return {cause: REGISTRY.value(GAUGE, cause=cause) for cause in CAUSES}


async def test_gauges_equal_the_report_over_the_window(reach: ReachLog) -> None:
    await reach.add(RECORD)
    # a skip older than the window: not counted
    await reach.add([ReachEntry("old", T0 - 8 * 24 * H, "acme", "ws-1", "slack", "p-old", "c0",
                                Kind.SKIPPED, "normal", "NO_READ_PERMISSION", None)])
    clock = ManualClock(T0 + 2 * 24 * H)
    gauge = UnreachableGauge(reach, clock=clock)
    assert await gauge.refresh()
    assert gauges() == {"no_alias": 1, "ambiguous_alias": 0, "no_read_permission": 0,
                        "app_not_installed": 1, "install_permission_missing": 0,
                        "install_not_own_app": 0, "app_blocked_by_policy": 0,
                        "no_teams_licence": 0,
                        "install_refused": 0, "blocked_or_uninstalled": 1, "deactivated": 0,
                        "tenant_scope": 0, "delivery_failed": 0, "away": 0}
    report = compute(RECORD, since=clock.now() - timedelta(days=7))
    assert {c.cause: len(c.people) for c in report.causes} == {
        k: v for k, v in gauges().items() if v}

    # within REFRESH_EVERY nothing is read again; after it, the new skip counts
    await reach.add([ReachEntry("new", T0 + 47 * H, "acme", "ws-1", "slack", "p-new", "c7",
                                Kind.SKIPPED, "normal", "DELIVERY_FAILED", "account_inactive")])
    clock.advance(timedelta(minutes=1))
    assert not await gauge.refresh()
    assert gauges()["deactivated"] == 0
    clock.advance(timedelta(minutes=5))
    assert await gauge.refresh()
    assert gauges()["deactivated"] == 1
    # a week later every skip has left the window
    clock.advance(timedelta(days=8))
    assert await gauge.refresh()
    assert set(gauges().values()) == {0}


class Unreadable(MemoryReachLog):
    async def read(self, **_: object) -> list[ReachEntry]:
        raise ConnectionError("database away")


async def test_a_failed_read_keeps_the_gauges_and_is_counted() -> None:
    log = MemoryReachLog()
    await log.add(RECORD)
    await UnreachableGauge(log, clock=ManualClock(T0 + H)).refresh()
    before = REGISTRY.value("clarify_metric_read_failures_total", gauge=GAUGE)
    assert not await UnreachableGauge(Unreadable(), clock=ManualClock(T0 + H)).refresh()
    assert REGISTRY.value("clarify_metric_read_failures_total", gauge=GAUGE) == before + 1
    assert gauges()["no_alias"] == 1


def event(type_: str, at: datetime, *, cid: str = "c-1", person: str = "p-sarah",
          bound: bool = False, **fields: Any) -> AuditEvent:
    return AuditEvent(type=type_, at=at, clarification_id=cid, message="m",
                      person_id=person, attempt=0,
                      facts=EventFacts("acme", "ws-1", "critical", bound=bound), **fields)


def histogram(suffix: str) -> float:
    return REGISTRY.registry.get_sample_value(
        f"clarify_time_to_bound_seconds_{suffix}", {"severity": "critical"}) or 0.0


async def test_time_to_bound_from_the_first_card() -> None:
    clock = ManualClock(T0)
    recorder = ReachRecorder(MemoryReachLog(), clock=clock, retention=timedelta(days=90))
    count, total = histogram("count"), histogram("sum")
    recorder.seen(event("delivery", T0, channel="slack"))
    recorder.seen(event("delivery", T0 + H, person="p-tom", channel="teams"))  # not the first
    recorder.seen(event("skipped", T0, person="p-ann", reason_code=ReasonCode.NO_DELIVERY_ALIAS))
    recorder.seen(event("answer_forwarded", T0 + 2 * H, person="p-tom", channel="teams"))
    assert histogram("count") == count  # answered, not bound yet
    bound = event("answer_forwarded", T0 + 3 * H, channel="slack", bound=True)
    recorder.seen(bound)
    recorder.seen(bound)  # a replay: observed once
    assert (histogram("count"), histogram("sum")) == (count + 1, total + 3 * 3600)
    # a question whose first card this recorder did not see is not observed
    recorder.seen(event("answer_forwarded", T0 + 4 * H, cid="c-2", bound=True))
    assert histogram("count") == count + 1
    await recorder.aclose()


async def test_housekeeping_refreshes_the_gauges() -> None:
    log: Sequence[ReachEntry] = [e for e in RECORD if e.kind is Kind.SKIPPED]
    reach = MemoryReachLog()
    recorder = ReachRecorder(reach, clock=ManualClock(T0 + H), retention=timedelta(days=90))
    await reach.add(log)
    for cause in CAUSES:
        REGISTRY.set(GAUGE, 0, cause=cause)
    await recorder.housekeep()
    assert gauges()["blocked_or_uninstalled"] == 1


async def test_time_to_bound_across_processes(database_url: str) -> None:
    """Two replicas on one PostgreSQL record: one sends the first card, the other records the
    answer that binds. The second looks the first card up in the log in its write path (not
    as the event passes) and observes the wait once, a replay of the answer not again."""
    sender = ReachRecorder(PostgresReachLog(schema.open_engine(database_url, pool_size=1)),
                           clock=ManualClock(T0), retention=timedelta(days=90))
    binder = ReachRecorder(PostgresReachLog(schema.open_engine(database_url, pool_size=1)),
                           clock=ManualClock(T0), retention=timedelta(days=90))
    count, total = histogram("count"), histogram("sum")
    sender.seen(event("delivery", T0, channel="slack"))
    sender.seen(event("delivery", T0 + H, person="p-tom", channel="teams"))
    await sender.flush()
    bound = event("answer_forwarded", T0 + 5 * H, channel="slack", bound=True)
    binder.seen(bound)
    assert histogram("count") == count  # not in ``seen``: the write path looks it up
    await binder.flush()
    assert (histogram("count"), histogram("sum")) == (count + 1, total + 5 * 3600)
    binder.seen(bound)  # the same answer again (a resent callback)
    await binder.flush()
    assert histogram("count") == count + 1
    # a question whose first card no process recorded: nothing to observe
    binder.seen(event("answer_forwarded", T0 + 6 * H, cid="c-9", bound=True))
    await binder.flush()
    assert histogram("count") == count + 1
    await sender.aclose()
    await binder.aclose()


class LookupFails(MemoryReachLog):
    def __init__(self) -> None:
        super().__init__()
        self.failing = True
        self.asked = 0

    async def first_asked(self, clarification_id: str) -> datetime | None:
        self.asked += 1
        if self.failing:
            raise ConnectionError("database away")
        return await super().first_asked(clarification_id)


async def test_a_failed_first_card_lookup_is_counted_and_tried_again() -> None:
    """The first card was recorded before a restart (the log has it, this process does not):
    the look-up fails, is counted and logged value-free, and is tried again with the next
    write; the delivery's path never waits on it."""
    log = LookupFails()
    earlier = ReachRecorder(log, clock=ManualClock(T0), retention=timedelta(days=90))
    earlier.seen(event("delivery", T0, channel="slack"))
    await earlier.flush()
    recorder = ReachRecorder(log, clock=ManualClock(T0), retention=timedelta(days=90))
    count = histogram("count")
    failures = REGISTRY.value("clarify_reach_write_failures_total")
    recorder.seen(event("answer_forwarded", T0 + 2 * H, channel="slack", bound=True))
    assert log.asked == 0  # the event's path never asks the log
    await recorder.flush()
    assert REGISTRY.value("clarify_reach_write_failures_total") == failures + 1
    assert histogram("count") == count
    log.failing = False
    await recorder.housekeep()
    assert histogram("count") == count + 1
    await recorder.aclose()


async def test_the_teams_install_refusals_are_counted_each_under_its_cause(
        reach: ReachLog) -> None:
    """People the Teams app could not be installed for, as the Teams channel classifies them
    (``adapters.teams.installs``): the report's table and the gauge count each cause, and the
    report carries each one's fix."""
    causes = ("install_permission_missing", "app_blocked_by_policy", "no_teams_licence",
              "install_refused")
    entries = [ReachEntry(f"i{n}", T0 + n * H, "acme", "ws-1", "teams", f"p-{cause}", "c1",
                          Kind.SKIPPED, "normal", "NO_DELIVERY_ALIAS", "the reason's words",
                          cause_group=cause) for n, cause in enumerate(causes)]
    entries.append(ReachEntry("i9", T0 + 9 * H, "acme", "ws-1", "teams", "p-twice", "c2",
                              Kind.SKIPPED, "normal", "NO_DELIVERY_ALIAS", None,
                              cause_group="no_teams_licence"))
    await reach.add(entries)
    clock = ManualClock(T0 + 24 * H)
    assert await UnreachableGauge(reach, clock=clock).refresh()
    assert {c: gauges()[c] for c in causes} == {
        "install_permission_missing": 1, "app_blocked_by_policy": 1, "no_teams_licence": 2,
        "install_refused": 1}
    report = compute(entries, since=T0 - H)
    shown = {c.cause: (len(c.people), c.fix) for c in report.causes}
    assert {c: shown[c][0] for c in causes} == {
        "install_permission_missing": 1, "app_blocked_by_policy": 1, "no_teams_licence": 2,
        "install_refused": 1}
    assert "TeamsAppInstallation.ReadWriteSelfForUser.All" in shown[
        "install_permission_missing"][1]
