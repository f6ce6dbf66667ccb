"""The answer endpoint's rules (spec §5-§6, changelog v0.7): response records, quorum, binding.

Given a clarification and one authenticated, normalised answer, decide the outcome, append the
response record and events, and say whether a corrected fact version must be created. Nothing here
edits a response in place except re-marking the responses that counted as ``bound`` (spec §5).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from bot.core.errors import ErrorCode
from bot.core.models import (
    AnswerOutcome,
    AnswerResult,
    BindingStatus,
    Clarification,
    ClarificationState,
    EvidenceClass,
    Interval,
    QuorumState,
    ResponseRecord,
    Role,
)
from devcore.book import Answer, AnswerBook, Decision, note_repeat, replay, same, same_interval
from devcore.faults import CoreFault
from devcore.order import given, is_after, latest_of, straddled

_HTTP_FOR = {AnswerOutcome.BOUND: 200, AnswerOutcome.STEWARD_OVERRIDE: 200}


def http_status(outcome: AnswerOutcome) -> int:
    return _HTTP_FOR.get(outcome, 202)


def decide(
    c: Clarification,
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
    replay_ = replay(c, answer, book)
    if replay_ is not None:
        return Decision(result=replay_)
    _check_override(c, answer)
    turn = _Turn(c=c, answer=answer, book=book, now=now, add_event=add_event)
    if answer.steward_override:
        return turn.override()
    activated = turn.same_as_pending()
    if activated is not None:
        return activated
    if turn.earlier():
        return turn.superseded()
    if c.state is ClarificationState.ANSWERED:
        return turn.after_binding()
    return turn.before_binding()


class EventSink(Protocol):
    """Appends one audit event to the clarification; the core supplies it."""

    def __call__(
        self,
        c: Clarification,
        type_: str,
        message: str,
        *,
        person_id: str | None = None,
        actor: str | None = None,
    ) -> object: ...


def _check_override(c: Clarification, answer: Answer) -> None:
    if not answer.steward_override:
        return
    if answer.rights is not Role.STEWARD:
        raise CoreFault(ErrorCode.STEWARD_OVERRIDE_FORBIDDEN)
    if (
        c.state is not ClarificationState.CONFLICTED
        and not c.quorum_policy.allow_steward_override
    ):
        raise CoreFault(ErrorCode.STEWARD_OVERRIDE_NOT_ALLOWED)


_COUNTED = (BindingStatus.BOUND, BindingStatus.STEWARD_OVERRIDE)


def binding_capable(c: Clarification, rights: Role) -> bool:
    lowest = min((role.rank for role in c.quorum_policy.required_roles), default=Role.EDITOR.rank)
    return rights.rank >= lowest


def _active(c: Clarification, book: AnswerBook) -> list[ResponseRecord]:
    """Each responder's latest binding-capable response (by when it was given): the ones quorum
    counts. A response sent as superseded counts for nothing, and neither does its responder
    until their later answer arrives."""
    latest: dict[str, ResponseRecord] = {}
    for record in c.responses:
        if is_after(record, latest.get(record.responder), book.repeats):
            latest[record.responder] = record
    return [r for r in latest.values() if r.binding_status is BindingStatus.BINDING_CANDIDATE
            and r.response_id not in book.pending]


def _distinct(records: list[ResponseRecord]) -> list[Interval]:
    distinct: list[Interval] = []
    for r in records:
        if not any(same_interval(r.interval, d) for d in distinct):
            distinct.append(r.interval)
    return distinct


@dataclass(slots=True)
class _Turn:
    """One answer being applied: the clarification, the answer and where outcomes go."""

    c: Clarification
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
        return self.answer.superseded or self.before_latest() is not None

    def before_latest(self) -> ResponseRecord | None:
        """The responder's latest response, when this answer was given before it was last
        given (it arrived late); else None."""
        latest = latest_of(self.c, self.answer.responder, self.book.repeats)
        last = given(latest, self.book.repeats) if latest is not None else None
        at = self.answer.responded_at
        return latest if at is not None and last is not None and at < last else None

    def same_as_pending(self) -> Decision | None:
        """The answer the caller sent as superseded came again as the latest (one person's
        double click): that response is theirs, now evaluated, and given again at this
        answer's time (a repeat); nothing new is recorded."""
        c, answer = self.c, self.answer
        latest = latest_of(c, answer.responder, self.book.repeats)
        if (latest is None or latest.response_id not in self.book.pending or answer.superseded
                or not same(latest, answer) or c.state is ClarificationState.ANSWERED):
            return None
        self.book.pending.discard(latest.response_id)
        note_repeat(self.book, latest, answer)
        if c.state is ClarificationState.CONFLICTED:
            return Decision(result=self.result(latest, AnswerOutcome.CONFLICTED))
        return self.evaluate_quorum(latest)

    def superseded(self) -> Decision:
        """Record it (append-only: the change of mind stays on the record) and evaluate
        nothing: the state, the quorum and any bound correction stay as they are."""
        c, answer = self.c, self.answer
        capable = binding_capable(c, answer.rights)
        status = BindingStatus.BINDING_CANDIDATE if capable else BindingStatus.ATTESTATION
        later = self.before_latest()
        record = ResponseRecord(
            response_id=self.book.next_id(), responder=answer.responder,
            rights_at_answer_time=answer.rights, answer_index=answer.answer_index,
            answer_custom=answer.answer_custom, interval=answer.interval(),
            channel=answer.channel, message_ref=answer.message_ref, response_tx=self.now,
            binding_status=status, responded_at=answer.responded_at)
        if later is not None:  # given before the responder's latest: it arrived late
            record.superseded_by = later.response_id
        elif answer.superseded:  # the caller holds a later one, sent next
            self.book.pending.add(record.response_id)
            latest = latest_of(c, answer.responder, self.book.repeats)
            if latest is not None and latest.response_id in self.book.pending:
                self.book.pending.discard(latest.response_id)
                latest.superseded_by = record.response_id
                record.supersedes = latest.response_id
        c.responses.append(record)
        c.updated_at = self.now
        self.event("response_superseded", "A response was recorded as superseded by a later "
                   "answer of the same responder; it does not count.", by_responder=True)
        result = self.superseded_result(record)
        self.split(record)
        return Decision(result=result)

    def superseded_result(self, record: ResponseRecord) -> AnswerResult:
        result = self.result(record, AnswerOutcome.ATTESTATION)
        result = result.model_copy(update={"superseded": True})
        self.book.outcomes[record.response_id] = result
        return result

    def split(self, record: ResponseRecord) -> None:
        """``record``, recorded late, fell between a response of the same responder and a
        repeat of it (``devcore.order.straddled``): the repeats on its far side from that
        response become a response of their own, so A, B, A stays three responses whatever
        order they arrived in. The earlier part is superseded by ``record``; a later part
        supersedes it and is the response as it was (its status and outcome)."""
        at, book = self.answer.responded_at, self.book
        run = straddled(self.c, self.answer.responder, at, book.repeats)
        if run is None or at is None or run.responded_at is None:
            return
        early = run.responded_at > at  # the part to split off lies before ``record``
        repeats = book.repeats.pop(run.response_id)
        part = [r for r in repeats if (r.at < at) == early]
        kept = [r for r in repeats if (r.at < at) != early]
        if kept:
            book.repeats[run.response_id] = kept
        first = part[0]
        capable = binding_capable(self.c, first.rights)
        status = run.binding_status if not early else (
            BindingStatus.BINDING_CANDIDATE if capable else BindingStatus.ATTESTATION)
        made = ResponseRecord(
            response_id=book.next_id(), responder=run.responder,
            rights_at_answer_time=first.rights, answer_index=run.answer_index,
            answer_custom=run.answer_custom, interval=run.interval, channel=first.channel,
            message_ref=first.message_ref, response_tx=self.now, binding_status=status,
            responded_at=first.at)
        if part[1:]:
            book.repeats[made.response_id] = part[1:]
        self.c.responses.append(made)
        if early:
            made.superseded_by = record.response_id
            self.superseded_result(made)
            self.event("response_superseded", "A repeated answer given before a later change "
                       "of mind was recorded as a superseded response.", by_responder=True)
            return
        made.supersedes, record.superseded_by = record.response_id, made.response_id
        run.superseded_by, record.supersedes = record.response_id, run.response_id
        if run.response_id in book.pending:
            book.pending.discard(run.response_id)
            book.pending.add(made.response_id)
        book.outcomes[made.response_id] = book.outcomes[run.response_id].model_copy(
            update={"response_id": made.response_id})
        self.event("response_recorded", "A repeated answer given after a change of mind was "
                   "recorded as a response of its own.", by_responder=True)

    def append(self, status: BindingStatus) -> ResponseRecord:
        c, answer = self.c, self.answer
        previous = latest_of(c, answer.responder, self.book.repeats)
        record = ResponseRecord(
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
            if previous and c.state is not ClarificationState.ANSWERED
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

    def result(self, record: ResponseRecord, outcome: AnswerOutcome) -> AnswerResult:
        c = self.c
        result = AnswerResult(
            outcome=outcome,
            clarification_id=c.id,
            state=c.state,
            quorum_state=c.quorum.state,
            response_id=record.response_id,
            quorum_satisfied=c.state is ClarificationState.ANSWERED,
            quorum_remaining=c.quorum.remaining,
            confirmed_by=list(c.quorum.confirmed_by),
            bound_interval=c.bound_interval,
        )
        self.book.outcomes[record.response_id] = result
        return result

    def quorum(self, state: QuorumState, *, counted: list[str], remaining: int) -> None:
        self.c.quorum = self.c.quorum.model_copy(update={
            "state": state, "confirmations": len(counted), "remaining": remaining,
            "confirmed_by": counted,
        })

    # ------------------------------------------------------------ the outcome matrix

    def override(self) -> Decision:
        record = self.append(BindingStatus.STEWARD_OVERRIDE)
        self.c.state = ClarificationState.ANSWERED
        self.quorum(QuorumState.SATISFIED, counted=[self.answer.responder], remaining=0)
        self.c.bound_interval = self.answer.interval()
        self.event("steward_override", "A steward override was recorded; prior responses are "
                   "kept.", by_responder=True)
        result = self.result(record, AnswerOutcome.STEWARD_OVERRIDE)
        return Decision(result=result, bind=self.answer.interval(),
                        evidence=EvidenceClass.STEWARD_OVERRIDE)

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
                latest = latest_of(c, answer.responder, self.book.repeats)
                if latest is not None and not same(latest, answer):
                    return self.back_to_bound(latest, prior)
                return Decision(result=prior.model_copy(update={"replayed": True}))
            raise CoreFault(ErrorCode.CLARIFY_ALREADY_ANSWERED)
        record = self.append(BindingStatus.CONFLICTING)
        self.event("post_binding_conflict", "A conflicting answer arrived after binding; "
                   "recorded as a conflicting attestation.", by_responder=True)
        self.event("steward_notified", "The steward was notified of a post-binding conflict.",
                   to_steward=True)
        return Decision(result=self.result(record, AnswerOutcome.CONFLICTING_ATTESTATION))

    def back_to_bound(self, latest: ResponseRecord, prior: AnswerResult) -> Decision:
        """A counted responder gives the bound answer again after another answer of theirs (a
        superseded one, or a conflicting attestation): not a repeat, a response of its own,
        their active one again, which counts as it did."""
        record = self.append(BindingStatus.BOUND)
        record.supersedes, latest.superseded_by = latest.response_id, record.response_id
        self.event("response_recorded", "A counted responder gave the bound answer again; "
                   "recorded.", by_responder=True)
        result = prior.model_copy(update={"response_id": record.response_id, "replayed": False})
        self.book.outcomes[record.response_id] = result
        return Decision(result=result)

    def before_binding(self) -> Decision:
        capable = binding_capable(self.c, self.answer.rights)
        if capable:
            record = self.append(BindingStatus.BINDING_CANDIDATE)
            self.event("response_recorded", "A binding-capable response was recorded.",
                       by_responder=True)
        else:
            record = self.append(BindingStatus.ATTESTATION)
            self.event("attestation_recorded", "A viewer's answer was recorded as an attestation.",
                       by_responder=True)
        if self.c.state is ClarificationState.CONFLICTED:
            return Decision(result=self.result(record, AnswerOutcome.CONFLICTED))
        return self.evaluate_quorum(record)

    def evaluate_quorum(self, record: ResponseRecord) -> Decision:
        c = self.c
        active = _active(c, self.book)
        required = c.quorum_policy.required_confirmations
        if len(_distinct(active)) > 1:
            c.state = ClarificationState.CONFLICTED
            self.quorum(QuorumState.CONFLICTED, counted=[], remaining=required)
            self.event("conflict_entered", "Binding-capable responses disagree.")
            self.event("steward_review_requested", "The steward must review the conflict.",
                       to_steward=True)
            return Decision(result=self.result(record, AnswerOutcome.CONFLICTED))
        if len(active) >= required:
            return self.bind(record, active)
        if active:
            c.state = ClarificationState.PARTIALLY_CONFIRMED
            remaining = required - len(active)
            self.quorum(QuorumState.PENDING, counted=[r.responder for r in active],
                        remaining=remaining)
            self.event("quorum_pending", f"{remaining} more confirmation(s) required.")
            capable = record.binding_status is BindingStatus.BINDING_CANDIDATE
            outcome = (AnswerOutcome.PARTIALLY_CONFIRMED if capable
                       else AnswerOutcome.ATTESTATION)
            return Decision(result=self.result(record, outcome))
        c.state = ClarificationState.ATTESTED
        return Decision(result=self.result(record, AnswerOutcome.ATTESTATION))

    def bind(self, record: ResponseRecord, active: list[ResponseRecord]) -> Decision:
        c = self.c
        for r in active:
            r.binding_status = BindingStatus.BOUND
        quorum_required = c.quorum.state is not QuorumState.NOT_REQUIRED
        c.state = ClarificationState.ANSWERED
        c.bound_interval = record.interval
        state = QuorumState.SATISFIED if quorum_required else QuorumState.NOT_REQUIRED
        self.quorum(state, counted=[r.responder for r in active], remaining=0)
        if quorum_required:
            self.event("quorum_satisfied", "The required confirmations were received.")
        self.event("bound", "The corrected fact version was created.")
        evidence = (EvidenceClass.QUORUM_CONFIRMATION if quorum_required
                    else EvidenceClass.HUMAN_CLARIFICATION)
        result = self.result(record, AnswerOutcome.BOUND)
        # earlier confirmations now replay as bound too
        for r in active:
            if r.response_id != record.response_id:
                self.book.outcomes[r.response_id] = result.model_copy(
                    update={"response_id": r.response_id})
        return Decision(result=result, bind=record.interval, evidence=evidence)
