"""The core client's job calls: the poll, the lease's operations (heartbeat, advance, expedite,
complete, fail) and the job reads. A core without the advance-attempt extension raises a job's
attempts by one per advance; the client then remembers the attempts of the jobs it holds and
advances step by step (``JobCalls.advance_job``)."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import structlog

from bot.core import errors as e
from bot.core import tolerance
from bot.core.calls import BaseCoreClient
from bot.core.errors import UnexpectedResponse
from bot.core.extensions import Extension
from bot.core.instruments import INSTRUMENTS
from bot.core.models import (
    AdvanceRequest,
    CompleteRequest,
    ExpediteRequest,
    FailRequest,
    HeartbeatRequest,
    JobPage,
    JobState,
    JobView,
    LeasedJob,
    PollRequest,
    PollResponse,
    ReasonCode,
    UnreadJob,
)
from bot.core.models.enums import EXTENSION_CODES
from bot.core.paging import Bound, Listing, walk

log = structlog.get_logger("bot.core.client")

KEPT_ATTEMPTS = 10_000  # jobs whose attempts the client remembers (advance without the field)


class JobCalls(BaseCoreClient):
    """Jobs and their leases, as the worker uses them."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        # the attempts of jobs held, for an advance without the advance-attempt field
        self._attempts: OrderedDict[str, int] = OrderedDict()

    async def poll_jobs(
        self, *, kinds: list[str], max_jobs: int | None = None, lease_seconds: int | None = None
    ) -> PollResponse:
        body = PollRequest(**_given(kinds=kinds, max_jobs=max_jobs, lease_seconds=lease_seconds))
        gone: list[tolerance.Dropped] = []
        # a 429 is not sent again here: the worker's loop waits out its Retry-After, where a
        # stop does not wait behind it
        polled = (await self._call("pollJobs", PollResponse, body=body, dropped=gone,
                                   resend_refused=False))[0]
        polled.unread.extend(_unread(d) for d in gone if d.model == LeasedJob.__name__)
        polled.jobs[:] = _once(polled.jobs)
        if not self.offers(Extension.ADVANCE_ATTEMPT):
            for job in polled.jobs:
                if job.attempts is not None:  # else the handler derives it (``holding``)
                    self._held(job.id, job.attempts)
        return polled

    async def heartbeat_job(
        self, *, job_id: str, lease_token: str, lease_seconds: int | None = None
    ) -> LeasedJob | None:
        """The lease extended (None: the core's answer could not be read, the lease is still
        extended). Without the heartbeat-lease extension the lease is extended by its own
        duration."""
        body = HeartbeatRequest(lease_token=lease_token, lease_seconds=lease_seconds)
        return await self._ack("heartbeatJob", LeasedJob, path={"jobId": job_id}, body=body)

    async def advance_job(
        self,
        *,
        job_id: str,
        lease_token: str,
        attempt: int,
        reason_code: ReasonCode | None = None,
    ) -> LeasedJob | None:
        """Skip forward inside the lease to ``attempt``. A core without the advance-attempt
        extension raises attempts by one per advance: then each step is sent once and, after a
        transport failure, a heartbeat says where the job stands before anything is resent."""
        if self.offers(Extension.ADVANCE_ATTEMPT):
            body = AdvanceRequest(lease_token=lease_token, attempt=attempt,
                                  reason_code=reason_code)
            try:
                return await self._ack("advanceJob", LeasedJob, path={"jobId": job_id},
                                       body=body, resend_without_extensions=False)
            except e.ValidationFailed as exc:
                if not self.offered.fixed and "enum" in exc.rules \
                        and reason_code in EXTENSION_CODES:
                    # the core lacks the code's extension: the spec's code in its place
                    self._lost(Extension(EXTENSION_CODES[reason_code][0]), "advanceJob")
                    return await self._ack("advanceJob", LeasedJob, path={"jobId": job_id},
                                           body=body, resend_without_extensions=False)
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
                                ) -> LeasedJob | None:
        current = self._attempts.get(job_id)
        last: LeasedJob | None = None
        if current is None:
            last = await self.heartbeat_job(job_id=job_id, lease_token=lease_token)
            if last is None or last.attempts is None:
                raise UnexpectedResponse(status=200, code="", message=(
                    "The core's heartbeat does not say the job's attempts; the advance is not "
                    "sent blindly."))
            current = last.attempts
        body = AdvanceRequest(lease_token=lease_token)
        while current < attempt:
            try:
                last = await self._ack("advanceJob", LeasedJob, path={"jobId": job_id},
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
        self, *, job_id: str, attempt: int, reason_code: ReasonCode | None = None
    ) -> JobView | None:
        """The candidate asked at ``attempt`` declined: the job's next turn starts now (the
        expedite extension: ``ExtensionUnavailable`` without it)."""
        body = ExpediteRequest(attempt=attempt, reason_code=reason_code)
        return await self._ack("expediteJob", JobView, path={"jobId": job_id}, body=body)

    async def complete_job(self, *, job_id: str, lease_token: str) -> JobView | None:
        self._attempts.pop(job_id, None)
        body = CompleteRequest(lease_token=lease_token)
        return await self._ack("completeJob", JobView, path={"jobId": job_id}, body=body)

    async def fail_job(
        self, *, job_id: str, lease_token: str, retryable: bool = True, reason: str = ""
    ) -> JobView | None:
        self._attempts.pop(job_id, None)
        body = FailRequest(lease_token=lease_token, retryable=retryable, reason=reason)
        return await self._ack("failJob", JobView, path={"jobId": job_id}, body=body)

    async def get_job(self, *, job_id: str) -> JobView:
        return (await self._call("getJob", JobView, path={"jobId": job_id}))[0]

    async def list_jobs(
        self,
        *,
        state: JobState | None = None,
        kind: str | None = None,
        cursor: str | None = None,
        limit: int | None = None,
    ) -> JobPage:
        query = {"state": state, "kind": kind, "cursor": cursor, "limit": limit}
        return (await self._call("listJobs", JobPage, query=query))[0]

    async def walk_jobs(self, *, bound: Bound, start: str | None = None,
                        state: JobState | None = None, kind: str | None = None
                        ) -> Listing[JobView]:
        """The job list (the jobs-read extension) from ``start``, oldest first, page by page
        to its end or until ``bound`` is spent."""
        async def read(cursor: str | None, limit: int) -> JobPage:
            return await self.list_jobs(state=state, kind=kind, cursor=cursor, limit=limit)

        return await walk(read, bound, self._clock, start=start, name="jobs")


# ---------------------------------------------------------------- helpers


def _unread(dropped: tolerance.Dropped) -> UnreadJob:
    """What still names a job the reader dropped: its id and lease token, if they read."""
    entry = dropped.entry if isinstance(dropped.entry, dict) else {}
    job_id, token = entry.get("id"), entry.get("leaseToken")
    return UnreadJob(id=job_id if isinstance(job_id, str) and job_id else None,
                     lease_token=token if isinstance(token, str) and token else None,
                     fields=dropped.fields)


def _given(**fields: object) -> dict[str, object]:
    """The keyword arguments actually given, so the model's own defaults apply to the rest."""
    return {k: v for k, v in fields.items() if v is not None}


def _once(jobs: list[LeasedJob]) -> list[LeasedJob]:
    """The jobs of one poll answer, each id once (the first entry naming it): a job worked twice
    would have each turn advanced twice, and a baseline core raises attempts by one for each
    advance, skipping a candidate unasked. Repeats are counted and logged, never a value."""
    seen: set[str] = set()
    kept: list[LeasedJob] = []
    for job in jobs:
        if job.id not in seen:
            seen.add(job.id)
            kept.append(job)
    if len(kept) < len(jobs):
        for _ in range(len(jobs) - len(kept)):
            tolerance.tolerated("repeated_entry", LeasedJob.__name__)
        log.warning("core.entries_repeated", model=LeasedJob.__name__,
                    count=len(jobs) - len(kept))
    return kept
