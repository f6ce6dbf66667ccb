"""Any card view model through one platform's renderer module: the only place that maps views
to render functions. ``cards.slack`` and ``cards.teams`` name their functions alike, so one
dispatch serves both (``adapters/<platform>/render.py`` bind it to their module)."""

from __future__ import annotations

from types import ModuleType
from typing import Any

from cards.actions import ActionCodec
from cards.reach_views import ReachReportView
from cards.views import (
    DeadLetterDigestView,
    DigestView,
    OutcomeView,
    QuestionView,
    ReminderView,
    StewardConflictView,
    StewardEscalationView,
    StewardNoticesView,
    StewardNoticeView,
    StewardQuorumView,
)


def render_with(renderer: ModuleType, view: object, *, codec: ActionCodec,
                platform: str) -> dict[str, Any]:
    """``view`` rendered by ``renderer`` (``cards.slack`` or ``cards.teams``)."""
    match view:
        case QuestionView():
            return renderer.render_question(view, codec=codec)
        case ReminderView():
            return renderer.render_reminder(view)
        case DigestView():
            return renderer.render_digest(view, codec=codec)
        case OutcomeView():
            return renderer.render_outcome(view)
        case StewardEscalationView():
            return renderer.render_steward_escalation(view)
        case StewardNoticeView():
            return renderer.render_steward_notice(view)
        case StewardNoticesView():
            return renderer.render_steward_notices(view)
        case StewardQuorumView():
            return renderer.render_steward_quorum(view, codec)
        case StewardConflictView():
            return renderer.render_steward_conflict(view, codec)
        case DeadLetterDigestView():
            return renderer.render_dead_letter_digest(view)
        case ReachReportView():
            return renderer.render_reach_report(view)
    raise TypeError(f"no {platform} rendering for {type(view).__name__}")
