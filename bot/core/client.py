"""The bot's typed async client for the Telha core: one method per route of ``routes.ROUTES``.

Transport, retries and error mapping live in ``bot.core.transport`` (re-exported here, so
``from bot.core.client import CoreClient, RetryPolicy`` keeps working); every failure surfaces as
a ``bot.core.errors.CoreError`` whose message holds no token or body. Small job calls take the
request fields as keyword arguments; calls whose body the bot stores (answers, delivery and
event reports) take the request model itself.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial

import structlog

from bot.core import batching, tolerance
from bot.core import errors as e
from bot.core import models as m
from bot.core.errors import ExtensionUnavailable, UnexpectedResponse
from bot.core.extensions import Extension
from bot.core.instruments import INSTRUMENTS
from bot.core.paging import Bound, Listing, walk
from bot.core.transport import DEFAULT_TIMEOUT, BaseCoreClient, RetryPolicy

log = structlog.get_logger("bot.core.client")

__all__ = [
    "DEFAULT_TIMEOUT", "AnswerReceipt", "BaseCoreClient", "CoreClient", "RetryPolicy",
    "UnexpectedResponse",
]

# the clarification states of the steward's attention queue (spec changelog v0.8): these of any
# severity, and the open ones at high and critical; the fallback of GET /v1/attention
ATTENTION_ANY = (m.ClarificationState.CONFLICTED, m.ClarificationState.EXPIRED,
                 m.ClarificationState.DEAD_LETTERED)
ATTENTION_URGENT = (m.ClarificationState.OPEN, m.ClarificationState.ATTESTED,
                    m.ClarificationState.PARTIALLY_CONFIRMED)
URGENT = (m.Severity.HIGH, m.Severity.CRITICAL)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
KEPT_ATTEMPTS = 10_000  # jobs whose attempts the client remembers (advance without the field)


@dataclass(frozen=True, slots=True)
class AnswerReceipt:
    """The answer's outcome and the HTTP status that carried it (200 bound, 202 otherwise)."""

    result: m.AnswerResult
    http_status: int


class CoreClient(BaseCoreClient):
    """The bot's view of the core: jobs, clarifications, people and facts.

    Where a call belongs to an extension the core does not offer, the client takes the
    extension's fallback itself when the fallback is only other calls of the contract (people
    read one by one, reports sent one by one, an advance taken step by step); where the fallback
    is a decision (a decline, the dead-letter digest, the steward's queue), the caller gets
    ``ExtensionUnavailable`` and decides (``bot.core.extensions`` lists each).
    """

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        # the attempts of jobs held, for an advance without the advance-attempt field
        self._attempts: OrderedDict[str, int] = OrderedDict()
        self._people_calls: batching.Gathered[str, tuple[batching.JobScope, list[str]]] = \
            batching.Gathered(self._read_people)
        # keyed by linger: jobs ending within the same linger share the call
        self._report_calls: batching.Gathered[float, batching.JobScope] = \
            batching.Gathered(self._send_reports)
        # the report ids sent without the report-details extension: the core cannot tell a
        # resent report from a new one, so this process does not resend one it sent
        self._reported: OrderedDict[str, None] = OrderedDict()

    # ------------------------------------------------------------ jobs

    async def poll_jobs(
        self, *, kinds: list[str], max_jobs: int | None = None, lease_seconds: int | None = None
    ) -> m.PollResponse:
        body = m.PollRequest(**_given(kinds=kinds, max_jobs=max_jobs, lease_seconds=lease_seconds))
        gone: list[tolerance.Dropped] = []
        # a 429 is not sent again here: the worker's loop waits out its Retry-After, where a
        # stop does not wait behind it
        polled = (await self._call("pollJobs", m.PollResponse, body=body, dropped=gone,
                                   resend_refused=False))[0]
        polled.unread.extend(_unread(d) for d in gone if d.model == m.LeasedJob.__name__)
        polled.jobs[:] = _once(polled.jobs)
        if not self.offers(Extension.ADVANCE_ATTEMPT):
            for job in polled.jobs:
                if job.attempts is not None:  # else the handler derives it (``holding``)
                    self._held(job.id, job.attempts)
        return polled

    async def heartbeat_job(
        self, *, job_id: str, lease_token: str, lease_seconds: int | None = None
    ) -> m.LeasedJob | None:
        """The lease extended (None: the core's answer could not be read, the lease is still
        extended). Without the heartbeat-lease extension the lease is extended by its own
        duration."""
        body = m.HeartbeatRequest(lease_token=lease_token, lease_seconds=lease_seconds)
        return await self._ack("heartbeatJob", m.LeasedJob, path={"jobId": job_id}, body=body)

    async def advance_job(
        self,
        *,
        job_id: str,
        lease_token: str,
        attempt: int,
        reason_code: m.ReasonCode | None = None,
    ) -> m.LeasedJob | None:
        """Skip forward inside the lease to ``attempt``. A core without the advance-attempt
        extension raises attempts by one per advance: then each step is sent once and, after a
        transport failure, a heartbeat says where the job stands before anything is resent."""
        if self.offers(Extension.ADVANCE_ATTEMPT):
            body = m.AdvanceRequest(lease_token=lease_token, attempt=attempt,
                                    reason_code=reason_code)
            try:
                return await self._ack("advanceJob", m.LeasedJob, path={"jobId": job_id},
                                       body=body, resend_without_extensions=False)
            except e.ValidationFailed as exc:
                # only a refused field says the core lacks it (a backwards advance is a 422 too)
                if self.offered.fixed or "unknown_field" not in exc.rules:
                    raise
                if self.offered.lose(Extension.ADVANCE_ATTEMPT):  # (or a concurrent call did)
                    log.warning("core.extension_off", extension=Extension.ADVANCE_ATTEMPT.value,
                                operation="advanceJob", why="refused by the core")
                if self.discovery is not None:
                    self.discovery.soon()
        INSTRUMENTS.fallback(Extension.ADVANCE_ATTEMPT)
        return await self._advance_by_steps(job_id, lease_token, attempt)

    async def _advance_by_steps(self, job_id: str, lease_token: str, attempt: int
                                ) -> m.LeasedJob | None:
        current = self._attempts.get(job_id)
        last: m.LeasedJob | None = None
        if current is None:
            last = await self.heartbeat_job(job_id=job_id, lease_token=lease_token)
            if last is None or last.attempts is None:
                raise UnexpectedResponse(status=200, code="", message=(
                    "The core's heartbeat does not say the job's attempts; the advance is not "
                    "sent blindly."))
            current = last.attempts
        body = m.AdvanceRequest(lease_token=lease_token)
        while current < attempt:
            try:
                last = await self._ack("advanceJob", m.LeasedJob, path={"jobId": job_id},
                                       body=body, resend=False)
            except e.CoreTransportError:
                # did it arrive? the heartbeat tells, so a step is never taken twice
                beat = await self.heartbeat_job(job_id=job_id, lease_token=lease_token)
                if beat is None or beat.attempts is None:
                    raise
                current = beat.attempts
                continue
            current = (last.attempts if last is not None and last.attempts is not None
                       else current + 1)
            self._held(job_id, current)
        return last

    def holding(self, job_id: str, attempts: int) -> None:
        """The attempts of a job whose core did not say them, as the handler derived them: a
        step-by-step advance (no advance-attempt extension) counts from there."""
        if not self.offers(Extension.ADVANCE_ATTEMPT):
            self._held(job_id, attempts)

    def _held(self, job_id: str, attempts: int) -> None:
        self._attempts[job_id] = attempts
        self._attempts.move_to_end(job_id)
        while len(self._attempts) > KEPT_ATTEMPTS:
            self._attempts.popitem(last=False)

    async def expedite_job(
        self, *, job_id: str, attempt: int, reason_code: m.ReasonCode | None = None
    ) -> m.JobView | None:
        """The candidate asked at ``attempt`` declined: the job's next turn starts now (the
        expedite extension: ``ExtensionUnavailable`` without it)."""
        body = m.ExpediteRequest(attempt=attempt, reason_code=reason_code)
        return await self._ack("expediteJob", m.JobView, path={"jobId": job_id}, body=body)

    async def complete_job(self, *, job_id: str, lease_token: str) -> m.JobView | None:
        self._attempts.pop(job_id, None)
        body = m.CompleteRequest(lease_token=lease_token)
        return await self._ack("completeJob", m.JobView, path={"jobId": job_id}, body=body)

    async def fail_job(
        self, *, job_id: str, lease_token: str, retryable: bool = True, reason: str = ""
    ) -> m.JobView | None:
        self._attempts.pop(job_id, None)
        body = m.FailRequest(lease_token=lease_token, retryable=retryable, reason=reason)
        return await self._ack("failJob", m.JobView, path={"jobId": job_id}, body=body)

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
        """The steward's attention queue (spec changelog v0.8), newest first (the attention
        extension; ``attention_queue`` works on any core)."""
        query = {"tenantId": tenant_id, "cursor": cursor, "limit": limit}
        return (await self._call("listAttention", m.ClarificationPage, query=query))[0]

    async def attention_queue(self, *, bound: Bound, tenant_id: str | None = None
                              ) -> Listing[m.ClarificationSummary]:
        """The attention queue, newest first, each list followed to its end within ``bound``
        (not ``complete``: one went on past it): GET /v1/attention where offered, else put
        together from the clarification list with the spec's filters, one list per state (the
        urgent states per urgent severity, so open questions of other severities are not
        walked). Items of other tenants are left out where the core says whose they are (a
        baseline list may not: callers that read each item check its tenant)."""
        if self.offers(Extension.ATTENTION):
            try:
                return await walk(partial(self._attention_page, tenant_id), bound, self._clock,
                                  name="attention")
            except ExtensionUnavailable:
                pass
        INSTRUMENTS.fallback(Extension.ATTENTION)
        lists: list[tuple[m.ClarificationState, m.Severity | None]] = [
            (state, None) for state in ATTENTION_ANY]
        lists += [(state, severity) for state in ATTENTION_URGENT for severity in URGENT]
        walks = await asyncio.gather(*(
            self.walk_clarifications(bound=bound, state=state, severity=severity,
                                     tenant_id=tenant_id) for state, severity in lists))
        found: dict[str, m.ClarificationSummary] = {}
        for listing in walks:
            for item in listing.items:
                # a core that ignores the severity filter sends more than asked
                if item.state in ATTENTION_URGENT and item.severity not in URGENT:
                    continue
                if tenant_id is not None and item.tenant_id not in (None, tenant_id):
                    continue
                found.setdefault(item.id, item)
        newest = sorted(found.values(), key=lambda s: s.updated_at or s.created_at or _EPOCH,
                        reverse=True)
        return Listing(newest, complete=all(listing.complete for listing in walks))

    async def _attention_page(self, tenant_id: str | None, cursor: str | None, limit: int
                              ) -> m.ClarificationPage:
        return await self.list_attention(tenant_id=tenant_id, cursor=cursor, limit=limit)

    async def walk_clarifications(
        self, *, bound: Bound, start: str | None = None,
        state: m.ClarificationState | None = None, severity: m.Severity | None = None,
        tenant_id: str | None = None, document_id: str | None = None,
        since: datetime | None = None,
    ) -> Listing[m.ClarificationSummary]:
        """The clarification list from ``start`` (a ``nextCursor``; None: the newest), page by
        page to its end or until ``bound`` is spent."""
        async def read(cursor: str | None, limit: int) -> m.ClarificationPage:
            return await self.list_clarifications(
                state=state, severity=severity, tenant_id=tenant_id, document_id=document_id,
                since=since, cursor=cursor, limit=limit)

        return await walk(read, bound, self._clock, start=start, name="clarifications")

    async def walk_jobs(self, *, bound: Bound, start: str | None = None,
                        state: m.JobState | None = None, kind: str | None = None
                        ) -> Listing[m.JobView]:
        """The job list (the jobs-read extension) from ``start``, oldest first, page by page
        to its end or until ``bound`` is spent."""
        async def read(cursor: str | None, limit: int) -> m.JobPage:
            return await self.list_jobs(state=state, kind=kind, cursor=cursor, limit=limit)

        return await walk(read, bound, self._clock, start=start, name="jobs")

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
        self, *, clarification_id: str, report: m.DeliveryReport,
        scope: batching.JobScope | None = None,
    ) -> m.DeliveryRecord | None:
        """Report a message sent: the core's record (None: held in ``scope``, when one is
        given, until ``flush``; or an answer the bot cannot read). Without the report-details
        extension a steward notice is not reported as a delivery (``_send_delivery``)."""
        if scope is not None:
            scope.deliveries.append(
                m.DeliveryReportItem(clarification_id=clarification_id, report=report))
            return None
        return await self._send_delivery(clarification_id, report)

    async def report_event(
        self, *, clarification_id: str, report: m.EventReport,
        scope: batching.JobScope | None = None,
    ) -> m.ClarificationEvent | None:
        """Report a skip, escalation or notice: the core's event (None: held in ``scope``, when
        one is given, until ``flush``; or an answer the bot cannot read)."""
        if scope is not None:
            scope.events.append(m.EventReportItem(clarification_id=clarification_id,
                                                  report=report))
            return None
        return await self._send_event(clarification_id, report)

    async def _send_delivery(self, clarification_id: str, report: m.DeliveryReport
                             ) -> m.DeliveryRecord | None:
        path = {"clarificationId": clarification_id}
        if self.offers(Extension.REPORT_DETAILS):
            try:  # not resent without its details by the client: a notice is no delivery then
                return await self._ack("reportDelivery", m.DeliveryRecord, path=path,
                                       body=report, resend_without_extensions=False)
            except e.ValidationFailed as exc:
                if self.offered.fixed or (exc.rules and "unknown_field" not in exc.rules):
                    raise
                self._lost(Extension.REPORT_DETAILS, "reportDelivery")
        if report.kind is m.DeliveryKind.STEWARD_NOTICE:
            # the baseline's delivery has no kind, and would count the steward as asked; the
            # notice's own audit event (steward_notified) is on the core's trail already
            return None
        if report.delivery_id in self._reported:
            return None
        record = await self._ack("reportDelivery", m.DeliveryRecord, path=path, body=report)
        self._sent(report.delivery_id)
        return record

    async def _send_event(self, clarification_id: str, report: m.EventReport
                          ) -> m.ClarificationEvent | None:
        path = {"clarificationId": clarification_id}
        details = self.offers(Extension.REPORT_DETAILS)
        if not details and report.event_id in self._reported:
            return None
        event = await self._ack("reportEvent", m.ClarificationEvent, path=path, body=report)
        if not self.offers(Extension.REPORT_DETAILS):
            self._sent(report.event_id)
        return event

    def _sent(self, report_id: str | None) -> None:
        """Remember a report sent without its id reaching the core (it cannot deduplicate)."""
        if report_id is None:
            return
        self._reported[report_id] = None
        while len(self._reported) > KEPT_ATTEMPTS:
            self._reported.popitem(last=False)

    async def report_batch(self, batch: m.ReportBatch) -> m.ReportBatchResult | None:
        """Delivery and event reports together (a job's, at its end): one call instead of one
        per report. Each item's own error comes back in its result, not as an exception; a 2xx
        the bot cannot read is the core's acknowledgement all the same (None)."""
        return await self._ack("reportBatch", m.ReportBatchResult, body=batch)

    async def read_people(self, scope: batching.JobScope, *, tenant_id: str,
                          person_ids: list[str],
                          vouched: list[m.AskedAlias] | None = None) -> None:
        """Read a job's people into its scope; jobs starting together share the call. The
        clarification's ``askedAliases`` (``vouched``) are kept in the scope too, weighed with
        the batch's resolutions before any resolve call (``bot.engine.aliases``). Without the
        people-batch extension nothing is read ahead: each person is read when first needed,
        and kept in the scope."""
        scope.tenant_id = tenant_id
        scope.vouch(tenant_id, vouched or [])
        wanted = list(dict.fromkeys(p for p in person_ids if p not in scope.people))
        if not wanted or not self.offers(Extension.PEOPLE_BATCH):
            return
        try:
            await self._people_calls(tenant_id, (scope, wanted))
        except ExtensionUnavailable:
            return  # read one by one, when needed
        except UnexpectedResponse:
            return  # an answer that did not read (logged, counted): one by one, when needed

    async def flush(self, scope: batching.JobScope, *,
                    linger: float = batching.LINGER_SECONDS) -> None:
        """Send what the scope holds; jobs ending within ``linger`` of each other share the
        call. A report the core refuses is logged by kind and code (no values); a transport or
        auth failure raises, as the single report would have."""
        if scope.deliveries or scope.events:
            taken = batching.JobScope(deliveries=scope.deliveries, events=scope.events)
            scope.deliveries, scope.events = [], []
            await self._report_calls(linger, taken, linger=linger)

    async def _read_people(self, tenant_id: str,
                           asks: list[tuple[batching.JobScope, list[str]]]) -> None:
        wanted = list(dict.fromkeys(p for _, ids in asks for p in ids))
        found: dict[str, m.PersonEntry] = {}
        for start in range(0, len(wanted), batching.PEOPLE_PER_CALL):
            chunk = wanted[start:start + batching.PEOPLE_PER_CALL]
            batch = await self.get_people(tenant_id=tenant_id, person_ids=chunk)
            for entry in batch.people:
                if entry.person is not None and not entry.person.tenant_id:
                    entry.person.tenant_id = tenant_id
                found[entry.person_id] = entry
        for scope, ids in asks:
            scope.learn(tenant_id, m.PeopleBatch(
                people=[found[p] for p in dict.fromkeys(ids) if p in found]))

    async def _send_reports(self, _: float, scopes: list[batching.JobScope]) -> None:
        merged = batching.JobScope(
            deliveries=[item for scope in scopes for item in scope.deliveries],
            events=[item for scope in scopes for item in scope.events])
        batched = self.offers(Extension.REPORTS) and self.offers(Extension.REPORT_DETAILS)
        for batch in merged.chunks():
            if batched:
                try:
                    result = await self.report_batch(batch)
                except ExtensionUnavailable:
                    batched = False
                else:
                    for kind, items in (() if result is None else (
                            ("delivery", result.deliveries), ("event", result.events))):
                        for item in items:
                            if not item.ok:
                                log.warning("core.report_refused", kind=kind,
                                            code=item.error_code)
                    continue
            INSTRUMENTS.fallback(Extension.REPORTS)
            await self._send_one_by_one(batch)

    async def _send_one_by_one(self, batch: m.ReportBatch) -> None:
        """The batch as the baseline takes it: each report on its own route, deliveries first,
        in order. A report the core refuses is logged by kind and code (as a batch's item);
        a transport or auth failure raises."""
        sends: list[tuple[str, Callable[[], Awaitable[object]]]] = [
            ("delivery", partial(self._send_delivery, d.clarification_id, d.report))
            for d in batch.deliveries]
        sends += [("event", partial(self._send_event, ev.clarification_id, ev.report))
                  for ev in batch.events]
        for kind, send in sends:
            try:
                await send()
            except (e.InvalidRequest, e.NotFound, e.PermissionDenied, e.Conflict) as exc:
                log.warning("core.report_refused", kind=kind, code=exc.code)

    # ------------------------------------------------------------ people and facts

    async def resolve_person(
        self, *, tenant_id: str, identity: m.AnyIdentity
    ) -> m.ResolvedPerson:
        """A chat identity to a PERSON, tenant-scoped. Routing asks only when nothing a job
        read already speaks for the alias (``bot.engine.aliases``)."""
        body = m.ResolveRequest(tenant_id=tenant_id, identity=m.request_identity(identity))
        resolved = (await self._call("resolvePerson", m.ResolvedPerson, body=body))[0]
        if not resolved.person.tenant_id:
            resolved.person.tenant_id = tenant_id  # resolved within the tenant asked for
        return resolved

    async def get_person(self, *, person_id: str, tenant_id: str | None = None,
                         scope: batching.JobScope | None = None) -> m.Person:
        """A person's aliases, memberships and roles (kept in a job's ``scope`` once read)."""
        if scope is not None and (held := scope.person(person_id, tenant_id)) is not None:
            return held
        path, query = {"personId": person_id}, {"tenantId": tenant_id}
        try:
            person = (await self._call("getPerson", m.Person, path=path, query=query))[0]
        except e.PersonNotFound as exc:
            if scope is not None:
                scope.remember(person_id, tenant_id, None, exc.code)
            raise
        if not person.tenant_id and tenant_id is not None:
            person.tenant_id = tenant_id  # a core that leaves it out answered for this tenant
        if scope is not None:
            scope.remember(person_id, tenant_id, person, None)
        return person

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


def _unread(dropped: tolerance.Dropped) -> m.UnreadJob:
    """What still names a job the reader dropped: its id and lease token, if they read."""
    entry = dropped.entry if isinstance(dropped.entry, dict) else {}
    job_id, token = entry.get("id"), entry.get("leaseToken")
    return m.UnreadJob(id=job_id if isinstance(job_id, str) and job_id else None,
                       lease_token=token if isinstance(token, str) and token else None,
                       fields=dropped.fields)


def _given(**fields: object) -> dict[str, object]:
    """The keyword arguments actually given, so the model's own defaults apply to the rest."""
    return {k: v for k, v in fields.items() if v is not None}



def _once(jobs: list[m.LeasedJob]) -> list[m.LeasedJob]:
    """The jobs of one poll answer, each id once (the first entry naming it): a job worked twice
    would have each turn advanced twice, and a baseline core raises attempts by one for each
    advance, skipping a candidate unasked. Repeats are counted and logged, never a value."""
    seen: set[str] = set()
    kept: list[m.LeasedJob] = []
    for job in jobs:
        if job.id not in seen:
            seen.add(job.id)
            kept.append(job)
    if len(kept) < len(jobs):
        for _ in range(len(jobs) - len(kept)):
            tolerance.tolerated("repeated_entry", m.LeasedJob.__name__)
        log.warning("core.entries_repeated", model=m.LeasedJob.__name__,
                    count=len(jobs) - len(kept))
    return kept
