"""View models of the steward's reach report (who questions could not reach, and why): the
weekly message and its detail. Counts, cause codes and display names only: like the other
steward views they have no field for a question, a title or a span."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from bot.core.models import Severity
from cards.views import Viewer

# the cause groups of a person not reached, as the reach record groups them
# (``bot.reach.causes.CAUSES``): each has a label and a fix in the catalogs
REACH_CAUSES = ("no_alias", "ambiguous_alias", "no_read_permission", "app_not_installed",
                "install_permission_missing", "install_not_own_app", "app_blocked_by_policy",
                "no_teams_licence", "install_refused", "blocked_or_uninstalled", "deactivated",
                "tenant_scope", "delivery_failed", "away")
REACH_NAMES_MAX = 10  # names one cause lists in the detail; the rest is a count
REACH_TOP_CAUSES = 3  # causes the weekly message lists; the rest is a count


@dataclass(frozen=True)
class ReachTotals:
    """What happened to the questions of the steward's workspaces over the report's days."""

    questions: int = 0
    asked: int = 0  # questions at least one person was sent (a card or a digest)
    bound: int = 0
    open: int = 0
    escalated: int = 0
    dead_lettered: int = 0
    bound_before_escalation: float | None = None  # a share (0-1) of those asked
    median_hours: float | None = None  # first card to bound answer, wall time
    median_working_hours: float | None = None  # the same, in working hours


@dataclass(frozen=True)
class ReachCauseView:
    """One cause of people not reached (``REACH_CAUSES``): how many people, the questions it
    cost; in the detail, their display names (at most ``REACH_NAMES_MAX``; ``more`` the rest)."""

    cause: str
    people: int
    questions: int
    names: tuple[str, ...] = ()
    more: int = 0


@dataclass(frozen=True)
class ReachTimingView:
    """Time from the first card to the bound answer, for one severity (hours)."""

    severity: Severity
    bound: int
    median_hours: float | None
    p90_hours: float | None
    median_working_hours: float | None = None
    p90_working_hours: float | None = None


@dataclass(frozen=True)
class ReachWorkspaceView:
    """One workspace and platform's line of the detail (``workspace``: its name, else its id)."""

    workspace: str
    platform: str
    totals: ReachTotals


@dataclass(frozen=True)
class ReachReportView:
    """The steward's weekly reach report (a message): the totals of their workspaces over
    ``start``-``end`` (days in their zone, both included), the top causes of people not reached
    (counts only: ``causes`` at most ``REACH_TOP_CAUSES``, ``more_causes`` the rest), and a
    button to the detail. No names, no span text, no question, no title."""

    viewer: Viewer
    start: date
    end: date
    totals: ReachTotals
    causes: tuple[ReachCauseView, ...] = ()
    more_causes: int = 0
    unreached: int = 0  # people not reached, every cause together


@dataclass(frozen=True)
class ReachDetailView:
    """The detail a steward opens from the weekly report (Slack: the App Home's Reach tab;
    Teams: a card): per workspace and platform, time to bound answer by severity, every cause
    with the names of the people it kept from being reached and its fix, and the people
    interrupted most (display name, cards + reminders + digests in the busiest week).
    ``steward`` False: the person stewards no workspace: "nothing for you here".
    ``unavailable``: the record or the core could not be read just now."""

    viewer: Viewer
    steward: bool
    start: date | None = None
    end: date | None = None
    totals: ReachTotals = ReachTotals()
    workspaces: tuple[ReachWorkspaceView, ...] = ()
    timings: tuple[ReachTimingView, ...] = ()
    causes: tuple[ReachCauseView, ...] = ()
    busiest: tuple[tuple[str, int], ...] = ()  # (display name, interruptions), most first
    interruptions_median: float | None = None  # per person and week
    interruptions_p95: float | None = None
    unavailable: bool = False
