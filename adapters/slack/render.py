"""Picks the Block Kit renderer for a view model: the only place that maps views to cards."""

from __future__ import annotations

from typing import Any

from cards import slack as blocks
from cards.actions import ActionCodec
from cards.views import (
    DeadLetterDigestView,
    DigestView,
    OutcomeView,
    QuestionView,
    StewardConflictView,
    StewardEscalationView,
    StewardNoticeView,
    StewardQuorumView,
)


def render(view: object, *, codec: ActionCodec) -> dict[str, Any]:
    """A ``{text, blocks}`` message for any card view model."""
    match view:
        case QuestionView():
            return blocks.render_question(view, codec=codec)
        case DigestView():
            return blocks.render_digest(view, codec=codec)
        case OutcomeView():
            return blocks.render_outcome(view)
        case StewardEscalationView():
            return blocks.render_steward_escalation(view)
        case StewardNoticeView():
            return blocks.render_steward_notice(view)
        case StewardQuorumView():
            return blocks.render_steward_quorum(view, codec)
        case StewardConflictView():
            return blocks.render_steward_conflict(view, codec)
        case DeadLetterDigestView():
            return blocks.render_dead_letter_digest(view)
    raise TypeError(f"no Slack rendering for {type(view).__name__}")
