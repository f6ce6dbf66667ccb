"""Picks the Adaptive Card renderer for a view model: the only place that maps views to Teams
cards, and wraps a card as the attachment a Bot Framework activity carries."""

from __future__ import annotations

from typing import Any

from cards import teams as adaptive
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

CARD_CONTENT_TYPE = "application/vnd.microsoft.card.adaptive"


def render(view: object, *, codec: ActionCodec) -> dict[str, Any]:
    """An Adaptive Card (its JSON object) for any card view model."""
    match view:
        case QuestionView():
            return adaptive.render_question(view, codec=codec)
        case DigestView():
            return adaptive.render_digest(view, codec=codec)
        case OutcomeView():
            return adaptive.render_outcome(view)
        case StewardEscalationView():
            return adaptive.render_steward_escalation(view)
        case StewardNoticeView():
            return adaptive.render_steward_notice(view)
        case StewardQuorumView():
            return adaptive.render_steward_quorum(view, codec)
        case StewardConflictView():
            return adaptive.render_steward_conflict(view, codec)
        case DeadLetterDigestView():
            return adaptive.render_dead_letter_digest(view)
    raise TypeError(f"no Teams rendering for {type(view).__name__}")


def attachment(card: dict[str, Any]) -> dict[str, Any]:
    """The card as a message attachment (``Attachment`` on the wire)."""
    return {"contentType": CARD_CONTENT_TYPE, "content": card}
