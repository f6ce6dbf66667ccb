"""The job handler: one leased ``clarify:`` job → the right people asked, or the steward told.

Attempt N asks ranking[N]; the last attempt is the redacted steward escalation. A candidate who
cannot be asked (no alias, not in scope, no read permission, capped, delivery failed) is skipped
inside the lease with a reason code, so a skip never burns an escalation window. When nobody
eligible remains, the steward is escalated to at once with every skip reason; when a critical
question has fewer eligible people than confirmations it needs, the steward hears that at once
too. After delivery the handler returns without completing: the lease runs out, and the core's
backoff (the escalation window) brings the job back at the next attempt if nobody has answered.

The arithmetic (which step, which turns, where to advance, how long the lease lives) is
``bot.engine.attempts``; this module does the I/O around it, with its steps in their own parts:
what a crash left is settled by ``bot.engine.recovery``, the ranking's candidates are asked by
``bot.engine.asking``, and a job is held by ``bot.engine.holds``. A job whose core left its
attempts out takes them from the clarification's trail before anyone is asked; one whose
clarification or person does not read, or whose reads the core refuses for now, is held, its
lease kept, and read again later: no turn is spent on what the bot could not read
(docs/core-contract.md).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

import structlog

from bot.channel import Address
from bot.clock import Clock
from bot.core import batching
from bot.core import errors as e
from bot.core.client import CoreClient
from bot.core.extensions import Extension
from bot.core.models import Clarification, LeasedJob, Severity
from bot.engine import attempts, evidence, views
from bot.engine.asking import Asking, OutOfHours, Walk, advance
from bot.engine.attempts import Step
from bot.engine.holds import Holds
from bot.engine.rbac import may_confirm
from bot.engine.recovery import Earlier, Recovery, turn_passed
from bot.engine.refresh import CardRefresher
from bot.engine.routing import Routing
from bot.engine.stewards import Stewards
from bot.engine.trail import Skip
from bot.engine.zones import Zones
from bot.metrics import REGISTRY
from bot.settings import ClarifySettings
from bot.store.kv import KeyValues

log = structlog.get_logger("clarify.handler")

# bot.interaction.declines reads it: clarification id -> "job id|lease token"
HELD_LEASE = "held-lease"
# the reads a job needs before it spends a turn, and what each reads (the metric's label)
JOB_READS = {"getClarification": "clarification", "getPerson": "person",
             "resolvePerson": "person", "getPeople": "person"}
# a job whose read the core refused for now (a 429, a 5xx or no answer, past the client's own
# retries) is held the same way (``bot.engine.holds.trouble_wait``)
CORE_TROUBLE = (e.RateLimited, e.ServerError, e.CoreTransportError)


class JobOutcome(StrEnum):
    COMPLETED = "completed"  # nothing more to do: the job was completed
    ASKED = "asked"  # cards (or digest entries) went out; the lease is left to run out
    ESCALATED = "escalated"  # the redacted steward escalation went out (last attempt)
    FAILED = "failed"  # nothing could be sent, not even to the steward
    HELD = "held"  # the person is outside their working hours: the lease is held till then


REGISTRY.preset("clarify_jobs_total", outcome=JobOutcome)


class Outcomes(dict[JobOutcome, int]):
    """How many jobs ended how, in this process (the worker's and the held jobs' together)."""

    def count(self, outcome: JobOutcome) -> None:
        self[outcome] = self.get(outcome, 0) + 1
        REGISTRY.inc("clarify_jobs_total", outcome=outcome.value)


@dataclass
class JobHandler:
    core: CoreClient
    store: KeyValues  # the lease kept for a decline (``HELD_LEASE``)
    routing: Routing
    clock: Clock
    settings: ClarifySettings
    stewards: Stewards
    # shows every delivered card of a settled clarification its final state (a state can
    # change without the bot: the core's CLI, an API key)
    refresher: CardRefresher
    zones: Zones  # the people's zones and working hours: the engine's one
    holds: Holds  # where a held job is kept
    asking: Asking  # the ranking's candidates asked, one pass
    recovery: Recovery  # what a crash left, settled first

    async def handle(self, job: LeasedJob) -> JobOutcome:
        """Handle one job inside its own ``JobScope``: the clarification is read once, its
        people in one call, and its reports go to the core together when it ends (three core
        calls for a job that asks one person; ``bot/core/batching.py``)."""
        outcome, reports = await self.handle_unreported(job)
        await self.core.flush(reports)
        return outcome

    async def handle_unreported(self, job: LeasedJob
                                ) -> tuple[JobOutcome, batching.JobScope]:
        """``handle``, less the last step: the reports still held at the end come back in the
        scope, for the caller to ``flush`` (the worker frees the job's slot first). When the
        job raises, what went out is reported before the error is.

        The scope is passed, as ``scope=``, to every call of the job that reads a person or
        reports; work the job starts in the background (the steward's queue re-shown after a
        notice, ``bot.interaction.attention``) takes none, so it never reports into a scope
        that has been flushed."""
        scope = batching.JobScope()
        try:
            outcome = await self._handle(job, scope)
        except e.UnexpectedResponse as exc:
            if exc.operation not in JOB_READS:
                with contextlib.suppress(Exception):
                    await self.core.flush(scope)
                raise
            outcome = await self._unread(job, exc)
        except CORE_TROUBLE as exc:
            if exc.operation not in JOB_READS:
                with contextlib.suppress(Exception):
                    await self.core.flush(scope)
                raise
            outcome = await self._in_trouble(job, exc)
        except BaseException:
            # what went out is still reported; the job's own error is the one raised
            with contextlib.suppress(Exception):
                await self.core.flush(scope)
            raise
        return outcome, scope

    async def _unread(self, job: LeasedJob, exc: e.UnexpectedResponse) -> JobOutcome:
        """A read the job needs (its clarification, a person) answered something the bot cannot
        read: nobody's turn is spent on it. The contract has no way to give a lease back without
        spending an attempt (fail and a lease that runs out both do), so the job is held, its
        lease kept, and read again every ``UNREAD_LOOK_SECONDS`` until it reads."""
        await self.holds.unread(job, read=JOB_READS[exc.operation], operation=exc.operation,
                                fields=list(exc.fields))
        return JobOutcome.HELD

    async def _in_trouble(self, job: LeasedJob, exc: e.CoreError) -> JobOutcome:
        """A read the job needs was refused for now (rate limited, unavailable, unreachable):
        as for one that does not read, the job is held with its lease kept rather than left
        to a lease that runs out, which would spend the candidate's turn on the core's outage.
        It is read again after ``TROUBLE_LOOK_SECONDS``, doubled for each refusal in a row
        (5, 10, 20 … seconds: a core back after a short outage is read again at once, one
        down for long is not hammered by every held job), never before the core's
        Retry-After and never later than ``UNREAD_LOOK_SECONDS`` (``holds.trouble_wait``)."""
        await self.holds.in_trouble(job, read=JOB_READS[exc.operation], operation=exc.operation,
                                    error=type(exc).__name__,
                                    retry_after=float(getattr(exc, "retry_after", None) or 0))
        return JobOutcome.HELD

    def _turn_known(self, job: LeasedJob, c: Clarification) -> LeasedJob:
        """The job at the attempt its core said, or (left out) the one the clarification's
        trail shows it at (``attempts.from_trail``): never one taken from nothing."""
        if job.attempts is not None:
            return job
        turn = attempts.from_trail(job.payload.ranking, lambda p: turn_passed(c, p))
        REGISTRY.inc("clarify_core_tolerated_total", kind="derived", model="LeasedJob")
        log.info("handler.attempts_derived", job_id=job.id, attempt=turn, source="trail")
        self.core.holding(job.id, turn)
        return job.with_turn(turn)

    async def _handle(self, job: LeasedJob, scope: batching.JobScope) -> JobOutcome:
        c = await self.core.get_clarification(clarification_id=job.payload.clarification_id)
        job = self._turn_known(job, c)
        structlog.contextvars.bind_contextvars(
            clarification_id=c.id, job_id=job.id, attempt=job.turn
        )
        ranking = job.payload.ranking
        # a job back after its lease ran out may follow a crash: what the crash left unrecorded
        # is settled first, also for a question answered meanwhile
        standing = evidence.standing(c)  # the record's evidence first, its state word second
        plan = attempts.plan(standing, c.severity, attempt=job.turn, ranking=len(ranking))
        if plan.read_people:
            steward = [c.workspace.steward_id] if c.workspace.steward_id else []
            await self.core.read_people(scope, tenant_id=c.tenant_id,
                                        person_ids=[*job.payload.ranking, *steward],
                                        vouched=c.asked_aliases)
        if standing is evidence.Standing.CONFLICTED:
            await self.stewards.notify_conflict(c, scope=scope)
        earlier = await self.recovery.reconcile_earlier(c, job, plan, scope)
        if plan.step is Step.COMPLETE:
            await self.core.complete_job(job_id=job.id, lease_token=job.lease_token)
            if plan.refresh:
                await self.refresher.refresh_now(c.id, scope=scope)
            return JobOutcome.COMPLETED
        if plan.step is Step.ESCALATE:
            return await self.escalate(c, job, earlier.skipped, earlier.recovered, scope)
        try:
            walk = await self.asking.walk(c, job, plan.turns, scope)
        except OutOfHours as out:
            await self.hold(job, out.until)
            return JobOutcome.HELD
        target = attempts.after_pass(job.turn, len(ranking), last_asked=walk.last_asked,
                                     exhausted=walk.exhausted)
        if not walk.asked:
            last = walk.skipped[-1].reason if walk.skipped else None
            await advance(self.core, job, target, last, scope)
            return await self.escalate(c, job, [*earlier.skipped, *walk.skipped],
                                       earlier.recovered, scope)
        if target > job.turn:
            await advance(self.core, job, target, None, scope)
        if c.severity is Severity.HIGH and self.settings.severity.high_notifies_steward:
            await self.stewards.notify_high(c, job, asked=walk.asked, scope=scope)
        await self.check_quorum(c, job, walk, earlier, scope)
        await self._keep_lease(c, job)
        return JobOutcome.ASKED

    async def hold(self, job: LeasedJob, due: datetime) -> None:
        """Hold the job until ``due``: the hold is kept in the store at once (so a worker killed
        from here on leaves it to any other: ``bot.engine.held.HoldKeeper``), and the worker
        extends the lease by the core's longest lease once the job's own heartbeats have
        stopped. Nothing is sent and no attempt is spent, so the escalation window starts when
        the card goes out."""
        await self.holds.for_hours(job, due)

    async def _steward_until(self, c: Clarification, scope: batching.JobScope
                             ) -> datetime | None:
        steward_id = c.workspace.steward_id
        if not steward_id or not self.zones.enabled:
            return None
        try:
            steward = await self.core.get_person(person_id=steward_id, tenant_id=c.tenant_id,
                                                 scope=scope)
        except e.PersonNotFound:
            return None  # the escalation says why nobody was told
        address = await self.routing.route(self.core, steward, tenant_id=c.tenant_id,
                                           scope=scope)
        return await self.zones.held_until(
            c.tenant_id, steward, address if isinstance(address, Address) else None,
            self.clock.now())

    async def _keep_lease(self, c: Clarification, job: LeasedJob) -> None:
        """A core without the expedite extension cannot start the next turn early: keep the
        lease token for as long as the lease surely lives, so that a decline meanwhile can skip
        forward on it (``bot.interaction.declines``)."""
        if self.core.offers(Extension.EXPEDITE):
            return
        left = attempts.lease_left(job.lease_expires_at, self.clock.now())
        if left is not None:
            await self.store.kv_put(HELD_LEASE, c.id, f"{job.id}|{job.lease_token}",
                                    ttl_seconds=left)

    async def escalate(self, c: Clarification, job: LeasedJob, skipped: list[Skip],
                       recovered: list[str], scope: batching.JobScope) -> JobOutcome:
        """The steward's escalation; outside the steward's own working hours a non-critical
        one waits for their next working hour (held like a question)."""
        if c.severity is not Severity.CRITICAL:
            until = await self._steward_until(c, scope)
            if until is not None:
                await self.hold(job, until)
                return JobOutcome.HELD
        sent = await self.stewards.escalate(c, job, skipped=skipped, recovered=recovered,
                                            scope=scope)
        return JobOutcome.ESCALATED if sent else JobOutcome.FAILED

    # ---------------------------------------------------------------- quorum

    async def check_quorum(self, c: Clarification, job: LeasedJob, walk: Walk,
                           earlier: Earlier, scope: batching.JobScope) -> None:
        """A quorum whose whole ranking has been walked: if the people who may still answer
        cannot reach it even if all confirm, the steward hears it now."""
        if not attempts.checks_quorum(confirmers_only=evidence.counts_confirmers(c),
                                      exhausted=walk.exhausted):
            return
        before = [p for p in dict.fromkeys([*views.unanswered(c), *earlier.recovered])
                  if p not in walk.asked]
        capable = set(walk.can_confirm)
        for person_id in before:
            try:
                person = await self.core.get_person(person_id=person_id, tenant_id=c.tenant_id,
                                                    scope=scope)
            except e.PersonNotFound:
                continue
            if may_confirm(person, c):
                capable.add(person_id)
        missing = evidence.remaining(c) - len(capable)
        if missing > 0:
            await self.stewards.notify_quorum(c, job, asked=[*before, *walk.asked],
                                              missing=missing,
                                              skipped=[*earlier.skipped, *walk.skipped],
                                              scope=scope)
