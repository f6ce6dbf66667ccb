"""The bot's typed async client for the Telha core: one method per route of ``routes.ROUTES``.

Retries and error mapping live in ``bot.core.calls`` (re-exported here, so
``from bot.core.client import CoreClient, RetryPolicy`` keeps working), the HTTP layer in
``bot.core.http``, the job calls in ``bot.core.jobs`` and the reports in ``bot.core.reports``;
every failure surfaces as a ``bot.core.errors.CoreError`` whose message holds no token or body.
Small job calls take the request fields as keyword arguments; calls whose body the bot stores
(answers, delivery and event reports) take the request model itself.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import Any

import structlog

from bot.core import batching
from bot.core import errors as e
from bot.core.calls import DEFAULT_TIMEOUT, BaseCoreClient, RetryPolicy
from bot.core.errors import ExtensionUnavailable, UnexpectedResponse
from bot.core.extensions import Extension
from bot.core.instruments import INSTRUMENTS
from bot.core.jobs import JobCalls
from bot.core.models import (
    AnswerRequest,
    AnswerResult,
    AnyIdentity,
    AskedAlias,
    Clarification,
    ClarificationPage,
    ClarificationState,
    ClarificationSummary,
    DeliveryHistory,
    ErasureReport,
    ErasureRequest,
    FactHistory,
    FactVersion,
    PeopleBatch,
    PeopleBatchRequest,
    Person,
    PersonEntry,
    ResolvedPerson,
    ResolveRequest,
    Severity,
    request_identity,
)
from bot.core.paging import Bound, Listing, walk
from bot.core.reports import ReportCalls

log = structlog.get_logger("bot.core.client")

__all__ = [
    "DEFAULT_TIMEOUT", "AnswerReceipt", "BaseCoreClient", "CoreClient", "RetryPolicy",
    "UnexpectedResponse",
]

# the clarification states of the steward's attention queue (spec changelog v0.8): these of any
# severity, and the open ones at high and critical; the fallback of GET /v1/attention
ATTENTION_ANY = (ClarificationState.CONFLICTED, ClarificationState.EXPIRED,
                 ClarificationState.DEAD_LETTERED)
ATTENTION_URGENT = (ClarificationState.OPEN, ClarificationState.ATTESTED,
                    ClarificationState.PARTIALLY_CONFIRMED)
URGENT = (Severity.HIGH, Severity.CRITICAL)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class AnswerReceipt:
    """The answer's outcome and the HTTP status that carried it (200 bound, 202 otherwise)."""

    result: AnswerResult
    http_status: int


class CoreClient(JobCalls, ReportCalls):
    """The bot's view of the core: jobs (``bot.core.jobs``), reports (``bot.core.reports``),
    clarifications, people and facts.

    Where a call belongs to an extension the core does not offer, the client takes the
    extension's fallback itself when the fallback is only other calls of the contract (people
    read one by one, reports sent one by one, an advance taken step by step); where the fallback
    is a decision (a decline, the dead-letter digest, the steward's queue), the caller gets
    ``ExtensionUnavailable`` and decides (``bot.core.extensions`` lists each).
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._people_calls: batching.Gathered[str, tuple[batching.JobScope, list[str]]] = \
            batching.Gathered(self._read_people)

    # ------------------------------------------------------------ clarifications

    async def list_clarifications(
        self,
        *,
        state: ClarificationState | None = None,
        severity: Severity | None = None,
        tenant_id: str | None = None,
        cursor: str | None = None,
        limit: int | None = None,
        document_id: str | None = None,
        since: datetime | None = None,
    ) -> ClarificationPage:
        query = {"state": state, "severity": severity, "documentId": document_id,
                 "since": since, "tenantId": tenant_id, "cursor": cursor, "limit": limit}
        return (await self._call("listClarifications", ClarificationPage, query=query))[0]

    async def list_attention(
        self, *, tenant_id: str | None = None, cursor: str | None = None,
        limit: int | None = None,
    ) -> ClarificationPage:
        """The steward's attention queue (spec changelog v0.8), newest first (the attention
        extension; ``attention_queue`` works on any core)."""
        query = {"tenantId": tenant_id, "cursor": cursor, "limit": limit}
        return (await self._call("listAttention", ClarificationPage, query=query))[0]

    async def attention_queue(self, *, bound: Bound, tenant_id: str | None = None
                              ) -> Listing[ClarificationSummary]:
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
        lists: list[tuple[ClarificationState, Severity | None]] = [
            (state, None) for state in ATTENTION_ANY]
        lists += [(state, severity) for state in ATTENTION_URGENT for severity in URGENT]
        walks = await asyncio.gather(*(
            self.walk_clarifications(bound=bound, state=state, severity=severity,
                                     tenant_id=tenant_id) for state, severity in lists))
        found: dict[str, ClarificationSummary] = {}
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
                              ) -> ClarificationPage:
        return await self.list_attention(tenant_id=tenant_id, cursor=cursor, limit=limit)

    async def walk_clarifications(
        self, *, bound: Bound, start: str | None = None,
        state: ClarificationState | None = None, severity: Severity | None = None,
        tenant_id: str | None = None, document_id: str | None = None,
        since: datetime | None = None,
    ) -> Listing[ClarificationSummary]:
        """The clarification list from ``start`` (a ``nextCursor``; None: the newest), page by
        page to its end or until ``bound`` is spent."""
        async def read(cursor: str | None, limit: int) -> ClarificationPage:
            return await self.list_clarifications(
                state=state, severity=severity, tenant_id=tenant_id, document_id=document_id,
                since=since, cursor=cursor, limit=limit)

        return await walk(read, bound, self._clock, start=start, name="clarifications")

    async def get_delivery_history(self, *, clarification_id: str) -> DeliveryHistory:
        path = {"clarificationId": clarification_id}
        return (await self._call("getDeliveryHistory", DeliveryHistory, path=path))[0]

    async def erase_attribution(
        self, *, person_id: str, tenant_id: str | None = None
    ) -> ErasureReport:
        """Tombstone a person's attribution (spec OQ-5); a steward-bound API key only."""
        body = ErasureRequest(tenant_id=tenant_id)
        path = {"personId": person_id}
        return (await self._call("eraseAttribution", ErasureReport, path=path, body=body))[0]

    async def iter_clarifications(
        self,
        *,
        state: ClarificationState | None = None,
        severity: Severity | None = None,
        tenant_id: str | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[ClarificationSummary]:
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

    async def get_clarification(self, *, clarification_id: str) -> Clarification:
        path = {"clarificationId": clarification_id}
        return (await self._call("getClarification", Clarification, path=path))[0]

    async def answer_clarification(
        self, *, clarification_id: str, request: AnswerRequest
    ) -> AnswerReceipt:
        path = {"clarificationId": clarification_id}
        result, status = await self._call(
            "answerClarification", AnswerResult, path=path, body=request
        )
        return AnswerReceipt(result=result, http_status=status)

    # ------------------------------------------------------------ people and facts

    async def resolve_person(
        self, *, tenant_id: str, identity: AnyIdentity
    ) -> ResolvedPerson:
        """A chat identity to a PERSON, tenant-scoped. Routing asks only when nothing a job
        read already speaks for the alias (``bot.engine.aliases``)."""
        body = ResolveRequest(tenant_id=tenant_id, identity=request_identity(identity))
        resolved = (await self._call("resolvePerson", ResolvedPerson, body=body))[0]
        if not resolved.person.tenant_id:
            resolved.person.tenant_id = tenant_id  # resolved within the tenant asked for
        return resolved

    async def get_person(self, *, person_id: str, tenant_id: str | None = None,
                         scope: batching.JobScope | None = None) -> Person:
        """A person's aliases, memberships and roles (kept in a job's ``scope`` once read)."""
        if scope is not None and (held := scope.person(person_id, tenant_id)) is not None:
            return held
        path, query = {"personId": person_id}, {"tenantId": tenant_id}
        try:
            person = (await self._call("getPerson", Person, path=path, query=query))[0]
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
    ) -> PeopleBatch:
        """Several people of one tenant in one call, each chat alias resolved back."""
        body = PeopleBatchRequest(tenant_id=tenant_id, person_ids=person_ids,
                                  resolve_aliases=resolve_aliases)
        return (await self._call("getPeople", PeopleBatch, body=body))[0]

    async def get_fact(
        self,
        *,
        logical_id: str,
        as_of_tx: datetime | None = None,
        as_of_valid: datetime | None = None,
        tenant_id: str | None = None,
    ) -> FactVersion:
        """The version believed at ``as_of_tx`` (default now), if it holds at ``as_of_valid``."""
        path = {"logicalId": logical_id}
        query = {"asOfTx": as_of_tx, "asOfValid": as_of_valid, "tenantId": tenant_id}
        return (await self._call("getFact", FactVersion, path=path, query=query))[0]

    async def get_fact_history(
        self,
        *,
        logical_id: str,
        as_of_valid: datetime | None = None,
        tenant_id: str | None = None,
    ) -> FactHistory:
        path = {"logicalId": logical_id}
        query = {"asOfValid": as_of_valid, "tenantId": tenant_id}
        return (await self._call("getFactHistory", FactHistory, path=path, query=query))[0]

    async def read_people(self, scope: batching.JobScope, *, tenant_id: str,
                          person_ids: list[str],
                          vouched: list[AskedAlias] | None = None) -> None:
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

    async def _read_people(self, tenant_id: str,
                           asks: list[tuple[batching.JobScope, list[str]]]) -> None:
        wanted = list(dict.fromkeys(p for _, ids in asks for p in ids))
        found: dict[str, PersonEntry] = {}
        for start in range(0, len(wanted), batching.PEOPLE_PER_CALL):
            chunk = wanted[start:start + batching.PEOPLE_PER_CALL]
            batch = await self.get_people(tenant_id=tenant_id, person_ids=chunk)
            for entry in batch.people:
                if entry.person is not None and not entry.person.tenant_id:
                    entry.person.tenant_id = tenant_id
                found[entry.person_id] = entry
        for scope, ids in asks:
            scope.learn(tenant_id, PeopleBatch(
                people=[found[p] for p in dict.fromkeys(ids) if p in found]))
