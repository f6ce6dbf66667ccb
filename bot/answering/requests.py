"""A verified answer as the core's answer request: its idempotency key, the platform's time of
the action, the custom answer's interval and the responder's rights."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from bot.audit import occurrence_of
from bot.chat import Callback
from bot.clock import Clock
from bot.core.models import (
    AnswerCustomInput,
    AnswerRequest,
    Person,
    Role,
)
from bot.core.models import (
    Channel as ContractChannel,
)


def request_id(entry_id: str) -> str:
    """The outbox entry as the core's idempotency key: a resend is answered, never re-applied."""
    return "ans." + hashlib.sha256(entry_id.encode()).hexdigest()[:40]


def responded_at(cb: Callback) -> datetime | None:
    """The platform's time of the action (``Callback.acted_at``), as the core's respondedAt."""
    return datetime.fromtimestamp(cb.acted_at / 1_000_000, UTC) if cb.acted_at > 0 else None


def answer_request(cb: Callback, person: Person, *, rights: Role | None,
                   channel: ContractChannel, request_id: str | None = None,
                   superseded: bool = False) -> AnswerRequest:
    """``channel``: the contract's word the answer's platform declares
    (``bot.channel.ContractWords``)."""
    custom = None
    if cb.answer_index is None:
        # people pick the last valid day; the core's intervals end exclusively the day after
        end = cb.custom_to + timedelta(days=1) if cb.custom_to else None
        custom = AnswerCustomInput(
            valid_from=cb.custom_from.isoformat() if cb.custom_from else None,
            valid_to=end.isoformat() if end else None,
            source_text=cb.custom_note or None,
        )
    return AnswerRequest(
        answer_index=cb.answer_index, answer_custom=custom, responder=person.person_id,
        rights=rights or Role.VIEWER, channel=channel,
        message_ref=cb.message_ref[:500] if cb.message_ref else None, request_id=request_id,
        steward_override=cb.steward_override, note=cb.override_note or None,
        responded_at=responded_at(cb), superseded=True if superseded else None,
    )


def with_acted(cb: Callback, clock: Clock) -> Callback:
    """The callback as ``accept`` stored it (the time of receipt when the platform gave none)."""
    if cb.acted_at > 0:
        return cb
    received = cb.received_at or clock.now()
    return replace(cb, acted_at=round(received.timestamp() * 1_000_000))


def occurrence(cb: Callback) -> str:
    """One answer (or refusal) a callback: a resent callback is the same one, a later answer
    of the same person another."""
    return occurrence_of(cb.platform, cb.user_id, cb.card_ref, cb.answer_index, cb.acted_at,
                         cb.custom_from, cb.custom_to)
