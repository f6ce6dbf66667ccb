"""The answer endpoint's rules (spec §5-§6, changelog v0.7): response records, quorum, binding.

Given a clarification and one authenticated, normalised answer, decide the outcome, append the
response record and events, and say whether a corrected fact version must be created. Nothing here
edits a response in place except re-marking the responses that counted as ``bound`` (spec §5).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from bot.core import models as m
from bot.core.errors import ErrorCode
from devcore.faults import CoreFault
from devcore.normalise import Span

_HTTP_FOR = {m.AnswerOutcome.BOUND: 200, m.AnswerOutcome.STEWARD_OVERRIDE: 200}


def http_status(outcome: m.AnswerOutcome) -> int:
    return _HTTP_FOR.get(outcome, 202)


@dataclass(frozen=True, slots=True)
class Answer:
    """An answer after authentication and normalisation: whom it is from and what it means."""

    responder: str
    rights: m.Role
    span: Span
    answer_index: int | None
    answer_custom: m.AnswerCustom | None
    channel: m.Channel
    message_ref: str | None
    steward_override: bool

    def interval(self) -> m.Interval:
        return m.Interval(valid_from=self.span.valid_from, valid_to=self.span.valid_to)


@dataclass(frozen=True, slots=True)
class Decision:
    result: m.AnswerResult
    bind: m.Interval | None = None
    evidence: m.EvidenceClass | None = None


def same_interval(a: m.Interval, b: m.Interval) -> bool:
    return a.valid_from == b.valid_from and a.valid_to == b.valid_to


class AnswerBook:
    """Per-clarification memory of each response's outcome, for idempotent replay."""

    def __init__(self) -> None:
        self.outcomes: dict[str, m.AnswerResult] = {}
        self._ids = 0

    def next_id(self) -> str:
        self._ids += 1
        return f"resp-{self._ids:06d}"


def decide(
    c: m.Clarification,
    answer: Answer,
    *,
    book: AnswerBook,
    now: datetime,
    add_event: EventSink,
) -> Decision:
    """Apply one answer to the clarification and return what happened."""
    _check_override(c, answer)
    replay = _replay(c, answer, book)
    if replay is not None:
        return Decision(result=replay)
    if answer.steward_override:
        return _override(c, answer, book=book, now=now, add_event=add_event)
    if c.state is m.ClarificationState.ANSWERED:
        return _after_binding(c, answer, book=book, now=now, add_event=add_event)
    return _before_binding(c, answer, book=book, now=now, add_event=add_event)


class EventSink(Protocol):
    """Appends one audit event to the clarification; the core supplies it."""

    def __call__(
        self,
        c: m.Clarification,
        type_: str,
        message: str,
        *,
        person_id: str | None = None,
        actor: str | None = None,
    ) -> object: ...


def _check_override(c: m.Clarification, answer: Answer) -> None:
    if not answer.steward_override:
        return
    if answer.rights is not m.Role.STEWARD:
        raise CoreFault(ErrorCode.STEWARD_OVERRIDE_FORBIDDEN)
    if (
        c.state is not m.ClarificationState.CONFLICTED
        and not c.quorum_policy.allow_steward_override
    ):
        raise CoreFault(ErrorCode.STEWARD_OVERRIDE_NOT_ALLOWED)


def _latest(c: m.Clarification, responder: str) -> m.ResponseRecord | None:
    for record in reversed(c.responses):
        if record.responder == responder:
            return record
    return None


def _replay(c: m.Clarification, answer: Answer, book: AnswerBook) -> m.AnswerResult | None:
    latest = _latest(c, answer.responder)
    if latest is None or not same_interval(latest.interval, answer.interval()):
        return None
    was_override = latest.binding_status is m.BindingStatus.STEWARD_OVERRIDE
    if was_override != answer.steward_override:
        return None
    prior = book.outcomes[latest.response_id]
    return prior.model_copy(update={"replayed": True})


def _append(
    c: m.Clarification,
    answer: Answer,
    status: m.BindingStatus,
    *,
    book: AnswerBook,
    now: datetime,
) -> m.ResponseRecord:
    previous = _latest(c, answer.responder)
    record = m.ResponseRecord(
        response_id=book.next_id(),
        responder=answer.responder,
        rights_at_answer_time=answer.rights,
        answer_index=answer.answer_index,
        answer_custom=answer.answer_custom,
        interval=answer.interval(),
        channel=answer.channel,
        message_ref=answer.message_ref,
        response_tx=now,
        binding_status=status,
        supersedes=previous.response_id
        if previous and c.state is not m.ClarificationState.ANSWERED
        else None,
    )
    c.responses.append(record)
    c.updated_at = now
    return record


def _result(
    c: m.Clarification,
    record: m.ResponseRecord,
    outcome: m.AnswerOutcome,
    *,
    book: AnswerBook,
    fact_tx: datetime | None = None,
) -> m.AnswerResult:
    result = m.AnswerResult(
        outcome=outcome,
        clarification_id=c.id,
        state=c.state,
        quorum_state=c.quorum.state,
        response_id=record.response_id,
        quorum_satisfied=c.state is m.ClarificationState.ANSWERED,
        quorum_remaining=c.quorum.remaining,
        confirmed_by=list(c.quorum.confirmed_by),
        fact_version_tx=fact_tx,
        bound_interval=c.bound_interval,
    )
    book.outcomes[record.response_id] = result
    return result


def _override(
    c: m.Clarification,
    answer: Answer,
    *,
    book: AnswerBook,
    now: datetime,
    add_event: EventSink,
) -> Decision:
    record = _append(c, answer, m.BindingStatus.STEWARD_OVERRIDE, book=book, now=now)
    c.state = m.ClarificationState.ANSWERED
    c.quorum = c.quorum.model_copy(
        update={
            "state": m.QuorumState.SATISFIED,
            "remaining": 0,
            "confirmed_by": [answer.responder],
        }
    )
    c.bound_interval = answer.interval()
    add_event(
        c,
        "steward_override",
        "A steward override was recorded; prior responses are kept.",
        person_id=answer.responder,
        actor=answer.responder,
    )
    result = _result(c, record, m.AnswerOutcome.STEWARD_OVERRIDE, book=book)
    return Decision(
        result=result, bind=answer.interval(), evidence=m.EvidenceClass.STEWARD_OVERRIDE
    )


def _after_binding(
    c: m.Clarification,
    answer: Answer,
    *,
    book: AnswerBook,
    now: datetime,
    add_event: EventSink,
) -> Decision:
    assert c.bound_interval is not None
    if same_interval(c.bound_interval, answer.interval()):
        if answer.responder in c.quorum.confirmed_by:
            counted = next(
                r
                for r in reversed(c.responses)
                if r.responder == answer.responder and r.binding_status in _COUNTED
            )
            return Decision(
                result=book.outcomes[counted.response_id].model_copy(update={"replayed": True})
            )
        raise CoreFault(ErrorCode.CLARIFY_ALREADY_ANSWERED)
    record = _append(c, answer, m.BindingStatus.CONFLICTING, book=book, now=now)
    add_event(
        c,
        "post_binding_conflict",
        "A conflicting answer arrived after binding; recorded as a conflicting attestation.",
        person_id=answer.responder,
        actor=answer.responder,
    )
    add_event(
        c,
        "steward_notified",
        "The steward was notified of a post-binding conflict.",
        person_id=c.workspace.steward_id,
    )
    return Decision(result=_result(c, record, m.AnswerOutcome.CONFLICTING_ATTESTATION, book=book))


_COUNTED = (m.BindingStatus.BOUND, m.BindingStatus.STEWARD_OVERRIDE)


def binding_capable(c: m.Clarification, rights: m.Role) -> bool:
    lowest = min((role.rank for role in c.quorum_policy.required_roles), default=m.Role.EDITOR.rank)
    return rights.rank >= lowest


def _active(c: m.Clarification) -> list[m.ResponseRecord]:
    """Each responder's latest binding-capable response: the ones quorum counts."""
    latest: dict[str, m.ResponseRecord] = {}
    for record in c.responses:
        latest[record.responder] = record
    return [r for r in latest.values() if r.binding_status is m.BindingStatus.BINDING_CANDIDATE]


def _before_binding(
    c: m.Clarification,
    answer: Answer,
    *,
    book: AnswerBook,
    now: datetime,
    add_event: EventSink,
) -> Decision:
    capable = binding_capable(c, answer.rights)
    status = m.BindingStatus.BINDING_CANDIDATE if capable else m.BindingStatus.ATTESTATION
    record = _append(c, answer, status, book=book, now=now)
    if not capable:
        add_event(
            c,
            "attestation_recorded",
            "A viewer's answer was recorded as an attestation.",
            person_id=answer.responder,
            actor=answer.responder,
        )
    else:
        add_event(
            c,
            "response_recorded",
            "A binding-capable response was recorded.",
            person_id=answer.responder,
            actor=answer.responder,
        )
    if c.state is m.ClarificationState.CONFLICTED:
        return Decision(result=_result(c, record, m.AnswerOutcome.CONFLICTED, book=book))
    return _evaluate_quorum(c, record, book=book, add_event=add_event)


def _evaluate_quorum(
    c: m.Clarification,
    record: m.ResponseRecord,
    *,
    book: AnswerBook,
    add_event: EventSink,
) -> Decision:
    active = _active(c)
    distinct: list[m.Interval] = []
    for r in active:
        if not any(same_interval(r.interval, d) for d in distinct):
            distinct.append(r.interval)
    required = c.quorum_policy.required_confirmations
    if len(distinct) > 1:
        c.state = m.ClarificationState.CONFLICTED
        c.quorum = c.quorum.model_copy(
            update={
                "state": m.QuorumState.CONFLICTED,
                "confirmations": 0,
                "remaining": required,
                "confirmed_by": [],
            }
        )
        add_event(c, "conflict_entered", "Binding-capable responses disagree.")
        add_event(
            c,
            "steward_review_requested",
            "The steward must review the conflict.",
            person_id=c.workspace.steward_id,
        )
        return Decision(result=_result(c, record, m.AnswerOutcome.CONFLICTED, book=book))
    confirmations = len(active)
    confirmed_by = [r.responder for r in active]
    if confirmations >= required:
        return _bind(c, record, active, book=book, add_event=add_event)
    if confirmations >= 1:
        c.state = m.ClarificationState.PARTIALLY_CONFIRMED
        c.quorum = c.quorum.model_copy(
            update={
                "state": m.QuorumState.PENDING,
                "confirmations": confirmations,
                "remaining": required - confirmations,
                "confirmed_by": confirmed_by,
            }
        )
        add_event(c, "quorum_pending", f"{required - confirmations} more confirmation(s) required.")
        outcome = (
            m.AnswerOutcome.PARTIALLY_CONFIRMED
            if record.binding_status is m.BindingStatus.BINDING_CANDIDATE
            else m.AnswerOutcome.ATTESTATION
        )
        return Decision(result=_result(c, record, outcome, book=book))
    c.state = m.ClarificationState.ATTESTED
    return Decision(result=_result(c, record, m.AnswerOutcome.ATTESTATION, book=book))


def _bind(
    c: m.Clarification,
    record: m.ResponseRecord,
    active: list[m.ResponseRecord],
    *,
    book: AnswerBook,
    add_event: EventSink,
) -> Decision:
    for r in active:
        r.binding_status = m.BindingStatus.BOUND
    quorum_required = c.quorum.state is not m.QuorumState.NOT_REQUIRED
    c.state = m.ClarificationState.ANSWERED
    c.bound_interval = record.interval
    c.quorum = c.quorum.model_copy(
        update={
            "state": m.QuorumState.SATISFIED if quorum_required else m.QuorumState.NOT_REQUIRED,
            "confirmations": len(active),
            "remaining": 0,
            "confirmed_by": [r.responder for r in active],
        }
    )
    if quorum_required:
        add_event(c, "quorum_satisfied", "The required confirmations were received.")
    add_event(c, "bound", "The corrected fact version was created.")
    evidence = (
        m.EvidenceClass.QUORUM_CONFIRMATION
        if quorum_required
        else m.EvidenceClass.HUMAN_CLARIFICATION
    )
    result = _result(c, record, m.AnswerOutcome.BOUND, book=book)
    # earlier confirmations now replay as bound too
    for r in active:
        if r.response_id != record.response_id:
            book.outcomes[r.response_id] = result.model_copy(update={"response_id": r.response_id})
    return Decision(result=result, bind=record.interval, evidence=evidence)
