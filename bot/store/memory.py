"""The in-memory store: the Redis store's behaviour for one process (the demo, tests).

One asyncio.Lock around each operation stands in for Redis's atomic scripts. Only once-markers
expire (they are read against the injected clock); a single process never lives long enough for
the other TTLs to matter.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from types import TracebackType
from typing import Self

from bot.clock import Clock, SystemClock
from bot.store import keys as k
from bot.store.base import (
    Acceptance,
    Admission,
    CardRecord,
    Decision,
    DeliveryKey,
    DeliverySlot,
    DigestBatch,
    DigestItem,
    OutboxEntry,
    SlotState,
)
from bot.store.codec import card_order
from bot.store.errors import SlotNotFound
from bot.store.notices import MemoryNotices


@dataclass(slots=True)
class _Window:
    start: datetime
    due: datetime
    batch_id: str
    direct: int = 0
    charged: bool = False


@dataclass(slots=True)
class _Batch:
    person_id: str
    due: datetime
    items: dict[str, DigestItem] = field(default_factory=dict)  # by clarification, in order
    claimed: bool = False


@dataclass(slots=True)
class _Entry:
    payload: str
    created_at: datetime
    order_key: str
    acted_at: int
    attempts: int = 0
    failures: int = 0


@dataclass(slots=True)
class _Order:
    seen: int = 0  # the latest action time accepted (µs)
    settled: int = -1  # the action time of the last entry settled
    settled_id: str = ""
    held_by: str | None = None  # the entry being forwarded
    held_until: datetime | None = None


def _due_first[T](scores: dict[str, datetime], now: datetime, limit: int) -> list[str]:
    """Ids scored at or before now, soonest first, ties by id: a Redis sorted set's order."""
    ready = sorted((score, name) for name, score in scores.items() if score <= now)
    return [name for _, name in ready[:limit]]


class MemoryStore(MemoryNotices):
    def __init__(self, *, clock: Clock | None = None) -> None:
        self._clock = clock or SystemClock()
        self._lock = asyncio.Lock()
        self._notice_lists = {}
        self._slots: dict[str, DeliverySlot] = {}
        self._latest: dict[tuple[str, str], tuple[str, datetime]] = {}
        self._buckets: dict[str, tuple[float, datetime]] = {}
        self._cards: dict[str, dict[str, CardRecord]] = {}
        self._admissions: dict[str, Admission] = {}
        self._caps: dict[tuple[str, str], int] = {}
        self._windows: dict[str, _Window] = {}
        self._batches: dict[str, _Batch] = {}
        self._batches_due: dict[str, datetime] = {}
        self._once: dict[tuple[str, str], datetime] = {}
        self._outbox: dict[str, _Entry] = {}
        self._outbox_due: dict[str, datetime] = {}
        self._parked: dict[str, tuple[_Entry, str]] = {}
        self._orders: dict[str, _Order] = {}
        self._conversations: dict[tuple[str, str], tuple[str, datetime]] = {}

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        return None

    # ------------------------------------------------ idempotent delivery
    async def reserve(self, key: DeliveryKey, *, worker_id: str, now: datetime
                      ) -> tuple[DeliverySlot, bool]:
        async with self._lock:
            held = self._slots.get(key.token())
            if held is not None:
                return held, False
            slot = DeliverySlot(key=key, state=SlotState.RESERVED, worker_id=worker_id,
                                reserved_at=now)
            self._slots[key.token()] = slot
            return slot, True

    async def record_sent(self, slot: DeliverySlot, card: CardRecord) -> DeliverySlot:
        sent = await self.mark_sent(slot.key, message_ref=card.message_ref)
        await self.add_card(card)
        return sent

    async def mark_sent(self, key: DeliveryKey, *, message_ref: str) -> DeliverySlot:
        return await self._update(key, state=SlotState.SENT, message_ref=message_ref)

    async def mark_digested(self, key: DeliveryKey, *, batch_id: str, worker_id: str,
                            now: datetime) -> DeliverySlot:
        """A digested card is not sent on its own, so it may have no reservation: make one."""
        async with self._lock:
            if key.token() not in self._slots:
                self._slots[key.token()] = DeliverySlot(
                    key=key, state=SlotState.DIGESTED, worker_id=worker_id,
                    reserved_at=now, batch_id=batch_id)
                return self._slots[key.token()]
        return await self._update(key, state=SlotState.DIGESTED, batch_id=batch_id)

    async def _update(self, key: DeliveryKey, *, state: SlotState, message_ref: str | None = None,
                      batch_id: str | None = None) -> DeliverySlot:
        async with self._lock:
            slot = self._slots.get(key.token())
            if slot is None:
                raise SlotNotFound()
            slot = replace(slot, state=state, message_ref=message_ref or slot.message_ref,
                           batch_id=batch_id or slot.batch_id)
            self._slots[key.token()] = slot
            return slot

    async def release(self, key: DeliveryKey) -> None:
        async with self._lock:
            self._slots.pop(key.token(), None)

    async def slot(self, key: DeliveryKey) -> DeliverySlot | None:
        async with self._lock:
            return self._slots.get(key.token())

    # ------------------------------------------------ cards to update
    async def add_card(self, card: CardRecord) -> None:
        async with self._lock:
            by_token = self._cards.setdefault(card.delivery.clarification_id, {})
            by_token[card.delivery.token()] = card

    async def cards(self, clarification_id: str) -> list[CardRecord]:
        async with self._lock:
            return sorted(self._cards.get(clarification_id, {}).values(), key=card_order)

    # ------------------------------------------------ caps and digest batching
    async def admit(
        self, key: DeliveryKey, *, item: DigestItem, day: str, now: datetime, cap: int,
        threshold: int, window_seconds: int, batched: bool, reserve_for: str | None = None,
    ) -> Admission:
        async with self._lock:
            prior = self._admissions.get(key.token())
            if prior is not None:
                return replace(prior, replayed=True)
            if batched:
                window = self._open_window(key.person_id, now=now, seconds=window_seconds)
                admission = self._admit_batched(key, item, day=day, cap=cap,
                                                threshold=threshold, window=window)
            else:
                admission = Admission(self._direct_or_capped(day, key.person_id, cap))
            self._admissions[key.token()] = admission
        if reserve_for is None or admission.decision is not Decision.DIRECT:
            return admission
        slot, created = await self.reserve(key, worker_id=reserve_for, now=now)
        return replace(admission, reserved=slot, created=created)

    def _charge(self, day: str, person_id: str, cap: int) -> bool:
        used = self._caps.get((day, person_id), 0)
        if used >= cap:
            return False
        self._caps[(day, person_id)] = used + 1
        return True

    def _direct_or_capped(self, day: str, person_id: str, cap: int) -> Decision:
        return Decision.DIRECT if self._charge(day, person_id, cap) else Decision.CAPPED

    def _open_window(self, person_id: str, *, now: datetime, seconds: int) -> _Window:
        window = self._windows.get(person_id)
        if window is not None and now < window.due and not self._batch_gone(window):
            return window
        window = _Window(start=now, due=now + timedelta(seconds=seconds),
                         batch_id=k.batch_id(person_id, now.timestamp()))
        self._windows[person_id] = window
        return window

    def _batch_gone(self, window: _Window) -> bool:
        """A batch already claimed for sending (a late clock) takes no more items."""
        batch = self._batches.get(window.batch_id)
        return window.charged and (batch is None or batch.claimed)

    def _admit_batched(self, key: DeliveryKey, item: DigestItem, *, day: str, cap: int,
                       threshold: int, window: _Window) -> Admission:
        if window.direct < threshold:
            decision = self._direct_or_capped(day, key.person_id, cap)
            if decision is Decision.DIRECT:
                window.direct += 1
            return Admission(decision)
        if not window.charged:
            # the whole digest costs one unit, charged when its first item joins
            if not self._charge(day, key.person_id, cap):
                return Admission(Decision.CAPPED)
            window.charged = True
            self._batches[window.batch_id] = _Batch(person_id=key.person_id, due=window.due)
            self._batches_due[window.batch_id] = window.due
        self._batches[window.batch_id].items.setdefault(item.clarification_id, item)
        return Admission(Decision.DIGESTED, batch_id=window.batch_id, due_at=window.due)

    async def due_batches(self, *, now: datetime, limit: int = 100) -> list[str]:
        async with self._lock:
            return _due_first(self._batches_due, now, limit)

    async def claim_batch(self, batch_id: str, *, now: datetime, lease_seconds: int
                          ) -> DigestBatch | None:
        async with self._lock:
            score = self._batches_due.get(batch_id)
            batch = self._batches.get(batch_id)
            if score is None or score > now or batch is None:
                return None
            self._batches_due[batch_id] = now + timedelta(seconds=lease_seconds)
            batch.claimed = True
            return DigestBatch(batch_id=batch_id, person_id=batch.person_id, due_at=batch.due,
                               items=tuple(batch.items.values()))

    async def finish_batch(self, batch_id: str) -> None:
        async with self._lock:
            self._batches.pop(batch_id, None)
            self._batches_due.pop(batch_id, None)

    # ------------------------------------------------ once-only markers
    async def mark_once(self, namespace: str, key: str, *, ttl_seconds: int) -> bool:
        async with self._lock:
            now = self._clock.now()
            expires = self._once.get((namespace, key))
            if expires is not None and now < expires:
                return False
            self._once[(namespace, key)] = now + timedelta(seconds=ttl_seconds)
            return True

    async def kv_put(self, namespace: str, key: str, value: str, *, ttl_seconds: int) -> None:
        async with self._lock:
            expires = self._clock.now() + timedelta(seconds=ttl_seconds)
            self._latest[(namespace, key)] = (value, expires)

    async def kv_get(self, namespace: str, key: str) -> str | None:
        async with self._lock:
            found = self._latest.get((namespace, key))
            if found is None or found[1] <= self._clock.now():
                return None
            return found[0]

    async def swap_latest(self, namespace: str, key: str, value: str, *, ttl_seconds: int
                          ) -> str | None:
        async with self._lock:
            now = self._clock.now()
            previous = self._latest.get((namespace, key))
            self._latest[(namespace, key)] = (value, now + timedelta(seconds=ttl_seconds))
            if previous is None or previous[1] <= now:
                return None
            return previous[0]

    # ------------------------------------------------ Teams conversation references
    async def conversation_put(self, tenant_id: str, aad_object_id: str, reference_json: str,
                               *, now: datetime) -> None:
        async with self._lock:
            expires = now + timedelta(seconds=k.CONVERSATION_TTL_SECONDS)
            self._conversations[(tenant_id, aad_object_id.lower())] = (reference_json, expires)

    async def conversation_get(self, tenant_id: str, aad_object_id: str) -> str | None:
        async with self._lock:
            found = self._conversations.get((tenant_id, aad_object_id.lower()))
            if found is None or found[1] <= self._clock.now():
                return None
            return found[0]

    async def conversation_delete(self, tenant_id: str, aad_object_id: str) -> None:
        async with self._lock:
            self._conversations.pop((tenant_id, aad_object_id.lower()), None)

    async def rate_take(self, bucket: str, *, rate_per_second: float, burst: int,
                        now: datetime, reserve: int = 0) -> float:
        return await self._rate(bucket, rate_per_second, burst, now, block=0.0, reserve=reserve)

    async def rate_block(self, bucket: str, *, seconds: float, rate_per_second: float,
                         burst: int, now: datetime) -> None:
        await self._rate(bucket, rate_per_second, burst, now, block=seconds)

    async def _rate(self, bucket: str, rate: float, burst: int, now: datetime, *,
                    block: float, reserve: int = 0) -> float:
        async with self._lock:
            tokens, at = self._buckets.get(bucket, (float(burst), now))
            if now > at:
                tokens = min(float(burst), tokens + (now - at).total_seconds() * rate)
                at = now
            if reserve > 0 and block <= 0 and tokens - 1 < reserve:
                self._buckets[bucket] = (tokens, at)
                return (reserve + 1 - tokens) / rate  # nothing taken: ask again then
            tokens = min(tokens, -block * rate) if block > 0 else tokens - 1
            self._buckets[bucket] = (tokens, at)
            return 0.0 if tokens >= 0 else -tokens / rate

    # ------------------------------------------------ answer outbox (durable)
    async def outbox_accept(self, entry_id: str, payload: str, *, order_key: str, acted_at: int,
                            now: datetime) -> Acceptance:
        async with self._lock:
            order = self._orders.setdefault(order_key, _Order())
            if acted_at < order.seen:
                return Acceptance.STALE
            if (order.settled_id == entry_id and acted_at <= order.settled) \
                    or entry_id in self._outbox:
                return Acceptance.DUPLICATE
            self._outbox[entry_id] = _Entry(payload=payload, created_at=now,
                                            order_key=order_key, acted_at=acted_at)
            self._outbox_due[entry_id] = now
            order.seen = max(order.seen, acted_at)
            return Acceptance.QUEUED

    async def outbox_claim(self, *, now: datetime, lease_seconds: int, limit: int,
                           entry_id: str | None = None) -> list[OutboxEntry]:
        async with self._lock:
            if entry_id is None:
                ids = _due_first(self._outbox_due, now, len(self._outbox_due))
            else:
                ids = [entry_id] if self._outbox_due.get(entry_id, now) <= now else []
            claimed: list[OutboxEntry] = []
            for found in ids:
                if len(claimed) >= limit:
                    break
                if found in self._outbox and self._hold(found, now, lease_seconds):
                    claimed.append(self._claimed(found, now, lease_seconds))
            return claimed

    def _hold(self, entry_id: str, now: datetime, lease_seconds: int) -> bool:
        """Hold the entry's order key for it, unless another claim holds the key."""
        order = self._orders.setdefault(self._outbox[entry_id].order_key, _Order())
        if order.held_by is not None and order.held_until is not None \
                and order.held_until > now:
            return False
        order.held_by, order.held_until = entry_id, now + timedelta(seconds=lease_seconds)
        return True

    def _claimed(self, entry_id: str, now: datetime, lease_seconds: int) -> OutboxEntry:
        entry = self._outbox[entry_id]
        entry.attempts += 1
        self._outbox_due[entry_id] = now + timedelta(seconds=lease_seconds)
        return OutboxEntry(entry_id=entry_id, payload=entry.payload, attempts=entry.attempts,
                           created_at=entry.created_at, order_key=entry.order_key,
                           acted_at=entry.acted_at, failures=entry.failures,
                           stale=entry.acted_at < self._orders[entry.order_key].seen)

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

    async def outbox_done(self, entry: OutboxEntry) -> None:
        async with self._lock:
            self._release(entry)
            self._outbox.pop(entry.entry_id, None)
            self._outbox_due.pop(entry.entry_id, None)
            order = self._orders.setdefault(entry.order_key, _Order())
            if entry.acted_at >= order.settled:
                order.settled, order.settled_id = entry.acted_at, entry.entry_id

    async def outbox_park(self, entry: OutboxEntry, *, reason: str, now: datetime) -> None:
        async with self._lock:
            self._release(entry)
            held = self._outbox.pop(entry.entry_id, None)
            self._outbox_due.pop(entry.entry_id, None)
            if held is not None:
                self._parked[entry.entry_id] = (held, reason)

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
