"""The reference core: an in-memory, clock-driven double of the Telha core's clarify surface.

Every public method takes the caller's resolved token and raises ``CoreFault`` with a documented
error code; the web layer only translates. ``ReferenceCore`` is the state of ``devcore.state``
with the clarification endpoints of ``devcore.clarifications``, the steward's of
``devcore.steward`` and, here, the job, people and fact
endpoints and scenario loading.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from functools import partial

from bot.core.errors import ErrorCode
from bot.core.models import (
    AdvanceRequest,
    AliasResolution,
    Audience,
    CompleteRequest,
    ExpediteRequest,
    FactHistory,
    FactVersion,
    FailRequest,
    HeartbeatRequest,
    JobState,
    JobView,
    LeasedJob,
    PeopleBatch,
    PeopleBatchRequest,
    Person,
    PersonEntry,
    PollRequest,
    ReportBatch,
    ReportBatchResult,
    ReportItemResult,
    ResolvedPerson,
    ResolveRequest,
    ScenarioLoaded,
    SlackIdentity,
    TeamsIdentity,
)
from devcore.access import one_tenant
from devcore.directory import Token, identities
from devcore.facts import FactKey
from devcore.faults import CoreFault
from devcore.jobs import CLARIFY_PREFIX, JobRecord
from devcore.paging import Window, page
from devcore.steward import StewardEndpoints

__all__ = ["ReferenceCore", "load_scenario"]

_FENCE = {Audience.CLARIFY: CLARIFY_PREFIX, Audience.INGEST: "ingest:"}


class Contract(StrEnum):
    """What the reference core serves over HTTP (``devcore.app``)."""

    FULL = "full"  # every route and field of bot/contract/openapi.json
    BASELINE = "baseline"  # only what every core offers (docs/core-contract.md)


@dataclass
class ContractSwitch:
    """What one HTTP app of the core serves, read per request: a test may switch it while the
    bot runs (one core can be served over both contracts at once, by two apps)."""

    value: Contract = Contract.FULL


class ReferenceCore(StewardEndpoints):
    """The whole reference core; construct it with a movable clock (and a directory)."""

    # ---------------------------------------------------------------- jobs

    def poll(self, token: Token, req: PollRequest) -> list[LeasedJob]:
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

    def heartbeat(self, token: Token, job_id: str, req: HeartbeatRequest) -> LeasedJob:
        job = self.held(token, job_id, req.lease_token)
        lease = None if req.lease_seconds is None else timedelta(seconds=req.lease_seconds)
        return self.jobs.heartbeat(job, lease=lease, now=self.clock.now()).leased()

    def advance(self, token: Token, job_id: str, req: AdvanceRequest) -> LeasedJob:
        job = self.held(token, job_id, req.lease_token)
        before = job.attempts
        attempt = before + 1 if req.attempt is None else req.attempt  # baseline: the next one
        self.jobs.advance(job, attempt=attempt)
        record = self.records.get(job.payload.clarification_id)
        if record is not None and attempt != before:
            self._event(
                record.model,
                "advanced",
                "Skipped forward inside the lease.",
                attempt=attempt,
                reason_code=req.reason_code,
                actor="clarify-bot",
            )
        return job.leased()

    def expedite(self, token: Token, job_id: str, req: ExpediteRequest) -> JobView:
        now = self.now()
        job = self.jobs.get(job_id, tenants=token.tenants)
        return self.jobs.expedite(job, attempt=req.attempt, now=now).view()

    def complete(self, token: Token, job_id: str, req: CompleteRequest) -> JobView:
        if self.jobs.repeat_complete(job_id, lease_token=req.lease_token, tenants=token.tenants):
            return self.jobs.get(job_id, tenants=token.tenants).view()
        return self.jobs.complete(self.held(token, job_id, req.lease_token)).view()

    def fail(self, token: Token, job_id: str, req: FailRequest) -> JobView:
        job = self.held(token, job_id, req.lease_token)
        return self.jobs.fail(
            job, retryable=req.retryable, reason=req.reason, now=self.clock.now()
        ).view()

    def get_job(self, token: Token, job_id: str) -> JobView:
        self.now()
        return self.jobs.get(job_id, tenants=token.tenants).view()

    def list_jobs(
        self, token: Token, *, state: JobState | None, kind: str | None, window: Window
    ) -> tuple[list[JobView], str | None]:
        """Oldest first (creation order), keyset-paged."""
        self.now()
        chosen = self.jobs.listing(tenants=token.tenants, state=state, kind=kind)
        shown, cursor = page(chosen, key=lambda j: j.seq, win=window, newest_first=False,
                             listing="jobs")
        return [j.view() for j in shown], cursor

    # ---------------------------------------------------------------- people and facts

    def resolve(self, token: Token, req: ResolveRequest) -> ResolvedPerson:
        if req.tenant_id not in token.tenants:
            raise CoreFault(ErrorCode.TENANT_SCOPE_MISMATCH)
        return self.directory.resolve(tenant_id=req.tenant_id, identity=req.identity)

    def get_person(self, token: Token, person_id: str, tenant_id: str | None) -> Person:
        holders = {t for t, p in self.directory.people if p == person_id}
        tenant = one_tenant(token, tenant_id, holders, ErrorCode.PERSON_NOT_FOUND)
        person = self.directory.person_in(tenant_id=tenant, person_id=person_id)
        assert person is not None
        return person

    def get_people(self, token: Token, req: PeopleBatchRequest) -> PeopleBatch:
        """``get_person`` and ``resolve`` for several people at once, each answer in its entry."""
        if req.tenant_id not in token.tenants:
            raise CoreFault(ErrorCode.TENANT_SCOPE_MISMATCH)
        entries = []
        for person_id in dict.fromkeys(req.person_ids):
            person = self.directory.person_in(tenant_id=req.tenant_id, person_id=person_id)
            if person is None:
                entries.append(PersonEntry(person_id=person_id,
                                           error_code=ErrorCode.PERSON_NOT_FOUND.value))
                continue
            found = [self._resolution(req.tenant_id, identity)
                     for identity in identities(person)] if req.resolve_aliases else []
            entries.append(PersonEntry(person_id=person_id, person=person, resolutions=found))
        return PeopleBatch(people=entries)

    def _resolution(self, tenant_id: str, identity: SlackIdentity | TeamsIdentity
                    ) -> AliasResolution:
        named = identity.model_dump()  # as the answer names it
        try:
            resolved = self.directory.resolve(tenant_id=tenant_id, identity=identity)
        except CoreFault as fault:
            return AliasResolution(identity=named, error_code=fault.code.value)
        return AliasResolution(identity=named, person_id=resolved.person.person_id,
                               verified=resolved.verified)

    def report_batch(self, token: Token, req: ReportBatch) -> ReportBatchResult:
        """Each report as its own route would take it; one failing does not stop the others."""
        deliveries = [self._one(item.report.delivery_id or "", partial(
            self.report_delivery, token, item.clarification_id, item.report))
            for item in req.deliveries]
        events = [self._one(item.report.event_id or "", partial(
            self.report_event, token, item.clarification_id, item.report))
            for item in req.events]
        return ReportBatchResult(deliveries=deliveries, events=events)

    @staticmethod
    def _one(id_: str, apply: Callable[[], object]) -> ReportItemResult:
        try:
            apply()
        except CoreFault as fault:
            return ReportItemResult(id=id_, ok=False, error_code=fault.code.value)
        return ReportItemResult(id=id_, ok=True)

    def _fact_key(self, token: Token, logical_id: str, tenant_id: str | None) -> FactKey:
        holders = self.facts.tenants_of(logical_id)
        return one_tenant(token, tenant_id, holders, ErrorCode.FACT_NOT_FOUND), logical_id

    def get_fact(
        self, token: Token, logical_id: str, *, tenant_id: str | None,
        as_of_tx: datetime | None, as_of_valid: datetime | None,
    ) -> FactVersion:
        """The version believed at ``as_of_tx`` (default now), if it holds at ``as_of_valid``."""
        key = self._fact_key(token, logical_id, tenant_id)
        return self.facts.as_of(key, tx=as_of_tx, valid_at=as_of_valid)

    def fact_history(
        self, token: Token, logical_id: str, *, tenant_id: str | None,
        as_of_valid: datetime | None,
    ) -> FactHistory:
        key = self._fact_key(token, logical_id, tenant_id)
        return FactHistory(
            logical_id=logical_id, versions=self.facts.history(key, valid_at=as_of_valid)
        )


def load_scenario(core: ReferenceCore, data: dict[str, object]) -> ScenarioLoaded:
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
    return ScenarioLoaded(
        tenants=len(directory.tenants),
        people=len(directory.people),
        clarifications=len(core.records),
    )
