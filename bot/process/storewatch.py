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
2. the worker (``bot.process.holdrecovery``) gives back the holds it remembers
   (``Store.holds_remembered``: the holds it wrote or read and has not dropped, kept in its
   memory): each is held again, due to be looked at now, so its lease is extended and its
   card goes out at the person's hour (``clarify_holds_recovered_total``, audited
   ``hold_recovered``);
3. the worker asks the core which ``clarify:`` jobs it holds (``listJobs`` state ``leased``):
   a lease as long as a held one's that no process gives back within two more checks cannot
   be carried on (its lease token was in the lost store): it is counted lost
   (``clarify_holds_lost_total``), audited ``hold_lost`` with the true reason, and its turn is
   marked in the store, so that when the core hands the job again the person's skip says the
   store lost its data, not that a worker stopped (``bot.engine.recovery``).

A card sent before the loss is never sent again: before asking, the handler reads the core's
record of the clarification, and a question card the core has on record for that person and
turn is not sent a second time (``Asking.ask``). Nothing here logs a value: ids, counts and
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

from bot.audit import Audit, AuditEvent
from bot.clock import Clock
from bot.core import errors as e
from bot.engine.holds import LOST_AT, LOST_TURN_TTL_SECONDS
from bot.metrics import REGISTRY
from bot.process.holdrecovery import HoldRecovery
from bot.store.errors import StoreError
from bot.store.generation import Census, Generation, Generations, Loss, compare

log = structlog.get_logger("clarify.storewatch")
WATCH_SECONDS = 10.0
# after a failed check, the next one comes this soon (the store answering again is a reconnect)
RETRY_SECONDS = 1.0
LOSS_MARK = "store-lost"  # mark_once namespace: one audit line per loss, whoever notices first

REGISTRY.preset("clarify_store_data_lost_total", kind=Loss)


def watchable(store: object) -> Generations | None:
    """The store as ``Generations`` when it keeps a generation (Redis and memory do)."""
    return cast(Generations, store) if hasattr(store, "generation_check") else None


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
