"""The worker's poll loop, one iteration at a time (``Worker.run_once``): what an iteration
leases and starts, when it keeps house, what it says of a core that refused the poll, and the
wait the loop takes after it (``Worker.wait_after``). The core and the handler are stand-ins
(tests/process/doubles.py); held jobs are the engine's own part (``bot.engine.held``) on a memory
store, so a held job's life runs here as in production, on the test's clock."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import timedelta

import structlog

from bot.channel import CredentialsRejected
from bot.clock import ManualClock
from bot.core import errors as e
from bot.core.batching import JobScope
from bot.core.models import LeasedJob
from bot.engine.handler import JobOutcome
from bot.engine.holds import (
    HOLD_LEASE_SECONDS,
    TROUBLE_LOOK_SECONDS,
    UNREAD_LOOK_SECONDS,
    Hold,
    Holds,
    trouble_wait,
)
from bot.process.worker import IterationResult, Worker, WorkerConfig
from bot.store.memory import MemoryStore
from tests.process.doubles import Core, Handler, job, worker_for


@dataclass
class Waits:
    """The loop's idle waits, recorded instead of slept."""

    asked: list[float] = field(default_factory=list)

    async def __call__(self, seconds: float) -> None:
        self.asked.append(seconds)


def _rig(due: int = 0, **config: object) -> tuple[Worker, Core, Handler, ManualClock,
                                                   MemoryStore]:
    clock = ManualClock()
    store = MemoryStore(clock=clock)
    core = Core(due=[job(n, clock) for n in range(due)])
    core.reports_gate.set()
    handler = Handler(clock=clock)
    settings: dict[str, object] = {"concurrency": 1, "heartbeat_seconds": 3600,
                                   "poll_interval_seconds": 2}
    settings.update(config)
    worker = worker_for(core, handler, clock, WorkerConfig(**settings),  # type: ignore[arg-type]
                        store=store)
    return worker, core, handler, clock, store


async def test_one_iteration_leases_a_job_and_its_slot_handles_it() -> None:
    worker, core, handler, _, _ = _rig(due=1)
    handler.gate("job-0").set()
    result = await worker.run_once()
    assert result == IterationResult(polled=True, leased=1)
    await worker.drain()
    assert handler.started == ["job-0"] and core.reported == ["c-0"]
    assert worker.outcomes == {JobOutcome.ASKED: 1}


async def test_an_iteration_without_room_does_not_poll_and_the_loop_waits_for_a_free_slot(
) -> None:
    worker, core, handler, _, _ = _rig(due=3)
    assert (await worker.run_once()).leased == 1  # one slot, nothing ahead
    result = await worker.run_once()
    assert result == IterationResult(polled=False, leased=0)
    assert core.polls == [1]
    waits = Waits()
    worker.idle_sleep = waits
    handler.gate("job-0").set()
    await worker.wait_after(result)  # ended by the freed slot, or by the poll interval
    assert waits.asked in ([], [2])
    await worker.drain()
    await asyncio.sleep(0)  # the freed slot's callback
    assert worker.hungry and (await worker.run_once()).leased == 1
    handler.gate("job-1").set()
    await worker.drain()


async def test_an_iteration_that_leased_nothing_waits_a_poll_interval() -> None:
    worker, core, _, _, _ = _rig()
    waits = Waits()
    worker.idle_sleep = waits
    result = await worker.run_once()
    assert result == IterationResult(polled=True, leased=0)
    await worker.wait_after(result)
    assert waits.asked == [2]


async def test_a_refused_poll_is_counted_and_the_loop_backs_off_by_the_cores_retry_after(
) -> None:
    """A 429 with Retry-After 7: the result says so and the loop waits 7 s, not the poll
    interval; a core away with no Retry-After: a poll interval; the core back: the count of
    failures in a row starts again, and the recovery is logged once."""
    worker, core, _, _, _ = _rig()
    waits = Waits()
    worker.idle_sleep = waits
    core.refusals = [e.RateLimited(status=429, code="rate_limited", message="slow down",
                                   retry_after=7.0),
                     e.CoreConnectError("connection refused")]
    with structlog.testing.capture_logs() as logs:
        first = await worker.run_once()
        await worker.wait_after(first)
        second = await worker.run_once()
        await worker.wait_after(second)
        third = await worker.run_once()
    assert first == IterationResult(polled=True, failures=1, retry_after=7.0)
    assert second == IterationResult(polled=True, failures=2)
    assert third == IterationResult(polled=True, failures=0)
    assert waits.asked == [7.0, 2]
    assert [line["event"] for line in logs] == ["worker.poll_failed", "worker.poll_recovered"]


async def test_housekeeping_runs_its_chores_in_order_every_nth_iteration() -> None:
    done: list[str] = []

    def chore(name: str) -> object:
        async def run() -> None:
            done.append(name)
        return run

    worker, _, _, _, _ = _rig(housekeeping_every=3)
    worker.chores = [chore("watch"), chore("holds"), chore("digests")]  # type: ignore[list-item]
    kept = [(await worker.run_once()).housekept for _ in range(6)]
    assert kept == [False, False, True, False, False, True]
    assert done == ["watch", "holds", "digests"] * 2


async def test_a_paused_worker_neither_polls_nor_keeps_house_in_an_iteration() -> None:
    worker, core, _, _, _ = _rig(due=1, housekeeping_every=1)
    kept: list[int] = []
    worker.chores = [lambda: asyncio.sleep(0, kept.append(1))]
    worker.pause(CredentialsRejected("invalid_auth", setting="SLACK_BOT_TOKEN"))
    assert await worker.run_once() == IterationResult(paused=True)
    assert core.polls == [] and kept == []


async def test_a_held_job_is_carried_on_by_housekeeping_and_released_when_due() -> None:
    """Held for the person's hours an hour from now: the first pass extends the lease by the
    held lease and leaves it; once due, a pass handles it (the card goes out) and drops it."""
    worker, core, handler, clock, store = _rig(housekeeping_every=1)
    worker.chores = [worker.held.flush]
    held = job(7, clock)
    due = clock.now() + timedelta(hours=1)
    await Holds(store, clock).for_hours(held, due)
    handler.gate("job-7").set()
    assert (await worker.run_once()).housekept
    assert core.heartbeats == [("job-7", HOLD_LEASE_SECONDS)]
    assert handler.started == [] and await store.hold_text("job-7") is not None
    clock.advance(timedelta(hours=1))
    await worker.run_once()
    assert core.heartbeats[-1] == ("job-7", 60)  # the running job's lease: it is handled now
    assert handler.started == ["job-7"] and core.reported == ["c-7"]
    assert await store.hold_text("job-7") is None
    assert worker.outcomes == {JobOutcome.ASKED: 1}


@dataclass
class Troubled:
    """A handler whose job's reads the core refuses for now ``times`` times, held each time as
    ``JobHandler`` holds it (``Holds.in_trouble``), then asks."""

    holds: Holds
    times: int
    tries: int = 0

    async def handle_unreported(self, leased: LeasedJob) -> tuple[JobOutcome, JobScope]:
        self.tries += 1
        if self.tries <= self.times:
            await self.holds.in_trouble(leased, read="clarification",
                                        operation="getClarification", error="ServerError",
                                        retry_after=None)
            return JobOutcome.HELD, JobScope()
        return JobOutcome.ASKED, JobScope()


async def test_core_trouble_holds_the_job_and_it_is_read_again_later_each_time() -> None:
    """The core refuses the job's reads three times in a row: the job is held, read again 5,
    then 10, then 20 seconds later (``TROUBLE_LOOK_SECONDS`` doubled per refusal), then
    asked; nobody's turn is spent meanwhile."""
    clock = ManualClock()
    store = MemoryStore(clock=clock)
    core = Core(due=[job(0, clock)])
    core.reports_gate.set()
    handler = Troubled(Holds(store, clock), times=3)
    worker = worker_for(core, handler, clock, WorkerConfig(concurrency=1, housekeeping_every=1,
                                                           heartbeat_seconds=3600),
                        store=store)
    worker.chores = [worker.held.flush]
    await worker.run_once()
    await worker.drain()
    waits = []
    for _ in range(3):
        hold = Hold.loads(await store.hold_text("job-0") or "")
        waits.append((hold.due - clock.now()).total_seconds())
        clock.advance(hold.due - clock.now())
        await worker.run_once()
        await worker.drain()
    assert waits == [5, 10, 20]
    assert handler.tries == 4 and await store.hold_text("job-0") is None
    assert worker.outcomes == {JobOutcome.HELD: 3, JobOutcome.ASKED: 1}


def test_the_trouble_wait_doubles_honours_a_retry_after_and_is_capped() -> None:
    assert [trouble_wait(n, None) for n in range(1, 6)] == [5, 10, 20, 40, 80]
    assert trouble_wait(1, 30.0) == 30.0  # never before the core's Retry-After
    assert trouble_wait(9, None) == UNREAD_LOOK_SECONDS == 600  # never later
    assert trouble_wait(40, None) == 600 and TROUBLE_LOOK_SECONDS == 5
