"""The stewards' weekly reach report, sent by the worker's chore against the reference core
(memory and Redis stores): once a week per steward, in their working hours, counts of their
workspaces only, never twice however many workers run it, nothing of the question in it
(docs/operations.md, "Reach report")."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from bot.clock import ManualClock
from bot.engine.reach_reports import KIND, week_of, window
from bot.reach.log import MemoryReachLog
from bot.reach.recording import ReachRecorder
from bot.store.base import DeliveryKey
from cards.reach_views import ReachReportView
from tests.conftest import START
from tests.engine.conftest import Rig, clarify_settings
from tests.engine.test_engine_reach import entries

MADRID = ZoneInfo("Europe/Madrid")  # Maria, the steward of acme-legal
WEEK = timedelta(days=7)


def recorded(make_rig: Callable[..., Rig], clock: ManualClock, **settings: object
             ) -> tuple[Rig, ReachRecorder]:
    reach = ReachRecorder(MemoryReachLog(), clock=clock, retention=timedelta(days=90))
    return make_rig(clarify=clarify_settings(**settings), reach=reach), reach


def reports(rig: Rig) -> list[tuple[str, ReachReportView]]:
    return [(s.key.person_id, s.message) for s in rig.channel.sent  # type: ignore[misc]
            if s.key.kind == KIND]


def test_the_report_day_and_its_week() -> None:
    monday = date(2026, 7, 6)
    assert week_of(monday, 0) == monday
    assert week_of(monday + timedelta(days=3), 0) == monday  # Thursday: Monday's report
    assert week_of(monday, 2) is None  # Wednesday's report day has not come
    assert week_of(monday + timedelta(days=6), 4) == monday + timedelta(days=4)
    start, end = window(monday, MADRID)
    assert (start, end) == (datetime(2026, 6, 28, 22, 0, tzinfo=ZoneInfo("UTC")),
                            datetime(2026, 7, 5, 22, 0, tzinfo=ZoneInfo("UTC")))


async def test_one_report_a_week_to_the_steward_in_their_hours(
        make_rig: Callable[..., Rig], clock: ManualClock) -> None:
    """Three questions in acme-legal on Monday (Sarah asked, Tom may not read, Olga has no
    Slack alias) and one in acme-finance: a week later Maria gets one report of acme-legal's
    and Jonas one of acme-finance's; later passes that week send nothing more."""
    rig, reach = recorded(make_rig, clock)
    for _ in range(3):
        await rig.create(authority={"authored_by": ["p-tom", "p-olga", "p-sarah"]},
                         severity="high")
    await rig.create(workspace="acme-finance", authority={"authored_by": ["p-priya"]},
                     read_roles=["viewer", "editor", "steward"])
    await rig.burst()
    assert reports(rig) == []  # this week's questions wait for next week's report
    await rig.later(WEEK)  # Monday 11:00 in Madrid
    sent = dict(reports(rig))
    assert sorted(sent) == ["p-jonas", "p-maria"]
    maria = sent["p-maria"]
    assert (maria.start, maria.end) == (START.date(), START.date() + timedelta(days=6))
    assert (maria.totals.questions, maria.totals.asked, maria.totals.bound) == (3, 3, 0)
    assert [(c.cause, c.people, c.questions) for c in maria.causes] == [
        ("no_alias", 1, 3), ("no_read_permission", 1, 3)]
    assert maria.unreached == 2
    assert maria.viewer.time_zone == zone_of(rig).key
    assert sent["p-jonas"].totals.questions == 1
    for _ in range(4):
        await rig.later(timedelta(hours=1))
    assert len(reports(rig)) == 2


def zone_of(rig: Rig) -> ZoneInfo:
    """Maria's zone: Madrid where the core says so (the full contract), else the tenant's
    default (a baseline core names no zone)."""
    return MADRID if rig.contract == "full" else ZoneInfo("UTC")


async def test_no_report_outside_the_stewards_working_hours(
        make_rig: Callable[..., Rig], clock: ManualClock) -> None:
    """Next Monday at 07:30 in Maria's zone is before her hours: nothing; at 08:01 her report
    goes."""
    rig, reach = recorded(make_rig, clock)
    await rig.create(authority={"authored_by": ["p-sarah"]})
    await rig.burst()
    monday = datetime.combine(START.date() + WEEK, time(7, 30), tzinfo=zone_of(rig))
    await rig.later(monday - clock.now())
    assert reports(rig) == []
    await rig.later(timedelta(minutes=31))
    assert [who for who, _ in reports(rig)] == ["p-maria"]


async def test_two_workers_send_one_report(
        make_rig: Callable[..., Rig], clock: ManualClock) -> None:
    rig, reach = recorded(make_rig, clock)
    await rig.create(authority={"authored_by": ["p-sarah"]})
    await rig.burst()
    other = make_rig(clarify=clarify_settings(), channel=rig.channel, reach=reach,
                     worker_id="worker-2")
    clock.advance(WEEK)
    await rig.engine.worker.run_burst()
    await other.engine.worker.run_burst()
    assert [who for who, _ in reports(rig)] == ["p-maria"]
    assert await rig.store.slot(DeliveryKey(f"reach.acme.{_week(START + WEEK)}", "p-maria", 0,
                                            KIND)) is not None


async def test_the_report_holds_no_question_title_or_name(
        make_rig: Callable[..., Rig], clock: ManualClock) -> None:
    rig, reach = recorded(make_rig, clock)
    cid = await rig.create(authority={"authored_by": ["p-tom", "p-olga", "p-sarah"]})
    await rig.burst()
    await rig.later(WEEK)
    (sent,) = [s for s in rig.channel.sent if s.key.kind == KIND]
    shown = rig.rendered(sent)
    c = await rig.bot.get_clarification(clarification_id=cid)
    for secret in (c.span_excerpt, c.question, c.document.title, cid, "Olga", "Tom",
                   "Sarah"):
        assert secret and secret not in shown
    assert json.loads(shown)["blocks"]
    assert len(await entries(reach)) >= 3


def _week(at: datetime) -> str:
    year, week, _ = at.astimezone(MADRID).date().isocalendar()
    return f"{year}-W{week:02d}"
