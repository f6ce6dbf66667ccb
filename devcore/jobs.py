"""The reference core's job queue: leases, heartbeats, in-lease advance, backoff and dead letters.

Lease expiry without completion is a retryable failure (spec changelog v0.9): attempts + 1 and the
job becomes visible again after the per-kind backoff, whose base for ``clarify:temporal`` is the
tenant's escalation window. That is how a clarification escalates to the next candidate.
"""

from __future__ import annotations

import heapq
import itertools
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from bot.core.errors import ErrorCode
from bot.core.models import JobPayload, JobState, JobView, LeasedJob
from devcore.faults import CoreFault

CLARIFY_PREFIX = "clarify:"
DEFAULT_BACKOFF = (timedelta(seconds=10), timedelta(hours=1))


@dataclass(slots=True)
class JobRecord:
    id: str
    seq: int  # creation order: the key of the job list's keyset paging
    tenant_id: str
    kind: str
    payload: JobPayload
    max_attempts: int
    visible_at: datetime
    backoff_base: timedelta
    backoff_cap: timedelta
    attempts: int = 0
    state: JobState = JobState.AVAILABLE
    lease_token: str | None = None
    lease_expires_at: datetime | None = None
    lease_duration: timedelta | None = None  # what a heartbeat extends by unless told otherwise
    last_lease_token: str | None = None
    last_error: str | None = None
    dead_lettered_at: datetime | None = None
    # a candidate of this turn declined while the job was leased: no backoff when it ends
    expedited: bool = False

    def view(self) -> JobView:
        return JobView(
            id=self.id,
            kind=self.kind,
            state=self.state,
            payload=self.payload,
            attempts=self.attempts,
            max_attempts=self.max_attempts,
            visible_at=self.visible_at,
            lease_expires_at=self.lease_expires_at,
            last_error=self.last_error,
            dead_lettered_at=self.dead_lettered_at,
        )

    def leased(self) -> LeasedJob:
        assert self.lease_token is not None and self.lease_expires_at is not None
        return LeasedJob(
            id=self.id,
            kind=self.kind,
            payload=self.payload,
            attempts=self.attempts,
            max_attempts=self.max_attempts,
            lease_token=self.lease_token,
            lease_expires_at=self.lease_expires_at,
            visible_at=self.visible_at,
        )

    def backoff(self) -> timedelta:
        exponent = max(self.attempts - 1, 0)
        return min(self.backoff_base * (2**exponent), self.backoff_cap)


# called with (job, attempt that ran out, when its lease ended) and (job, when)
Listener = Callable[[JobRecord, int, datetime], None]


@dataclass(slots=True)
class JobQueue:
    on_expired: Listener | None = None
    on_dead_letter: Callable[[JobRecord, datetime], None] | None = None
    jobs: dict[str, JobRecord] = field(default_factory=dict)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    # (lease end, job seq, job id) of every lease given or extended, earliest first: ``reap``
    # looks at the leases that may have run out, not at every job on every clock read
    _leases: list[tuple[datetime, int, str]] = field(default_factory=list)
    # (visible at, job seq, job id) of every job made available or due sooner, earliest first:
    # a poll pops the due ones (entries since made stale by a lease or a new due time are
    # dropped as they come up) instead of sorting every job
    _due: list[tuple[datetime, int, str]] = field(default_factory=list)

    def enqueue(
        self,
        *,
        tenant_id: str,
        kind: str,
        payload: JobPayload,
        max_attempts: int,
        now: datetime,
        backoff: tuple[timedelta, timedelta] = DEFAULT_BACKOFF,
    ) -> JobRecord:
        seq = next(self._ids)
        job = JobRecord(
            id=f"job-{seq:06d}",
            seq=seq,
            tenant_id=tenant_id,
            kind=kind,
            payload=payload,
            max_attempts=max_attempts,
            visible_at=now,
            backoff_base=backoff[0],
            backoff_cap=backoff[1],
        )
        self.jobs[job.id] = job
        self._due_at(job, now)
        return job

    def _due_at(self, job: JobRecord, when: datetime) -> None:
        job.visible_at = when
        heapq.heappush(self._due, (when, job.seq, job.id))

    # -------------------------------------------------------------- time

    def reap(self, now: datetime) -> None:
        """Turn every lease that ran out into a retryable failure (in the jobs' order)."""
        ran_out: dict[int, JobRecord] = {}
        while self._leases and self._leases[0][0] <= now:
            _, seq, job_id = heapq.heappop(self._leases)
            job = self.jobs.get(job_id)  # an entry of a lease since extended or ended: skipped
            if job is not None and job.state is JobState.LEASED \
                    and job.lease_expires_at is not None and job.lease_expires_at <= now:
                ran_out[seq] = job
        for _, job in sorted(ran_out.items()):
            assert job.lease_expires_at is not None
            expired_at = job.lease_expires_at
            attempt = job.attempts
            self._release(job)
            job.last_error = "lease_expired"
            self._retry(job, at=expired_at)
            if job.state is not JobState.DEAD_LETTERED and self.on_expired:
                self.on_expired(job, attempt, expired_at)

    def carry_leases(self, by: timedelta) -> int:
        """Every lease held now ends ``by`` later, as if its holder had heartbeat through a
        development clock jump of ``by`` (without this, a jump longer than a lease ends every
        lease held and counts an attempt against each job). How many were carried."""
        held = [job for job in self.jobs.values()
                if job.state is JobState.LEASED and job.lease_expires_at is not None]
        for job in held:
            assert job.lease_expires_at is not None
            self._leased_until(job, job.lease_expires_at + by)
        return len(held)

    def _leased_until(self, job: JobRecord, until: datetime) -> None:
        job.lease_expires_at = until
        heapq.heappush(self._leases, (until, job.seq, job.id))

    def _release(self, job: JobRecord) -> None:
        job.last_lease_token = job.lease_token
        job.lease_token = None
        job.lease_expires_at = None
        job.lease_duration = None
        job.state = JobState.AVAILABLE

    def _retry(self, job: JobRecord, *, at: datetime) -> None:
        job.attempts += 1
        if job.attempts >= job.max_attempts:
            self._dead_letter(job, at)
            return
        self._due_at(job, at if job.expedited else at + job.backoff())
        job.expedited = False

    def _dead_letter(self, job: JobRecord, at: datetime) -> None:
        job.state = JobState.DEAD_LETTERED
        job.dead_lettered_at = at
        if self.on_dead_letter:
            self.on_dead_letter(job, at)

    # -------------------------------------------------------------- operations

    def poll(
        self,
        *,
        prefixes: list[str],
        tenants: frozenset[str],
        max_jobs: int,
        lease: timedelta,
        now: datetime,
    ) -> list[JobRecord]:
        ready: list[JobRecord] = []
        taken: set[str] = set()
        passed: list[tuple[datetime, int, str]] = []  # due, but not this poller's to take
        while self._due and len(ready) < max_jobs and self._due[0][0] <= now:
            entry = heapq.heappop(self._due)
            job = self.jobs.get(entry[2])
            if job is None or job.state is not JobState.AVAILABLE \
                    or job.visible_at != entry[0] or job.id in taken:
                continue  # stale: leased, finished or due at another time since
            if job.tenant_id in tenants and any(job.kind.startswith(p) for p in prefixes):
                ready.append(job)
                taken.add(job.id)
            else:
                passed.append(entry)
        for entry in passed:
            heapq.heappush(self._due, entry)
        for job in ready:
            job.state = JobState.LEASED
            job.lease_token = secrets.token_urlsafe(18)
            self._leased_until(job, now + lease)
            job.lease_duration = lease
        return ready

    def get(self, job_id: str, *, tenants: frozenset[str]) -> JobRecord:
        job = self.jobs.get(job_id)
        if job is None or job.tenant_id not in tenants:
            raise CoreFault(ErrorCode.JOB_NOT_FOUND)
        return job

    def held(self, job_id: str, *, lease_token: str, tenants: frozenset[str]) -> JobRecord:
        job = self.get(job_id, tenants=tenants)
        if job.lease_token is None:
            if job.last_lease_token == lease_token and job.last_error == "lease_expired":
                raise CoreFault(ErrorCode.LEASE_EXPIRED)
            raise CoreFault(ErrorCode.LEASE_MISMATCH)
        if not secrets.compare_digest(job.lease_token, lease_token):
            raise CoreFault(ErrorCode.LEASE_MISMATCH)
        return job

    def heartbeat(self, job: JobRecord, *, lease: timedelta | None, now: datetime) -> JobRecord:
        """Extend from now by ``lease``, or by the lease's own duration when none is given.

        A given duration becomes the lease's own from then on.
        """
        if lease is not None:
            job.lease_duration = lease
        assert job.lease_duration is not None
        self._leased_until(job, now + job.lease_duration)
        return job

    def advance(self, job: JobRecord, *, attempt: int) -> JobRecord:
        if attempt < job.attempts:
            raise CoreFault(ErrorCode.VALIDATION_FAILED, "An advance never goes backwards.")
        if attempt > job.max_attempts - 1:
            raise CoreFault(ErrorCode.ATTEMPTS_EXHAUSTED)
        job.attempts = attempt
        return job

    def expedite(self, job: JobRecord, *, attempt: int, now: datetime) -> JobRecord:
        """The candidate asked at ``attempt`` declined: end the wait for the next turn now."""
        if job.state is JobState.AVAILABLE and attempt < job.attempts and job.visible_at > now:
            self._due_at(job, now)
        elif job.state is JobState.LEASED and attempt >= job.attempts:
            job.expedited = True
        return job

    def complete(self, job: JobRecord) -> JobRecord:
        self._release(job)
        job.state = JobState.COMPLETED
        return job

    def fail(self, job: JobRecord, *, retryable: bool, reason: str, now: datetime) -> JobRecord:
        self._release(job)
        job.last_error = reason or "failed"
        if retryable:
            self._retry(job, at=now)
        else:
            self._dead_letter(job, now)
        return job

    def repeat_complete(self, job_id: str, *, lease_token: str, tenants: frozenset[str]) -> bool:
        """A repeated complete with the token that completed the job is a no-op success."""
        job = self.get(job_id, tenants=tenants)
        return job.state is JobState.COMPLETED and job.last_lease_token == lease_token

    def listing(
        self, *, tenants: frozenset[str], state: JobState | None, kind: str | None
    ) -> list[JobRecord]:
        return [
            j
            for j in self.jobs.values()
            if j.tenant_id in tenants
            and (state is None or j.state is state)
            and (kind is None or j.kind.startswith(kind))
        ]
