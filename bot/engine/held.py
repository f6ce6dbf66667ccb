"""Held jobs carried on: an engine part the worker's housekeeping flushes, like digests, notices
and reminders.

A hold (``bot.engine.holds``) is kept in the store, so that any worker carries it on: a hold
whose lease would end before it is due gets its lease extended again; a hold that is due is
handled now (the card goes out). A lease lost meanwhile (every worker down for longer than the
held lease lives) ends the hold: the core counts the turn as expired (docs/delivery.md, "Working
hours"). A polled job that did not read is held the same way, by its id and lease token, and
read again from the heartbeat's answer (docs/core-contract.md, "Nothing unreadable is silent").
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import structlog

from bot.channel import CredentialsRejected
from bot.clock import Clock
from bot.core import errors as e
from bot.core.client import CoreClient
from bot.core.extensions import Extension
from bot.core.models import UnreadJob
from bot.engine.handler import JobHandler, JobOutcome, Outcomes
from bot.engine.holds import HOLD_LEASE_SECONDS, UNREAD_LOOK_SECONDS, Hold
from bot.metrics import REGISTRY
from bot.store.errors import StoreUnavailable
from bot.store.holds import HeldJobs

# the worker's log lines: it carries the holds on
log = structlog.get_logger("clarify.worker")
# held jobs read from the store at a time; a housekeeping pass takes batch after batch, for at
# most PASS_SECONDS (docs/delivery.md, "Working hours")
HOLDS_PER_PASS = 500
PASS_SECONDS = 30.0


@dataclass
class HoldKeeper:
    """Keeps the holds: their leases extended, each released when due, dropped when lost."""

    core: CoreClient
    store: HeldJobs
    clock: Clock
    handler: JobHandler  # handles a hold that is due
    lease_seconds: int = 60  # a running job's lease (WorkerConfig.lease_seconds)
    concurrency: int = 4  # holds looked at at once (the worker's slots)
    # every job's outcome, shared with the worker that counts the rest
    outcomes: Outcomes = field(default_factory=Outcomes)

    async def flush(self) -> None:
        """Look at the holds that are due to be looked at (due, or their lease near its end)."""
        # one replica at a time looks at a hold: two releasing it at once would both send its
        # card (each reservation would be the other's, taken for a dead worker's); a claimant
        # that dies leaves it to the next pass after the claim, inside the lease it extended
        claim = max(self.lease_seconds // 2, 1)
        # held questions fall due together (08:00 in a zone): as many at once as the worker
        # has slots, each claimed just before it is looked at (a claim taken at the start of a
        # long pass would have run out by the time its turn came)
        room = asyncio.Semaphore(max(1, self.concurrency))

        async def one(job_id: str) -> None:
            async with room:
                if not await self.store.hold_claim(job_id, now=self.clock.now(),
                                                   lease_seconds=claim):
                    return  # another replica has it, or it was released meanwhile
                text = await self.store.hold_text(job_id)  # as kept now, not as the scan read it
                if text is None:
                    return
                try:
                    await self._look_at(job_id, Hold.loads(text))
                except e.CoreError as exc:  # the core away: looked at again after the claim
                    log.warning("worker.hold_unextended", job_id=job_id,
                                error=type(exc).__name__)

        # every hold due, a batch at a time, within the pass's time: thousands of holds whose
        # leases all need extending (or which all fall due at one zone's 08:00) never fall
        # behind a fixed number per pass; a hold another replica holds is not asked again
        seen: set[str] = set()
        started = time.monotonic()
        while time.monotonic() - started < PASS_SECONDS:
            due = await self.store.holds_due(now=self.clock.now(), limit=HOLDS_PER_PASS)
            fresh = [job_id for job_id, _ in due if job_id not in seen]
            seen.update(fresh)
            done = await asyncio.gather(*(one(job_id) for job_id in fresh),
                                        return_exceptions=True)
            for failed in done:
                if isinstance(failed, CredentialsRejected | asyncio.CancelledError):
                    raise failed  # the worker pauses (housekeeping), or stops; the holds stay
                if isinstance(failed, BaseException):
                    log.warning("worker.hold_failed", error=type(failed).__name__)
            if len(due) < HOLDS_PER_PASS or not fresh:
                break

    async def carry_on(self, job_id: str) -> None:
        """A job its handler held (its own heartbeats stopped): the held lease extended now."""
        text = await self.store.hold_text(job_id)
        if text is not None:
            await self._look_at(job_id, Hold.loads(text))

    async def unread(self, unread: UnreadJob) -> None:
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
        now = self.clock.now()
        hold = Hold(None, now + timedelta(seconds=UNREAD_LOOK_SECONDS),
                    named=(unread.id, unread.lease_token))
        log.warning("worker.job_unreadable", job_id=unread.id, fields=fields, action="held",
                    again=hold.due.isoformat())
        try:
            await self.store.hold_put(unread.id, hold.dumps(), at=now)
            await self._look_at(unread.id, hold)
        except (e.CoreError, StoreUnavailable, ValueError) as exc:
            log.warning("worker.hold_unextended", job_id=unread.id, error=type(exc).__name__)

    async def _look_at(self, job_id: str, hold: Hold) -> None:
        now = self.clock.now()
        due = hold.due <= now
        try:
            extended = await self.core.heartbeat_job(
                job_id=job_id, lease_token=hold.lease_token,
                # a job that did not read keeps the long lease until it reads
                lease_seconds=self.lease_seconds if due and hold.job is not None
                else HOLD_LEASE_SECONDS)
        except (e.LeaseExpired, e.LeaseMismatch, e.JobNotFound) as exc:
            await self.store.hold_drop(job_id)
            REGISTRY.inc("clarify_holds_lost_total")
            log.warning("worker.hold_lost", job_id=job_id, error=type(exc).__name__)
            return
        job = extended or hold.job
        if job is None:  # the job still does not read (the heartbeat's answer did not either)
            await self._still_unread(job_id, hold, now, due=due)
            return
        if hold.job is None:  # the held job reads now: handled as a hold that is due
            log.info("worker.job_reads", job_id=job_id)
            await self._look_at(job_id, Hold(job, now))
            return
        if not due:
            kept = Hold(job, hold.due, troubles=hold.troubles)
            await self.store.hold_put(job_id, kept.dumps(),
                                      at=kept.look_at(job.lease_expires_at, now))
            return
        outcome, reports = await self.handler.handle_unreported(job)
        self.outcomes.count(outcome)
        log.info("worker.hold_released", job_id=job.id, outcome=outcome)
        await self.core.flush(reports)
        if outcome is JobOutcome.HELD:  # still outside the hours (a zone changed): held again
            await self.carry_on(job_id)
            return
        await self.store.hold_drop(job_id)

    async def _still_unread(self, job_id: str, hold: Hold, now: datetime, *, due: bool
                            ) -> None:
        kept = Hold(None, now + timedelta(seconds=UNREAD_LOOK_SECONDS) if due else hold.due,
                    named=hold.named)
        if due:
            REGISTRY.inc("clarify_jobs_unreadable_total", read="job", action="held")
            log.warning("worker.job_unreadable", job_id=job_id, action="held",
                        again=kept.due.isoformat())
        # the answer that would say when the lease ends did not read: by what was asked
        # for (a core without heartbeat-lease extends by the polled lease)
        lease = (HOLD_LEASE_SECONDS if self.core.offers(Extension.HEARTBEAT_LEASE)
                 else self.lease_seconds)
        await self.store.hold_put(
            job_id, kept.dumps(), at=kept.look_at(now + timedelta(seconds=lease), now))
