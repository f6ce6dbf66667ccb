"""bot/process/slots.py: the worker's coordination state, one transition at a time.

No worker and no core here: jobs are leased, started, finished, set aside and taken back by
hand, and each test checks what the state allows next (tests/process/test_worker_ahead.py runs
the same bookkeeping inside a worker)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest

from bot.channel import CredentialsRejected
from bot.core.models import JobPayload, LeasedJob
from bot.process.slots import Slots

REFUSED = CredentialsRejected("invalid_auth", setting="SLACK_BOT_TOKEN")


def _job(n: int) -> LeasedJob:
    return LeasedJob(id=f"job-{n}", kind="clarify:temporal",
                     payload=JobPayload(clarification_id=f"c-{n}", ranking=["p-1"]),
                     attempts=0, max_attempts=2, lease_token=f"lease-{n}",
                     lease_expires_at=datetime(2026, 7, 4, tzinfo=UTC) + timedelta(seconds=60))


class Tasks:
    """Tasks that run until the test ends them."""

    def __init__(self) -> None:
        self.made: list[asyncio.Task[None]] = []
        self.gates: dict[asyncio.Task[None], asyncio.Event] = {}

    def __call__(self) -> asyncio.Task[None]:
        gate = asyncio.Event()

        async def run() -> None:
            await gate.wait()

        task = asyncio.create_task(run())
        self.made.append(task)
        self.gates[task] = gate
        return task

    async def end(self, task: asyncio.Task[None]) -> None:
        self.gates[task].set()
        await task


@pytest.fixture
async def tasks() -> AsyncIterator[Tasks]:
    made = Tasks()
    yield made
    for task in made.made:
        task.cancel()
    await asyncio.gather(*made.made, return_exceptions=True)


def _lease(slots: Slots, tasks: Tasks, count: int) -> None:
    for n in range(count):
        slots.leased(_job(n), tasks())


def _start_all(slots: Slots, tasks: Tasks) -> list[str]:
    """What the worker's ``_start_ready`` does: start each job ``next_ready`` gives."""
    started = []
    while (ready := slots.next_ready()) is not None:
        slots.started(tasks())
        started.append(ready[0].id)
    return started


# ---------------------------------------------------------------- room and leasing

async def test_a_fresh_state_has_room_for_its_slots_and_those_ahead(tasks: Tasks) -> None:
    slots = Slots(4, ahead=4)
    assert (slots.room, slots.may_lease, slots.hungry, slots.idle) == (8, 8, True, True)
    assert slots.paused is None and slots.resumed.is_set() and not slots.pausing.is_set()


async def test_leased_jobs_wait_ready_and_take_room(tasks: Tasks) -> None:
    slots = Slots(2, ahead=2)
    _lease(slots, tasks, 3)
    assert [job.id for job, _ in slots.ready] == ["job-0", "job-1", "job-2"]
    assert slots.room == 1 and slots.may_lease == 1 and not slots.idle


async def test_never_more_than_concurrency_jobs_start(tasks: Tasks) -> None:
    slots = Slots(2, ahead=2)
    _lease(slots, tasks, 4)
    assert _start_all(slots, tasks) == ["job-0", "job-1"]
    assert len(slots.running) == 2 and len(slots.ready) == 2
    assert slots.next_ready() is None
    with pytest.raises(RuntimeError):
        slots.started(tasks())  # no slot: a bug in the caller, not a third job running


async def test_a_finished_job_frees_its_slot_for_the_next_ready(tasks: Tasks) -> None:
    slots = Slots(2, ahead=2)
    _lease(slots, tasks, 4)
    _start_all(slots, tasks)
    first = next(iter(slots.running))
    slots.finished(first)
    assert _start_all(slots, tasks) == ["job-2"]
    assert len(slots.running) == 2 and slots.room == 1


async def test_finished_twice_or_for_an_unknown_task_changes_nothing(tasks: Tasks) -> None:
    slots = Slots(2)
    slots.leased(_job(0), tasks())
    _start_all(slots, tasks)
    task = next(iter(slots.running))
    slots.finished(task)
    slots.finished(task)
    slots.finished(tasks())
    assert slots.room == 2 and slots.idle


@pytest.mark.parametrize(("concurrency", "ahead", "running", "ready", "hungry"), [
    (4, 4, 4, 3, False),  # room for one, a job ahead still to start: not worth a poll
    (4, 4, 4, 2, True),  # room for two: half the slots
    (4, 0, 3, 0, True),  # room for one and nothing ahead: lease it
    (4, 0, 4, 0, False),  # no room
    (1, 1, 1, 0, True),  # one slot: room for one is half
    (1, 1, 1, 1, False),
])
async def test_hungry_is_room_for_half_the_slots_or_room_and_nothing_ahead(
        tasks: Tasks, concurrency: int, ahead: int, running: int, ready: int,
        hungry: bool) -> None:
    slots = Slots(concurrency, ahead=ahead)
    for _ in range(running):
        slots.started(tasks())
    _lease(slots, tasks, ready)
    assert slots.hungry is hungry


async def test_wake_sets_freed_only_when_hungry_and_expect_room_clears_it(tasks: Tasks) -> None:
    slots = Slots(4, ahead=4)
    for _ in range(4):
        slots.started(tasks())
    _lease(slots, tasks, 3)
    slots.wake()
    assert not slots.freed.is_set()  # room for one with a job ahead: not yet
    slots.ready.popleft()
    slots.wake()
    assert slots.freed.is_set()
    slots.expect_room()
    assert not slots.freed.is_set()


# ---------------------------------------------------------------- held jobs

async def test_a_job_set_aside_frees_its_slot_and_is_taken_back_beside_the_others(
        tasks: Tasks) -> None:
    slots = Slots(1, ahead=1)
    _lease(slots, tasks, 2)
    _start_all(slots, tasks)
    held = next(iter(slots.running))
    slots.set_aside(held)
    assert _start_all(slots, tasks) == ["job-1"]  # the other installation's job goes on
    slots.take_back(held)
    assert held in slots.running and len(slots.running) == 2  # it was started once
    assert slots.next_ready() is None and slots.room == 0


async def test_a_job_that_ended_while_held_is_not_taken_back(tasks: Tasks) -> None:
    slots = Slots(1)
    task = tasks()
    slots.started(task)
    slots.set_aside(task)
    await tasks.end(task)
    slots.take_back(task)
    assert slots.running == set() and slots.idle


# ---------------------------------------------------------------- reports

async def test_reports_under_way_count_until_their_task_ends(tasks: Tasks) -> None:
    slots = Slots(2)
    first, second = tasks(), tasks()
    slots.reporting(first)
    assert slots.may_report_aside and not slots.idle
    slots.reporting(second)
    assert not slots.may_report_aside  # as many as slots: the next job's slot waits for its own
    assert set(slots.unfinished()) == {first, second}
    await tasks.end(first)
    await asyncio.sleep(0)  # the done callback runs
    assert slots.under_way == {second} and slots.may_report_aside
    assert slots.room == 2  # reports never take room


async def test_unfinished_lists_running_jobs_and_reports_not_yet_done(tasks: Tasks) -> None:
    slots = Slots(2)
    job, done = tasks(), tasks()
    slots.started(job)
    slots.started(done)
    await tasks.end(done)
    report = tasks()
    slots.reporting(report)
    assert set(slots.unfinished()) == {job, report}


# ---------------------------------------------------------------- pause and resume

async def test_paused_holds_ready_jobs_and_leases_nothing(tasks: Tasks) -> None:
    slots = Slots(2, ahead=2)
    _lease(slots, tasks, 1)
    assert slots.pause(REFUSED) is True
    assert slots.paused is REFUSED and slots.pausing.is_set() and not slots.resumed.is_set()
    assert slots.next_ready() is None and len(slots.ready) == 1
    assert slots.may_lease == 0 and slots.room == 3  # room, but nothing leased while paused
    assert slots.pause(REFUSED) is False  # paused already: not a new pause


async def test_resume_lets_ready_jobs_start_and_says_why_it_was_paused(tasks: Tasks) -> None:
    slots = Slots(2, ahead=2)
    _lease(slots, tasks, 2)
    slots.pause(REFUSED)
    assert slots.resume() is REFUSED
    assert slots.paused is None and slots.resumed.is_set() and not slots.pausing.is_set()
    assert _start_all(slots, tasks) == ["job-0", "job-1"]
    assert slots.resume() is None  # not paused: nothing to say


# ---------------------------------------------------------------- stop

async def test_stopping_leases_nothing_but_still_starts_the_jobs_leased_ahead(
        tasks: Tasks) -> None:
    """The core cannot take a lease back without spending an attempt: on stop the jobs
    leased ahead are still handled as slots free."""
    slots = Slots(1, ahead=1)
    _lease(slots, tasks, 2)
    _start_all(slots, tasks)
    slots.stop()
    assert slots.stopped and slots.may_lease == 0
    slots.finished(next(iter(slots.running)))
    assert _start_all(slots, tasks) == ["job-1"]


async def test_stop_drains_the_ready_jobs_that_never_started(tasks: Tasks) -> None:
    slots = Slots(1, ahead=2)
    _lease(slots, tasks, 3)
    slots.pause(REFUSED)
    slots.stop()
    released = slots.release_ready()
    assert [job.id for job, _ in released] == ["job-0", "job-1", "job-2"]
    assert not slots.ready and slots.release_ready() == []
    assert slots.idle  # nothing running, ahead or reporting: shutdown has nothing to wait for
