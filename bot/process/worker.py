"""The worker: lease ``clarify:`` jobs, handle them with bounded concurrency, heartbeat meanwhile.

A handled job is not completed once its cards are out: heartbeats stop, the lease runs out, and the
core's backoff (base: the escalation window) brings the job back at the next attempt if nobody has
answered (spec changelog v0.9). ``run_burst`` works until nothing is due, for tests and the demo;
``run`` polls until stopped, and on SIGTERM/SIGINT stops polling and lets in-flight jobs finish.

Slots never wait for a poll interval: the worker polls again as soon as a slot frees with no
job left ahead, or when there is room for half as many jobs as it has slots. With
``WorkerConfig.lease_ahead`` (off by default: a killed worker would lose twice the leases) it
also holds as many jobs again leased ahead, each heartbeating from its lease on like a running
job, and a freed slot starts the next one at once, so the jobs ahead cover a poll's round trip.
At most ``concurrency`` jobs are handled at a time. A handled job's reports go to the core after
its slot frees (``_report``). The core has no way to give a lease back without
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
import contextlib
import random as _random
import signal
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import structlog

from bot.aio import drain
from bot.channel import CredentialsRejected
from bot.core import errors as e
from bot.core import models as m
from bot.core.batching import JobScope
from bot.core.client import CoreClient
from bot.core.extensions import Extension
from bot.core.transport import CORE_RETRY
from bot.engine.deadletters import DeadLetterReporter
from bot.engine.digests import DigestSender
from bot.engine.handler import (
    HOLD_LEASE_SECONDS,
    UNREAD_LOOK_SECONDS,
    Hold,
    JobHandler,
    JobOutcome,
)
from bot.engine.notices import NoticeSender
from bot.engine.reminders import Reminders
from bot.metrics import REGISTRY
from bot.process.pauses import Pauses
from bot.process.slots import Slots
from bot.process.storewatch import StoreWatch
from bot.retry import RetryPolicy
from bot.store.errors import StoreUnavailable

log = structlog.get_logger("clarify.worker")
KINDS = ["clarify:"]
CORE_TOKEN_SETTING = "CLARIFY_BOT_CORE_TOKEN"
CredentialsCheck = Callable[[], Awaitable[None]]  # returns, or raises CredentialsRejected
# how long a handled job's reports, sent after its slot freed, wait for other jobs' to join them
REPORTS_LINGER_SECONDS = 0.02
# a job whose handling found the store unavailable is handled again after each wait, on the
# same lease (1 s doubling to 30 s, half of each random: 61 s at most in all), before it is
# given up to its lease (docs/reliability.md, "Retries")
# held jobs looked at per housekeeping pass (docs/delivery.md, "Working hours")
HOLDS_PER_PASS = 500
STORE_RETRY = RetryPolicy(max_attempts=7, base=1.0, cap=30.0, retry_after_cap=0.0, jitter=0.5)


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


@dataclass
class Worker:
    core: CoreClient
    handler: JobHandler
    digests: DigestSender
    dead_letters: DeadLetterReporter
    config: WorkerConfig = field(default_factory=WorkerConfig)
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    random: Callable[[], float] = _random.random  # the store retries' jitter draws
    # the poll loop's waits between polls (a stop or a freed slot ends one early): tests count
    # the waits the loop asks for instead of sleeping through them
    idle_sleep: Callable[[float], Awaitable[object]] = asyncio.sleep
    outcomes: dict[JobOutcome, int] = field(default_factory=dict)
    credentials: CredentialsCheck | None = None
    notices: NoticeSender | None = None  # the stewards' batched high-severity notices
    reminders: Reminders | None = None  # question cards' one reminder each
    # per installation, where a platform holds a token per installation (bot.process.pauses)
    pauses: Pauses | None = None
    # the slots, the jobs leased ahead, the reports under way, paused and stopping
    slots: Slots = field(init=False)
    # notices a store that lost its data before held jobs are looked at (bot.process.storewatch)
    storewatch: StoreWatch | None = None

    def __post_init__(self) -> None:
        self.slots = Slots(self.config.concurrency, self.config.ahead)

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
        now = self.handler.clock.now()  # the engine's clock: tests move it
        for job in leased.jobs:
            if job.visible_at is not None:  # a core may leave it out (docs/core-contract.md)
                lag = max(0.0, (now - job.visible_at).total_seconds())
                REGISTRY.observe("clarify_job_lag_seconds", lag)
            self.slots.leased(job, asyncio.create_task(self._heartbeat(job)))
        self._start_ready()
        for unread in leased.unread:
            await self._hold_unread(unread)
        return len(leased.jobs) + len(leased.unread)

    async def _hold_unread(self, unread: m.UnreadJob) -> None:
        """A polled job that did not read. Named (its id and lease token read), it is held like
        a job whose clarification did not read: its lease kept and the job read again (from the
        heartbeat's answer) every ``UNREAD_LOOK_SECONDS``, so no candidate's turn runs out
        unseen. Unnamed, nothing can reach it: it is left to its lease, logged and counted."""
        fields = list(unread.fields)
        if not unread.named:
            REGISTRY.inc("clarify_jobs_unreadable_total", read="job", action="left")
            log.error("worker.job_unreadable", fields=fields, action="left",
                      why="its id or its lease token did not read")
            return
        assert unread.id is not None and unread.lease_token is not None
        REGISTRY.inc("clarify_jobs_unreadable_total", read="job", action="held")
        now = self.handler.clock.now()
        hold = Hold(None, now + timedelta(seconds=UNREAD_LOOK_SECONDS),
                    named=(unread.id, unread.lease_token))
        log.warning("worker.job_unreadable", job_id=unread.id, fields=fields, action="held",
                    again=hold.due.isoformat())
        try:
            await self.handler.store.hold_put(unread.id, hold.dumps(), at=now)
            await self._look_at_hold(unread.id, hold)
        except (e.CoreError, StoreUnavailable, ValueError) as exc:
            log.warning("worker.hold_unextended", job_id=unread.id, error=type(exc).__name__)

    def _start_ready(self) -> None:
        """Start jobs leased ahead while slots are free (not while delivery is paused)."""
        while (ready := self.slots.next_ready()) is not None:
            task = asyncio.create_task(self._work(*ready))
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
        """Send due digests, stewards' notices and reminders, and list new dead letters to
        stewards."""
        try:
            if self.storewatch is not None:
                await self.storewatch.check_if_due()
            await self.release_holds()
            await self.digests.flush()
            if self.notices is not None:
                await self.notices.flush()
            if self.reminders is not None:
                await self.reminders.flush()
            await self.dead_letters.report()
        except CredentialsRejected as exc:  # the claimed digest batch is retried when resumed
            if exc.scope is not None and self.pauses is not None:
                self.pauses.pause(exc)
            else:
                self.pause(exc)
        except Exception as exc:  # a store or platform blip must not stop the worker
            log.warning("worker.housekeeping_failed", error=type(exc).__name__)

    async def release_holds(self) -> None:
        """Jobs held for a person's working hours (``JobHandler.hold``), kept in the store so
        that any worker carries them on: a hold whose lease would end before it is due gets
        its lease extended again; a hold that is due is handled now (the card goes out). A
        lease lost meanwhile (every worker down for longer than the held lease lives) ends the
        hold: the core counts the turn as expired (docs/delivery.md, "Working hours")."""
        store = self.handler.store
        # one replica at a time looks at a hold: two releasing it at once would both send its
        # card (each reservation would be the other's, taken for a dead worker's); a claimant
        # that dies leaves it to the next pass after the claim, inside the lease it extended
        claim = max(self.config.lease_seconds // 2, 1)
        # held questions fall due together (08:00 in a zone): as many at once as the worker
        # has slots, each claimed just before it is looked at (a claim taken at the start of a
        # long pass would have run out by the time its turn came)
        room = asyncio.Semaphore(max(1, self.config.concurrency))

        async def one(job_id: str) -> None:
            async with room:
                if not await store.hold_claim(job_id, now=self.handler.clock.now(),
                                              lease_seconds=claim):
                    return  # another replica has it, or it was released meanwhile
                text = await store.hold_text(job_id)  # as kept now, not as the scan read it
                if text is None:
                    return
                try:
                    await self._look_at_hold(job_id, Hold.loads(text))
                except e.CoreError as exc:  # the core away: looked at again after the claim
                    log.warning("worker.hold_unextended", job_id=job_id,
                                error=type(exc).__name__)

        due = await store.holds_due(now=self.handler.clock.now(), limit=HOLDS_PER_PASS)
        done = await asyncio.gather(*(one(job_id) for job_id, _ in due), return_exceptions=True)
        for failed in done:
            if isinstance(failed, CredentialsRejected | asyncio.CancelledError):
                raise failed  # the worker pauses (housekeeping), or stops; the holds stay
            if isinstance(failed, BaseException):
                log.warning("worker.hold_failed", error=type(failed).__name__)

    async def _look_at_hold(self, job_id: str, hold: Hold) -> None:
        now = self.handler.clock.now()
        due = hold.due <= now
        try:
            extended = await self.core.heartbeat_job(
                job_id=job_id, lease_token=hold.lease_token,
                # a job that did not read keeps the long lease until it reads
                lease_seconds=self.config.lease_seconds if due and hold.job is not None
                else HOLD_LEASE_SECONDS)
        except (e.LeaseExpired, e.LeaseMismatch, e.JobNotFound) as exc:
            await self.handler.store.hold_drop(job_id)
            REGISTRY.inc("clarify_holds_lost_total")
            log.warning("worker.hold_lost", job_id=job_id, error=type(exc).__name__)
            return
        job = extended or hold.job
        if job is None:  # the job still does not read (the heartbeat's answer did not either)
            kept = Hold(None, now + timedelta(seconds=UNREAD_LOOK_SECONDS) if due else hold.due,
                        named=hold.named)
            if due:
                REGISTRY.inc("clarify_jobs_unreadable_total", read="job", action="held")
                log.warning("worker.job_unreadable", job_id=job_id, action="held",
                            again=kept.due.isoformat())
            # the answer that would say when the lease ends did not read: by what was asked
            # for (a core without heartbeat-lease extends by the polled lease)
            lease = (HOLD_LEASE_SECONDS if self.core.offers(Extension.HEARTBEAT_LEASE)
                     else self.config.lease_seconds)
            await self.handler.store.hold_put(
                job_id, kept.dumps(), at=kept.look_at(now + timedelta(seconds=lease), now))
            return
        if hold.job is None:  # the held job reads now: handled as a hold that is due
            log.info("worker.job_reads", job_id=job_id)
            await self._look_at_hold(job_id, Hold(job, now))
            return
        if not due:
            kept = Hold(job, hold.due, troubles=hold.troubles)
            await self.handler.store.hold_put(job_id, kept.dumps(),
                                              at=kept.look_at(job.lease_expires_at, now))
            return
        outcome, reports = await self.handler.handle_unreported(job)
        self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1
        REGISTRY.inc("clarify_jobs_total", outcome=outcome.value)
        log.info("worker.hold_released", job_id=job.id, outcome=outcome)
        await self.core.flush(reports)
        if outcome is JobOutcome.HELD:  # still outside the hours (a zone changed): held again
            text = await self.handler.store.hold_text(job_id)
            if text is not None:
                await self._look_at_hold(job_id, Hold.loads(text))
            return
        await self.handler.store.hold_drop(job_id)

    async def _work(self, job: m.LeasedJob, heartbeat: asyncio.Task[None]) -> None:
        try:
            handled = await self._handle_holding(job, heartbeat)
            if handled is None:
                return
            outcome, reports = handled
            self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1
            REGISTRY.inc("clarify_jobs_total", outcome=outcome.value)
            log.info("worker.job_done", job_id=job.id, attempt=job.attempts, outcome=outcome)
            if outcome is JobOutcome.HELD:
                # the job's own heartbeats stop first, then the held lease is extended
                await self._stop_heartbeat(heartbeat)
                text = await self.handler.store.hold_text(job.id)
                if text is not None:
                    await self._look_at_hold(job.id, Hold.loads(text))
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

    async def _report(self, job: m.LeasedJob, reports: JobScope) -> None:
        """Send a handled job's reports after its slot frees, so the next job need not wait for
        them; they wait ``REPORTS_LINGER_SECONDS`` for other jobs' to share the call
        (``bot/core/batching.py``). The job's cards are out and recorded in the store by then (a
        question card whose report is lost is reported by the job's next attempt,
        ``JobHandler.reconcile_earlier``); stop and ``drain`` wait for the reports under way. At
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

    async def _handle_holding(self, job: m.LeasedJob, heartbeat: asyncio.Task[None]
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
                if exc.scope is not None and self.pauses is not None:
                    if not await self._hold_scope(job, exc, heartbeat):
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

    async def _hold_scope(self, job: m.LeasedJob, refused: CredentialsRejected,
                          heartbeat: asyncio.Task[None]) -> bool:
        """Hold a job that met an installation whose token is refused (``bot.process.pauses``),
        outside the slots, so other installations' jobs go on meanwhile; True once it
        resumes, False when it is let go (stopping, lease lost, too many held)."""
        assert self.pauses is not None and refused.scope is not None
        self.pauses.pause(refused)
        task: asyncio.Task[None] | None = asyncio.current_task()
        self.slots.set_aside(task)
        self._start_ready()
        self.slots.wake()
        stopping: asyncio.Future[Any] = asyncio.ensure_future(self.slots.stopping.wait())
        try:
            held = await self.pauses.hold(refused.scope, until=[stopping, heartbeat])
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
        return self.paused is None and not self.slots.stopped and not heartbeat.done()

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
        """Poll until stopped; on stop, let in-flight jobs finish within the grace period."""
        iteration = failures = 0
        await self.check_credentials()
        while not self.slots.stopped:
            if self.paused is not None:
                await self._idle(self.config.credentials_recheck_seconds)
                await self.check_credentials()
                continue
            if self.pauses is not None:
                await self.pauses.recheck()
            polled, leased, retry_after = self.hungry, 0, None
            try:
                if polled:
                    leased = await self.poll_iteration()
            except e.AuthenticationFailed:
                log.error("worker.core_token_rejected", setting=CORE_TOKEN_SETTING)
            except e.CoreError as exc:
                failures += 1
                retry_after = exc.retry_after if isinstance(exc, e.CoreAPIError) else None
                if (failures - 1) % self.config.poll_failures_logged_every == 0:
                    log.warning("worker.poll_failed", error=type(exc).__name__, failures=failures,
                                setting="core.url", url=self.config.core_url,
                                retry_after=retry_after)
            else:
                if failures and polled:
                    log.info("worker.poll_recovered", failures=failures)
                    failures = 0
            iteration += 1
            if iteration % self.config.housekeeping_every == 0:
                await self.housekeeping()
            if retry_after is not None:
                # the core asked for a pause (429, 503): no poll before it ends, room or not
                await self._idle(poll_retry(self.config).delay(failures, retry_after=retry_after,
                                                       draw=1.0))
            elif not self.hungry:
                # enough jobs in hand: lease again the moment there is room, not a poll later
                await self._idle(self.config.poll_interval_seconds, until_freed=True)
            elif leased == 0 and polled:  # nothing due (or the core failed): a poll interval
                await self._idle(poll_retry(self.config).delay(max(failures, 1), draw=1.0))
        await self.shutdown()

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
