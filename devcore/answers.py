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
    # answer-order: when the responder answered (the platform's clock), and whether the caller
    # holds a later answer of theirs that follows
    responded_at: datetime | None = None
    superseded: bool = False

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
        # (responder, requestId) → the response it produced: a resent request is answered, not
        # applied again (a replay after a newer answer must not supersede it)
        self.requests: dict[tuple[str, str], str] = {}
        # responses sent as superseded whose successor has not arrived yet: never counted
        self.pending: set[str] = set()
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
    """Apply one answer to the clarification and return what happened.

    Replays come first: the same (responder, answer) gets its first outcome back whatever changed
    since, so a resent steward override is never refused by a policy check it once passed.
    """
    replay = _replay(c, answer, book)
    if replay is not None:
        return Decision(result=replay)
    _check_override(c, answer)
    turn = _Turn(c=c, answer=answer, book=book, now=now, add_event=add_event)
    if answer.steward_override:
        return turn.override()
    activated = turn.same_as_pending()
    if activated is not None:
        return activated
    if turn.earlier():
        return turn.superseded()
    if c.state is m.ClarificationState.ANSWERED:
        return turn.after_binding()
    return turn.before_binding()


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


def _after(record: m.ResponseRecord, latest: m.ResponseRecord | None) -> bool:
    """Whether ``record`` (recorded after ``latest``) replaces it as its responder's latest:
    by when each was given where the caller said both (answer-order), else by recording."""
    if latest is None:
        return True
    if record.responded_at is not None and latest.responded_at is not None:
        return record.responded_at >= latest.responded_at
    return True


def _latest(c: m.Clarification, responder: str) -> m.ResponseRecord | None:
    """The responder's latest response: by when it was given, else the last recorded."""
    latest: m.ResponseRecord | None = None
    for record in c.responses:
        if record.responder == responder and _after(record, latest):
            latest = record
    return latest


def _replay(c: m.Clarification, answer: Answer, book: AnswerBook) -> m.AnswerResult | None:
    latest = _latest(c, answer.responder)
    if latest is None or not same_interval(latest.interval, answer.interval()):
        return None
    if latest.response_id in book.pending or answer.superseded:
        return None  # nothing was evaluated on it: the answer is recorded and counts
    if answer.responded_at is not None and latest.responded_at is not None \
            and answer.responded_at < latest.responded_at:
        return None  # an earlier answer, arriving late: recorded as superseded
    was_override = latest.binding_status is m.BindingStatus.STEWARD_OVERRIDE
    if was_override != answer.steward_override:
        return None
    prior = book.outcomes[latest.response_id]
    return prior.model_copy(update={"replayed": True})


_COUNTED = (m.BindingStatus.BOUND, m.BindingStatus.STEWARD_OVERRIDE)


def binding_capable(c: m.Clarification, rights: m.Role) -> bool:
    lowest = min((role.rank for role in c.quorum_policy.required_roles), default=m.Role.EDITOR.rank)
    return rights.rank >= lowest


def _active(c: m.Clarification, book: AnswerBook) -> list[m.ResponseRecord]:
    """Each responder's latest binding-capable response (by when it was given): the ones quorum
    counts. A response sent as superseded counts for nothing, and neither does its responder
    until their later answer arrives."""
    latest: dict[str, m.ResponseRecord] = {}
    for record in c.responses:
        if _after(record, latest.get(record.responder)):
            latest[record.responder] = record
    return [r for r in latest.values() if r.binding_status is m.BindingStatus.BINDING_CANDIDATE
            and r.response_id not in book.pending]


def _distinct(records: list[m.ResponseRecord]) -> list[m.Interval]:
    distinct: list[m.Interval] = []
    for r in records:
        if not any(same_interval(r.interval, d) for d in distinct):
            distinct.append(r.interval)
    return distinct


@dataclass(slots=True)
class _Turn:
    """One answer being applied: the clarification, the answer and where outcomes go."""

    c: m.Clarification
    answer: Answer
    book: AnswerBook
    now: datetime
    add_event: EventSink

    def event(self, type_: str, message: str, *, by_responder: bool = False,
              to_steward: bool = False) -> None:
        who = self.answer.responder if by_responder else None
        person = self.c.workspace.steward_id if to_steward else who
        self.add_event(self.c, type_, message, person_id=person, actor=who)

    def earlier(self) -> bool:
        """The answer is superseded already: the caller says a later one follows, or it was
        given before the responder's latest response (it arrived late)."""
        if self.answer.superseded:
            return True
        latest = _latest(self.c, self.answer.responder)
        return (latest is not None and self.answer.responded_at is not None
                and latest.responded_at is not None
                and self.answer.responded_at < latest.responded_at)

    def same_as_pending(self) -> Decision | None:
        """The answer the caller sent as superseded came again as the latest (one person's
        double click): that response is theirs, now evaluated; nothing new is recorded."""
        c, answer = self.c, self.answer
        latest = _latest(c, answer.responder)
        if (latest is None or latest.response_id not in self.book.pending or answer.superseded
                or not same_interval(latest.interval, answer.interval())
                or c.state is m.ClarificationState.ANSWERED):
            return None
        self.book.pending.discard(latest.response_id)
        if c.state is m.ClarificationState.CONFLICTED:
            return Decision(result=self.result(latest, m.AnswerOutcome.CONFLICTED))
        return self.evaluate_quorum(latest)

    def superseded(self) -> Decision:
        """Record it (append-only: the change of mind stays on the record) and evaluate
        nothing: the state, the quorum and any bound correction stay as they are."""
        c, answer = self.c, self.answer
        capable = binding_capable(c, answer.rights)
        status = m.BindingStatus.BINDING_CANDIDATE if capable else m.BindingStatus.ATTESTATION
        latest = _latest(c, answer.responder)
        older = (latest is not None and answer.responded_at is not None
                 and latest.responded_at is not None
                 and answer.responded_at < latest.responded_at)
        record = m.ResponseRecord(
            response_id=self.book.next_id(), responder=answer.responder,
            rights_at_answer_time=answer.rights, answer_index=answer.answer_index,
            answer_custom=answer.answer_custom, interval=answer.interval(),
            channel=answer.channel, message_ref=answer.message_ref, response_tx=self.now,
            binding_status=status, responded_at=answer.responded_at)
        if older:  # given before the responder's latest: it arrived late
            assert latest is not None
            record.superseded_by = latest.response_id
        elif answer.superseded:  # the caller holds a later one, sent next
            self.book.pending.add(record.response_id)
            if latest is not None and latest.response_id in self.book.pending:
                self.book.pending.discard(latest.response_id)
                latest.superseded_by = record.response_id
                record.supersedes = latest.response_id
        c.responses.append(record)
        c.updated_at = self.now
        self.event("response_superseded", "A response was recorded as superseded by a later "
                   "answer of the same responder; it does not count.", by_responder=True)
        result = self.result(record, m.AnswerOutcome.ATTESTATION)
        result = result.model_copy(update={"superseded": True})
        self.book.outcomes[record.response_id] = result
        return Decision(result=result)

    def append(self, status: m.BindingStatus) -> m.ResponseRecord:
        c, answer = self.c, self.answer
        previous = _latest(c, answer.responder)
        record = m.ResponseRecord(
            response_id=self.book.next_id(),
            responder=answer.responder,
            rights_at_answer_time=answer.rights,
            answer_index=answer.answer_index,
            answer_custom=answer.answer_custom,
            interval=answer.interval(),
            channel=answer.channel,
            message_ref=answer.message_ref,
            response_tx=self.now,
            binding_status=status,
            supersedes=previous.response_id
            if previous and c.state is not m.ClarificationState.ANSWERED
            else None,
            responded_at=answer.responded_at,
        )
        if previous is not None:
            self.book.pending.discard(previous.response_id)
            if record.supersedes is not None:
                previous.superseded_by = record.response_id
        c.responses.append(record)
        c.updated_at = self.now
        return record

    def result(self, record: m.ResponseRecord, outcome: m.AnswerOutcome) -> m.AnswerResult:
        c = self.c
        result = m.AnswerResult(
            outcome=outcome,
            clarification_id=c.id,
            state=c.state,
            quorum_state=c.quorum.state,
            response_id=record.response_id,
            quorum_satisfied=c.state is m.ClarificationState.ANSWERED,
            quorum_remaining=c.quorum.remaining,
            confirmed_by=list(c.quorum.confirmed_by),
            bound_interval=c.bound_interval,
        )
        self.book.outcomes[record.response_id] = result
        return result

    def quorum(self, state: m.QuorumState, *, counted: list[str], remaining: int) -> None:
        self.c.quorum = self.c.quorum.model_copy(update={
            "state": state, "confirmations": len(counted), "remaining": remaining,
            "confirmed_by": counted,
        })

    # ------------------------------------------------------------ the outcome matrix

    def override(self) -> Decision:
        record = self.append(m.BindingStatus.STEWARD_OVERRIDE)
        self.c.state = m.ClarificationState.ANSWERED
        self.quorum(m.QuorumState.SATISFIED, counted=[self.answer.responder], remaining=0)
        self.c.bound_interval = self.answer.interval()
        self.event("steward_override", "A steward override was recorded; prior responses are "
                   "kept.", by_responder=True)
        result = self.result(record, m.AnswerOutcome.STEWARD_OVERRIDE)
        return Decision(result=result, bind=self.answer.interval(),
                        evidence=m.EvidenceClass.STEWARD_OVERRIDE)

    def after_binding(self) -> Decision:
        c, answer = self.c, self.answer
        assert c.bound_interval is not None
        if same_interval(c.bound_interval, answer.interval()):
            if answer.responder in c.quorum.confirmed_by:
                counted = next(
                    r for r in reversed(c.responses)
                    if r.responder == answer.responder and r.binding_status in _COUNTED
                )
                prior = self.book.outcomes[counted.response_id]
                return Decision(result=prior.model_copy(update={"replayed": True}))
            raise CoreFault(ErrorCode.CLARIFY_ALREADY_ANSWERED)
        record = self.append(m.BindingStatus.CONFLICTING)
        self.event("post_binding_conflict", "A conflicting answer arrived after binding; "
                   "recorded as a conflicting attestation.", by_responder=True)
        self.event("steward_notified", "The steward was notified of a post-binding conflict.",
                   to_steward=True)
        return Decision(result=self.result(record, m.AnswerOutcome.CONFLICTING_ATTESTATION))

    def before_binding(self) -> Decision:
        capable = binding_capable(self.c, self.answer.rights)
        if capable:
            record = self.append(m.BindingStatus.BINDING_CANDIDATE)
            self.event("response_recorded", "A binding-capable response was recorded.",
                       by_responder=True)
        else:
            record = self.append(m.BindingStatus.ATTESTATION)
            self.event("attestation_recorded", "A viewer's answer was recorded as an attestation.",
                       by_responder=True)
        if self.c.state is m.ClarificationState.CONFLICTED:
            return Decision(result=self.result(record, m.AnswerOutcome.CONFLICTED))
        return self.evaluate_quorum(record)

    def evaluate_quorum(self, record: m.ResponseRecord) -> Decision:
        c = self.c
        active = _active(c, self.book)
        required = c.quorum_policy.required_confirmations
        if len(_distinct(active)) > 1:
            c.state = m.ClarificationState.CONFLICTED
            self.quorum(m.QuorumState.CONFLICTED, counted=[], remaining=required)
            self.event("conflict_entered", "Binding-capable responses disagree.")
            self.event("steward_review_requested", "The steward must review the conflict.",
                       to_steward=True)
            return Decision(result=self.result(record, m.AnswerOutcome.CONFLICTED))
        if len(active) >= required:
            return self.bind(record, active)
        if active:
            c.state = m.ClarificationState.PARTIALLY_CONFIRMED
            remaining = required - len(active)
            self.quorum(m.QuorumState.PENDING, counted=[r.responder for r in active],
                        remaining=remaining)
            self.event("quorum_pending", f"{remaining} more confirmation(s) required.")
            capable = record.binding_status is m.BindingStatus.BINDING_CANDIDATE
            outcome = (m.AnswerOutcome.PARTIALLY_CONFIRMED if capable
                       else m.AnswerOutcome.ATTESTATION)
            return Decision(result=self.result(record, outcome))
        c.state = m.ClarificationState.ATTESTED
        return Decision(result=self.result(record, m.AnswerOutcome.ATTESTATION))

    def bind(self, record: m.ResponseRecord, active: list[m.ResponseRecord]) -> Decision:
        c = self.c
        for r in active:
            r.binding_status = m.BindingStatus.BOUND
        quorum_required = c.quorum.state is not m.QuorumState.NOT_REQUIRED
        c.state = m.ClarificationState.ANSWERED
        c.bound_interval = record.interval
        state = m.QuorumState.SATISFIED if quorum_required else m.QuorumState.NOT_REQUIRED
        self.quorum(state, counted=[r.responder for r in active], remaining=0)
        if quorum_required:
            self.event("quorum_satisfied", "The required confirmations were received.")
        self.event("bound", "The corrected fact version was created.")
        evidence = (m.EvidenceClass.QUORUM_CONFIRMATION if quorum_required
                    else m.EvidenceClass.HUMAN_CLARIFICATION)
        result = self.result(record, m.AnswerOutcome.BOUND)
        # earlier confirmations now replay as bound too
        for r in active:
            if r.response_id != record.response_id:
                self.book.outcomes[r.response_id] = result.model_copy(
                    update={"response_id": r.response_id})
        return Decision(result=result, bind=record.interval, evidence=evidence)
