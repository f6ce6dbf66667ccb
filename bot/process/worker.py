"""The worker: lease ``clarify:`` jobs, handle them with bounded concurrency, heartbeat meanwhile.

A handled job is not completed once its cards are out: heartbeats stop, the lease runs out, and the
core's backoff (base: the escalation window) brings the job back at the next attempt if nobody has
answered (spec changelog v0.9). ``run_burst`` works until nothing is due, for tests and the demo;
``run`` polls until stopped, and on SIGTERM/SIGINT stops polling and lets in-flight jobs finish.
``run`` is a plain poll loop (arq's shape): ``run_once`` is one iteration (lease and start jobs,
keep house every ``housekeeping_every`` iterations) and never waits; the loop waits after it as
its ``IterationResult`` says (``wait_after``), on the injected ``idle_sleep``.

Slots never wait for a poll interval: the worker polls again as soon as a slot frees with no
job left ahead, or when there is room for half as many jobs as it has slots. With
``WorkerConfig.lease_ahead`` (off by default: a killed worker would lose twice the leases) it
also holds as many jobs again leased ahead, each heartbeating from its lease on like a running
job, and a freed slot starts the next one at once, so the jobs ahead cover a poll's round trip.
At most ``concurrency`` jobs are handled at a time. A handled job's reports go to the core after
its slot frees (``bot.process.running``). The core has no way to give a lease back without
spending an attempt (``fail`` and an expired lease both do, and push the job back by the
escalation window), so on stop the jobs leased ahead are handled like the running ones, within
the grace period; only jobs that cannot be started by then (the grace period ran out, or delivery
is paused) are left to their leases, as a job cancelled at the end of the grace period always was.

Credentials are checked, not assumed: ``run`` starts with the injected credentials check (Slack's
``auth.test``), and a platform refusing the bot's token (at start or mid-job) pauses delivery:
no polling, jobs in hand held with their leases kept alive (nobody skipped, no attempt spent), the
setting to fix logged; the check is repeated until it passes, then the held jobs go on.

What may happen next (room to lease, a slot to start in, paused, stopping) is the state of one
``bot.process.slots.Slots``; the worker starts the tasks and calls its transitions.
"""

from __future__ import annotations

import asyncio
import random as _random
import signal
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

import structlog

from bot.aio import drain
from bot.channel import CredentialsRejected
from bot.clock import Clock
from bot.core import errors as e
from bot.core.calls import CORE_RETRY
from bot.core.client import CoreClient
from bot.engine.handler import JobHandler, Outcomes
from bot.engine.held import HoldKeeper
from bot.metrics import REGISTRY
from bot.process.pauses import Pauses
from bot.process.running import JobRunner
from bot.process.slots import Slots
from bot.retry import RetryPolicy

log = structlog.get_logger("clarify.worker")
KINDS = ["clarify:"]
CORE_TOKEN_SETTING = "CLARIFY_BOT_CORE_TOKEN"
CredentialsCheck = Callable[[], Awaitable[None]]  # returns, or raises CredentialsRejected


def poll_retry(config: WorkerConfig) -> RetryPolicy:
    """The poll loop's wait after a poll that leased nothing or failed: the poll interval, and
    at least the Retry-After a core sent with a 429 or 503, honoured up to the core client's
    cap (docs/core-contract.md, "Retry-After"). The poll is never resent by the client itself:
    this loop waits, where a stop does not wait behind it."""
    interval = config.poll_interval_seconds
    return RetryPolicy(max_attempts=None, base=interval, cap=interval,
                       retry_after_cap=CORE_RETRY.retry_after_cap, jitter=0.0)


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
    lease_ahead: bool = False  # hold as many jobs again as there are slots, leased ahead
    core_url: str | None = None  # named when polling fails (core.url), never a credential
    poll_failures_logged_every: int = 30  # a core away: its first failure, then every 30th

    @property
    def ahead(self) -> int:
        """Jobs leased beyond the busy slots, started the moment a slot frees (none without
        ``lease_ahead``: then a killed worker loses only its running jobs' turns)."""
        return self.concurrency if self.lease_ahead else 0


Chore = Callable[[], Awaitable[object]]  # one step of housekeeping


@dataclass(frozen=True, slots=True)
class IterationResult:
    """What one iteration of the poll loop did (``Worker.run_once``); the loop's wait after it
    follows from it alone (``Worker.wait_after``)."""

    polled: bool = False  # there was room worth a poll, and the core was asked
    leased: int = 0  # jobs the poll leased (those that did not read, held, included)
    failures: int = 0  # polls failed in a row, this one included (0: the core answered)
    retry_after: float | None = None  # the core asked for a pause (429, 503)
    housekept: bool = False  # the housekeeping pass ran
    paused: bool = False  # delivery is paused: nothing was polled


@dataclass
class Worker:
    core: CoreClient
    handler: JobHandler
    held: HoldKeeper  # held jobs: those the handler held, and polled jobs that did not read
    clock: Clock  # the engine's clock: tests move it
    config: WorkerConfig = field(default_factory=WorkerConfig)
    # the housekeeping pass, in order: the store watch, held jobs, digests, the stewards'
    # notices, reminders, dead letters (``bot.process.runtime`` lists them)
    chores: Sequence[Chore] = ()
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    random: Callable[[], float] = _random.random  # the store retries' jitter draws
    # the poll loop's waits between polls (a stop or a freed slot ends one early): tests count
    # the waits the loop asks for instead of sleeping through them
    idle_sleep: Callable[[float], Awaitable[object]] = asyncio.sleep
    # every job's outcome, shared with the held jobs' releases
    outcomes: Outcomes = field(default_factory=Outcomes)
    credentials: CredentialsCheck | None = None
    # per installation, where a platform holds a token per installation (bot.process.pauses)
    pauses: Pauses | None = None
    # the slots, the jobs leased ahead, the reports under way, paused and stopping
    slots: Slots = field(init=False)
    # each leased job's life in its slot (``bot.process.running``)
    runner: JobRunner = field(init=False)
    iterations: int = field(default=0, init=False)  # housekeeping every ``housekeeping_every``
    poll_failures: int = field(default=0, init=False)  # polls failed in a row

    def __post_init__(self) -> None:
        self.slots = Slots(self.config.concurrency, self.config.ahead)
        self.runner = JobRunner(
            core=self.core, handler=self.handler, held=self.held, slots=self.slots,
            outcomes=self.outcomes, pause=self.pause, start_ready=self._start_ready,
            lease_seconds=self.config.lease_seconds,
            heartbeat_seconds=self.config.heartbeat_seconds, sleep=self.sleep,
            random=self.random, pauses=lambda: self.pauses)

    @property
    def paused(self) -> CredentialsRejected | None:
        """Why delivery is paused, if it is."""
        return self.slots.paused

    # ---------------------------------------------------------------- one iteration

    async def poll_iteration(self) -> int:
        """Lease as many jobs as there is room for (free slots and ``ahead``), start as many as
        slots are free and keep the rest ready; returns how many were leased."""
        free = self.slots.may_lease
        if not free:
            return 0
        leased = await self.core.poll_jobs(
            kinds=KINDS, max_jobs=free, lease_seconds=self.config.lease_seconds
        )
        now = self.clock.now()
        for job in leased.jobs:
            if job.visible_at is not None:  # a core may leave it out (docs/core-contract.md)
                lag = max(0.0, (now - job.visible_at).total_seconds())
                REGISTRY.observe("clarify_job_lag_seconds", lag)
            self.slots.leased(job, asyncio.create_task(self.runner.heartbeat(job)))
        self._start_ready()
        for unread in leased.unread:
            await self.held.unread(unread)
        return len(leased.jobs) + len(leased.unread)

    def _start_ready(self) -> None:
        """Start jobs leased ahead while slots are free (not while delivery is paused)."""
        while (ready := self.slots.next_ready()) is not None:
            task = asyncio.create_task(self.runner.work(*ready))
            self.slots.started(task)
            task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Task[None]) -> None:
        """A slot is free: the next job leased ahead starts in it now. The worker leases again
        once there is room for half as many jobs as it has slots, or at once when no job is left
        ahead to start: one poll for several jobs, not one per job (each poll costs the core a
        scan of the due jobs), and no slot waits for a poll while jobs are due."""
        self.slots.finished(task)
        self._start_ready()
        self.slots.wake()

    @property
    def room(self) -> int:
        """How many more jobs may be leased: free slots, and ``ahead`` beyond them."""
        return self.slots.room

    @property
    def hungry(self) -> bool:
        """Worth a poll (``Slots.hungry``)."""
        return self.slots.hungry

    async def housekeeping(self) -> None:
        """One housekeeping pass: the store watch, held jobs, due digests, stewards' notices and
        reminders, new dead letters listed to stewards (``chores``, in that order)."""
        try:
            for chore in self.chores:
                await chore()
        except CredentialsRejected as exc:  # the claimed digest batch is retried when resumed
            if exc.scope is not None and self.pauses is not None:
                self.pauses.pause(exc)
            else:
                self.pause(exc)
        except Exception as exc:  # a store or platform blip must not stop the worker
            log.warning("worker.housekeeping_failed", error=type(exc).__name__)

    # ---------------------------------------------------------------- credentials

    def pause(self, refused: CredentialsRejected) -> None:
        """Stop delivering: the platform refuses the bot's credentials (see ``refused.setting``)."""
        if self.slots.pause(refused):
            log.error("worker.delivery_paused", setting=refused.setting, error=refused.reason,
                      hint=f"fix {refused.setting}; delivery resumes once it is accepted")
        REGISTRY.set("clarify_delivery_paused", 1)

    def resume(self) -> None:
        was = self.slots.resume()
        if was is not None:
            log.info("worker.delivery_resumed", setting=was.setting)
        REGISTRY.set("clarify_delivery_paused", 0)
        self._start_ready()

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

    # ---------------------------------------------------------------- loops

    async def drain(self) -> None:
        """Wait for the running jobs and those leased ahead (each starts as a slot frees)."""
        await drain(self.slots.running)
        await drain(self.slots.under_way)

    async def run_burst(self) -> None:
        """Work until no job is due, then send due digests and dead letters; never sleeps.
        Stops early when delivery pauses (held jobs wait for ``check_credentials``)."""
        while await self.poll_iteration():
            await self._drain_unless_paused()
        await self._drain_unless_paused()
        if self.paused is None:
            await self.housekeeping()

    async def _drain_unless_paused(self) -> None:
        while (pending := self.slots.unfinished()) and self.paused is None:
            paused = asyncio.ensure_future(self.slots.pausing.wait())
            try:
                await asyncio.wait([*pending, paused], return_when=asyncio.FIRST_COMPLETED)
            finally:
                paused.cancel()

    async def run(self) -> None:
        """Poll until stopped, one ``run_once`` at a time and the wait it calls for between;
        while delivery is paused, the credentials are checked again every
        ``credentials_recheck_seconds``. On stop, in-flight jobs finish within the grace
        period."""
        await self.check_credentials()
        while not self.slots.stopped:
            if self.paused is not None:
                await self._idle(self.config.credentials_recheck_seconds)
                await self.check_credentials()
                continue
            await self.wait_after(await self.run_once())
        await self.shutdown()

    async def run_once(self) -> IterationResult:
        """One iteration: the paused installations looked at again, a poll when the worker is
        ``hungry`` (its jobs started, ``poll_iteration``), and every ``housekeeping_every``
        iterations a housekeeping pass. A poll the core refuses is counted, logged (its first
        failure, then every ``poll_failures_logged_every``-th) and said in the result; the
        loop waits accordingly. Never waits itself."""
        if self.paused is not None:
            return IterationResult(paused=True)
        if self.pauses is not None:
            await self.pauses.recheck()
        polled, leased, retry_after = self.hungry, 0, None
        try:
            if polled:
                leased = await self.poll_iteration()
        except e.AuthenticationFailed:
            log.error("worker.core_token_rejected", setting=CORE_TOKEN_SETTING)
        except e.CoreError as exc:
            self.poll_failures += 1
            failures = self.poll_failures
            retry_after = exc.retry_after if isinstance(exc, e.CoreAPIError) else None
            if (failures - 1) % self.config.poll_failures_logged_every == 0:
                log.warning("worker.poll_failed", error=type(exc).__name__, failures=failures,
                            setting="core.url", url=self.config.core_url,
                            retry_after=retry_after)
        else:
            if self.poll_failures and polled:
                log.info("worker.poll_recovered", failures=self.poll_failures)
                self.poll_failures = 0
        self.iterations += 1
        housekept = self.iterations % self.config.housekeeping_every == 0
        if housekept:
            await self.housekeeping()
        return IterationResult(polled=polled, leased=leased, failures=self.poll_failures,
                               retry_after=retry_after, housekept=housekept)

    async def wait_after(self, result: IterationResult) -> None:
        """The loop's wait after an iteration: the core's Retry-After (no poll before it ends,
        room or not); with enough jobs in hand, until there is room again (at most a poll
        interval); after a poll that leased nothing or failed, a poll interval
        (``poll_retry``); otherwise none."""
        if result.retry_after is not None:
            await self._idle(poll_retry(self.config).delay(
                result.failures, retry_after=result.retry_after, draw=1.0))
        elif not self.hungry:
            await self._idle(self.config.poll_interval_seconds, until_freed=True)
        elif result.leased == 0 and result.polled:
            await self._idle(poll_retry(self.config).delay(max(result.failures, 1), draw=1.0))

    async def _idle(self, seconds: float, *, until_freed: bool = False) -> None:
        """Wait ``seconds``, or less: until stopped, or (``until_freed``) the worker is
        ``hungry`` again."""
        self.slots.expect_room()
        if until_freed and self.hungry:
            return  # jobs finished between the check and here
        waits = [asyncio.ensure_future(self.slots.stopping.wait()),
                 asyncio.ensure_future(self.idle_sleep(seconds))]
        if until_freed:
            waits.append(asyncio.ensure_future(self.slots.freed.wait()))
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for wait in waits:
                wait.cancel()

    def stop(self) -> None:
        self.slots.stop()

    async def shutdown(self) -> None:
        """Stop leasing; finish the running jobs and those leased ahead (each starts as a slot
        frees) within the grace period. What is left then is cancelled, or never started (while
        paused): their leases run out; reservations make a retry safe."""
        self.slots.stop()
        if self.slots.idle:
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.config.shutdown_grace_seconds
        finished = 0
        while pending := self.slots.unfinished():
            left = deadline - loop.time()
            if left <= 0:
                break
            jobs = self.slots.running.intersection(pending)  # the rest: reports under way
            done, _ = await asyncio.wait(pending, timeout=left,
                                         return_when=asyncio.FIRST_COMPLETED)
            finished += len(done & jobs)
        for task in pending:
            task.cancel()
        unstarted = self.slots.release_ready()
        for job, heartbeat in unstarted:
            heartbeat.cancel()
            log.warning("worker.held_job_released", job_id=job.id)
        await asyncio.gather(*(beat for _, beat in unstarted), return_exceptions=True)
        log.info("worker.stopped", finished=finished, cancelled=len(pending),
                 unstarted=len(unstarted))

    def install_signal_handlers(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.stop)
