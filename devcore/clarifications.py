"""The reference core's clarification endpoints: create, list, read, answer, and the bot's reports.

Creating one appends the extracted fact version and enqueues its ``clarify:temporal`` job (not for
low severity); answering applies ``devcore.answers.decide`` and, when an answer binds, appends the
corrected fact version.
"""

from __future__ import annotations

from datetime import datetime

from bot.core.errors import ErrorCode
from bot.core.models import (
    AnswerCustom,
    AnswerRequest,
    AnswerResult,
    AskedAlias,
    Audience,
    Clarification,
    ClarificationEvent,
    ClarificationState,
    ClarificationSummary,
    CreateClarificationRequest,
    CreateClarificationResponse,
    DeliveryKind,
    DeliveryRecord,
    DeliveryReport,
    EventReport,
    EvidenceClass,
    JobPayload,
    Provenance,
    Severity,
    SlackIdentity,
    TeamsIdentity,
)
from devcore.access import Asserted, asserted, full_view, redacted, redacted_summary, scope
from devcore.answers import decide, http_status
from devcore.book import Answer, note_repeat
from devcore.directory import Token, identities
from devcore.faults import CoreFault
from devcore.normalise import NotNormalisable, Span, normalise_custom
from devcore.paging import Window, page
from devcore.state import CoreState, Record, summary

CLARIFY_KIND = "clarify:temporal"


class ClarificationEndpoints(CoreState):
    """Every ``/v1/clarifications`` endpoint and the development create."""

    def create_clarification(
        self, req: CreateClarificationRequest
    ) -> tuple[CreateClarificationResponse, bool]:
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
            return CreateClarificationResponse(
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
            confidence=(c.applied_candidate_confidence
                        if c.applied_candidate_confidence is not None else 0.0),
            pending_clarification_id=c.id,
            provenance=Provenance(
                evidence_class=EvidenceClass.SYSTEM_EXTRACTION,
                source_version_tx=c.document.source_version_tx,
            ),
        )
        self._event(c, "created", f"Clarification created with severity {c.severity}.")
        if c.severity is not Severity.LOW:
            window = tenant.policy.escalation_window
            job = self.jobs.enqueue(
                tenant_id=c.tenant_id,
                kind=CLARIFY_KIND,
                payload=JobPayload(clarification_id=c.id, ranking=list(c.ranking)),
                max_attempts=len(c.ranking) + 1,
                now=now,
                backoff=(window, window),
            )
            c.job_id = job.id
        return CreateClarificationResponse(
            clarification=summary(c), deduplicated=False, job_id=c.job_id
        ), True

    def list_clarifications(
        self,
        token: Token,
        *,
        state: ClarificationState | None,
        severity: Severity | None,
        tenant_id: str | None,
        window: Window,
        document_id: str | None = None,
        since: datetime | None = None,
    ) -> tuple[list[ClarificationSummary], str | None]:
        """Newest first (creation order), keyset-paged; titles only where the caller may read.
        ``since``: updated at or after it."""
        self.now()
        tenants = scope(token, tenant_id)
        chosen = [
            r
            for r in self.records.values()
            if r.model.tenant_id in tenants
            and (state is None or r.model.state is state)
            and (severity is None or r.model.severity is severity)
            and (document_id is None or r.model.document.document_id == document_id)
            and (since is None or (r.model.updated_at or since) >= since)
        ]
        shown, cursor = page(chosen, key=lambda r: r.seq, win=window, newest_first=True,
                             listing="clarifications")
        return [self._summary_for(token, r.model) for r in shown], cursor

    def _summary_for(self, token: Token, c: Clarification) -> ClarificationSummary:
        brief = summary(c)
        return brief if full_view(token, c, self.directory) else redacted_summary(brief)

    def get_clarification(self, token: Token, clarification_id: str) -> Clarification:
        self.now()
        record = self._record(token, clarification_id)
        c = record.model
        if token.audience is Audience.CLARIFY:  # delivery identities: for the bot alone
            if record.asked_aliases is None:
                record.asked_aliases = self._asked_aliases(c)
            return c.model_copy(update={"asked_aliases": record.asked_aliases})
        return c if full_view(token, c, self.directory) else redacted(c)

    def _asked_aliases(self, c: Clarification) -> list[AskedAlias]:
        """Each candidate's chat identities that resolve back to that candidate alone."""
        found: list[AskedAlias] = []
        for person_id in dict.fromkeys(c.ranking):
            person = self.directory.person_in(tenant_id=c.tenant_id, person_id=person_id)
            if person is None:
                continue
            for identity in identities(person):
                try:
                    resolved = self.directory.resolve(tenant_id=c.tenant_id, identity=identity)
                except CoreFault:
                    continue  # unknown or claimed by several people: not vouched for
                if resolved.person.person_id != person_id:
                    continue
                found.append(AskedAlias(person_id=person_id, verified=resolved.verified,
                                        **_alias_fields(identity)))
        return found

    def answer(
        self, token: Token, clarification_id: str, req: AnswerRequest
    ) -> tuple[AnswerResult, int]:
        now = self.now()
        who = asserted(token, req)
        record = self._record(token, clarification_id)
        c = record.model
        if self.directory.person_in(tenant_id=c.tenant_id, person_id=who.responder) is None:
            raise CoreFault(ErrorCode.TENANT_SCOPE_MISMATCH)
        seen = record.book.requests.get((who.responder, req.request_id or ""))
        if req.request_id is not None and seen is not None:
            # replays first: the first outcome, whatever changed since (policy checks come later)
            self._resent(record, seen, who, req)
            prior = record.book.outcomes[seen].model_copy(update={"replayed": True})
            return prior, http_status(prior.outcome)
        answer = _answer(c, who, req)
        decision = decide(c, answer, book=record.book, now=now, add_event=self._event)
        result = decision.result
        if req.note is not None and not result.replayed:
            for response in c.responses:  # the note belongs to the response just appended
                if response.response_id == result.response_id:
                    response.note = req.note
        if req.request_id is not None:
            record.book.requests[(who.responder, req.request_id)] = result.response_id
        if decision.bind is not None and decision.evidence is not None:
            version = self.facts.append(
                (c.tenant_id, c.target),
                now=now,
                valid_from=decision.bind.valid_from,
                valid_to=decision.bind.valid_to,
                confidence=1.0,
                provenance=Provenance(
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

    def _resent(self, record: Record, response_id: str, who: Asserted, req: AnswerRequest
                ) -> None:
        """A resent request that carries another time is the same answer given again then (a
        caller's late repeat of an answer it sent before, ``devcore.order``): kept beside the
        response, as a repeat by answer is. Whatever it says, it is answered as a replay."""
        try:
            again = _answer(record.model, who, req)
        except CoreFault:
            return
        response = next((r for r in record.model.responses if r.response_id == response_id),
                        None)
        if response is not None:
            note_repeat(record.book, response, again)

    def report_delivery(
        self, token: Token, clarification_id: str, req: DeliveryReport
    ) -> DeliveryRecord:
        now = self.now()
        record = self._record(token, clarification_id)
        c = record.model
        if req.delivery_id is not None:  # without one (the baseline's report), no idempotency
            for existing in c.deliveries:
                if existing.delivery_id == req.delivery_id:
                    return existing
        if self.directory.person_in(tenant_id=c.tenant_id, person_id=req.person_id) is None:
            raise CoreFault(ErrorCode.TENANT_SCOPE_MISMATCH)
        kind = req.kind or DeliveryKind.QUESTION  # the baseline reports who was asked
        attempt = req.attempt
        if attempt is None:
            job = self.jobs.jobs.get(c.job_id or "")
            attempt = job.attempts if job is not None else 0
        delivery = DeliveryRecord(
            delivery_id=req.delivery_id or f"dl-{next(record.event_ids):05d}",
            person_id=req.person_id,
            channel=req.channel,
            kind=kind,
            attempt=attempt,
            message_ref=req.message_ref,
            delivered_at=now,
        )
        c.deliveries.append(delivery)
        if kind is not DeliveryKind.STEWARD_NOTICE and req.person_id not in c.asked:
            c.asked.append(req.person_id)
        if kind is DeliveryKind.QUESTION and c.state is ClarificationState.EXPIRED:
            c.state = ClarificationState.OPEN  # the next candidate's window has begun
        c.updated_at = now
        self._event(
            c,
            "delivered",
            f"A {kind} was delivered on {req.channel}.",
            person_id=req.person_id,
            attempt=attempt,
            actor="clarify-bot",
        )
        return delivery

    def report_event(
        self, token: Token, clarification_id: str, req: EventReport
    ) -> ClarificationEvent:
        self.now()
        c = self._record(token, clarification_id).model
        if req.event_id is not None:  # without one (the baseline's report), no idempotency
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


def _answer(c: Clarification, who: Asserted, req: AnswerRequest) -> Answer:
    """The request as the answer rules take it (normalised: 422 when it cannot be)."""
    return Answer(
        responder=who.responder,
        rights=who.rights,
        span=_normalise(c, req),
        answer_index=req.answer_index,
        answer_custom=AnswerCustom.model_validate(req.answer_custom.model_dump())
        if req.answer_custom is not None
        else None,
        channel=who.channel,
        message_ref=who.message_ref,
        steward_override=req.steward_override,
        responded_at=req.responded_at,
        superseded=bool(req.superseded),
    )


def _normalise(c: Clarification, req: AnswerRequest) -> Span:
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


def _alias_fields(identity: SlackIdentity | TeamsIdentity) -> dict[str, object]:
    if isinstance(identity, TeamsIdentity):
        return {"platform": "teams", "aad_object_id": identity.aad_object_id,
                "tenant_id": identity.tenant_id}
    return {"platform": "slack", "user_id": identity.user_id, "team_id": identity.team_id,
            "enterprise_id": identity.enterprise_id}
