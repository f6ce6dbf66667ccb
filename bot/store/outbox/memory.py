"""``Outbox`` in memory (``MemoryStore`` inherits it): durable only for the life of the
process, otherwise the Redis outbox's behaviour, its bound included."""

from __future__ import annotations

import asyncio
import bisect
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from bot.clock import Clock
from bot.store import keys as k
from bot.store.due import due_first
from bot.store.errors import OutboxFull
from bot.store.expiring import Expiring
from bot.store.records import Acceptance, OutboxEntry
from bot.store.stream import repeat_of, settled_mark


@dataclass(slots=True)
class _Entry:
    payload: str
    created_at: datetime
    order_key: str
    acted_at: int
    answer: str = ""
    attempts: int = 0
    failures: int = 0


@dataclass(slots=True)
class _Order:
    seen: int = 0  # the latest action time accepted (µs)
    settled: int = -1  # the action time of the last entry settled
    settled_id: str = ""
    held_by: str | None = None  # the entry being forwarded
    held_until: datetime | None = None
    waiting: int = 0  # entries of the key in the outbox: the marker expires once none is
    # the key's waiting entries in the person's order: (action time, entry id), sorted
    queue: list[tuple[int, str]] = field(default_factory=list)
    # entries settled or parked, with their ``settled_mark``: replays are duplicates
    done: dict[str, str] = field(default_factory=dict)


HELD_KEY_RECHECK_SECONDS = 0.2


class MemoryOutbox:
    _lock: asyncio.Lock
    _ttls: k.Ttls

    def _init_outbox(self, clock: Clock, outbox_max: int) -> None:
        self._outbox_max = outbox_max
        self._outbox: dict[str, _Entry] = {}  # entries never expire: no answer is lost
        self._outbox_due: dict[str, datetime] = {}
        self._parked: dict[str, tuple[_Entry, str]] = {}
        self._orders: Expiring[str, _Order] = Expiring(clock)

    # ------------------------------------------------ answer outbox (durable)
    async def outbox_accept(self, entry_id: str, payload: str, *, order_key: str, acted_at: int,
                            now: datetime, answer: str = "") -> Acceptance:
        async with self._lock:
            order = self._order(order_key)
            if entry_id in order.done or (order.settled_id == entry_id
                                          and acted_at <= order.settled) \
                    or entry_id in self._outbox:
                return Acceptance.DUPLICATE
            if len(self._outbox) >= self._outbox_max:
                raise OutboxFull()
            self._outbox[entry_id] = _Entry(payload=payload, created_at=now,
                                            order_key=order_key, acted_at=acted_at, answer=answer)
            self._outbox_due[entry_id] = now
            order.seen = max(order.seen, acted_at)
            order.waiting += 1
            bisect.insort(order.queue, (acted_at, entry_id))
            self._orders.expire(order_key, None)  # kept while its entries wait
            return Acceptance.QUEUED

    def _order(self, order_key: str) -> _Order:
        order = self._orders.get(order_key)
        if order is None:
            order = _Order()
            self._orders.put(order_key, order, self._ttls.order)
        return order

    def _gone(self, order_key: str, entry_id: str, now: datetime | None, mark: str) -> None:
        """One entry of the key waits no more (its next one is due at ``now``; ``mark``: what
        the marker keeps of it); with none left, its marker starts to expire."""
        order = self._order(order_key)
        order.queue = [q for q in order.queue if q[1] != entry_id]
        after = next((q[1] for q in order.queue if q[1] in self._outbox), None)
        if now is not None and after is not None and self._outbox_due.get(after, now) > now:
            self._outbox_due[after] = now
        order.done[entry_id] = mark
        order.waiting = max(0, order.waiting - 1)
        if order.waiting == 0:
            self._orders.expire(order_key, self._ttls.order)

    async def outbox_claim(self, *, now: datetime, lease_seconds: int, limit: int,
                           entry_id: str | None = None) -> list[OutboxEntry]:
        async with self._lock:
            if entry_id is None:
                ids = due_first(self._outbox_due, now, len(self._outbox_due))
            else:
                ids = [entry_id] if self._outbox_due.get(entry_id, now) <= now else []
            claimed: list[OutboxEntry] = []
            for found in ids:
                if len(claimed) >= limit:
                    break
                if found not in self._outbox:
                    continue
                first = self._first(found)
                if first != found:  # behind the key's first entry in the person's order
                    if entry_id is None:  # looked at again once the first may be done
                        order = self._order(self._outbox[found].order_key)
                        soon = now + timedelta(seconds=HELD_KEY_RECHECK_SECONDS)
                        held = order.held_until is not None and order.held_until > now
                        self._outbox_due[found] = soon if held else max(
                            self._outbox_due.get(first, now), soon)
                    continue
                if self._hold(found, now, lease_seconds):
                    claimed.append(self._claimed(found, now, lease_seconds))
            return claimed

    def _first(self, entry_id: str) -> str:
        """The first waiting entry of ``entry_id``'s key in the person's order."""
        order = self._order(self._outbox[entry_id].order_key)
        return next((q[1] for q in order.queue if q[1] in self._outbox), entry_id)

    def _hold(self, entry_id: str, now: datetime, lease_seconds: int) -> bool:
        """Hold the entry's order key for it, unless another claim holds the key."""
        order = self._order(self._outbox[entry_id].order_key)
        if order.held_by is not None and order.held_until is not None \
                and order.held_until > now:
            return False
        order.held_by, order.held_until = entry_id, now + timedelta(seconds=lease_seconds)
        return True

    def _claimed(self, entry_id: str, now: datetime, lease_seconds: int) -> OutboxEntry:
        entry = self._outbox[entry_id]
        entry.attempts += 1
        self._outbox_due[entry_id] = now + timedelta(seconds=lease_seconds)
        order = self._order(entry.order_key)
        waiting = (at for at, other in order.queue if other in self._outbox)
        return OutboxEntry(entry_id=entry_id, payload=entry.payload, attempts=entry.attempts,
                           created_at=entry.created_at, order_key=entry.order_key,
                           acted_at=entry.acted_at, failures=entry.failures,
                           superseded=entry.acted_at < order.seen,
                           answer=entry.answer,
                           repeats=repeat_of(entry.acted_at, entry.answer, order.done, waiting))

    def _release(self, entry: OutboxEntry) -> None:
        order = self._orders.get(entry.order_key)
        if order is not None and order.held_by == entry.entry_id:
            order.held_by = order.held_until = None

    async def outbox_retry(self, entry: OutboxEntry, *, at: datetime, failed: bool) -> None:
        async with self._lock:
            self._release(entry)
            if entry.entry_id in self._outbox_due:
                self._outbox_due[entry.entry_id] = at
                self._outbox[entry.entry_id].failures += int(failed)

    async def outbox_done(self, entry: OutboxEntry, *, now: datetime | None = None) -> None:
        async with self._lock:
            self._release(entry)
            held = self._outbox.pop(entry.entry_id, None)
            self._outbox_due.pop(entry.entry_id, None)
            order = self._order(entry.order_key)
            if entry.acted_at >= order.settled:
                order.settled, order.settled_id = entry.acted_at, entry.entry_id
            if held is not None:
                self._gone(entry.order_key, entry.entry_id, now,
                           settled_mark(entry.acted_at, held.answer))

    async def outbox_park(self, entry: OutboxEntry, *, reason: str, now: datetime) -> None:
        async with self._lock:
            self._release(entry)
            held = self._outbox.pop(entry.entry_id, None)
            self._outbox_due.pop(entry.entry_id, None)
            if held is not None:
                self._parked[entry.entry_id] = (held, reason)
                self._gone(entry.order_key, entry.entry_id, now,
                           settled_mark(entry.acted_at, held.answer, parked=True))

    async def outbox_size(self) -> int:
        async with self._lock:
            return len(self._outbox)

    async def outbox_parked(self) -> int:
        async with self._lock:
            return len(self._parked)

    async def outbox_overdue(self, *, now: datetime) -> float:
        async with self._lock:
            earliest = min(self._outbox_due.values(), default=None)
        return max(0.0, (now - earliest).total_seconds()) if earliest is not None else 0.0
