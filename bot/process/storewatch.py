"""The store watch: every process (web and worker) notices a store that lost its data.

Each process remembers the store's generation (``bot.store.generation``: a random id and an
epoch that only grows) and checks it every ``store.watch_seconds``, at once after the store
answers again following a failure (a reconnect), and (the worker) before every housekeeping
pass looks at the held jobs. A check that finds the marker gone, another generation, or an
epoch lower than this process saw means the store came back empty or older than it left it:

1. counted (``clarify_store_data_lost_total`` by kind) and logged by every process that
   notices, and audited once per loss (``store_data_lost``, the first process to notice
   writes it) with what the store held at the last check: held jobs, reminders waiting and
   answers waiting in the outbox (``clarify_reminders_lost_total``,
   ``clarify_answers_lost_total``; answers acknowledged after that check are not counted);
2. the worker gives back the holds it remembers (``Store.holds_remembered``: the holds it
   wrote or read and has not dropped, kept in its memory): each is held again, due to be
   looked at now, so its lease is extended and its card goes out at the person's hour
   (``clarify_holds_recovered_total``, audited ``hold_recovered``);
3. the worker asks the core which ``clarify:`` jobs it holds (``listJobs`` state ``leased``):
   a lease as long as a held one's that no process gives back within two more checks cannot
   be carried on (its lease token was in the lost store): it is counted lost
   (``clarify_holds_lost_total``), audited ``hold_lost`` with the true reason, and its turn is
   marked in the store, so that when the core hands the job again the person's skip says the
   store lost its data, not that a worker stopped (``bot.engine.handler``).

A card sent before the loss is never sent again: before asking, the handler reads the core's
record of the clarification, and a question card the core has on record for that person and
turn is not sent a second time (``JobHandler.ask``). Nothing here logs a value: ids, counts and
kinds only.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any, cast

import structlog

from bot.audit import Audit, AuditEvent, occurrence_of
from bot.clock import Clock
from bot.core import errors as e
from bot.core import models as m
from bot.core.client import CoreClient
from bot.core.extensions import Extension
from bot.engine import attempts, evidence, views
from bot.engine.handler import (
    HOLD_LEASE_SECONDS,
    LOST_AT,
    LOST_TURN,
    LOST_TURN_TTL_SECONDS,
    Hold,
)
from bot.engine.reminders import Reminder, Reminders
from bot.engine.reminders import moves_on as window_end
from bot.metrics import REGISTRY
from bot.store.base import CardRecord, DeliveryKey
from bot.store.errors import StoreError
from bot.store.generation import Census, Generation, Generations, Loss, compare

log = structlog.get_logger("clarify.storewatch")
WATCH_SECONDS = 10.0
# after a failed check, the next one comes this soon (the store answering again is a reconnect)
RETRY_SECONDS = 1.0
# the core's list of leased jobs is walked at most this far
LEASED_PAGES = 20
LEASED_PAGE = 100
LOSS_MARK = "store-lost"  # mark_once namespace: one audit line per loss, whoever notices first

REGISTRY.preset("clarify_store_data_lost_total", kind=Loss)


def watchable(store: object) -> Generations | None:
    """The store as ``Generations`` when it keeps a generation (Redis and memory do)."""
    return cast(Generations, store) if hasattr(store, "generation_check") else None


@dataclass
class HoldRecovery:
    """The worker's part after a loss: holds given back, leases it can no longer carry found."""

    store: Any  # bot.store.base.Store with Generations
    core: CoreClient
    audit: Audit
    clock: Clock
    lease_seconds: int = 60
    reminders: Reminders | None = None  # made again where the evidence allows
    # job id -> (the job as the core listed it, the monotonic time it may be declared lost)
    suspects: dict[str, tuple[m.JobView, float]] = field(default_factory=dict)

    async def give_back(self, generation: str = "") -> int:
        """Hold again every hold this process remembers that the store no longer has (after
        the loss that began ``generation``: each loss's giving back is its own audit event)."""
        now = self.clock.now()
        given = 0
        for job_id, text in self.store.holds_remembered().items():
            if await self.store.hold_text(job_id) is not None:
                continue  # another process gave it back already
            hold = _hold(text)
            if hold is None or not await self._still_held(job_id, hold, now):
                self.store.holds_forget(job_id)  # released by another replica, or settled
                continue
            await self.store.hold_put(job_id, text, at=now)
            given += 1
            REGISTRY.inc("clarify_holds_recovered_total")
            job = hold.job
            log.warning("storewatch.hold_recovered", job_id=job_id)
            if job is not None:
                person = _person_at(job.payload.ranking, job.attempts)
                await self.audit.emit(AuditEvent(
                    type="hold_recovered", at=now,
                    clarification_id=job.payload.clarification_id, job_id=job_id,
                    person_id=person, attempt=job.attempts,
                    occurrence=occurrence_of(job_id, generation),
                    message="The bot's store lost its data while this question was held for "
                            "the person's working hours; the worker that held it gave the "
                            "hold back: the card goes out at the person's hour, once."),
                    to_core=False)
        return given

    async def _still_held(self, job_id: str, hold: Hold, now: datetime) -> bool:
        """The core still has the job leased at the hold's turn (where the core lets the bot
        read its jobs: without the jobs-read extension every remembered hold is given back,
        and one whose lease has gone is dropped by the next pass, as any lost lease is). A
        hold this process remembers may have been released by another replica since."""
        if not self.core.offers(Extension.JOBS_READ):
            return True
        try:
            view = await self.core.get_job(job_id=job_id)
        except e.JobNotFound:
            return False
        if view.state is not m.JobState.LEASED:
            return False
        if view.lease_expires_at is not None and view.lease_expires_at <= now:
            return False
        turn = hold.job.attempts if hold.job is not None else None
        return turn is None or view.attempts is None or view.attempts == turn

    async def reminders_back(self, generation: str = "") -> int:
        """Reminders the evidence allows again: for each job the core has waiting out a turn's
        window (state ``available``, its next turn later), the question card the core has on
        record for the turn before, unanswered and not declined, whose reminder was not due yet
        (so it certainly was not sent): the card's record kept again and its reminder indexed at
        its point of the window (the pass moves it to the person's working hour). A reminder
        that may have gone out already is not made again: at most one reminder a card."""
        if self.reminders is None or not self.core.offers(Extension.JOBS_READ):
            return 0
        percent = self.reminders.settings.reminder_at_percent
        if percent <= 0:
            return 0
        now = self.clock.now()
        made = 0
        cursor: str | None = None
        for _ in range(LEASED_PAGES):
            page = await self.core.list_jobs(state=m.JobState.AVAILABLE, kind="clarify:",
                                             cursor=cursor, limit=LEASED_PAGE)
            for job in page.items:
                made += await self._reminder_back(job, now, percent, generation)
            cursor = page.next_cursor
            if not cursor:
                break
        if made:
            log.warning("storewatch.reminders_recovered", reminders=made)
        return made

    async def _reminder_back(self, job: m.JobView, now: datetime, percent: int,
                             generation: str) -> int:
        assert self.reminders is not None
        payload, moves_on = job.payload, job.visible_at
        if payload is None or moves_on is None or moves_on <= now or not job.attempts:
            return 0
        turn = job.attempts - 1
        if turn >= len(payload.ranking):
            return 0
        person_id = payload.ranking[turn]
        c = await self.core.get_clarification(clarification_id=payload.clarification_id)
        if evidence.closed(c) or any(r.responder == person_id for r in c.responses) \
                or views.declined(c, person_id):
            return 0
        record = next((d for d in c.deliveries if d.person_id == person_id and d.attempt == turn
                       and d.kind is m.DeliveryKind.QUESTION), None)
        if record is None or record.delivered_at is None or not record.message_ref \
                or record.channel.value not in ("slack", "teams"):
            return 0
        # when the card said it moves on: the bot's window from the lease the card went out on
        # (``reminders.moves_on``), not later than the core brings the next turn
        moves_on = min(moves_on, window_end(
            record.delivered_at, record.delivered_at + timedelta(seconds=self.lease_seconds),
            self.reminders.settings.escalation_window))
        point = record.delivered_at + (moves_on - record.delivered_at) * (percent / 100)
        if point <= now:
            return 0  # it may have gone out before the loss
        to_steward = attempts.last_turn(payload.ranking, turn)
        key = DeliveryKey(c.id, person_id, turn, m.DeliveryKind.QUESTION.value)
        if not any(card.delivery == key for card in await self.store.cards(c.id)):
            await self.store.add_card(CardRecord(
                delivery=key, platform=record.channel.value, message_ref=record.message_ref,
                moves_on_at=moves_on, moves_on_to_steward=to_steward))
        reminder = Reminder(c.id, turn, moves_on, to_steward)
        await self.store.reminder_add(reminder.member, due=point)
        REGISTRY.inc("clarify_reminders_recovered_total")
        await self.audit.emit(AuditEvent(
            type="reminder_recovered", at=now, clarification_id=c.id, person_id=person_id,
            attempt=turn, job_id=job.id, occurrence=occurrence_of(job.id, generation),
            message="The bot's store lost its data before this card's reminder was due; the "
                    "reminder was made again from the core's record of the card."),
            to_core=False)
        return 1

    async def find_leases(self, *, settle_after: float) -> int:
        """The ``clarify:`` jobs the core says the bot holds on a held lease that this process
        does not remember: suspects, declared lost at ``settle_after`` (monotonic) unless
        another process has given their hold back by then."""
        if not self.core.offers(Extension.JOBS_READ):
            return 0  # the core does not list its jobs: nothing to look for
        now = self.clock.now()
        remembered = self.store.holds_remembered()
        cursor: str | None = None
        for _ in range(LEASED_PAGES):
            page = await self.core.list_jobs(state=m.JobState.LEASED, kind="clarify:",
                                             cursor=cursor, limit=LEASED_PAGE)
            for job in page.items:
                if job.id in remembered or not _held_lease(job, now, self.lease_seconds):
                    continue
                self.suspects.setdefault(job.id, (job, settle_after))
            cursor = page.next_cursor
            if not cursor:
                break
        return len(self.suspects)

    async def settle(self, *, mono: float) -> int:
        """Suspects whose time has come: held again by another process, or lost."""
        lost = 0
        for job_id, (job, after) in list(self.suspects.items()):
            if mono < after:
                continue
            del self.suspects[job_id]
            if await self.store.hold_text(job_id) is not None:
                continue
            lost += 1
            await self._lost(job)
        return lost

    async def _lost(self, job: m.JobView) -> None:
        REGISTRY.inc("clarify_holds_lost_total")
        log.error("storewatch.hold_lost", job_id=job.id, reason="store_data_lost",
                  hint="the held lease's token was in the lost store: the person's turn passes "
                       "when the lease runs out")
        payload = job.payload
        if payload is None:
            return
        attempt = job.attempts
        person = _person_at(payload.ranking, attempt)
        if attempt is not None:
            await self.store.kv_put(LOST_TURN, f"{payload.clarification_id}|{attempt}", "1",
                                    ttl_seconds=LOST_TURN_TTL_SECONDS)
        await self.audit.emit(AuditEvent(
            type="hold_lost", at=self.clock.now(), clarification_id=payload.clarification_id,
            job_id=job.id, person_id=person, attempt=attempt, occurrence=occurrence_of(job.id),
            message="The bot's store (Redis) lost its data while this question was held for "
                    "the person's working hours; the held lease cannot be carried on, so the "
                    "person's turn passes when it runs out."))


def _hold(text: str) -> Hold | None:
    try:
        return Hold.loads(text)
    except (ValueError, KeyError, TypeError):
        return None


def _person_at(ranking: list[str], attempt: int | None) -> str | None:
    if attempt is None or not 0 <= attempt < len(ranking):
        return None
    return ranking[attempt]


def _held_lease(job: m.JobView, now: datetime, lease_seconds: int) -> bool:
    """A lease as long as a held one's (``HOLD_LEASE_SECONDS``), not a running job's (which
    heartbeats ``lease_seconds`` at a time)."""
    ends = job.lease_expires_at
    if ends is None:
        return False
    shortest = min(timedelta(seconds=HOLD_LEASE_SECONDS) / 6,
                   timedelta(seconds=max(5 * lease_seconds, 1)))
    return ends - now > shortest


@dataclass
class StoreWatch:
    store: Any  # a Store with Generations (``watchable``)
    clock: Clock
    audit: Audit
    interval_seconds: float = WATCH_SECONDS
    recovery: HoldRecovery | None = None  # the worker's (a web process gives back nothing)
    # the process's memory of the store, value-free
    generation: Generation | None = None
    census: Census = field(default_factory=Census)
    checked_at: datetime | None = None
    losses: int = 0
    failing: bool = False
    monotonic: Callable[[], float] = time.monotonic
    sleep: Callable[[float], Awaitable[object]] = asyncio.sleep
    pending: str | None = None  # the generation whose recovery is still to finish
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    # remembered holds the store did not have at the last healthy check: forgotten when still
    # absent at the next (released by another replica), so the memory does not grow
    _absent: set[str] = field(default_factory=set)

    async def start(self) -> None:
        """First use: the generation read, or made when there is none. One made now by this
        process after a start without any (a new Redis, or one emptied while no process ran)
        sends the worker to look for leases nobody can carry on."""
        async with self._lock:
            if self.generation is not None:
                return  # a check made it meanwhile
            try:
                gen, made = await self.store.generation_start(now=self.clock.now())
            except StoreError as exc:
                self.failing = True
                log.warning("storewatch.unavailable", error=type(exc).__name__)
                return
            await self._started(gen, made)

    async def _started(self, gen: Generation, made: bool) -> None:
        self.generation = gen
        self.checked_at = self.clock.now()
        with contextlib.suppress(StoreError):
            self.census = await self.store.census()
        log.info("storewatch.generation", generation=gen.id, origin=gen.origin, made=made)
        if made and self.recovery is not None:
            await self._guarded(self.recovery.find_leases(
                settle_after=self.monotonic() + 2 * self.interval_seconds))

    async def check_if_due(self) -> Loss | None:
        """A check when ``interval_seconds`` have passed on the injected clock since the last
        (the worker, before it looks at held jobs)."""
        now = self.clock.now()
        if self.checked_at is not None and not self.failing and \
                now - self.checked_at < timedelta(seconds=self.interval_seconds):
            return None
        return await self.check()

    async def check(self) -> Loss | None:
        """Compare the store's generation with the one remembered; on a loss, recover."""
        async with self._lock:
            try:
                return await self._check()
            except StoreError as exc:
                if not self.failing:
                    log.warning("storewatch.unavailable", error=type(exc).__name__)
                self.failing = True
                return None

    async def _check(self) -> Loss | None:
        now = self.clock.now()
        if self.generation is None:
            gen, made = await self.store.generation_start(now=now)
            self.failing = False
            await self._started(gen, made)
            return None
        before, epoch = await self.store.generation_check(now=now)
        loss = compare(self.generation, before)
        if self.failing:
            log.info("storewatch.reconnected", lost=loss is not None)
        self.failing = False
        self.checked_at = now
        if loss is None:
            assert before is not None
            self.generation = replace(before, epoch=epoch, checked_at=now)
            self.census = await self.store.census()
            await self._prune()
            if self.pending is not None:  # a recovery a store failure cut short
                await self._recover(self.pending)
            if self.recovery is not None and self.recovery.suspects:
                await self._guarded(self.recovery.settle(mono=self.monotonic()))
            return None
        await self._lost(loss, before, now)
        return loss

    async def _prune(self) -> None:
        """Forget remembered holds the store has not had at two healthy checks in a row. A loss
        between this check's generation read and the read here empties the store, but only
        holds already absent at the previous check are forgotten: the next check notices the
        loss with the rest still remembered."""
        remembered = list(self.store.holds_remembered())
        if not remembered:
            self._absent = set()
            return
        absent = set(remembered) - await self.store.holds_present(remembered)
        for job_id in absent & self._absent:
            self.store.holds_forget(job_id)
        self._absent = absent - self._absent

    async def _lost(self, loss: Loss, found: Generation | None, now: datetime) -> None:
        previous, census = self.generation, self.census
        assert previous is not None
        if found is None or loss is Loss.ROLLED_BACK:
            origin = "after_loss"
            if loss is Loss.ROLLED_BACK:
                # the old id is kept by the older snapshot: a new one, so every process
                # (whatever epoch it saw) counts this loss once
                gen = await self.store.generation_reset(now=now, origin=origin)
            else:
                gen, _ = await self.store.generation_start(now=now, origin=origin)
        else:
            gen = found
        assert gen is not None
        _, epoch = await self.store.generation_check(now=now)
        self.generation = replace(gen, epoch=epoch, checked_at=now)
        self.census = Census()
        self._absent = set()
        self.losses += 1
        REGISTRY.inc("clarify_store_data_lost_total", kind=loss.value)
        log.error("store.data_lost", kind=loss.value, previous=previous.id,
                  generation=gen.id, holds=census.holds, reminders=census.reminders,
                  answers=census.answers,
                  hint="Redis came back without the bot's data: see docs/deploy.md "
                       "(persistence) and docs/reliability.md (a store that lost its data)")
        # when: a turn the core lets expire unasked soon after was held in the lost store
        await self.store.kv_put(LOST_AT, "at", now.isoformat(), ttl_seconds=LOST_TURN_TTL_SECONDS)
        if await self.store.mark_once(LOSS_MARK, f"{previous.id}|{gen.id}",
                                      ttl_seconds=7 * 24 * 3600):
            REGISTRY.inc("clarify_reminders_lost_total", census.reminders)
            REGISTRY.inc("clarify_answers_lost_total", census.answers)
            await self.audit.emit(AuditEvent(
                type="store_data_lost", at=now, clarification_id="", occurrence=gen.id,
                message=_loss_words(loss, census),
                extra={"kind": loss.value, "previous": previous.id, "generation": gen.id,
                       "holds": str(census.holds), "reminders": str(census.reminders),
                       "answers": str(census.answers)}),
                to_core=False)
        await self._recover(gen.id)

    async def _recover(self, generation: str) -> None:
        """The worker's recovery after a loss; a store failure on the way leaves it
        ``pending``, done again at the next check (each step is safe to repeat)."""
        if self.recovery is None:
            return
        self.pending = generation
        await self._guarded(self.recovery.give_back(generation))
        if await self.store.mark_once(LOSS_MARK + "-reminders", generation,
                                      ttl_seconds=7 * 24 * 3600):
            await self._guarded(self.recovery.reminders_back(generation))
        await self._guarded(self.recovery.find_leases(
            settle_after=self.monotonic() + 2 * self.interval_seconds))
        self.pending = None

    async def _guarded(self, work: Awaitable[object]) -> None:
        """Recovery that needs the core: a core away leaves it for the next check."""
        try:
            await work
        except e.CoreError as exc:
            log.warning("storewatch.core_unavailable", error=type(exc).__name__)

    async def run(self, stopping: asyncio.Event) -> None:
        """Check every ``interval_seconds`` (every ``RETRY_SECONDS`` while the store fails)
        until ``stopping`` is set."""
        if self.generation is None:
            await self.start()
        while not stopping.is_set():
            wait = RETRY_SECONDS if self.failing else self.interval_seconds
            waiter = asyncio.ensure_future(stopping.wait())
            sleeper = asyncio.ensure_future(self.sleep(wait))
            try:
                await asyncio.wait([waiter, sleeper], return_when=asyncio.FIRST_COMPLETED)
            finally:
                waiter.cancel()
                sleeper.cancel()
            if stopping.is_set():
                return
            with contextlib.suppress(Exception):
                await self.check()

    def status(self) -> dict[str, object]:
        """What this process knows (``/readyz``): value-free."""
        gen = self.generation
        return {"store_generation": None if gen is None else {
            "id": gen.id, "origin": gen.origin, "created_at": gen.created_at.isoformat(),
            "checked_at": None if self.checked_at is None else self.checked_at.isoformat(),
            "losses_seen": self.losses}}


def _loss_words(loss: Loss, census: Census) -> str:
    what = {Loss.EMPTIED: "came back empty (restarted without persistence, flushed, or a "
                          "failover to an empty replica)",
            Loss.REPLACED: "came back empty and another process started it again",
            Loss.RESET: "was reset by an operator (clarify-bot store reset)",
            Loss.ROLLED_BACK: "came back older than this process left it (an older snapshot "
                              "was restored, or a lagging replica promoted)"}[loss]
    return (f"The bot's store {what}. At the last check it held {census.holds} held "
            f"questions, {census.reminders} reminders and {census.answers} answers waiting "
            "for the core: held questions are given back by the worker that remembers them "
            "(or counted lost), reminders not yet due are made again from the core's record "
            "where it has the card, and waiting answers are lost (the people's cards still "
            "take an answer).")
