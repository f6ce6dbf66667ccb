"""What a clicked card shows in the click's own response, for platforms whose acknowledgement
carries the card (Teams answers an ``Action.Execute`` invoke with its replacement).

Decided here, once, from the answer path's verdict: the adapter only renders it. A card that
would only repeat what the follow-ups paint anyway (``bot.answering.followups``) is left as it is,
with a
short message: a repeated click must never put an older state back on a card.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from bot.answering.answers import AnswerStatus, Receipt
from bot.answering.followups import Note
from bot.answering.waiting import CoreReach, waiting_kind
from bot.chat import Callback
from bot.engine import outcomes
from bot.engine.aliases import Unlinked
from cards.views import OutcomeView

NOT_AVAILABLE = (AnswerStatus.OUT_OF_SCOPE, AnswerStatus.NOT_ALLOWED, AnswerStatus.INVALID,
                 AnswerStatus.PARKED)


@dataclass(frozen=True, slots=True)
class Shown:
    """A card to put in place of the clicked one, or a catalog key to say instead."""

    view: OutcomeView | None = None
    text_key: str | None = None


def after_click(cb: Callback, receipt: Receipt | None, *, now: datetime,
                reach: CoreReach | None) -> Shown:
    """``receipt``: what forwarding said within the platform's deadline, None when the core did
    not answer in time (the follow-ups update the card when it does). A durable answer not at
    the core yet is "being recorded", and "cannot be reached" only while ``reach`` says the
    core is failing (``bot.answering.waiting``, the decision Slack's note takes too)."""
    if receipt is None or receipt.verdict is AnswerStatus.QUEUED:
        return Shown(view=outcomes.placeholder(
            waiting_kind(reach), cb.clarification_id, now=now,
            answer=None if cb.answer_index is not None
            else outcomes.custom_answer_view(cb.custom_from, cb.custom_to)))
    if receipt.view is not None:
        return Shown(view=receipt.view)
    if receipt.verdict is AnswerStatus.UNVERIFIED:
        why = receipt.shown.unlinked if isinstance(receipt.shown, Note) else None
        return Shown(view=outcomes.unlinked(why or Unlinked.UNVERIFIED, cb.clarification_id,
                                            now=now))
    if receipt.verdict in NOT_AVAILABLE:
        return Shown(text_key="answer.not_available")
    return Shown(text_key="answer.received")  # a duplicate, a superseded one, repainted meanwhile


def unverified(clarification_id: str, *, now: datetime) -> OutcomeView:
    """The identity card: the chat identity is not a verified enterprise identity."""
    return outcomes.unlinked(Unlinked.UNVERIFIED, clarification_id, now=now)
