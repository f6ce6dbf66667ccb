"""The reference core's steward endpoints: the attention queue, delivery history, erasure.

The queue is spec changelog v0.8's ``needs_steward_attention``; the history joins the
clarification's ``clarify:temporal`` job to its events attempt by attempt (attempt N asks
``ranking[N]``, the last one the steward); erasure is OQ-5's attribution tombstone with v0.9's
job-ranking rewrite: every id naming the person becomes the nil id, message references go,
response channels become ``erased``, and the evidence (answer values, response times, rights at
answer time, binding statuses, quorum state, fact versions) stays.
"""

from __future__ import annotations

from bot.core.errors import ErrorCode
from bot.core.models import (
    NIL_PERSON,
    AttemptOutcome,
    Clarification,
    ClarificationState,
    ClarificationSummary,
    DeliveryHistory,
    ErasureReport,
    ErasureRequest,
    HistoryAttempt,
    JobState,
    RecordedChannel,
    Role,
    Severity,
)
from devcore.access import scope
from devcore.clarifications import ClarificationEndpoints
from devcore.directory import Token
from devcore.faults import CoreFault
from devcore.paging import Window, page
from devcore.state import Record

S = ClarificationState
ANY_SEVERITY = frozenset({S.CONFLICTED, S.EXPIRED, S.DEAD_LETTERED})
HIGH_STAKES = frozenset({S.OPEN, S.ATTESTED, S.PARTIALLY_CONFIRMED})
URGENT = frozenset({Severity.HIGH, Severity.CRITICAL})
NIL = NIL_PERSON


def needs_steward(c: Clarification | ClarificationSummary) -> bool:
    """Spec changelog v0.8: what a steward's queue holds."""
    return c.state in ANY_SEVERITY or (c.state in HIGH_STAKES and c.severity in URGENT)


class StewardEndpoints(ClarificationEndpoints):
    """``GET /v1/attention``, ``GET .../history`` and ``POST .../erase-attribution``."""

    def list_attention(
        self, token: Token, *, tenant_id: str | None, window: Window
    ) -> tuple[list[ClarificationSummary], str | None]:
        self.now()
        if token.is_api_key and token.role is not Role.STEWARD:  # spec §7: steward scope
            raise CoreFault(ErrorCode.STEWARD_REQUIRED)
        tenants = scope(token, tenant_id)
        chosen = [r for r in self.records.values()
                  if r.model.tenant_id in tenants and needs_steward(r.model)]
        shown, cursor = page(chosen, key=lambda r: r.seq, win=window, newest_first=True,
                             listing="attention")
        return [self._summary_for(token, r.model) for r in shown], cursor

    def delivery_history(self, token: Token, clarification_id: str) -> DeliveryHistory:
        self.now()
        c = self._record(token, clarification_id).model
        history = DeliveryHistory(clarification_id=c.id, events=list(c.events))
        if c.job_id is None:
            return history
        job = self.jobs.get(c.job_id, tenants=token.tenants)
        ranking = job.payload.ranking
        attempts = [
            _attempt(c, n, ranking[n] if n < len(ranking) else c.workspace.steward_id,
                     steward=n == len(ranking), current=_current(job.state, job.attempts, n))
            for n in range(job.max_attempts)
        ]
        return history.model_copy(update={
            "job_id": job.id, "job_state": job.state, "job_attempts": job.attempts,
            "max_attempts": job.max_attempts, "attempts": attempts,
        })

    def erase_attribution(
        self, token: Token, person_id: str, req: ErasureRequest
    ) -> ErasureReport:
        now = self.now()
        if token.role is not Role.STEWARD or token.principal is None:
            raise CoreFault(ErrorCode.STEWARD_REQUIRED)
        [tenant] = sorted(scope(token, req.tenant_id))
        person = self.directory.person_in(tenant_id=tenant, person_id=person_id)
        if person is None:
            raise CoreFault(ErrorCode.PERSON_NOT_FOUND)
        counts = _Counts()
        for record in self.records.values():
            if record.model.tenant_id == tenant:
                record.asked_aliases = None  # worked out again, without the person
            if record.model.tenant_id == tenant and _erase(record, person_id, counts):
                counts.clarifications += 1
                record.model.updated_at = now
                self._event(record.model, "attribution_erased",
                            "A person's attribution was erased (spec OQ-5); the evidence stays.",
                            actor="steward")
        for job in self.jobs.jobs.values():
            if job.tenant_id == tenant and person_id in job.payload.ranking:
                job.payload = job.payload.model_copy(
                    update={"ranking": _swap(job.payload.ranking, person_id)})
                counts.jobs += 1
        for (fact_tenant, _), versions in self.facts.facts.items():
            for version in versions if fact_tenant == tenant else ():
                if person_id in version.provenance.confirmed_by:
                    version.provenance.confirmed_by = _swap(
                        version.provenance.confirmed_by, person_id)
                    counts.fact_versions += 1
        return ErasureReport(person_id=person_id, tenant_id=tenant, aliases=person.aliases,
                             **vars(counts))


class _Counts:
    def __init__(self) -> None:
        self.clarifications = self.asked = self.responses = self.deliveries = 0
        self.events = self.jobs = self.fact_versions = 0


def _swap(ids: list[str], person_id: str) -> list[str]:
    return [NIL if i == person_id else i for i in ids]


def _erase(record: Record, person_id: str, counts: _Counts) -> bool:
    """Tombstone the person on one clarification; True when anything changed."""
    c = record.model
    before = (counts.asked, counts.responses, counts.deliveries, counts.events)
    ranked = person_id in c.ranking or person_id in c.quorum.confirmed_by
    counts.asked += c.asked.count(person_id)
    c.asked, c.ranking = _swap(c.asked, person_id), _swap(c.ranking, person_id)
    for relation in c.relations:
        relation.person_id = NIL if relation.person_id == person_id else relation.person_id
    c.quorum.confirmed_by = _swap(c.quorum.confirmed_by, person_id)
    for r in c.responses:
        if r.responder == person_id:
            r.responder, r.message_ref, r.channel = NIL, None, RecordedChannel.ERASED
            counts.responses += 1
    for d in c.deliveries:
        if d.person_id == person_id:
            d.person_id, d.message_ref, d.channel = NIL, None, RecordedChannel.ERASED
            counts.deliveries += 1
    for ev in c.events:
        named = person_id in (ev.person_id, ev.actor) or any(
            s.person_id == person_id for s in ev.skips)
        if named:
            ev.person_id = NIL if ev.person_id == person_id else ev.person_id
            ev.actor = NIL if ev.actor == person_id else ev.actor
            for s in ev.skips:
                s.person_id = NIL if s.person_id == person_id else s.person_id
            counts.events += 1
    book = record.book
    book.requests = {((NIL if who == person_id else who), rid): resp
                     for (who, rid), resp in book.requests.items()}
    for rid, outcome in book.outcomes.items():
        if person_id in outcome.confirmed_by:
            book.outcomes[rid] = outcome.model_copy(
                update={"confirmed_by": _swap(outcome.confirmed_by, person_id)})
    return ranked or before != (counts.asked, counts.responses, counts.deliveries, counts.events)


def _current(state: JobState, attempts: int, n: int) -> bool:
    return n == attempts and state in (JobState.AVAILABLE, JobState.LEASED)


def _attempt(
    c: Clarification, n: int, person_id: str | None, *, steward: bool, current: bool
) -> HistoryAttempt:
    # an advance to N+1 is the skip of attempt N
    events = [ev for ev in c.events if (ev.attempt == n and ev.type != "advanced")
              or (ev.type == "advanced" and ev.attempt == n + 1)]
    delivered = next((d for d in c.deliveries if d.attempt == n and d.person_id == person_id),
                     None)
    skip = next((ev for ev in events if ev.type in ("skipped", "advanced") and ev.reason_code),
                None)
    outcome: AttemptOutcome
    if person_id is not None and any(r.responder == person_id for r in c.responses):
        outcome = AttemptOutcome.ANSWERED
    elif delivered is None and skip is not None:
        outcome = AttemptOutcome.SKIPPED
    elif any(ev.type == "expired" for ev in events):
        outcome = AttemptOutcome.EXPIRED
    elif delivered is not None:
        outcome = AttemptOutcome.DELIVERED
    elif current:
        outcome = AttemptOutcome.PENDING
    else:
        outcome = AttemptOutcome.NOT_REACHED if not events else AttemptOutcome.SKIPPED
    return HistoryAttempt(
        attempt=n, person_id=person_id, steward=steward, outcome=outcome,
        reason_code=skip.reason_code if skip and outcome is AttemptOutcome.SKIPPED else None,
        channel=delivered.channel if delivered else None,
        delivered_at=delivered.delivered_at if delivered else None, events=events,
    )

