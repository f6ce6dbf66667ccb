"""The reach report as a steward sees it in chat (pure): the weekly message's view and the
detail's, from the reach record's entries of the workspaces they steward
(``bot.reach.report.compute``). Counts, codes and display names only: no span text, no
question, no title, no answer."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date

from bot.core.models import Severity
from bot.reach.report import Report, Row, Timing
from cards.reach_views import (
    REACH_NAMES_MAX,
    REACH_TOP_CAUSES,
    ReachCauseView,
    ReachDetailView,
    ReachReportView,
    ReachTimingView,
    ReachTotals,
    ReachWorkspaceView,
)
from cards.views import Viewer

BUSIEST = 5  # the most interrupted people the detail names


def _hours(seconds: float | None) -> float | None:
    return None if seconds is None else seconds / 3600


def totals(rows: list[Row], timings: list[Timing]) -> ReachTotals:
    """Every row together; the median time to bound of every severity together is not the
    report's (which is per severity): the middle of the per-severity medians, weighted by how
    many each bound, is close enough for a line of text, so the bound-weighted median of the
    medians is shown."""
    asked = sum(r.asked for r in rows)
    early = sum(round((r.bound_before_escalation or 0) * r.asked) for r in rows)
    return ReachTotals(
        questions=sum(r.questions for r in rows), asked=asked, bound=sum(r.bound for r in rows),
        open=sum(r.open for r in rows), escalated=sum(r.escalated for r in rows),
        dead_lettered=sum(r.dead_lettered for r in rows),
        bound_before_escalation=early / asked if asked else None,
        median_hours=_hours(_weighted([(t.median_seconds, t.bound) for t in timings])),
        median_working_hours=_hours(_weighted(
            [(t.median_working_seconds, t.bound) for t in timings])))


def _weighted(values: list[tuple[float | None, int]]) -> float | None:
    """The bound-weighted median of per-severity medians."""
    spread = sorted((v, n) for v, n in values if v is not None and n > 0)
    total = sum(n for _, n in spread)
    if not total:
        return None
    seen = 0
    for value, n in spread:
        seen += n
        if 2 * seen >= total:
            return value
    return spread[-1][0]


def weekly(report: Report, *, viewer: Viewer, start: date, end: date) -> ReachReportView:
    """The weekly message: totals and the top causes, counts only."""
    causes = tuple(ReachCauseView(cause=c.cause, people=len(c.people), questions=c.questions)
                   for c in report.causes)
    people = {p for c in report.causes for p in c.people}
    return ReachReportView(viewer=viewer, start=start, end=end,
                           totals=totals(report.rows, report.timings),
                           causes=causes[:REACH_TOP_CAUSES],
                           more_causes=max(len(causes) - REACH_TOP_CAUSES, 0),
                           unreached=len(people))


def named(report: Report) -> list[str]:
    """The people the detail names (the first ``REACH_NAMES_MAX`` of each cause, the busiest),
    whose display names the caller reads."""
    wanted = [p for c in report.causes for p in c.people[:REACH_NAMES_MAX]]
    wanted += [person for person, _ in _busiest(report)]
    return list(dict.fromkeys(wanted))


def _busiest(report: Report) -> list[tuple[str, int]]:
    """Each person's busiest week's interruptions, most first (the report's top ten)."""
    best: dict[str, int] = {}
    for person, _week, count in report.interruptions.top:
        best[person] = max(best.get(person, 0), count)
    return sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))[:BUSIEST]


def detail(report: Report, *, viewer: Viewer, start: date, end: date,
           names: Mapping[str, str]) -> ReachDetailView:
    """The detail: per workspace and platform, timings, every cause with its people's names."""
    def name(person: str) -> str:
        return names.get(person) or person

    rows = tuple(ReachWorkspaceView(workspace=r.workspace, platform=r.platform,
                                    totals=totals([r], [])) for r in report.rows)
    # a severity word this release does not know (a newer core's) has no line of its own; its
    # questions are in the totals
    known = {s.value for s in Severity}
    timings = tuple(ReachTimingView(
        severity=Severity(t.severity), bound=t.bound, median_hours=_hours(t.median_seconds),
        p90_hours=_hours(t.p90_seconds),
        median_working_hours=_hours(t.median_working_seconds),
        p90_working_hours=_hours(t.p90_working_seconds))
        for t in report.timings if t.severity in known)
    causes = tuple(ReachCauseView(
        cause=c.cause, people=len(c.people), questions=c.questions,
        names=tuple(name(p) for p in c.people[:REACH_NAMES_MAX]),
        more=max(len(c.people) - REACH_NAMES_MAX, 0)) for c in report.causes)
    busiest = tuple((name(p), n) for p, n in _busiest(report))
    return ReachDetailView(viewer=viewer, steward=True, start=start, end=end,
                           totals=totals(report.rows, report.timings), workspaces=rows,
                           timings=timings, causes=causes, busiest=busiest,
                           interruptions_median=report.interruptions.median,
                           interruptions_p95=report.interruptions.p95)
