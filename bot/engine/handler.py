"""The job handler: one leased ``clarify:`` job → the right people asked, or the steward told.

Attempt N asks ranking[N]; the last attempt is the redacted steward escalation. A candidate who
cannot be asked (no alias, not in scope, no read permission, capped, delivery failed) is skipped
inside the lease with a reason code, so a skip never burns an escalation window. When nobody
eligible remains, the steward is escalated to at once with every skip reason; when a critical
question has fewer eligible people than confirmations it needs, the steward hears that at once
too. After delivery the handler returns without completing: the lease runs out, and the core's
backoff (the escalation window) brings the job back at the next attempt if nobody has answered.

The arithmetic (which step, which turns, where to advance, how long the lease lives) is
``bot.engine.attempts``; this module does the I/O around it, and the crash recovery. A job whose
core left its attempts out takes them from the clarification's trail before anyone is asked; one
whose clarification or person does not read is held, its lease kept, and read again later: no
turn is spent on what the bot could not read (docs/core-contract.md).
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from enum import StrEnum
from zoneinfo import ZoneInfo

import structlog

from bot.channel import Address
from bot.chat import for_recipient
from bot.clock import Clock
from bot.core import batching
from bot.core import errors as e
from bot.core import models as m
from bot.core.client import CoreClient
from bot.core.extensions import Extension
from bot.engine import attempts, evidence, reminders, views
from bot.engine.attempts import Step
from bot.engine.blocks import Blocks, holds
from bot.engine.delivery import Delivered, Deliverer, Result, delivery_id
from bot.engine.rbac import may_confirm, may_read
from bot.engine.refresh import CardRefresher
from bot.engine.reminders import Reminders
from bot.engine.routing import Routing, Unroutable
from bot.engine.stewards import Stewards
from bot.engine.trail import Skip, Trail
from bot.engine.zones import Zones
from bot.errors import BotError
from bot.metrics import REGISTRY
from bot.settings import ClarifySettings
from bot.store.base import (
    Admission,
    CardRecord,
    Decision,
    DeliveryKey,
    DigestItem,
    SlotState,
    Store,
)
from cards.views import QuestionView

log = structlog.get_logger("clarify.handler")

# bot.interaction.declines reads it: clarification id -> "job id|lease token"
HELD_LEASE = "held-lease"
# a job held for working hours keeps its lease this long per heartbeat (the core's maximum),
# and a worker looks at it again this much before the lease would end (docs/delivery.md)
HOLD_LEASE_SECONDS = 3600
HOLD_MARGIN_SECONDS = 1200
# a turn whose held lease could not be carried on because the store lost its data
# (bot.process.storewatch): "clarification id|attempt" -> "1", so the person's skip when the
# core hands the job again says so (kept as long as a delivery slot)
LOST_TURN = "store-lost-turn"
LOST_TURN_TTL_SECONDS = 8 * 24 * 3600
# when the store last lost its data (bot.process.storewatch): "at" -> ISO time. A turn the core
# let expire within a held lease's life after it, with nobody asked, was held in the lost store
# (a core that does not list its jobs leaves no other trace of it)
LOST_AT = "store-lost-at"
STORE_LOST_WHY = ("the bot's store (Redis) lost its data while this person's question was held "
                  "for their working hours, and their turn has passed")
STORE_LOST_NEAR_WHY = ("the bot's store (Redis) lost its data less than a held lease's life "
                       "before this person's turn ran out unasked (a question held for their "
                       "working hours is lost with it), and their turn has passed")
# a job held because an answer it needs did not read is looked at (read again) this often, well
# inside the held lease (docs/core-contract.md, "Nothing unreadable is silent")
UNREAD_LOOK_SECONDS = 600
# the reads a job needs before it spends a turn, and what each reads (the metric's label)
JOB_READS = {"getClarification": "clarification", "getPerson": "person",
             "resolvePerson": "person", "getPeople": "person"}
# a job whose read the core refused for now (a 429, a 5xx or no answer, past the client's own
# retries) is held the same way and read again after this, doubled per refusal in a row, or
# after the core's Retry-After
TROUBLE_LOOK_SECONDS = 5
CORE_TROUBLE = (e.RateLimited, e.ServerError, e.CoreTransportError)


class OutOfHours(BotError):
    """The next candidate is outside their working hours until ``until`` (UTC): control flow
    inside the handler (the job is held, not failed); it never leaves ``Handler.handle``."""

    def __init__(self, until: datetime) -> None:
        super().__init__("outside working hours")
        self.until = until


@dataclass(frozen=True, slots=True)
class Hold:
    """A job held for a person's working hours, or because an answer it needs did not read, as
    the store keeps it (``Store.hold_put``). ``job`` is None for a polled job that did not read
    itself: then ``named`` (its id and lease token) is all the bot holds it by."""

    job: m.LeasedJob | None
    due: datetime
    named: tuple[str, str] | None = None
    troubles: int = 0  # how many times in a row the core refused the job's reads for now

    @property
    def lease_token(self) -> str:
        if self.job is not None:
            return self.job.lease_token
        assert self.named is not None
        return self.named[1]

    def dumps(self) -> str:
        data: dict[str, object] = {
            "job": None if self.job is None else self.job.model_dump(mode="json", by_alias=True),
            "due": self.due.isoformat()}
        if self.named is not None:
            data["named"] = list(self.named)
        if self.troubles:
            data["troubles"] = self.troubles
        return json.dumps(data)

    @classmethod
    def loads(cls, text: str) -> Hold:
        data = json.loads(text)
        named = data.get("named")
        return cls(job=None if data["job"] is None else m.LeasedJob.model_validate(data["job"]),
                   due=datetime.fromisoformat(data["due"]),
                   named=(named[0], named[1]) if named else None,
                   troubles=int(data.get("troubles") or 0))

    def look_at(self, lease_expires_at: datetime | None, now: datetime) -> datetime:
        """When a worker should look at the hold next: at ``due``, or before the lease ends
        (``HOLD_MARGIN_SECONDS`` before, or half the time left when the lease is shorter: a
        core without the heartbeat-lease extension extends by the lease's own duration)."""
        if lease_expires_at is None:
            return self.due
        left = lease_expires_at - now
        margin = min(timedelta(seconds=HOLD_MARGIN_SECONDS), left / 2)
        return min(self.due, lease_expires_at - margin)


class JobOutcome(StrEnum):
    COMPLETED = "completed"  # nothing more to do: the job was completed
    ASKED = "asked"  # cards (or digest entries) went out; the lease is left to run out
    ESCALATED = "escalated"  # the redacted steward escalation went out (last attempt)
    FAILED = "failed"  # nothing could be sent, not even to the steward
    HELD = "held"  # the person is outside their working hours: the lease is held till then


REGISTRY.preset("clarify_jobs_total", outcome=JobOutcome)


@dataclass
class Walk:
    """What one pass over the ranking did."""

    asked: list[str] = field(default_factory=list)
    skipped: list[Skip] = field(default_factory=list)
    last_asked: int | None = None  # the ranking's index of the last person asked
    exhausted: bool = False  # the pass reached the end of the ranking
    can_confirm: set[str] = field(default_factory=set)  # asked people whose answer can count


@dataclass
class Earlier:
    """Reservations of earlier attempts left by a crash: recovered cards, or skips."""

    recovered: list[str] = field(default_factory=list)
    skipped: list[Skip] = field(default_factory=list)


@dataclass
class JobHandler:
    core: CoreClient
    store: Store
    deliverer: Deliverer
    routing: Routing
    clock: Clock
    settings: ClarifySettings
    trail: Trail
    stewards: Stewards
    # shows every delivered card of a settled clarification its final state (a state can
    # change without the bot: the core's CLI, an API key)
    refresher: CardRefresher
    # each question card's one reminder, indexed when the card goes out (None: no reminders)
    reminders: Reminders | None = None
    blocks: Blocks = field(init=False)  # remembered refusals: those platforms are tried last
    zones: Zones = field(init=False)  # the people's zones and working hours (issue 26)

    def __post_init__(self) -> None:
        self.blocks = Blocks(self.store)
        # one per engine (the stewards' are the engine's), so a profile read is kept once in
        # this process
        self.zones = self.stewards.zones

    async def handle(self, job: m.LeasedJob) -> JobOutcome:
        """Handle one job inside its own ``JobScope``: the clarification is read once, its
        people in one call, and its reports go to the core together when it ends (three core
        calls for a job that asks one person; ``bot/core/batching.py``)."""
        outcome, reports = await self.handle_unreported(job)
        await self.core.flush(reports)
        return outcome

    async def handle_unreported(self, job: m.LeasedJob
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

    async def _unread(self, job: m.LeasedJob, exc: e.UnexpectedResponse) -> JobOutcome:
        """A read the job needs (its clarification, a person) answered something the bot cannot
        read: nobody's turn is spent on it. The contract has no way to give a lease back without
        spending an attempt (fail and a lease that runs out both do), so the job is held, its
        lease kept, and read again every ``UNREAD_LOOK_SECONDS`` until it reads."""
        read = JOB_READS[exc.operation]
        REGISTRY.inc("clarify_jobs_unreadable_total", read=read, action="held")
        due = self.clock.now() + timedelta(seconds=UNREAD_LOOK_SECONDS)
        log.warning("handler.held_unreadable", job_id=job.id, read=read,
                    operation=exc.operation, fields=list(exc.fields), again=due.isoformat())
        await self.store.hold_put(job.id, Hold(job, due).dumps(), at=self.clock.now())
        return JobOutcome.HELD

    async def _in_trouble(self, job: m.LeasedJob, exc: e.CoreError) -> JobOutcome:
        """A read the job needs was refused for now (rate limited, unavailable, unreachable):
        as for one that does not read, the job is held with its lease kept rather than left
        to a lease that runs out, which would spend the candidate's turn on the core's outage.
        It is read again after ``TROUBLE_LOOK_SECONDS``, doubled for each refusal in a row
        (5, 10, 20 … seconds: a core back after a short outage is read again at once, one
        down for long is not hammered by every held job), never before the core's
        Retry-After and never later than ``UNREAD_LOOK_SECONDS``."""
        earlier = await self.store.hold_text(job.id)
        troubles = Hold.loads(earlier).troubles + 1 if earlier is not None else 1
        asked = float(getattr(exc, "retry_after", None) or 0)
        backoff = TROUBLE_LOOK_SECONDS * 2 ** min(troubles - 1, 16)
        wait = min(max(asked, backoff), UNREAD_LOOK_SECONDS)
        due = self.clock.now() + timedelta(seconds=wait)
        log.warning("handler.held_core_trouble", job_id=job.id, read=JOB_READS[exc.operation],
                    operation=exc.operation, error=type(exc).__name__, again=due.isoformat(),
                    troubles=troubles)
        await self.store.hold_put(job.id, Hold(job, due, troubles=troubles).dumps(),
                                  at=self.clock.now())
        return JobOutcome.HELD

    def _turn_known(self, job: m.LeasedJob, c: m.Clarification) -> m.LeasedJob:
        """The job at the attempt its core said, or (left out) the one the clarification's
        trail shows it at (``attempts.from_trail``): never one taken from nothing."""
        if job.attempts is not None:
            return job
        turn = attempts.from_trail(job.payload.ranking, lambda p: _turn_passed(c, p))
        REGISTRY.inc("clarify_core_tolerated_total", kind="derived", model="LeasedJob")
        log.info("handler.attempts_derived", job_id=job.id, attempt=turn, source="trail")
        self.core.holding(job.id, turn)
        return job.with_turn(turn)

    async def _handle(self, job: m.LeasedJob, scope: batching.JobScope) -> JobOutcome:
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
        earlier = await self.reconcile_earlier(c, job, plan, scope)
        if plan.step is Step.COMPLETE:
            await self.core.complete_job(job_id=job.id, lease_token=job.lease_token)
            if plan.refresh:
                await self.refresher.refresh_now(c.id, scope=scope)
            return JobOutcome.COMPLETED
        if plan.step is Step.ESCALATE:
            return await self.escalate(c, job, earlier.skipped, earlier.recovered, scope)
        try:
            walk = await self.walk(c, job, plan.turns, scope)
        except OutOfHours as out:
            await self.hold(job, out.until)
            return JobOutcome.HELD
        target = attempts.after_pass(job.turn, len(ranking), last_asked=walk.last_asked,
                                     exhausted=walk.exhausted)
        if not walk.asked:
            last = walk.skipped[-1].reason if walk.skipped else None
            await self._advance(job, target, last, scope)
            return await self.escalate(c, job, [*earlier.skipped, *walk.skipped],
                                       earlier.recovered, scope)
        if target > job.turn:
            await self._advance(job, target, None, scope)
        if c.severity is m.Severity.HIGH and self.settings.severity.high_notifies_steward:
            await self.stewards.notify_high(c, job, asked=walk.asked, scope=scope)
        await self.check_quorum(c, job, walk, earlier, scope)
        await self._keep_lease(c, job)
        return JobOutcome.ASKED

    async def hold(self, job: m.LeasedJob, due: datetime) -> None:
        """Hold the job until ``due``: the hold is kept in the store at once (so a worker killed
        from here on leaves it to any other: ``bot.process.worker.Worker.release_holds``), and
        the worker extends the lease by the core's longest lease once the job's own heartbeats
        have stopped. Nothing is sent and no attempt is spent, so the escalation window starts
        when the card goes out."""
        await self.store.hold_put(job.id, Hold(job, due).dumps(), at=self.clock.now())
        REGISTRY.inc("clarify_jobs_held_total")
        log.info("handler.held_for_hours", due=due.isoformat())

    async def _steward_until(self, c: m.Clarification, scope: batching.JobScope
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

    async def _keep_lease(self, c: m.Clarification, job: m.LeasedJob) -> None:
        """A core without the expedite extension cannot start the next turn early: keep the
        lease token for as long as the lease surely lives, so that a decline meanwhile can skip
        forward on it (``bot.interaction.declines``)."""
        if self.core.offers(Extension.EXPEDITE):
            return
        left = attempts.lease_left(job.lease_expires_at, self.clock.now())
        if left is not None:
            await self.store.kv_put(HELD_LEASE, c.id, f"{job.id}|{job.lease_token}",
                                    ttl_seconds=left)

    async def escalate(self, c: m.Clarification, job: m.LeasedJob, skipped: list[Skip],
                       recovered: list[str], scope: batching.JobScope) -> JobOutcome:
        """The steward's escalation; outside the steward's own working hours a non-critical
        one waits for their next working hour (held like a question)."""
        if c.severity is not m.Severity.CRITICAL:
            until = await self._steward_until(c, scope)
            if until is not None:
                await self.hold(job, until)
                return JobOutcome.HELD
        sent = await self.stewards.escalate(c, job, skipped=skipped, recovered=recovered,
                                            scope=scope)
        return JobOutcome.ESCALATED if sent else JobOutcome.FAILED

    # ---------------------------------------------------------------- after a crash

    async def reconcile_earlier(self, c: m.Clarification, job: m.LeasedJob,
                                plan: attempts.Plan, scope: batching.JobScope) -> Earlier:
        """Reservations of earlier attempts left without a message reference (a worker died
        between reserving and recording): a card found on the platform is recorded and
        audited; one that never reached it is a DELIVERY_FAILED skip (that person's turn has
        passed), so nobody asked or skipped vanishes from the trail or the escalation."""
        earlier = Earlier()
        ranking = job.payload.ranking
        if plan.recover:
            await self._report_unreported(c, scope)
        for index in plan.earlier:
            if attempts.first_turn(ranking, index) is not None:
                continue  # a person named again: their first entry's turn is the one settled
            key = DeliveryKey(c.id, ranking[index], index, m.DeliveryKind.QUESTION.value)
            slot = await self.store.slot(key)
            if slot is None and not _traced(c, key.person_id):
                # a worker died holding this turn before anything was reserved (reading the
                # clarification or the people): the turn has passed without a trace
                skip = await self._unasked(c, key.person_id, scope, attempt=index)
                earlier.skipped.append(skip)
                await self.trail.skipped(c.id, skip, attempt=index, job_id=job.id, scope=scope)
                continue
            if slot is None or slot.state is not SlotState.RESERVED:
                continue
            outcome = await self._recover(c, key, scope)
            if isinstance(outcome, Skip):
                earlier.skipped.append(outcome)
                await self.trail.skipped(c.id, outcome, attempt=index, job_id=job.id,
                                         scope=scope)
            elif outcome is not None:
                earlier.recovered.append(key.person_id)
                await self._delivered(c, job, outcome, key, recovered=True)
        return earlier

    async def _report_unreported(self, c: m.Clarification, scope: batching.JobScope) -> None:
        """Question cards the store holds whose delivery report never reached the core
        (reports go together at the end of a job: a worker killed after the send lost them).
        Digest entries and steward messages are reported, or not, their own way."""
        known = {d.delivery_id for d in c.deliveries}
        # a core that does not keep delivery ids says whom it counts as asked
        by_person = not self.core.offers(Extension.REPORT_DETAILS)
        for card in await self.store.cards(c.id):
            if card.delivery.kind != m.DeliveryKind.QUESTION.value:
                continue
            if by_person and card.delivery.person_id in c.asked:
                continue
            if delivery_id(card.delivery) not in known:
                await self.deliverer.report(card, scope=scope)

    async def _unasked(self, c: m.Clarification, person_id: str, scope: batching.JobScope,
                       *, attempt: int | None = None) -> Skip:
        """A candidate whose turn passed unseen: the reason they would have been skipped for,
        or DELIVERY_FAILED when nothing but the stopped worker (or a store that lost its data
        while their question was held: ``LOST_TURN``) kept them from being asked."""
        found = await self._askable(c, person_id, scope)
        if isinstance(found, Skip):
            return found
        if attempt is not None and await self.store.kv_get(LOST_TURN, f"{c.id}|{attempt}"):
            return Skip(person_id, m.ReasonCode.DELIVERY_FAILED, STORE_LOST_WHY,
                        said="was not asked")
        if _expired_after_loss(c, person_id, await self.store.kv_get(LOST_AT, "at"),
                               window=self.settings.escalation_window):
            REGISTRY.inc("clarify_holds_lost_total")  # found only now (no list of held jobs)
            return Skip(person_id, m.ReasonCode.DELIVERY_FAILED, STORE_LOST_NEAR_WHY,
                        said="was not asked")
        return Skip(person_id, m.ReasonCode.DELIVERY_FAILED,
                    "a worker stopped before this person was asked, and their turn has passed")

    async def _reachable(self, c: m.Clarification, person_id: str, scope: batching.JobScope
                         ) -> tuple[m.Person, Address] | Skip:
        """The candidate as a person of the clarification's tenant and their address, or why
        they cannot be asked."""
        try:
            person = await self.core.get_person(person_id=person_id, tenant_id=c.tenant_id,
                                                scope=scope)
        except e.PersonNotFound:
            return Skip(person_id, m.ReasonCode.TENANT_SCOPE_MISMATCH,
                        "the candidate is not a person of this tenant")
        address = await self.routing.route(self.core, person, tenant_id=c.tenant_id,
                                           scope=scope)
        if isinstance(address, Unroutable):
            return Skip(person_id, address.reason, address.why)
        return person, address

    async def _askable(self, c: m.Clarification, person_id: str, scope: batching.JobScope
                       ) -> tuple[m.Person, Address] | Skip:
        """``_reachable``, and allowed by the RBAC gate to read the clarification's document."""
        found = await self._reachable(c, person_id, scope)
        if isinstance(found, Skip):
            return found
        verdict = may_read(found[0], acl=c.document.acl, tenant_id=c.tenant_id)
        if not verdict.allowed:
            return Skip(person_id, m.ReasonCode.NO_READ_PERMISSION, verdict.why)
        return found

    async def _recover(self, c: m.Clarification, key: DeliveryKey, scope: batching.JobScope
                       ) -> Address | Skip | None:
        """One reservation: the address its card was found at, or why it counts as skipped."""
        found = await self._reachable(c, key.person_id, scope)
        if isinstance(found, Skip):
            return found
        _, address = found
        result = await self.deliverer.reconcile(key, address, scope=scope)
        if result.status is Delivered.FAILED:
            return Skip(key.person_id, m.ReasonCode.DELIVERY_FAILED,
                        "the card never reached the platform: the worker stopped between "
                        "reserving and sending, and this person's turn has passed")
        if result.status is Delivered.UNCERTAIN:
            return Skip(key.person_id, m.ReasonCode.DELIVERY_FAILED,
                        "a worker stopped mid-send and the platform cannot say whether the card "
                        "arrived; it is not sent again")
        return address if result.recovered else None

    # ---------------------------------------------------------------- the ranking walk

    async def walk(self, c: m.Clarification, job: m.LeasedJob, turns: range,
                   scope: batching.JobScope) -> Walk:
        """Ask the candidates of ``turns`` in order until enough are asked."""
        walk = Walk()
        wanted = attempts.wanted(evidence.remaining(c))
        confirmers_only = evidence.counts_confirmers(c)
        ranking = job.payload.ranking
        answered = evidence.responded(c)
        for index in turns:
            person_id = ranking[index]
            if self._passed_on(ranking, index, answered=answered):
                # not a turn of its own: nobody is asked, no reason code is reported, and the
                # turn passes on at once (as a skip does) until someone of the pass is asked
                forward = attempts.after_skip(index, asked_any=bool(walk.asked))
                if forward is not None:
                    await self._advance(job, forward, None, scope)
                continue
            asked = await self.ask(c, job, person_id=person_id, index=index, scope=scope)
            if not isinstance(asked, Skip):
                walk.asked.append(person_id)
                walk.last_asked = index
                if may_confirm(asked, c):
                    walk.can_confirm.add(person_id)
                if attempts.enough(confirmers_only=confirmers_only, asked=len(walk.asked),
                                   can_confirm=len(walk.can_confirm), wanted=wanted):
                    break
                continue
            walk.skipped.append(asked)
            await self.trail.skipped(c.id, asked, attempt=index, job_id=job.id, scope=scope)
            forward = attempts.after_skip(index, asked_any=bool(walk.asked))
            if forward is not None:
                await self._advance(job, forward, asked.reason, scope)
        else:
            walk.exhausted = True
        return walk

    @staticmethod
    def _passed_on(ranking: list[str], index: int, *, answered: set[str]) -> bool:
        """``ranking[index]`` is no turn of its own (docs/delivery.md, "A person named twice"):
        the ranking named the person before (their first entry was their turn, and their card,
        if any, is still live), or they have a response on record (an answer is evidence, never
        asked for twice). Logged by position only, never by whom; a repeated entry is counted
        as tolerated in the core's ranking."""
        first = attempts.first_turn(ranking, index)
        if first is not None:
            REGISTRY.inc("clarify_core_tolerated_total", kind="repeated_entry",
                         model="Ranking")
            log.info("routing.repeated_candidate", turn=index, first_turn=first)
            return True
        if ranking[index] in answered:
            log.info("routing.answered_candidate", turn=index)
            return True
        return False

    async def ask(
        self, c: m.Clarification, job: m.LeasedJob, *, person_id: str, index: int,
        scope: batching.JobScope,
    ) -> m.Person | Skip:
        """Ask one candidate (a card, or a place in their digest), or say why not."""
        found = await self._askable(c, person_id, scope)
        if isinstance(found, Skip):
            return found
        person, address = found
        key = DeliveryKey(c.id, person_id, index, m.DeliveryKind.QUESTION.value)
        # one zone for the hold, the daily cap's day, the card's times and its reminder
        zone = await self.zones.zone(c.tenant_id, person, address)
        if c.severity is not m.Severity.CRITICAL:  # critical: at once
            until = self.zones.held(c.tenant_id, zone, self.clock.now())
            if until is not None:
                raise OutOfHours(until)
        if _sent_before(c, person_id, index) and await self.store.slot(key) is None:
            # the core has this card on record and the store does not: the store lost its
            # data (bot.process.storewatch); the person was asked, never a second card
            await self._on_record(c, job, key)
            return person
        held = await self._admit(c, job, key, person, zone.zone, scope)
        if not isinstance(held, Admission):
            return held if isinstance(held, Skip) else person
        now = self.clock.now()
        moves_on_at = reminders.moves_on(now, job.lease_expires_at,
                                         self.settings.escalation_window)
        to_steward = attempts.last_turn(job.payload.ranking, index)
        view = replace(views.question(c, key=key, person=person, zone=zone.zone, now=now),
                       moves_on_at=moves_on_at, moves_on_to_steward=to_steward)
        reserved = (held.reserved, held.created) if held.reserved is not None else None
        if self.reminders is not None:
            # indexed before the send, so a worker killed after it leaves the reminder due (a
            # card that never went out is found to have none: `no_card`)
            await self.reminders.schedule(c, key, zone.zone, sent_at=now,
                                          moves_on_at=moves_on_at, to_steward=to_steward)
        address = await self._unblocked_first(c, person, address, scope)
        result = await self.deliverer.deliver(key, address, _tagged(view, address), now=now,
                                              reserved=reserved, scope=scope)
        tried: list[tuple[str, m.ReasonCode, str]] = []
        while result.status is Delivered.FAILED and result.certain:
            # this platform refused and nothing went out: the person's next platform in
            # clarify.channels, for this question (and a refusal that holds is remembered)
            why = result.why or "retries exhausted"
            tried.append((address.platform, result.reason, why))
            if holds(address.platform, why):
                await self.blocks.remember(address, why)
            other = await self.routing.route(self.core, person, tenant_id=c.tenant_id,
                                             besides=tuple(p for p, _, _ in tried), scope=scope)
            if not isinstance(other, Address):
                break
            address = other
            result = await self.deliverer.deliver(key, address, _tagged(view, address), now=now,
                                                  scope=scope)
        if result.status is Delivered.FAILED:
            if result.certain and tried:
                return _every_platform_refused(person_id, tried)
            return Skip(person_id, result.reason, result.why or "retries exhausted")
        if result.status is Delivered.UNCERTAIN:
            return Skip(person_id, m.ReasonCode.DELIVERY_FAILED,
                        "a worker stopped mid-send and the platform cannot say whether the card "
                        "arrived; it is not sent again")
        await self._delivered(c, job, address, key, recovered=result.recovered, result=result)
        return person

    async def _on_record(self, c: m.Clarification, job: m.LeasedJob, key: DeliveryKey) -> None:
        """A question card the core has on record that the store lost: its record kept again
        (so the card is refreshed when the question settles), not sent again."""
        REGISTRY.inc("clarify_store_recovered_total", what="card")
        record = next(d for d in c.deliveries if d.person_id == key.person_id
                      and d.attempt == key.attempt and d.kind is m.DeliveryKind.QUESTION)
        if record.message_ref and record.channel.value in ("slack", "teams"):
            await self.store.add_card(CardRecord(delivery=key, platform=record.channel.value,
                                                 message_ref=record.message_ref))
        await self.trail.event(
            c.id, "delivery", job_id=job.id, person_id=key.person_id, attempt=key.attempt,
            to_core=False, extra={"recovered": "core_record"},
            message="Question card sent before (the core has it on record); the bot's store "
                    "had lost it: recorded again, not sent again.")

    async def _unblocked_first(self, c: m.Clarification, person: m.Person, address: Address,
                               scope: batching.JobScope) -> Address:
        """The person's first platform unless a refusal of it is remembered and another of
        their platforms is not blocked: the blocked one is then tried last
        (``bot.engine.blocks``)."""
        if not isinstance(self.routing.address(person, tenant_id=c.tenant_id,
                                               besides=(address.platform,)), Address):
            return address  # no other platform to prefer: no store read for it
        if await self.blocks.blocked(address) is None:
            return address
        other = await self.routing.route(self.core, person, tenant_id=c.tenant_id,
                                         besides=(address.platform,), scope=scope)
        if isinstance(other, Address) and await self.blocks.blocked(other) is None:
            return other
        return address

    async def _admit(self, c: m.Clarification, job: m.LeasedJob, key: DeliveryKey,
                     person: m.Person, zone: ZoneInfo, scope: batching.JobScope
                     ) -> Skip | bool | Admission:
        """The daily cap and digest batching: a skip, True when the question joined the
        person's digest (they count as asked), or the admission to send a card now (with the
        delivery reserved in the same store call)."""
        now = self.clock.now()
        admission = await self.store.admit(
            key,
            item=DigestItem(c.id, key.person_id, key.attempt, job.id),
            day=local_day(zone, now),
            now=now,
            cap=self.settings.per_person_daily_cap,
            threshold=self.settings.digest_threshold,
            window_seconds=int(self.settings.digest_window.total_seconds()),
            batched=c.severity is m.Severity.NORMAL,
            reserve_for=self.deliverer.worker_id,
        )
        if admission.decision is Decision.CAPPED:
            return Skip(key.person_id, m.ReasonCode.DAILY_CAP_EXCEEDED,
                        "the person's daily cap is reached")
        if admission.decision is Decision.DIRECT:
            return admission
        assert admission.batch_id is not None
        await self.store.mark_digested(
            key, batch_id=admission.batch_id, worker_id=self.deliverer.worker_id, now=now
        )
        await self.trail.event(
            c.id, "digested", job_id=job.id, person_id=key.person_id, attempt=key.attempt,
            reason=m.ReasonCode.DIGESTED, scope=scope,
            message="Queued for the person's digest at the window's end.")
        return True

    # ---------------------------------------------------------------- quorum

    async def check_quorum(self, c: m.Clarification, job: m.LeasedJob, walk: Walk,
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

    # ---------------------------------------------------------------- bookkeeping

    async def _advance(self, job: m.LeasedJob, attempt: int, reason: m.ReasonCode | None,
                       scope: batching.JobScope) -> None:
        # what the advance passes over reaches the core's trail first: the job's reports go at
        # its end, and a worker killed after the advance took its skips with it (the job can
        # dead-letter before any later pass records them; found by bench/soak.py)
        await self.core.flush(scope)
        await self.core.advance_job(
            job_id=job.id,
            lease_token=job.lease_token,
            attempt=attempts.bounded(attempt, job.max_attempts),
            reason_code=reason,
        )

    async def _delivered(self, c: m.Clarification, job: m.LeasedJob, address: Address,
                         key: DeliveryKey, *, recovered: bool, result: Result | None = None
                         ) -> None:
        """The bot's own sink records each card (the core has it as a delivery report)."""
        if recovered:
            what = "found on the platform after a crash and recorded; not sent again"
        elif result is not None and result.status is Delivered.NEW:
            what = "sent"
        else:
            what = "already sent; not sent again"
        await self.trail.event(
            c.id, "delivery", job_id=job.id, person_id=key.person_id, attempt=key.attempt,
            channel=address.platform, to_core=False,
            extra={"recovered": "true"} if recovered else None,
            message=f"Question card {what} on {address.platform}.")


TURN_EVENTS = frozenset({"skipped", "digested", "delivered"})


def _tagged(view: QuestionView, address: Address) -> QuestionView:
    """The question with its card reference tagged for the chat identity it goes to
    (``bot.chat.for_recipient``): that identity's clicks are the person's stream."""
    return replace(view, card_ref=for_recipient(view.card_ref, address.platform,
                                                address.user_id))


def _every_platform_refused(person_id: str, tried: list[tuple[str, m.ReasonCode, str]]
                            ) -> Skip:
    """Every platform of the person refused: DELIVERY_FAILED when any send was refused (only
    NO_DELIVERY_ALIAS when none could reach them at all: what to install), with each platform's
    reason code and cause, in the order tried."""
    codes = {code for _, code, _ in tried}
    reason = (m.ReasonCode.NO_DELIVERY_ALIAS if codes == {m.ReasonCode.NO_DELIVERY_ALIAS}
              else m.ReasonCode.DELIVERY_FAILED)
    if len(tried) == 1:
        return Skip(person_id, reason, tried[0][2])
    return Skip(person_id, reason, "every platform refused: " + "; ".join(
        f"{platform}: {code.value} ({why})" for platform, code, why in tried))


def _sent_before(c: m.Clarification, person_id: str, attempt: int) -> bool:
    """The core has a question card to the person at this turn on record."""
    return any(d.person_id == person_id and d.attempt == attempt
               and d.kind is m.DeliveryKind.QUESTION for d in c.deliveries)


def _expired_after_loss(c: m.Clarification, person_id: str, lost_at: str | None, *,
                        window: timedelta) -> bool:
    """The person's lease ran out within a held lease's life after the store lost its data
    (``LOST_AT``): the core's ``expired`` event comes an escalation window (its backoff)
    after the lease ran out."""
    if not lost_at:
        return False
    try:
        since = datetime.fromisoformat(lost_at) - timedelta(seconds=HOLD_MARGIN_SECONDS)
    except ValueError:
        return False
    until = since + timedelta(seconds=HOLD_LEASE_SECONDS + 2 * HOLD_MARGIN_SECONDS)
    return any(ev.person_id == person_id and ev.type == "expired"
               and since <= ev.at - window <= until for ev in c.events)


def _traced(c: m.Clarification, person_id: str) -> bool:
    """The core's trail shows the person's turn: a delivery, a skip, a digest entry (the
    core's own ``expired`` event names the candidate of a lease that ran out, which says
    nothing about whether they were asked)."""
    return person_id in c.asked or any(d.person_id == person_id for d in c.deliveries) or any(
        ev.person_id == person_id and ev.type in TURN_EVENTS for ev in c.events)


def _turn_passed(c: m.Clarification, person_id: str) -> bool:
    """The record shows the person's turn over: traced (``_traced``), or the core's own
    ``expired`` event names them (their window ran out)."""
    return _traced(c, person_id) or any(
        ev.person_id == person_id and ev.type == "expired" for ev in c.events)


def local_day(zone: ZoneInfo, now: datetime) -> str:
    """The person's calendar day in their zone (``bot.engine.zones``): the daily cap resets at
    their midnight."""
    return now.astimezone(zone).date().isoformat()
