"""What the answer endpoint works with: an answer as the core understands it, and what it
remembers of a clarification's answers (outcomes, request ids, repeats, superseded ones
waiting) for replays (spec §6: a repeat of the same (responder, answer) returns the prior
outcome, ``devcore.order`` says which answers are repeats).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from bot.core.models import (
    AnswerCustom,
    AnswerResult,
    BindingStatus,
    Clarification,
    EvidenceClass,
    Interval,
    ResponseRecord,
    Role,
)
from bot.core.models import (
    Channel as ContractChannel,
)
from devcore.normalise import Span
from devcore.order import Repeat, neighbours, points


@dataclass(frozen=True, slots=True)
class Answer:
    """An answer after authentication and normalisation: whom it is from and what it means."""

    responder: str
    rights: Role
    span: Span
    answer_index: int | None
    answer_custom: AnswerCustom | None
    channel: ContractChannel
    message_ref: str | None
    steward_override: bool
    # answer-order: when the responder answered (the platform's clock), and whether the caller
    # holds a later answer of theirs that follows
    responded_at: datetime | None = None
    superseded: bool = False

    def interval(self) -> Interval:
        return Interval(valid_from=self.span.valid_from, valid_to=self.span.valid_to)


@dataclass(frozen=True, slots=True)
class Decision:
    result: AnswerResult
    bind: Interval | None = None
    evidence: EvidenceClass | None = None


def same_interval(a: Interval, b: Interval) -> bool:
    return a.valid_from == b.valid_from and a.valid_to == b.valid_to


class AnswerBook:
    """Per-clarification memory of each response's outcome, for idempotent replay."""

    def __init__(self) -> None:
        self.outcomes: dict[str, AnswerResult] = {}
        # (responder, requestId) → the response it produced: a resent request is answered, not
        # applied again (a replay after a newer answer must not supersede it)
        self.requests: dict[tuple[str, str], str] = {}
        # response id → the same answer given again, by time (``devcore.order``)
        self.repeats: dict[str, list[Repeat]] = {}
        # responses sent as superseded whose successor has not arrived yet: never counted
        self.pending: set[str] = set()
        self._ids = 0

    def next_id(self) -> str:
        self._ids += 1
        return f"resp-{self._ids:06d}"


def same(record: ResponseRecord, answer: Answer) -> bool:
    """The same answer: the same normalised interval and override flag (spec §6)."""
    was_override = record.binding_status is BindingStatus.STEWARD_OVERRIDE
    return same_interval(record.interval, answer.interval()) \
        and was_override == answer.steward_override


def replay(c: Clarification, answer: Answer, book: AnswerBook) -> AnswerResult | None:
    """The first outcome of the response this answer repeats (``devcore.order``: equal to the
    one given right before or right after it), or None; the repeat is kept beside it."""
    before, after = neighbours(c, answer.responder, answer.responded_at, book.repeats)
    for record in (before, after):
        if record is None or not same(record, answer):
            continue
        if record.response_id in book.pending and not answer.superseded:
            return None  # the one sent as superseded, now the latest: evaluated (same_as_pending)
        note_repeat(book, record, answer)
        return book.outcomes[record.response_id].model_copy(update={"replayed": True})
    return None


def note_repeat(book: AnswerBook, record: ResponseRecord, answer: Answer) -> None:
    """Keep ``answer``, the same as ``record``, as a repeat of it when it was given at another
    time (a resend of the same action, or an answer without a time, adds nothing)."""
    at = answer.responded_at
    if at is None or record.responded_at is None or not same(record, answer) \
            or at in points(record, book.repeats):
        return
    kept = book.repeats.setdefault(record.response_id, [])
    kept.append(Repeat(at, answer.channel, answer.message_ref, answer.rights))
    kept.sort(key=lambda r: r.at)
