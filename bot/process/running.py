"""One leased job's life in its worker slot: heartbeats, the handling, its reports.

The handling goes on through what would otherwise spend the job's attempt: a platform refusing
the bot's credentials pauses delivery (``Worker.pause``) and the job is held, heartbeating, until
they pass (one installation's refusal holds only its jobs, outside the slots:
``bot.process.pauses``); a store that is unavailable is waited out with ``STORE_RETRY`` on the
same lease. A job the handler held (``JobOutcome.HELD``) has its own heartbeats stopped and its
held lease carried on by ``bot.engine.held``. A handled job's reports go to the core after its
slot frees (``report``).
"""

from __future__ import annotations

import asyncio
import contextlib
import random as _random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import structlog

from bot.channel import CredentialsRejected
from bot.core import errors as e
from bot.core.batching import JobScope
from bot.core.client import CoreClient
from bot.core.models import LeasedJob
from bot.engine.handler import JobHandler, JobOutcome, Outcomes
from bot.engine.held import HoldKeeper
from bot.metrics import REGISTRY
from bot.process.pauses import Pauses
from bot.process.slots import Slots
from bot.retry import RetryPolicy
from bot.store.errors import StoreUnavailable

log = structlog.get_logger("clarify.worker")
# how long a handled job's reports, sent after its slot freed, wait for other jobs' to join them
REPORTS_LINGER_SECONDS = 0.02
# a job whose handling found the store unavailable is handled again after each wait, on the
# same lease (1 s doubling to 30 s, half of each random: 61 s at most in all), before it is
# given up to its lease (docs/reliability.md, "Retries")
STORE_RETRY = RetryPolicy(max_attempts=7, base=1.0, cap=30.0, retry_after_cap=0.0, jitter=0.5)


@dataclass
class JobRunner:
    """What the worker hands each leased job to (``Worker`` makes it with its slots)."""

    core: CoreClient
    handler: JobHandler
    held: HoldKeeper
    slots: Slots
    outcomes: Outcomes
    pause: Callable[[CredentialsRejected], None]  # the worker's: delivery paused
    start_ready: Callable[[], None]  # the worker's: jobs leased ahead started in free slots
    lease_seconds: int = 60
    heartbeat_seconds: float = 20
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    random: Callable[[], float] = _random.random  # the store retries' jitter draws
    # per installation (bot.process.pauses): the worker's, read when a job meets a refusal
    pauses: Callable[[], Pauses | None] = lambda: None

    async def work(self, job: LeasedJob, heartbeat: asyncio.Task[None]) -> None:
        """The job handled in its slot (its heartbeat already running), counted, its hold
        carried on when the handler held it, its reports sent; a job that fails or crashes is
        logged and left to its lease, never the worker's end."""
        try:
            handled = await self._handle_holding(job, heartbeat)
            if handled is None:
                return
            outcome, reports = handled
            self.outcomes.count(outcome)
            log.info("worker.job_done", job_id=job.id, attempt=job.attempts, outcome=outcome)
            if outcome is JobOutcome.HELD:
                # the job's own heartbeats stop first, then the held lease is extended
                await self._stop_heartbeat(heartbeat)
                await self.held.carry_on(job.id)
            if reports.deliveries or reports.events:
                await self._report(job, reports)
        except e.CoreError as exc:
            # the lease runs out and the core retries the job: nothing was sent twice
            log.warning("worker.job_failed", job_id=job.id, error=type(exc).__name__)
        except Exception as exc:  # a bug in one job must not stop the worker
            log.error("worker.job_crashed", job_id=job.id, error=type(exc).__name__)
        finally:
            await self._stop_heartbeat(heartbeat)
            structlog.contextvars.clear_contextvars()

    @staticmethod
    async def _stop_heartbeat(heartbeat: asyncio.Task[None]) -> None:
        heartbeat.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await heartbeat

    async def _report(self, job: LeasedJob, reports: JobScope) -> None:
        """Send a handled job's reports after its slot frees, so the next job need not wait for
        them; they wait ``REPORTS_LINGER_SECONDS`` for other jobs' to share the call
        (``bot/core/batching.py``). The job's cards are out and recorded in the store by then (a
        question card whose report is lost is reported by the job's next attempt,
        ``Recovery.reconcile_earlier``); stop and ``drain`` wait for the reports under way. At
        most ``concurrency`` jobs' reports are under way like this; beyond that the job's slot
        waits for its own, as every job's did before."""
        if not self.slots.may_report_aside:
            await self.core.flush(reports)
            return

        async def send() -> None:
            try:
                await self.core.flush(reports, linger=REPORTS_LINGER_SECONDS)
            except e.CoreError as exc:
                log.warning("worker.reports_failed", job_id=job.id, error=type(exc).__name__)
            except Exception as exc:
                log.error("worker.reports_crashed", job_id=job.id, error=type(exc).__name__)

        self.slots.reporting(asyncio.create_task(send()))

    async def _handle_holding(self, job: LeasedJob, heartbeat: asyncio.Task[None]
                              ) -> tuple[JobOutcome, JobScope] | None:
        """Handle the job; while credentials are refused, hold it (heartbeats keep the lease) and
        handle it again once they pass. When the store is unavailable (Redis restarting, a
        failover), handle it again after each of ``STORE_RETRY``'s waits, holding the lease:
        letting the lease run out would spend the job's attempt, and with it a candidate's turn.
        Handling again is safe: admissions replay and a reservation left without its record is
        looked up on the platform before anything is sent. None: given up (stopping, or the
        lease was lost), so the lease runs out."""
        tries = 0
        while True:
            try:
                return await self.handler.handle_unreported(job)
            except CredentialsRejected as exc:
                pauses = self.pauses()
                if exc.scope is not None and pauses is not None:
                    if not await self._hold_scope(job, exc, heartbeat, pauses):
                        return None
                    continue
                self.pause(exc)
                if not await self._until_resumed(heartbeat):
                    log.warning("worker.held_job_released", job_id=job.id)
                    return None
            except StoreUnavailable:
                tries += 1
                if STORE_RETRY.last(tries) or self.slots.stopped or heartbeat.done():
                    raise
                wait = STORE_RETRY.delay(tries, draw=self.random())
                REGISTRY.inc("clarify_job_store_retries_total")
                log.warning("worker.store_unavailable_retrying", job_id=job.id, after=wait)
                await self.sleep(wait)

    async def _hold_scope(self, job: LeasedJob, refused: CredentialsRejected,
                          heartbeat: asyncio.Task[None], pauses: Pauses) -> bool:
        """Hold a job that met an installation whose token is refused (``bot.process.pauses``),
        outside the slots, so other installations' jobs go on meanwhile; True once it
        resumes, False when it is let go (stopping, lease lost, too many held)."""
        assert refused.scope is not None
        pauses.pause(refused)
        task: asyncio.Task[None] | None = asyncio.current_task()
        self.slots.set_aside(task)
        self.start_ready()
        self.slots.wake()
        stopping: asyncio.Future[Any] = asyncio.ensure_future(self.slots.stopping.wait())
        try:
            held = await pauses.hold(refused.scope, until=[stopping, heartbeat])
        finally:
            stopping.cancel()
            self.slots.take_back(task)
        if held and not self.slots.stopped and not heartbeat.done():
            return True
        log.warning("worker.held_job_released", job_id=job.id, scope=refused.scope)
        return False

    async def _until_resumed(self, heartbeat: asyncio.Task[None]) -> bool:
        waits = [asyncio.ensure_future(self.slots.resumed.wait()),
                 asyncio.ensure_future(self.slots.stopping.wait())]
        try:
            await asyncio.wait([*waits, heartbeat], return_when=asyncio.FIRST_COMPLETED)
        finally:
            for wait in waits:
                wait.cancel()
        return self.slots.paused is None and not self.slots.stopped and not heartbeat.done()

    async def heartbeat(self, job: LeasedJob) -> None:
        """Keep the job's lease alive every ``heartbeat_seconds`` until cancelled, or until the
        core refuses (the lease is lost: the job's handling finds out)."""
        while True:
            await self.sleep(self.heartbeat_seconds)
            try:
                await self.core.heartbeat_job(
                    job_id=job.id,
                    lease_token=job.lease_token,
                    lease_seconds=self.lease_seconds,
                )
            except e.CoreError as exc:
                log.warning("worker.heartbeat_failed", job_id=job.id, error=type(exc).__name__)
                return
