"""The worker leases jobs ahead of its slots (bot/process/worker.py): a freed slot starts the next
job without a poll, at most ``concurrency`` jobs run at once, a handled job's reports go after its
slot frees, and stopping finishes the jobs leased ahead (or, paused, leaves them to their leases).

The core and the handler are stand-ins: what is under test is the worker's bookkeeping of slots,
leases and reports, not a job's handling (tests/engine/test_engine_cheap_path.py runs the real
handler against the reference core)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from bot.clock import ManualClock
from bot.process.worker import Worker, WorkerConfig
from tests.process.doubles import Core, Handler, job, worker_for


def _worker(jobs: int, *, concurrency: int, ahead: bool = True) -> tuple[Worker, Core, Handler]:
    clock = ManualClock()
    core = Core(due=[job(n, clock) for n in range(jobs)])
    handler = Handler(clock=clock)
    worker = worker_for(core, handler, clock,
                        WorkerConfig(concurrency=concurrency, heartbeat_seconds=3600,
                                     lease_ahead=ahead, poll_interval_seconds=3600))
    return worker, core, handler


async def _settle() -> None:
    """Let the loop run what is ready (tasks starting, callbacks), without waiting for time."""
    for _ in range(20):
        await asyncio.sleep(0)


async def test_a_freed_slot_starts_a_job_leased_ahead_without_a_poll() -> None:
    worker, core, handler = _worker(20, concurrency=4)
    assert await worker.poll_iteration() == 8  # four slots, and four jobs ahead
    await _settle()
    assert handler.started == ["job-0", "job-1", "job-2", "job-3"]

    handler.gate("job-0").set()
    await _settle()
    assert handler.started[-1] == "job-4"  # at once, and no poll asked for it
    assert core.polls == [8]
    assert not worker.hungry  # room for one job: not worth a poll yet

    handler.gate("job-1").set()
    await _settle()
    assert handler.started[-1] == "job-5"
    assert worker.hungry and worker.slots.freed.is_set()  # room for two (half the slots): poll
    assert await worker.poll_iteration() == 2
    assert core.polls == [8, 2]
    assert handler.most_at_once == 4  # never more jobs handled at once than slots


async def test_a_worker_with_no_job_left_ahead_polls_for_a_single_free_slot() -> None:
    worker, core, handler = _worker(5, concurrency=4)
    assert await worker.poll_iteration() == 5  # all that is due: one ahead
    await _settle()
    handler.gate("job-0").set()
    await _settle()
    assert handler.started[-1] == "job-4"
    assert worker.room == 4 and worker.hungry  # nothing ahead now: lease what comes
    assert await worker.poll_iteration() == 0


async def test_the_slot_frees_before_the_jobs_reports_reach_the_core_and_drain_waits_for_them(
) -> None:
    worker, core, handler = _worker(2, concurrency=1)
    await worker.poll_iteration()
    await _settle()
    handler.gate("job-0").set()
    await _settle()
    assert handler.started == ["job-0", "job-1"]  # its reports are not in yet
    assert core.reported == []
    handler.gate("job-1").set()
    draining = asyncio.create_task(worker.drain())
    await _settle()
    assert not draining.done()  # the reports are still under way
    core.reports_gate.set()
    await asyncio.wait_for(draining, timeout=5)
    assert core.reported == ["c-0", "c-1"]


async def test_stopping_finishes_the_jobs_leased_ahead_as_slots_free() -> None:
    """The core cannot take a lease back without spending an attempt: leased ahead means
    handled, also when the worker is told to stop."""
    worker, core, handler = _worker(10, concurrency=2)
    await worker.poll_iteration()
    await _settle()
    for n in range(4):
        handler.gate(f"job-{n}").set()
    core.reports_gate.set()
    await asyncio.wait_for(worker.shutdown(), timeout=5)
    assert handler.started == ["job-0", "job-1", "job-2", "job-3"]
    assert core.reported == ["c-0", "c-1", "c-2", "c-3"]
    assert core.polls == [4]  # nothing leased once stopping
    assert handler.most_at_once == 2


async def test_paused_jobs_leased_ahead_are_not_started_and_stopping_leaves_them_to_their_leases(
) -> None:
    worker, core, handler = _worker(4, concurrency=1)
    handler.refuse_next = True  # the first job finds the token refused: delivery pauses
    await worker.poll_iteration()
    await _settle()
    assert worker.paused is not None
    assert handler.started == []  # held, and the job ahead not started
    _, heartbeat = worker.slots.ready[0]
    await asyncio.wait_for(worker.shutdown(), timeout=5)
    assert handler.started == [] and not worker.slots.ready
    assert heartbeat.cancelled()  # its lease runs out, as the held job's does


async def test_resuming_starts_the_jobs_leased_ahead() -> None:
    worker, core, handler = _worker(2, concurrency=1)
    handler.refuse_next = True
    await worker.poll_iteration()
    await _settle()
    assert worker.paused is not None and handler.started == []
    handler.gate("job-0").set()
    handler.gate("job-1").set()
    core.reports_gate.set()
    worker.resume()
    await asyncio.wait_for(worker.drain(), timeout=5)
    assert handler.started == ["job-0", "job-1"]
    assert core.reported == ["c-0", "c-1"]


@dataclass
class Quiet:
    """Housekeeping with nothing to send, counted."""

    passes: int = 0

    async def flush(self) -> None:
        self.passes += 1

    async def report(self) -> None:
        return None


async def test_a_running_worker_leases_as_slots_free_whatever_its_poll_interval() -> None:
    """Housekeeping after every poll, and an hour's poll interval: every job is still handled
    as slots free (a pass that found no room to lease never means a poll interval's sleep)."""
    worker, core, handler = _worker(12, concurrency=2)
    quiet = Quiet()
    worker.chores = [quiet.flush, quiet.report]
    worker.config.housekeeping_every = 1
    core.reports_gate.set()
    running = asyncio.create_task(worker.run())
    for n in range(12):
        handler.gate(f"job-{n}").set()
        await _settle()
    for _ in range(200):  # a guard, not a pacing sleep: the jobs need no time to pass
        if len(core.reported) == 12:
            break
        await asyncio.sleep(0.005)
    worker.stop()
    await asyncio.wait_for(running, timeout=5)
    assert handler.started == [f"job-{n}" for n in range(12)]
    assert core.reported == [f"c-{n}" for n in range(12)]
    assert handler.most_at_once == 2
    assert all(asked >= 1 for asked in core.polls)  # no poll asked for nothing
    assert quiet.passes >= 1


async def test_without_lease_ahead_a_worker_leases_only_for_its_free_slots() -> None:
    """``worker.lease_ahead = false`` (the default): a poll leases no more jobs than there are
    free slots, and a freed slot is filled by the next poll."""
    worker, core, handler = _worker(10, concurrency=4, ahead=False)
    assert await worker.poll_iteration() == 4
    await _settle()
    assert core.polls == [4] and worker.room == 0 and not worker.hungry
    handler.gate("job-0").set()
    await _settle()
    assert handler.started == ["job-0", "job-1", "job-2", "job-3"]  # nothing ahead to start
    assert worker.hungry and worker.room == 1  # one free slot is worth a poll
    assert await worker.poll_iteration() == 1
    await _settle()
    assert core.polls == [4, 1] and handler.started[-1] == "job-4"
