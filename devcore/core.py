"""The reference core: an in-memory, clock-driven double of the Telha core's clarify surface.

Every public method takes the caller's resolved token and raises ``CoreFault`` with a documented
error code; the web layer only translates. Reading the clock reaps expired leases first, so moving
the clock is all a test needs to make escalation windows pass.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Protocol

from bot.core import models as m
from bot.core.errors import ErrorCode
from devcore.access import asserted, full_view, one_tenant, redacted, redacted_summary, scope
from devcore.answers import Answer, AnswerBook, decide, http_status
from devcore.directory import Directory, Token
from devcore.facts import FactKey, FactStore
from devcore.faults import CoreFault
from devcore.jobs import CLARIFY_PREFIX, JobQueue, JobRecord
from devcore.normalise import NotNormalisable, Span, normalise_custom
from devcore.paging import Window, page

CLARIFY_KIND = "clarify:temporal"
_FENCE = {m.Audience.CLARIFY: CLARIFY_PREFIX, m.Audience.INGEST: "ingest:"}


class MovableClock(Protocol):
    def now(self) -> datetime: ...
    def advance(self, delta: timedelta | float) -> datetime: ...
    def set(self, when: datetime) -> datetime: ...


@dataclass(slots=True)
class Record:
    model: m.Clarification
    seq: int  # creation order: the key of the clarification list's keyset paging
    dedup_key: tuple[object, ...]
    book: AnswerBook = field(default_factory=AnswerBook)
    event_ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))


class ReferenceCore:
    def __init__(self, *, clock: MovableClock, directory: Directory | None = None) -> None:
        self.clock = clock
        self.reset(directory or Directory())

    def reset(self, directory: Directory) -> None:
        """Forget everything and start from this directory (a loaded scenario)."""
        self.directory = directory
        self.facts = FactStore()
        self.records: dict[str, Record] = {}
        self.dedup: dict[tuple[object, ...], str] = {}
        self.jobs = JobQueue(on_expired=self._on_expired, on_dead_letter=self._on_dead_letter)
        self._ids = itertools.count(1)

    def now(self) -> datetime:
        now = self.clock.now()
        self.jobs.reap(now)
        return now

    # ---------------------------------------------------------------- auth

    def authenticate(self, bearer: str | None) -> Token:
        token = self.directory.tokens.get(bearer or "")
        if token is None:
            raise CoreFault(ErrorCode.UNAUTHENTICATED)
        return token

    def is_dev(self, bearer: str | None) -> bool:
        return bool(bearer) and bearer in self.directory.dev_tokens

    # ---------------------------------------------------------------- events

    def _event(
        self,
        c: m.Clarification,
        type_: str,
        message: str,
        *,
        person_id: str | None = None,
        actor: str | None = None,
        attempt: int | None = None,
        reason_code: m.ReasonCode | None = None,
        event_id: str | None = None,
        report: m.EventReport | None = None,
    ) -> m.ClarificationEvent:
        record = self.records[c.id]
        event = m.ClarificationEvent(
            event_id=event_id or f"ev-{next(record.event_ids):05d}",
            type=type_,
            at=self.clock.now(),
            actor=actor,
            person_id=person_id,
            attempt=attempt,
            reason_code=reason_code,
            reason_codes=report.reason_codes if report else [],
            skips=[m.SkipEntry(person_id=s.person_id, reason_code=s.reason_code)
                   for s in (report.skips if report else [])],
            message=message,
        )
        c.events.append(event)
        return event

    def _on_expired(self, job: JobRecord, ran_out: int, now: datetime) -> None:
        record = self.records.get(job.payload.clarification_id)
        if record is None:
            return
        c = record.model
        ranking = job.payload.ranking
        person = ranking[ran_out] if ran_out < len(ranking) else c.workspace.steward_id
        if c.state is m.ClarificationState.OPEN:
            c.state = m.ClarificationState.EXPIRED
            c.updated_at = now
        self._event(
            c,
            "expired",
            "The escalation window ran out for this attempt.",
            person_id=person,
            attempt=ran_out,
        )

    def _on_dead_letter(self, job: JobRecord, at: datetime) -> None:
        record = self.records.get(job.payload.clarification_id)
        if record is None:
            return
        c = record.model
        if c.state is not m.ClarificationState.ANSWERED:
            c.state = m.ClarificationState.DEAD_LETTERED
            c.updated_at = at
        self._event(
            c,
            "dead_lettered",
            "The ranking is exhausted; listed in the steward digest.",
            attempt=job.attempts,
        )

    # ---------------------------------------------------------------- clarifications

    def _record(self, token: Token, clarification_id: str) -> Record:
        record = self.records.get(clarification_id)
        if record is None or record.model.tenant_id not in token.tenants:
            raise CoreFault(ErrorCode.CLARIFICATION_NOT_FOUND)
        return record

    def create_clarification(
        self, req: m.CreateClarificationRequest
    ) -> tuple[m.CreateClarificationResponse, bool]:
        from devcore.creation import build_clarification

        now = self.now()
        key = (
            req.tenant_id,
            req.document.document_id,
            req.document.content_hash,
            req.span.start,
            req.span.end,
            req.kind,
        )
        if key in self.dedup:
            existing = self.records[self.dedup[key]].model
            return m.CreateClarificationResponse(
                clarification=summary(existing),
                deduplicated=True,
                job_id=existing.job_id,
            ), False
        tenant = self.directory.tenant(req.tenant_id)
        seq = next(self._ids)
        c = build_clarification(
            req,
            clarification_id=f"clr-{seq:05d}",
            tenant=tenant,
            directory=self.directory,
            now=now,
        )
        self.records[c.id] = Record(model=c, seq=seq, dedup_key=key)
        self.dedup[key] = c.id
        best = c.candidates[0]
        self.facts.append(
            (c.tenant_id, c.target),
            now=now,
            valid_from=best.valid_from,
            valid_to=best.valid_to,
            confidence=c.applied_candidate_confidence,
            pending_clarification_id=c.id,
            provenance=m.Provenance(
                evidence_class=m.EvidenceClass.SYSTEM_EXTRACTION,
                source_version_tx=c.document.source_version_tx,
            ),
        )
        self._event(c, "created", f"Clarification created with severity {c.severity}.")
        if c.severity is not m.Severity.LOW:
            window = tenant.policy.escalation_window
            job = self.jobs.enqueue(
                tenant_id=c.tenant_id,
                kind=CLARIFY_KIND,
                payload=m.JobPayload(clarification_id=c.id, ranking=list(c.ranking)),
                max_attempts=len(c.ranking) + 1,
                now=now,
                backoff=(window, window),
            )
            c.job_id = job.id
        return m.CreateClarificationResponse(
            clarification=summary(c), deduplicated=False, job_id=c.job_id
        ), True

    def list_clarifications(
        self,
        token: Token,
        *,
        state: m.ClarificationState | None,
        severity: m.Severity | None,
        tenant_id: str | None,
        window: Window,
    ) -> tuple[list[m.ClarificationSummary], str | None]:
        """Newest first (creation order), keyset-paged; titles only where the caller may read."""
        self.now()
        tenants = scope(token, tenant_id)
        chosen = [
            r
            for r in self.records.values()
            if r.model.tenant_id in tenants
            and (state is None or r.model.state is state)
            and (severity is None or r.model.severity is severity)
        ]
        shown, cursor = page(chosen, key=lambda r: r.seq, win=window, newest_first=True,
                             listing="clarifications")
        return [self._summary_for(token, r.model) for r in shown], cursor

    def _summary_for(self, token: Token, c: m.Clarification) -> m.ClarificationSummary:
        brief = summary(c)
        return brief if full_view(token, c, self.directory) else redacted_summary(brief)

    def get_clarification(self, token: Token, clarification_id: str) -> m.Clarification:
        self.now()
        c = self._record(token, clarification_id).model
        return c if full_view(token, c, self.directory) else redacted(c)

    def answer(
        self, token: Token, clarification_id: str, req: m.AnswerRequest
    ) -> tuple[m.AnswerResult, int]:
        now = self.now()
        who = asserted(token, req)
        record = self._record(token, clarification_id)
        c = record.model
        if self.directory.person_in(tenant_id=c.tenant_id, person_id=who.responder) is None:
            raise CoreFault(ErrorCode.TENANT_SCOPE_MISMATCH)
        seen = record.book.requests.get((who.responder, req.request_id or ""))
        if req.request_id is not None and seen is not None:
            # replays first: the first outcome, whatever changed since (policy checks come later)
            prior = record.book.outcomes[seen].model_copy(update={"replayed": True})
            return prior, http_status(prior.outcome)
        answer = Answer(
            responder=who.responder,
            rights=who.rights,
            span=_normalise(c, req),
            answer_index=req.answer_index,
            answer_custom=m.AnswerCustom.model_validate(req.answer_custom.model_dump())
            if req.answer_custom is not None
            else None,
            channel=who.channel,
            message_ref=who.message_ref,
            steward_override=req.steward_override,
        )
        decision = decide(c, answer, book=record.book, now=now, add_event=self._event)
        result = decision.result
        if req.request_id is not None:
            record.book.requests[(who.responder, req.request_id)] = result.response_id
        if decision.bind is not None and decision.evidence is not None:
            version = self.facts.append(
                (c.tenant_id, c.target),
                now=now,
                valid_from=decision.bind.valid_from,
                valid_to=decision.bind.valid_to,
                confidence=1.0,
                provenance=m.Provenance(
                    evidence_class=decision.evidence,
                    clarification_id=c.id,
                    source_version_tx=c.document.source_version_tx,
                    confirmed_by=list(c.quorum.confirmed_by),
                ),
            )
            c.bound_fact_version_tx = version.version_tx
            result = result.model_copy(update={"fact_version_tx": version.version_tx})
            for response_id, prior in record.book.outcomes.items():
                if prior.outcome is result.outcome and prior.fact_version_tx is None:
                    record.book.outcomes[response_id] = prior.model_copy(
                        update={"fact_version_tx": version.version_tx}
                    )
        return result, http_status(result.outcome)

    def report_delivery(
        self, token: Token, clarification_id: str, req: m.DeliveryReport
    ) -> m.DeliveryRecord:
        now = self.now()
        c = self._record(token, clarification_id).model
        for existing in c.deliveries:
            if existing.delivery_id == req.delivery_id:
                return existing
        if self.directory.person_in(tenant_id=c.tenant_id, person_id=req.person_id) is None:
            raise CoreFault(ErrorCode.TENANT_SCOPE_MISMATCH)
        delivery = m.DeliveryRecord(
            delivery_id=req.delivery_id,
            person_id=req.person_id,
            channel=req.channel,
            kind=req.kind,
            attempt=req.attempt,
            message_ref=req.message_ref,
            delivered_at=now,
        )
        c.deliveries.append(delivery)
        if req.kind is not m.DeliveryKind.STEWARD_NOTICE and req.person_id not in c.asked:
            c.asked.append(req.person_id)
        c.updated_at = now
        self._event(
            c,
            "delivered",
            f"A {req.kind} was delivered on {req.channel}.",
            person_id=req.person_id,
            attempt=req.attempt,
            actor="clarify-bot",
        )
        return delivery

    def report_event(
        self, token: Token, clarification_id: str, req: m.EventReport
    ) -> m.ClarificationEvent:
        self.now()
        c = self._record(token, clarification_id).model
        for existing in c.events:
            if existing.event_id == req.event_id:
                return existing
        return self._event(
            c,
            req.type,
            req.message,
            person_id=req.person_id,
            attempt=req.attempt,
            reason_code=req.reason_code,
            actor="clarify-bot",
            event_id=req.event_id,
            report=req,
        )

    # ---------------------------------------------------------------- jobs

    def poll(self, token: Token, req: m.PollRequest) -> list[m.LeasedJob]:
        now = self.now()
        if token.audience is None:
            raise CoreFault(ErrorCode.AUDIENCE_FORBIDDEN)
        allowed = _FENCE[token.audience]
        if any(not kind.startswith(allowed) for kind in req.kinds):
            raise CoreFault(ErrorCode.JOB_KIND_FORBIDDEN)
        jobs = self.jobs.poll(
            prefixes=req.kinds,
            tenants=token.tenants,
            max_jobs=req.max_jobs,
            lease=timedelta(seconds=req.lease_seconds),
            now=now,
        )
        return [job.leased() for job in jobs]

    def held(self, token: Token, job_id: str, lease_token: str) -> JobRecord:
        self.now()
        return self.jobs.held(job_id, lease_token=lease_token, tenants=token.tenants)

    def heartbeat(self, token: Token, job_id: str, req: m.HeartbeatRequest) -> m.LeasedJob:
        job = self.held(token, job_id, req.lease_token)
        lease = None if req.lease_seconds is None else timedelta(seconds=req.lease_seconds)
        return self.jobs.heartbeat(job, lease=lease, now=self.clock.now()).leased()

    def advance(self, token: Token, job_id: str, req: m.AdvanceRequest) -> m.LeasedJob:
        job = self.held(token, job_id, req.lease_token)
        before = job.attempts
        self.jobs.advance(job, attempt=req.attempt)
        record = self.records.get(job.payload.clarification_id)
        if record is not None and req.attempt != before:
            self._event(
                record.model,
                "advanced",
                "Skipped forward inside the lease.",
                attempt=req.attempt,
                reason_code=req.reason_code,
                actor="clarify-bot",
            )
        return job.leased()

    def complete(self, token: Token, job_id: str, req: m.CompleteRequest) -> m.JobView:
        if self.jobs.repeat_complete(job_id, lease_token=req.lease_token, tenants=token.tenants):
            return self.jobs.get(job_id, tenants=token.tenants).view()
        return self.jobs.complete(self.held(token, job_id, req.lease_token)).view()

    def fail(self, token: Token, job_id: str, req: m.FailRequest) -> m.JobView:
        job = self.held(token, job_id, req.lease_token)
        return self.jobs.fail(
            job, retryable=req.retryable, reason=req.reason, now=self.clock.now()
        ).view()

    def get_job(self, token: Token, job_id: str) -> m.JobView:
        self.now()
        return self.jobs.get(job_id, tenants=token.tenants).view()

    def list_jobs(
        self, token: Token, *, state: m.JobState | None, kind: str | None, window: Window
    ) -> tuple[list[m.JobView], str | None]:
        """Oldest first (creation order), keyset-paged."""
        self.now()
        chosen = self.jobs.listing(tenants=token.tenants, state=state, kind=kind)
        shown, cursor = page(chosen, key=lambda j: j.seq, win=window, newest_first=False,
                             listing="jobs")
        return [j.view() for j in shown], cursor

    # ---------------------------------------------------------------- people and facts

    def resolve(self, token: Token, req: m.ResolveRequest) -> m.ResolvedPerson:
        if req.tenant_id not in token.tenants:
            raise CoreFault(ErrorCode.TENANT_SCOPE_MISMATCH)
        return self.directory.resolve(tenant_id=req.tenant_id, identity=req.identity)

    def get_person(self, token: Token, person_id: str, tenant_id: str | None) -> m.Person:
        holders = {t for t, p in self.directory.people if p == person_id}
        tenant = one_tenant(token, tenant_id, holders, ErrorCode.PERSON_NOT_FOUND)
        person = self.directory.person_in(tenant_id=tenant, person_id=person_id)
        assert person is not None
        return person

    def _fact_key(self, token: Token, logical_id: str, tenant_id: str | None) -> FactKey:
        holders = self.facts.tenants_of(logical_id)
        return one_tenant(token, tenant_id, holders, ErrorCode.FACT_NOT_FOUND), logical_id

    def get_fact(
        self, token: Token, logical_id: str, *, tenant_id: str | None,
        as_of_tx: datetime | None, as_of_valid: datetime | None,
    ) -> m.FactVersion:
        """The version believed at ``as_of_tx`` (default now), if it holds at ``as_of_valid``."""
        key = self._fact_key(token, logical_id, tenant_id)
        return self.facts.as_of(key, tx=as_of_tx, valid_at=as_of_valid)

    def fact_history(
        self, token: Token, logical_id: str, *, tenant_id: str | None,
        as_of_valid: datetime | None,
    ) -> m.FactHistory:
        key = self._fact_key(token, logical_id, tenant_id)
        return m.FactHistory(
            logical_id=logical_id, versions=self.facts.history(key, valid_at=as_of_valid)
        )


def summary(c: m.Clarification) -> m.ClarificationSummary:
    return m.ClarificationSummary(
        id=c.id,
        tenant_id=c.tenant_id,
        workspace_id=c.workspace.workspace_id,
        kind=c.kind,
        severity=c.severity,
        state=c.state,
        quorum_state=c.quorum.state,
        document_title=c.document.title,
        created_at=c.created_at,
        updated_at=c.updated_at,
    )


def _normalise(c: m.Clarification, req: m.AnswerRequest) -> Span:
    if req.answer_index is not None:
        if req.answer_index >= len(c.candidates):
            raise CoreFault(ErrorCode.ANSWER_INDEX_OUT_OF_RANGE)
        chosen = c.candidates[req.answer_index]
        return Span(chosen.valid_from, chosen.valid_to)
    assert req.answer_custom is not None
    try:
        return normalise_custom(
            valid_from=req.answer_custom.valid_from,
            valid_to=req.answer_custom.valid_to,
            source_text=req.answer_custom.source_text,
        )
    except NotNormalisable:
        raise CoreFault(ErrorCode.ANSWER_UNNORMALISABLE) from None


def load_scenario(core: ReferenceCore, data: dict[str, object]) -> m.ScenarioLoaded:
    """Replace the core's state with a scenario's directory and create its clarifications.

    All or nothing: a scenario refused anywhere leaves the previous state loaded.
    """
    from devcore.scenario import ScenarioError, parse_scenario

    directory, requests = parse_scenario(dict(data))
    previous = dict(vars(core))  # reset() rebinds every piece of state, so these stay intact
    core.reset(directory)
    for number, req in enumerate(requests):
        try:
            core.create_clarification(req)
        except CoreFault as fault:
            vars(core).update(previous)
            detail = {"loc": ["clarifications", number], "rule": "invalid", "msg": fault.message}
            raise ScenarioError(f"scenario: clarifications.{number}: {fault.message}",
                                [detail]) from None
    return m.ScenarioLoaded(
        tenants=len(directory.tenants),
        people=len(directory.people),
        clarifications=len(core.records),
    )
