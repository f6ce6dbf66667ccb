"""A job whose handling finds the store unavailable (Redis restarting, a failover) is handled
again on the same lease, after waits from the injected sleep, instead of being let go: an
expired lease would spend the job's attempt and pass its candidate over. After the last wait,
or once the worker is stopping, it is let go to its lease."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from bot.clock import ManualClock
from bot.core.batching import JobScope
from bot.core.models import LeasedJob
from bot.engine.handler import JobOutcome
from bot.metrics import REGISTRY
from bot.process.running import STORE_RETRY
from bot.process.worker import Worker, WorkerConfig
from bot.store.errors import StoreUnavailable
from tests.process.doubles import Core, job, worker_for

HEARTBEAT = 3600


@dataclass
class Flaky:
    """Fails ``failures`` times with the store unavailable, then asks the person."""

    clock: ManualClock
    failures: int
    tries: int = 0

    async def handle_unreported(self, job: LeasedJob) -> tuple[JobOutcome, JobScope]:
        self.tries += 1
        if self.tries <= self.failures:
            raise StoreUnavailable()
        return JobOutcome.ASKED, JobScope()


@dataclass
class Sleeps:
    waited: list[float] = field(default_factory=list)
    worker: Worker | None = None
    stop_after: int | None = None

    async def __call__(self, seconds: float) -> None:
        if seconds == HEARTBEAT:  # the heartbeat's wait: over when the job ends (cancelled)
            await asyncio.Event().wait()
        self.waited.append(seconds)
        await asyncio.sleep(0)
        if self.stop_after is not None and len(self.waited) >= self.stop_after:
            assert self.worker is not None
            self.worker.stop()


def _worker(failures: int, sleeps: Sleeps, draw: float = 1.0) -> tuple[Worker, Flaky]:
    clock = ManualClock()
    handler = Flaky(clock=clock, failures=failures)
    worker = worker_for(Core(due=[job(0, clock)]), handler, clock,
                        WorkerConfig(concurrency=1, heartbeat_seconds=HEARTBEAT,
                                     poll_interval_seconds=3600), sleep=sleeps,
                        random=lambda: draw)  # 1.0: the policy's ceilings
    sleeps.worker = worker
    return worker, handler


async def test_a_job_is_handled_again_on_its_lease_when_the_store_comes_back() -> None:
    sleeps = Sleeps()
    worker, handler = _worker(2, sleeps)
    before = REGISTRY.value("clarify_job_store_retries_total")
    assert await worker.poll_iteration() == 1
    await worker.drain()
    assert handler.tries == 3 and worker.outcomes == {JobOutcome.ASKED: 1}
    assert sleeps.waited == [1.0, 2.0]
    assert REGISTRY.value("clarify_job_store_retries_total") == before + 2


async def test_a_store_that_stays_away_lets_the_job_go_after_the_last_wait() -> None:
    sleeps = Sleeps()
    worker, handler = _worker(100, sleeps)
    assert await worker.poll_iteration() == 1
    await worker.drain()
    assert handler.tries == STORE_RETRY.max_attempts and worker.outcomes == {}
    assert sleeps.waited == [1.0, 2.0, 4.0, 8.0, 16.0, 30.0]


async def test_the_store_retries_are_jittered_by_the_policy() -> None:
    """The waits come from ``STORE_RETRY``: with a draw of 0, half of each ceiling (workers
    that met the same failover spread out rather than retrying in step)."""
    sleeps = Sleeps()
    worker, handler = _worker(100, sleeps, draw=0.0)
    assert await worker.poll_iteration() == 1
    await worker.drain()
    assert sleeps.waited == [0.5, 1.0, 2.0, 4.0, 8.0, 15.0]
    assert sleeps.waited == [STORE_RETRY.delay(n, draw=0.0) for n in range(1, 7)]


async def test_a_stopping_worker_does_not_wait_for_the_store() -> None:
    sleeps = Sleeps(stop_after=1)
    worker, handler = _worker(100, sleeps)
    assert await worker.poll_iteration() == 1
    await worker.drain()
    assert worker.outcomes == {}
    assert handler.tries <= 2  # at most the one wait under way when the stop came
