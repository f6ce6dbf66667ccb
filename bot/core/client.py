"""The bot's typed async client for the Telha core: one method per route of ``routes.ROUTES``.

Transport, retries and error mapping live in ``bot.core.transport`` (re-exported here, so
``from bot.core.client import CoreClient, RetryPolicy`` keeps working); every failure surfaces as
a ``bot.core.errors.CoreError`` whose message holds no token or body. Small job calls take the
request fields as keyword arguments; calls whose body the bot stores (answers, delivery and
event reports) take the request model itself.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime

import structlog

from bot.core import batching
from bot.core import models as m
from bot.core.errors import UnexpectedResponse
from bot.core.transport import DEFAULT_TIMEOUT, BaseCoreClient, RetryPolicy

log = structlog.get_logger("bot.core.client")

__all__ = [
    "DEFAULT_TIMEOUT", "AnswerReceipt", "BaseCoreClient", "CoreClient", "RetryPolicy",
    "UnexpectedResponse",
]


@dataclass(frozen=True, slots=True)
class AnswerReceipt:
    """The answer's outcome and the HTTP status that carried it (200 bound, 202 otherwise)."""

    result: m.AnswerResult
    http_status: int


class CoreClient(BaseCoreClient):
    """The bot's view of the core: jobs, clarifications, people and facts."""

    # ------------------------------------------------------------ jobs

    async def poll_jobs(
        self, *, kinds: list[str], max_jobs: int | None = None, lease_seconds: int | None = None
    ) -> m.PollResponse:
        body = m.PollRequest(**_given(kinds=kinds, max_jobs=max_jobs, lease_seconds=lease_seconds))
        return (await self._call("pollJobs", m.PollResponse, body=body))[0]

    async def heartbeat_job(
        self, *, job_id: str, lease_token: str, lease_seconds: int | None = None
    ) -> m.LeasedJob:
        body = m.HeartbeatRequest(lease_token=lease_token, lease_seconds=lease_seconds)
        return (await self._call("heartbeatJob", m.LeasedJob, path={"jobId": job_id}, body=body))[0]

    async def advance_job(
        self,
        *,
        job_id: str,
        lease_token: str,
        attempt: int,
        reason_code: m.ReasonCode | None = None,
    ) -> m.LeasedJob:
        body = m.AdvanceRequest(lease_token=lease_token, attempt=attempt, reason_code=reason_code)
        return (await self._call("advanceJob", m.LeasedJob, path={"jobId": job_id}, body=body))[0]

    async def expedite_job(
        self, *, job_id: str, attempt: int, reason_code: m.ReasonCode | None = None
    ) -> m.JobView:
        """The candidate asked at ``attempt`` declined: the job's next turn starts now."""
        body = m.ExpediteRequest(attempt=attempt, reason_code=reason_code)
        return (await self._call("expediteJob", m.JobView, path={"jobId": job_id}, body=body))[0]

    async def complete_job(self, *, job_id: str, lease_token: str) -> m.JobView:
        body = m.CompleteRequest(lease_token=lease_token)
        return (await self._call("completeJob", m.JobView, path={"jobId": job_id}, body=body))[0]

    async def fail_job(
        self, *, job_id: str, lease_token: str, retryable: bool = True, reason: str = ""
    ) -> m.JobView:
        body = m.FailRequest(lease_token=lease_token, retryable=retryable, reason=reason)
        return (await self._call("failJob", m.JobView, path={"jobId": job_id}, body=body))[0]

    async def get_job(self, *, job_id: str) -> m.JobView:
        return (await self._call("getJob", m.JobView, path={"jobId": job_id}))[0]

    async def list_jobs(
        self,
        *,
        state: m.JobState | None = None,
        kind: str | None = None,
        cursor: str | None = None,
        limit: int | None = None,
    ) -> m.JobPage:
        query = {"state": state, "kind": kind, "cursor": cursor, "limit": limit}
        return (await self._call("listJobs", m.JobPage, query=query))[0]

    # ------------------------------------------------------------ clarifications

    async def list_clarifications(
        self,
        *,
        state: m.ClarificationState | None = None,
        severity: m.Severity | None = None,
        tenant_id: str | None = None,
        cursor: str | None = None,
        limit: int | None = None,
        document_id: str | None = None,
        since: datetime | None = None,
    ) -> m.ClarificationPage:
        query = {"state": state, "severity": severity, "documentId": document_id,
                 "since": since, "tenantId": tenant_id, "cursor": cursor, "limit": limit}
        return (await self._call("listClarifications", m.ClarificationPage, query=query))[0]

    async def list_attention(
        self, *, tenant_id: str | None = None, cursor: str | None = None,
        limit: int | None = None,
    ) -> m.ClarificationPage:
        """The steward's attention queue (spec changelog v0.8), newest first."""
        query = {"tenantId": tenant_id, "cursor": cursor, "limit": limit}
        return (await self._call("listAttention", m.ClarificationPage, query=query))[0]

    async def get_delivery_history(self, *, clarification_id: str) -> m.DeliveryHistory:
        path = {"clarificationId": clarification_id}
        return (await self._call("getDeliveryHistory", m.DeliveryHistory, path=path))[0]

    async def erase_attribution(
        self, *, person_id: str, tenant_id: str | None = None
    ) -> m.ErasureReport:
        """Tombstone a person's attribution (spec OQ-5); a steward-bound API key only."""
        body = m.ErasureRequest(tenant_id=tenant_id)
        path = {"personId": person_id}
        return (await self._call("eraseAttribution", m.ErasureReport, path=path, body=body))[0]

    async def iter_clarifications(
        self,
        *,
        state: m.ClarificationState | None = None,
        severity: m.Severity | None = None,
        tenant_id: str | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[m.ClarificationSummary]:
        """Every matching clarification, following ``nextCursor`` page by page."""
        cursor: str | None = None
        seen: set[str] = set()
        while True:
            page = await self.list_clarifications(
                state=state, severity=severity, tenant_id=tenant_id, cursor=cursor, limit=limit
            )
            for item in page.items:
                yield item
            cursor = page.next_cursor
            if cursor is None:
                return
            if cursor in seen:  # a core bug must not turn into an endless loop
                raise UnexpectedResponse(
                    status=200, code="", message="The core repeated a pagination cursor."
                )
            seen.add(cursor)

    async def get_clarification(self, *, clarification_id: str) -> m.Clarification:
        path = {"clarificationId": clarification_id}
        return (await self._call("getClarification", m.Clarification, path=path))[0]

    async def answer_clarification(
        self, *, clarification_id: str, request: m.AnswerRequest
    ) -> AnswerReceipt:
        path = {"clarificationId": clarification_id}
        result, status = await self._call(
            "answerClarification", m.AnswerResult, path=path, body=request
        )
        return AnswerReceipt(result=result, http_status=status)

    async def report_delivery(
        self, *, clarification_id: str, report: m.DeliveryReport
    ) -> m.DeliveryRecord | None:
        """The core's record; None when a job's scope holds the report for ``flush``."""
        scope = batching.current()
        if scope is not None:
            scope.deliveries.append(
                m.DeliveryReportItem(clarification_id=clarification_id, report=report))
            return None
        path = {"clarificationId": clarification_id}
        return (await self._call("reportDelivery", m.DeliveryRecord, path=path, body=report))[0]

    async def report_event(
        self, *, clarification_id: str, report: m.EventReport
    ) -> m.ClarificationEvent | None:
        """The core's event; None when a job's scope holds the report for ``flush``."""
        scope = batching.current()
        if scope is not None:
            scope.events.append(m.EventReportItem(clarification_id=clarification_id,
                                                  report=report))
            return None
        path = {"clarificationId": clarification_id}
        return (await self._call("reportEvent", m.ClarificationEvent, path=path, body=report))[0]

    async def report_batch(self, batch: m.ReportBatch) -> m.ReportBatchResult:
        """Delivery and event reports together (a job's, at its end): one call instead of one
        per report. Each item's own error comes back in its result, not as an exception."""
        return (await self._call("reportBatch", m.ReportBatchResult, body=batch))[0]

    async def read_people(self, scope: batching.JobScope, *, tenant_id: str,
                          person_ids: list[str]) -> None:
        """Read a job's people into its scope; jobs starting together share the call."""
        wanted = list(dict.fromkeys(p for p in person_ids if p not in scope.people))
        if wanted:
            await self._gathered_people()(tenant_id, (scope, wanted))

    async def flush(self, scope: batching.JobScope, *,
                    linger: float = batching.LINGER_SECONDS) -> None:
        """Send what the scope holds; jobs ending within ``linger`` of each other share the
        call. A report the core refuses is logged by kind and code (no values); a transport or
        auth failure raises, as the single report would have."""
        if scope.deliveries or scope.events:
            taken = batching.JobScope(deliveries=scope.deliveries, events=scope.events)
            scope.deliveries, scope.events = [], []
            await self._gathered_reports(linger)(None, taken)

    def _gathered_people(self) -> batching.Gathered[
            str, tuple[batching.JobScope, list[str]]]:
        gathered = getattr(self, "_people_calls", None)
        if gathered is None:
            gathered = self._people_calls = batching.Gathered(self._read_people)
        return gathered

    def _gathered_reports(self, linger: float) -> batching.Gathered[None, batching.JobScope]:
        calls: dict[float, batching.Gathered[None, batching.JobScope]] | None = getattr(
            self, "_report_calls", None)
        if calls is None:
            calls = {}
            self._report_calls = calls
        gathered = calls.get(linger)
        if gathered is None:
            gathered = calls[linger] = batching.Gathered(self._send_reports, linger=linger)
        return gathered

    async def _read_people(self, tenant_id: str,
                           asks: list[tuple[batching.JobScope, list[str]]]) -> None:
        wanted = list(dict.fromkeys(p for _, ids in asks for p in ids))
        found: dict[str, m.PersonEntry] = {}
        for start in range(0, len(wanted), batching.PEOPLE_PER_CALL):
            chunk = wanted[start:start + batching.PEOPLE_PER_CALL]
            batch = await self.get_people(tenant_id=tenant_id, person_ids=chunk)
            found.update((entry.person_id, entry) for entry in batch.people)
        for scope, ids in asks:
            scope.learn(tenant_id, m.PeopleBatch(
                people=[found[p] for p in dict.fromkeys(ids) if p in found]))

    async def _send_reports(self, _: None, scopes: list[batching.JobScope]) -> None:
        merged = batching.JobScope(
            deliveries=[item for scope in scopes for item in scope.deliveries],
            events=[item for scope in scopes for item in scope.events])
        for batch in merged.chunks():
            result = await self.report_batch(batch)
            for kind, items in (("delivery", result.deliveries), ("event", result.events)):
                for item in items:
                    if not item.ok:
                        log.warning("core.report_refused", kind=kind, code=item.error_code)

    # ------------------------------------------------------------ people and facts

    async def resolve_person(
        self, *, tenant_id: str, identity: m.SlackIdentity | m.TeamsIdentity
    ) -> m.ResolvedPerson:
        scope = batching.current()
        if scope is not None and (held := scope.resolved(tenant_id, identity)) is not None:
            return held
        body = m.ResolveRequest(tenant_id=tenant_id, identity=identity)
        return (await self._call("resolvePerson", m.ResolvedPerson, body=body))[0]

    async def get_person(self, *, person_id: str, tenant_id: str | None = None) -> m.Person:
        scope = batching.current()
        if scope is not None and (held := scope.person(person_id, tenant_id)) is not None:
            return held
        path, query = {"personId": person_id}, {"tenantId": tenant_id}
        return (await self._call("getPerson", m.Person, path=path, query=query))[0]

    async def get_people(
        self, *, tenant_id: str, person_ids: list[str], resolve_aliases: bool = True
    ) -> m.PeopleBatch:
        """Several people of one tenant in one call, each chat alias resolved back."""
        body = m.PeopleBatchRequest(tenant_id=tenant_id, person_ids=person_ids,
                                    resolve_aliases=resolve_aliases)
        return (await self._call("getPeople", m.PeopleBatch, body=body))[0]

    async def get_fact(
        self,
        *,
        logical_id: str,
        as_of_tx: datetime | None = None,
        as_of_valid: datetime | None = None,
        tenant_id: str | None = None,
    ) -> m.FactVersion:
        """The version believed at ``as_of_tx`` (default now), if it holds at ``as_of_valid``."""
        path = {"logicalId": logical_id}
        query = {"asOfTx": as_of_tx, "asOfValid": as_of_valid, "tenantId": tenant_id}
        return (await self._call("getFact", m.FactVersion, path=path, query=query))[0]

    async def get_fact_history(
        self,
        *,
        logical_id: str,
        as_of_valid: datetime | None = None,
        tenant_id: str | None = None,
    ) -> m.FactHistory:
        path = {"logicalId": logical_id}
        query = {"asOfValid": as_of_valid, "tenantId": tenant_id}
        return (await self._call("getFactHistory", m.FactHistory, path=path, query=query))[0]


# ---------------------------------------------------------------- helpers


def _given(**fields: object) -> dict[str, object]:
    """The keyword arguments actually given, so the model's own defaults apply to the rest."""
    return {k: v for k, v in fields.items() if v is not None}

