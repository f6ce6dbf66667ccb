"""The worker: lease ``clarify:`` jobs, handle them with bounded concurrency, heartbeat meanwhile.

A handled job is not completed once its cards are out: heartbeats stop, the lease runs out, and the
core's backoff (base: the escalation window) brings the job back at the next attempt if nobody has
answered (spec changelog v0.9). ``run_burst`` works until nothing is due, for tests and the demo;
``run`` polls until stopped, and on SIGTERM/SIGINT stops polling and lets in-flight jobs finish.

Credentials are checked, not assumed: ``run`` starts with the injected credentials check (Slack's
``auth.test``), and a platform refusing the bot's token (at start or mid-job) pauses delivery:
no polling, jobs in hand held with their leases kept alive (nobody skipped, no attempt spent), the
setting to fix logged; the check is repeated until it passes, then the held jobs go on.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import structlog

from bot.aio import drain
from bot.channel import CredentialsRejected
from bot.core import errors as e
from bot.core import models as m
from bot.core.client import CoreClient
from bot.engine.deadletters import DeadLetterReporter
from bot.engine.digests import DigestSender
from bot.engine.handler import JobHandler, JobOutcome
from bot.engine.notices import NoticeSender
from bot.metrics import REGISTRY

log = structlog.get_logger("clarify.worker")
KINDS = ["clarify:"]
CORE_TOKEN_SETTING = "CLARIFY_BOT_CORE_TOKEN"
CredentialsCheck = Callable[[], Awaitable[None]]  # returns, or raises CredentialsRejected
FREED_LINGER_SECONDS = 0.01  # how long a freed slot waits for others before the next poll


@dataclass
class WorkerConfig:
    concurrency: int = 4
    lease_seconds: int = 60
    heartbeat_seconds: float = 20
    poll_interval_seconds: float = 2
    shutdown_grace_seconds: float = 30
    housekeeping_every: int = 15  # poll iterations between digest and notice flushes and
    # dead-letter scans
    credentials_recheck_seconds: float = 30  # while paused on refused credentials


@dataclass
class Worker:
    core: CoreClient
    handler: JobHandler
    digests: DigestSender
    dead_letters: DeadLetterReporter
    config: WorkerConfig = field(default_factory=WorkerConfig)
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    outcomes: dict[JobOutcome, int] = field(default_factory=dict)
    credentials: CredentialsCheck | None = None
    notices: NoticeSender | None = None  # the stewards' batched high-severity notices
    paused: CredentialsRejected | None = None  # why delivery is paused, if it is
    _stopping: asyncio.Event = field(default_factory=asyncio.Event)
    _resumed: asyncio.Event = field(default_factory=asyncio.Event)
    _pausing: asyncio.Event = field(default_factory=asyncio.Event)
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)
    _freed: asyncio.Event = field(default_factory=asyncio.Event)  # a slot finished

    def __post_init__(self) -> None:
        self._resumed.set()

    # ---------------------------------------------------------------- one iteration

    async def poll_iteration(self) -> int:
        """Lease as many jobs as there are free slots and start them; returns how many."""
        free = self.config.concurrency - len(self._tasks)
        if free <= 0 or self._stopping.is_set() or self.paused is not None:
            return 0
        leased = await self.core.poll_jobs(
            kinds=KINDS, max_jobs=free, lease_seconds=self.config.lease_seconds
        )
        now = self.handler.clock.now()  # the engine's clock: tests move it
        for job in leased.jobs:
            if job.visible_at is not None:  # a core may leave it out (docs/core-contract.md)
                lag = max(0.0, (now - job.visible_at).total_seconds())
                REGISTRY.observe("clarify_job_lag_seconds", lag)
            task = asyncio.create_task(self._work(job))
            self._tasks.add(task)
            task.add_done_callback(self._finished)
        return len(leased.jobs)

    def _finished(self, task: asyncio.Task[None]) -> None:
        """A slot is free. A busy worker leases again once a quarter of its slots are free, or
        ``FREED_LINGER_SECONDS`` after the first one freed: one poll for several jobs, not one
        per job (each poll costs the core a scan of the due jobs)."""
        self._tasks.discard(task)
        free = self.config.concurrency - len(self._tasks)
        if free >= max(1, self.config.concurrency // 4):
            self._freed.set()
        elif free == 1:
            asyncio.get_running_loop().call_later(FREED_LINGER_SECONDS, self._freed.set)

    @property
    def full(self) -> bool:
        return len(self._tasks) >= self.config.concurrency

    async def housekeeping(self) -> None:
        """Send due digests and stewards' notices, and list new dead letters to stewards."""
        try:
            await self.digests.flush()
            if self.notices is not None:
                await self.notices.flush()
            await self.dead_letters.report()
        except CredentialsRejected as exc:  # the claimed digest batch is retried when resumed
            self.pause(exc)
        except Exception as exc:  # a store or platform blip must not stop the worker
            log.warning("worker.housekeeping_failed", error=type(exc).__name__)

    async def _work(self, job: m.LeasedJob) -> None:
        heartbeat = asyncio.create_task(self._heartbeat(job))
        try:
            outcome = await self._handle_holding(job, heartbeat)
            if outcome is None:
                return
            self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1
            REGISTRY.inc("clarify_jobs_total", outcome=outcome.value)
            log.info("worker.job_done", job_id=job.id, attempt=job.attempts, outcome=outcome)
        except e.CoreError as exc:
            # the lease runs out and the core retries the job: nothing was sent twice
            log.warning("worker.job_failed", job_id=job.id, error=type(exc).__name__)
        except Exception as exc:  # a bug in one job must not stop the worker
            log.error("worker.job_crashed", job_id=job.id, error=type(exc).__name__)
        finally:
            heartbeat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await heartbeat
            structlog.contextvars.clear_contextvars()

    async def _handle_holding(self, job: m.LeasedJob, heartbeat: asyncio.Task[None]
                              ) -> JobOutcome | None:
        """Handle the job; while credentials are refused, hold it (heartbeats keep the lease) and
        handle it again once they pass. None: given up (stopping, or the lease was lost), so
        the lease runs out."""
        while True:
            try:
                return await self.handler.handle(job)
            except CredentialsRejected as exc:
                self.pause(exc)
                if not await self._until_resumed(heartbeat):
                    log.warning("worker.held_job_released", job_id=job.id)
                    return None

    async def _until_resumed(self, heartbeat: asyncio.Task[None]) -> bool:
        waits = [asyncio.ensure_future(self._resumed.wait()),
                 asyncio.ensure_future(self._stopping.wait())]
        try:
            await asyncio.wait([*waits, heartbeat], return_when=asyncio.FIRST_COMPLETED)
        finally:
            for wait in waits:
                wait.cancel()
        return self._resumed.is_set() and not self._stopping.is_set() and not heartbeat.done()

    # ---------------------------------------------------------------- credentials

    def pause(self, refused: CredentialsRejected) -> None:
        """Stop delivering: the platform refuses the bot's credentials (see ``refused.setting``)."""
        if self.paused is None:
            log.error("worker.delivery_paused", setting=refused.setting, error=refused.reason,
                      hint=f"fix {refused.setting}; delivery resumes once it is accepted")
        self.paused = refused
        REGISTRY.set("clarify_delivery_paused", 1)
        self._resumed.clear()
        self._pausing.set()

    def resume(self) -> None:
        if self.paused is not None:
            log.info("worker.delivery_resumed", setting=self.paused.setting)
        self.paused = None
        REGISTRY.set("clarify_delivery_paused", 0)
        self._pausing.clear()
        self._resumed.set()

    def also_check(self, check: CredentialsCheck) -> None:
        """Add a platform's credentials check: delivery resumes only when every one passes (a
        refusal by one platform is not cleared by another's success)."""
        first = self.credentials
        if first is None:
            self.credentials = check
            return

        async def every() -> None:
            await first()
            await check()

        self.credentials = every

    async def check_credentials(self) -> bool:
        """Run the credentials check: pause on a refusal, resume on success; when the platform
        cannot be asked, nothing changes. True while delivery may run."""
        if self.credentials is None:
            return self.paused is None
        try:
            await self.credentials()
        except CredentialsRejected as exc:
            self.pause(exc)
            return False
        except Exception as exc:  # unreachable or slow: no news about the credentials
            log.warning("worker.credentials_unknown", error=type(exc).__name__)
            return self.paused is None
        self.resume()
        return True

    async def _heartbeat(self, job: m.LeasedJob) -> None:
        while True:
            await self.sleep(self.config.heartbeat_seconds)
            try:
                await self.core.heartbeat_job(
                    job_id=job.id,
                    lease_token=job.lease_token,
                    lease_seconds=self.config.lease_seconds,
                )
            except e.CoreError as exc:
                log.warning("worker.heartbeat_failed", job_id=job.id, error=type(exc).__name__)
                return

    # ---------------------------------------------------------------- loops

    async def drain(self) -> None:
        await drain(self._tasks)

    async def run_burst(self) -> None:
        """Work until no job is due, then send due digests and dead letters; never sleeps.
        Stops early when delivery pauses (held jobs wait for ``check_credentials``)."""
        while await self.poll_iteration():
            await self._drain_unless_paused()
        await self._drain_unless_paused()
        if self.paused is None:
            await self.housekeeping()

    async def _drain_unless_paused(self) -> None:
        while (pending := [t for t in self._tasks if not t.done()]) and self.paused is None:
            paused = asyncio.ensure_future(self._pausing.wait())
            try:
                await asyncio.wait([*pending, paused], return_when=asyncio.FIRST_COMPLETED)
            finally:
                paused.cancel()

    async def run(self) -> None:
        """Poll until stopped; on stop, let in-flight jobs finish within the grace period."""
        iteration = 0
        await self.check_credentials()
        while not self._stopping.is_set():
            if self.paused is not None:
                await self._idle(self.config.credentials_recheck_seconds)
                await self.check_credentials()
                continue
            try:
                leased = await self.poll_iteration()
            except e.AuthenticationFailed:
                log.error("worker.core_token_rejected", setting=CORE_TOKEN_SETTING)
                leased = 0
            except e.CoreError as exc:
                log.warning("worker.poll_failed", error=type(exc).__name__)
                leased = 0
            iteration += 1
            if iteration % self.config.housekeeping_every == 0:
                await self.housekeeping()
            if self.full:
                # every slot is busy: lease again the moment one frees, not a poll later
                await self._idle(self.config.poll_interval_seconds, until_freed=True)
            elif leased == 0:
                await self._idle(self.config.poll_interval_seconds)
        await self.shutdown()

    async def _idle(self, seconds: float, *, until_freed: bool = False) -> None:
        """Wait ``seconds``, or less: until stopped, or (``until_freed``) a slot finishes."""
        self._freed.clear()
        if until_freed and not self.full:
            return  # one finished between the check and here
        waits = [asyncio.ensure_future(self._stopping.wait())]
        if until_freed:
            waits.append(asyncio.ensure_future(self._freed.wait()))
        try:
            await asyncio.wait(waits, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for wait in waits:
                wait.cancel()

    def stop(self) -> None:
        self._stopping.set()

    async def shutdown(self) -> None:
        self._stopping.set()
        if not self._tasks:
            return
        done, pending = await asyncio.wait(
            list(self._tasks), timeout=self.config.shutdown_grace_seconds
        )
        for task in pending:  # their leases run out; reservations make a retry safe
            task.cancel()
        log.info("worker.stopped", finished=len(done), cancelled=len(pending))

    def install_signal_handlers(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.stop)
