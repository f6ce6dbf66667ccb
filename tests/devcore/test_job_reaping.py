"""The reference core's leases run out on its clock: every expired lease becomes a retryable
failure once, in the jobs' order, whatever the order the leases were given or extended in; a
lease extended in time is not reaped; a job leased again after a reap holds its new lease."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bot.core.models import JobPayload, JobState
from devcore.jobs import JobQueue, JobRecord

T0 = datetime(2026, 7, 6, 9, 0, tzinfo=UTC)
S = timedelta(seconds=1)


def _queue(expired: list[tuple[str, int]], jobs: int = 4) -> JobQueue:
    def on_expired(job: JobRecord, attempt: int, now: datetime) -> None:
        expired.append((job.id, attempt))

    queue = JobQueue(on_expired=on_expired)
    for n in range(jobs):
        queue.enqueue(tenant_id="acme", kind="clarify:c", max_attempts=5, now=T0,
                     payload=JobPayload(clarification_id=f"c{n}", ranking=["p1", "p2"]))
    return queue


def _lease(queue: JobQueue, job_id: str, seconds: int, now: datetime) -> None:
    [leased] = queue.poll(prefixes=["clarify:"], tenants=frozenset({"acme"}), max_jobs=1,
                          lease=seconds * S, now=now)
    assert leased.id == job_id  # the earliest due job first


def test_expired_leases_are_reaped_once_in_the_jobs_order() -> None:
    expired: list[tuple[str, int]] = []
    queue = _queue(expired)
    ids = list(queue.jobs)
    _lease(queue, ids[0], 50, T0)
    _lease(queue, ids[1], 10, T0)
    _lease(queue, ids[2], 30, T0)
    _lease(queue, ids[3], 30, T0)
    queue.heartbeat(queue.jobs[ids[2]], lease=None, now=T0 + 20 * S)  # now until 50 s
    queue.reap(T0 + 5 * S)
    assert expired == []
    queue.reap(T0 + 40 * S)  # job 1 (10 s) and job 3 (30 s) ran out; job 2 was extended
    assert expired == [(ids[1], 0), (ids[3], 0)]
    assert queue.jobs[ids[2]].state is JobState.LEASED
    queue.reap(T0 + 40 * S)  # nothing runs out twice
    assert expired == [(ids[1], 0), (ids[3], 0)]
    queue.reap(T0 + 60 * S)  # job 0 and the extended job 2, in the jobs' order
    assert expired[2:] == [(ids[0], 0), (ids[2], 0)]
    assert all(queue.jobs[i].attempts == 1 and queue.jobs[i].state is JobState.AVAILABLE
               for i in ids)


def test_a_job_leased_again_after_a_reap_keeps_its_new_lease() -> None:
    expired: list[tuple[str, int]] = []
    queue = _queue(expired, jobs=1)
    first = next(iter(queue.jobs))
    job = queue.jobs[first]
    job.backoff_base = job.backoff_cap = 0 * S  # due again at once
    [leased] = queue.poll(prefixes=["clarify:"], tenants=frozenset({"acme"}), max_jobs=1,
                          lease=10 * S, now=T0)
    assert leased is job
    queue.reap(T0 + 10 * S)
    assert expired == [(first, 0)]
    [again] = queue.poll(prefixes=["clarify:"], tenants=frozenset({"acme"}), max_jobs=1,
                         lease=60 * S, now=T0 + 10 * S)
    assert again is job
    queue.reap(T0 + 30 * S)  # the first lease's entry is gone; the new lease holds
    assert expired == [(first, 0)] and job.state is JobState.LEASED
    queue.reap(T0 + 70 * S)
    assert expired == [(first, 0), (first, 1)]


def test_a_poll_takes_the_earliest_due_jobs_of_its_tenants_and_leaves_the_rest() -> None:
    """Due order (due time, then creation), other tenants' and kinds' jobs left for their own
    pollers, jobs not yet due left, and a job made due sooner (a decline) taken at once."""
    queue = JobQueue()
    made = []
    for n, (tenant, kind) in enumerate([("acme", "clarify:c"), ("other", "clarify:c"),
                                        ("acme", "other:x"), ("acme", "clarify:c"),
                                        ("acme", "clarify:c")]):
        made.append(queue.enqueue(tenant_id=tenant, kind=kind, max_attempts=5, now=T0 + n * S,
                                  payload=JobPayload(clarification_id=f"c{n}", ranking=["p"])))
    acme = frozenset({"acme"})
    first = queue.poll(prefixes=["clarify:"], tenants=acme, max_jobs=2, lease=60 * S,
                       now=T0 + 3 * S)
    assert [j.id for j in first] == [made[0].id, made[3].id]  # made[4] is not due until 4 s
    other = queue.poll(prefixes=["clarify:"], tenants=frozenset({"other"}), max_jobs=5,
                       lease=60 * S, now=T0 + 10 * S)
    assert [j.id for j in other] == [made[1].id]
    queue.fail(first[0], retryable=True, reason="x", now=T0 + 10 * S)  # due again after backoff
    assert first[0].visible_at > T0 + 10 * S
    queue.expedite(first[0], attempt=0, now=T0 + 11 * S)  # declined: due now
    again = queue.poll(prefixes=["clarify:"], tenants=acme, max_jobs=5, lease=60 * S,
                       now=T0 + 11 * S)
    assert [j.id for j in again] == [made[4].id, first[0].id]
    assert queue.poll(prefixes=["clarify:"], tenants=acme, max_jobs=5, lease=60 * S,
                      now=T0 + 11 * S) == []
    kinds = queue.poll(prefixes=["other:"], tenants=acme, max_jobs=5, lease=60 * S,
                       now=T0 + 11 * S)
    assert [j.id for j in kinds] == [made[2].id]


def test_carried_leases_outlive_a_clock_jump_and_only_those() -> None:
    """A development clock jump carries the leases held at that moment (as if each holder had
    heartbeat through it); a job not leased then is not touched, and a carried lease still runs
    out at its carried end."""
    expired: list[tuple[str, int]] = []
    queue = _queue(expired, jobs=2)
    ids = list(queue.jobs)
    _lease(queue, ids[0], 10, T0)
    jump = timedelta(hours=9)
    assert queue.carry_leases(jump) == 1
    queue.reap(T0 + jump + 5 * S)
    assert expired == [] and queue.jobs[ids[0]].state is JobState.LEASED
    assert queue.jobs[ids[1]].state is JobState.AVAILABLE and queue.jobs[ids[1]].attempts == 0
    queue.reap(T0 + jump + 11 * S)
    assert expired == [(ids[0], 0)]
