"""The reach report's sentences (``cards.reach`` renders them): the week's figures, each cause of
people not reached with its label and its fix, the names a cause kept from being reached, the
time to a bound answer by severity, the people interrupted most and each workspace's line.

Numbers, shares and days are in the viewer's locale (``cards.dates``); the words around them in
the catalog's language. Names, workspace names and a cause code the catalog does not know come
from outside: each is one clean line, clipped, and the renderers show it as text.
"""

from __future__ import annotations

from datetime import date

from cards import dates, untrusted
from cards.platform_limits import clip, text_length
from cards.reach_views import (
    REACH_CAUSES,
    REACH_NAMES_MAX,
    ReachCauseView,
    ReachDetailView,
    ReachTimingView,
    ReachTotals,
    ReachWorkspaceView,
)
from cards.text import PERSON_CHARS, catalog_of, severity_text
from cards.views import Viewer

# the platforms' own names (not translated); any other platform is shown as it came
PLATFORMS = {"slack": "Slack", "teams": "Teams"}
PLATFORM_CHARS = 40
CAUSE_CHARS = 100  # a cause code the catalog does not know, shown as it came
NAMES_CHARS = 1000  # the "Who: …" line of a cause (a line's most); names past it are counted
BUSIEST_MAX = 10  # the people interrupted most that the detail names; the rest is a count


def number(value: float, viewer: Viewer) -> str:
    """A count or an amount of hours in the viewer's digits and separators."""
    return dates.number_label(value, locale=viewer.locale)


def counted(key: str, count: int, viewer: Viewer) -> str:
    """The plural message ``key`` for ``count``, the count written in the viewer's format."""
    return catalog_of(viewer).plural(key, count, count=number(count, viewer))


def span_text(start: date | None, end: date | None, viewer: Viewer) -> str | None:
    """ "29 Jun – 5 Jul 2026, in the workspaces you steward"; None without both days."""
    if start is None or end is None:
        return None
    return catalog_of(viewer).text("reach.span",
                                   span=dates.day_span(start, end, locale=viewer.locale))


def hours_text(working: float | None, wall: float | None, viewer: Viewer) -> str:
    """ "3.5 h working time (26 h in all)", either half alone, or "not known yet"."""
    cat = catalog_of(viewer)
    if working is not None and wall is not None:
        return cat.text("reach.hours_both", working=number(working, viewer),
                        wall=number(wall, viewer))
    if working is not None:
        return cat.text("reach.hours_working", working=number(working, viewer))
    if wall is not None:
        return cat.text("reach.hours_wall", wall=number(wall, viewer))
    return cat.text("reach.unknown")


def facts(totals: ReachTotals, viewer: Viewer) -> list[str]:
    """The figures of a week, each "<label>: <value>": the six counts, then the share bound
    before the first escalation and the median time to a bound answer, when known."""
    cat = catalog_of(viewer)
    pairs = [("questions", number(totals.questions, viewer)),
             ("asked", number(totals.asked, viewer)),
             ("bound", number(totals.bound, viewer)),
             ("open", number(totals.open, viewer)),
             ("escalated", number(totals.escalated, viewer)),
             ("dead_lettered", number(totals.dead_lettered, viewer))]
    if totals.bound_before_escalation is not None:
        pairs.append(("bound_before_escalation",
                      dates.percent_label(totals.bound_before_escalation, locale=viewer.locale)))
    if totals.median_hours is not None or totals.median_working_hours is not None:
        pairs.append(("median", hours_text(totals.median_working_hours, totals.median_hours,
                                           viewer)))
    return [cat.text("reach.fact", label=cat.text(f"reach.label.{name}"), value=value)
            for name, value in pairs]


def known_cause(code: str) -> bool:
    return code in REACH_CAUSES


def cause_label(code: str, viewer: Viewer) -> str:
    """The cause's label ("No chat account known"); a code the bot does not know as it came,
    on one clean line."""
    if known_cause(code):
        return catalog_of(viewer).text(f"reach.cause.{code}")
    return clip(untrusted.line(code), CAUSE_CHARS) or "?"


def fix_text(code: str, viewer: Viewer) -> str | None:
    """ "Fix: Identity sync: …"; None for a cause the bot does not know."""
    if not known_cause(code):
        return None
    cat = catalog_of(viewer)
    return cat.text("reach.fix", fix=cat.text(f"reach.fix.{code}"))


def cause_counts(cause: ReachCauseView, viewer: Viewer) -> str:
    """ "2 people, 3 questions"."""
    return catalog_of(viewer).text("reach.cause_counts",
                                   people=counted("reach.people", cause.people, viewer),
                                   questions=counted("reach.questions", cause.questions, viewer))


def cause_line(cause: ReachCauseView, viewer: Viewer) -> str:
    """ "No chat account known: 2 people, 3 questions" (the weekly message's line)."""
    return catalog_of(viewer).text(
        "reach.cause_line", cause=cause_label(cause.cause, viewer),
        people=counted("reach.people", cause.people, viewer),
        questions=counted("reach.questions", cause.questions, viewer))


def unreached_heading(unreached: int, causes: tuple[ReachCauseView, ...], viewer: Viewer) -> str:
    """ "3 people could not be reached:" (every cause together)."""
    count = unreached or sum(cause.people for cause in causes)
    return counted("reach.unreached", count, viewer)


def names_text(cause: ReachCauseView, viewer: Viewer) -> str | None:
    """ "Who: Dana Whitfield, Tom Becker and 3 more people": at most REACH_NAMES_MAX names,
    fewer when the line would pass NAMES_CHARS, the rest (and ``more``) counted; None when the
    cause names nobody."""
    cat = catalog_of(viewer)
    names = [clip(untrusted.line(name), PERSON_CHARS) for name in cause.names]
    names = [name for name in names if name]
    total = len(names) + max(cause.more, 0)
    if not total:
        return None
    words = cat.words_locale("reach.names")
    line = ""
    for shown in range(min(len(names), REACH_NAMES_MAX), -1, -1):
        listed = names[:shown]
        if shown < total:
            listed.append(counted("reach.more_names", total - shown, viewer))
        line = cat.text("reach.names", names=dates.names_list(listed, locale=words))
        if text_length(line) <= NAMES_CHARS:
            break
    return line


def timing_text(timing: ReachTimingView, viewer: Viewer) -> str:
    """ "critical: 3 bound; median 3.5 h working time (26 h in all); 90th percentile …"."""
    return catalog_of(viewer).text(
        "reach.timing", severity=severity_text(timing.severity, viewer),
        bound=counted("reach.bound", timing.bound, viewer),
        median=hours_text(timing.median_working_hours, timing.median_hours, viewer),
        p90=hours_text(timing.p90_working_hours, timing.p90_hours, viewer))


def platform_name(platform: str, viewer: Viewer) -> str:
    """ "Slack", "Teams"; "nobody asked" for a question no one was sent ("-")."""
    known = PLATFORMS.get(platform.strip().lower())
    if known:
        return known
    shown = clip(untrusted.line(platform), PLATFORM_CHARS)
    return shown if shown.strip("-– ") else catalog_of(viewer).text("reach.platform_none")


def workspace_heading(workspace: ReachWorkspaceView, viewer: Viewer) -> str:
    """ "Legal (Slack)": the workspace's name (or id) as it came, on one clean line."""
    name = clip(untrusted.line(workspace.workspace), PERSON_CHARS) or "?"
    return catalog_of(viewer).text("reach.workspace", workspace=name,
                                   platform=platform_name(workspace.platform, viewer))


def workspace_facts(workspace: ReachWorkspaceView, viewer: Viewer) -> str:
    """A workspace's figures on one line, "Questions: 12 · Asked: 10 · …"."""
    return " · ".join(facts(workspace.totals, viewer))


def interruptions_text(view: ReachDetailView) -> str | None:
    """ "Cards, reminders and digests a person got in a week: median 3, 95th percentile 12.";
    None when neither is known."""
    if view.interruptions_median is None and view.interruptions_p95 is None:
        return None
    cat = catalog_of(view.viewer)

    def shown(value: float | None) -> str:
        return cat.text("reach.unknown") if value is None else number(value, view.viewer)

    return cat.text("reach.interruptions", median=shown(view.interruptions_median),
                    p95=shown(view.interruptions_p95))


def busiest_lines(view: ReachDetailView) -> list[str]:
    """ "Dana Whitfield: 14" for the people interrupted most (at most BUSIEST_MAX), then
    "…and N more people."."""
    cat = catalog_of(view.viewer)
    lines = [cat.text("reach.fact", label=clip(untrusted.line(name), PERSON_CHARS) or "?",
                      value=number(count, view.viewer))
             for name, count in view.busiest[:BUSIEST_MAX]]
    if len(view.busiest) > BUSIEST_MAX:
        lines.append(counted("reach.more_people", len(view.busiest) - BUSIEST_MAX, view.viewer))
    return lines


def is_empty(view: ReachDetailView) -> bool:
    """Nothing happened in the steward's workspaces over the report's days."""
    return (not view.totals.questions and not view.causes and not view.workspaces
            and not view.timings and not view.busiest)
