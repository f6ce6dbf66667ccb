"""The in-memory store: the Redis store's behaviour for one process (the demo, tests).

One asyncio.Lock around each operation stands in for Redis's atomic scripts. Per-person state
expires as its Redis key does, read against the injected clock (``bot.store.expiring``); the
outbox's entries never expire, and it takes at most ``outbox_max`` of them, as on Redis.
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
    Admission,
    CardRecord,
    Decision,
    DeliveryKey,
    DeliverySlot,
    DigestBatch,
    DigestItem,
    SlotState,
)
from bot.store.codec import card_order
from bot.store.errors import SlotNotFound
from bot.store.expiring import Expiring
from bot.store.generation import Census, MemoryGenerations
from bot.store.memory_outbox import MemoryOutbox, due_first
from bot.store.notices import MemoryNotices

_RATE_TTL = 3600


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


class MemoryStore(MemoryOutbox, MemoryNotices, MemoryGenerations):
    def __init__(self, *, clock: Clock | None = None, ttls: k.Ttls | None = None,
                 outbox_max: int = k.OUTBOX_MAX_ENTRIES) -> None:
        self._clock = clock = clock or SystemClock()
        self._ttls = ttls or k.Ttls()
        self._lock = asyncio.Lock()
        self._notice_lists = {}
        self._slots: Expiring[str, DeliverySlot] = Expiring(clock)
        self._latest: dict[tuple[str, str], tuple[str, datetime]] = {}
        self._holds: dict[str, tuple[str, datetime]] = {}
        self._buckets: Expiring[str, tuple[float, datetime]] = Expiring(clock)
        self._cards: Expiring[str, dict[str, CardRecord]] = Expiring(clock)
        self._admissions: Expiring[str, Admission] = Expiring(clock)
        self._caps: Expiring[tuple[str, str], int] = Expiring(clock)
        self._windows: Expiring[str, _Window] = Expiring(clock)
        self._batches: Expiring[str, _Batch] = Expiring(clock)
        self._batches_due: dict[str, datetime] = {}
        self._reminders: dict[str, datetime] = {}  # member -> due (or lease end)
        self._once: dict[tuple[str, str], datetime] = {}
        self._init_outbox(clock, outbox_max)
        self._conversations: Expiring[tuple[str, str], str] = Expiring(clock)
        self._generation_init()

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
            self._slots.put(key.token(), slot, self._ttls.slot)
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
                slot = DeliverySlot(key=key, state=SlotState.DIGESTED, worker_id=worker_id,
                                    reserved_at=now, batch_id=batch_id)
                self._slots.put(key.token(), slot, self._ttls.slot)
                return slot
        return await self._update(key, state=SlotState.DIGESTED, batch_id=batch_id)

    async def _update(self, key: DeliveryKey, *, state: SlotState, message_ref: str | None = None,
                      batch_id: str | None = None) -> DeliverySlot:
        async with self._lock:
            slot = self._slots.get(key.token())
            if slot is None:
                raise SlotNotFound()
            slot = replace(slot, state=state, message_ref=message_ref or slot.message_ref,
                           batch_id=batch_id or slot.batch_id)
            self._slots.put(key.token(), slot, keep_ttl=True)
            return slot

    async def release(self, key: DeliveryKey) -> None:
        async with self._lock:
            self._slots.pop(key.token())

    async def slot(self, key: DeliveryKey) -> DeliverySlot | None:
        async with self._lock:
            return self._slots.get(key.token())

    # ------------------------------------------------ cards to update
    async def add_card(self, card: CardRecord) -> None:
        async with self._lock:
            by_token = self._cards.get(card.delivery.clarification_id) or {}
            by_token[card.delivery.token()] = card
            self._cards.put(card.delivery.clarification_id, by_token, self._ttls.cards)

    async def cards(self, clarification_id: str) -> list[CardRecord]:
        async with self._lock:
            return sorted((self._cards.get(clarification_id) or {}).values(), key=card_order)

    async def replace_card(self, card: CardRecord) -> bool:
        async with self._lock:
            by_token = self._cards.get(card.delivery.clarification_id)
            if by_token is None or card.delivery.token() not in by_token:
                return False
            by_token[card.delivery.token()] = card
            return True

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
            self._admissions.put(key.token(), admission, self._ttls.slot)
        if reserve_for is None or admission.decision is not Decision.DIRECT:
            return admission
        slot, created = await self.reserve(key, worker_id=reserve_for, now=now)
        return replace(admission, reserved=slot, created=created)

    def _charge(self, day: str, person_id: str, cap: int) -> bool:
        used = self._caps.get((day, person_id)) or 0
        if used >= cap:
            return False
        self._caps.put((day, person_id), used + 1, self._ttls.cap, keep_ttl=True)
        return True

    def _direct_or_capped(self, day: str, person_id: str, cap: int) -> Decision:
        return Decision.DIRECT if self._charge(day, person_id, cap) else Decision.CAPPED

    def _open_window(self, person_id: str, *, now: datetime, seconds: int) -> _Window:
        window = self._windows.get(person_id)
        if window is not None and now < window.due and not self._batch_gone(window):
            return window
        window = _Window(start=now, due=now + timedelta(seconds=seconds),
                         batch_id=k.batch_id(person_id, now.timestamp()))
        self._windows.put(person_id, window, self._ttls.window(seconds))
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
            self._batches.put(window.batch_id, _Batch(person_id=key.person_id, due=window.due),
                              self._ttls.slot)
            self._batches_due[window.batch_id] = window.due
        batch = self._batches.get(window.batch_id)
        if batch is not None:
            batch.items.setdefault(item.clarification_id, item)
        return Admission(Decision.DIGESTED, batch_id=window.batch_id, due_at=window.due)

    async def due_batches(self, *, now: datetime, limit: int = 100) -> list[str]:
        async with self._lock:
            return due_first(self._batches_due, now, limit)

    async def claim_batch(self, batch_id: str, *, now: datetime, lease_seconds: int
                          ) -> DigestBatch | None:
        async with self._lock:
            score = self._batches_due.get(batch_id)
            batch = self._batches.get(batch_id)
            if score is not None and batch is None:  # expired: nothing left to send
                del self._batches_due[batch_id]
            if score is None or score > now or batch is None:
                return None
            self._batches_due[batch_id] = now + timedelta(seconds=lease_seconds)
            batch.claimed = True
            return DigestBatch(batch_id=batch_id, person_id=batch.person_id, due_at=batch.due,
                               items=tuple(batch.items.values()))

    async def delay_batch(self, batch_id: str, *, until: datetime) -> None:
        async with self._lock:
            if batch_id in self._batches_due:
                self._batches_due[batch_id] = until

    async def finish_batch(self, batch_id: str) -> None:
        async with self._lock:
            self._batches.pop(batch_id)
            self._batches_due.pop(batch_id, None)

    # ------------------------------------------------ reminders
    async def reminder_add(self, member: str, *, due: datetime) -> None:
        async with self._lock:
            self._reminders.setdefault(member, due)

    async def reminders_due(self, *, now: datetime, limit: int = 100) -> list[str]:
        async with self._lock:
            ready = sorted((due, member) for member, due in self._reminders.items()
                           if due <= now)
            return [member for _, member in ready[:limit]]

    async def reminder_claim(self, member: str, *, now: datetime, lease_seconds: int) -> bool:
        async with self._lock:
            due = self._reminders.get(member)
            if due is None or due > now:
                return False
            self._reminders[member] = now + timedelta(seconds=lease_seconds)
            return True

    async def reminder_later(self, member: str, *, due: datetime) -> None:
        async with self._lock:
            if member in self._reminders:
                self._reminders[member] = due

    async def reminder_done(self, member: str) -> None:
        async with self._lock:
            self._reminders.pop(member, None)

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

    async def hold_put(self, job_id: str, value: str, *, at: datetime) -> None:
        async with self._lock:
            self._memory_holds[job_id] = value
            self._holds[job_id] = (value, at)

    async def holds_due(self, *, now: datetime, limit: int = 100) -> list[tuple[str, str]]:
        async with self._lock:
            due = sorted((at, job_id, value) for job_id, (value, at) in self._holds.items()
                         if at <= now)
            return [(job_id, value) for _, job_id, value in due[:limit]]

    async def hold_claim(self, job_id: str, *, now: datetime, lease_seconds: int) -> bool:
        async with self._lock:
            found = self._holds.get(job_id)
            if found is None or found[1] > now:
                return False
            self._holds[job_id] = (found[0], now + timedelta(seconds=lease_seconds))
            return True

    async def hold_text(self, job_id: str) -> str | None:
        async with self._lock:
            found = self._holds.get(job_id)
            if found:
                self._memory_holds[job_id] = found[0]
            return found[0] if found else None

    async def hold_drop(self, job_id: str) -> None:
        async with self._lock:
            self._memory_holds.pop(job_id, None)
            self._holds.pop(job_id, None)

    async def census(self) -> Census:
        async with self._lock:
            holds, reminders = len(self._holds), len(self._reminders)
        return Census(holds=holds, reminders=reminders, answers=await self.outbox_size())

    def forget(self) -> None:
        """Lose every piece of state, as a Redis restarted without persistence does (tests):
        only what this process remembers of its holds is kept, in its own memory."""
        remembered = dict(self._memory_holds)
        self.__init__(clock=self._clock, ttls=self._ttls,  # type: ignore[misc]
                      outbox_max=self._outbox_max)
        self._memory_holds = remembered

    async def kv_delete(self, namespace: str, key: str) -> bool:
        async with self._lock:
            found = self._latest.pop((namespace, key), None)
            return found is not None and found[1] > self._clock.now()

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
            left = (now - self._clock.now()).total_seconds() + self._ttls.conversation
            self._conversations.put((tenant_id, aad_object_id.lower()), reference_json, left)

    async def conversation_get(self, tenant_id: str, aad_object_id: str) -> str | None:
        async with self._lock:
            return self._conversations.get((tenant_id, aad_object_id.lower()))

    async def conversation_delete(self, tenant_id: str, aad_object_id: str) -> None:
        async with self._lock:
            self._conversations.pop((tenant_id, aad_object_id.lower()))

    async def rate_take(self, bucket: str, *, rate_per_second: float, burst: int,
                        now: datetime, reserve: int = 0) -> float:
        return await self._rate(bucket, rate_per_second, burst, now, block=0.0, reserve=reserve)

    async def rate_block(self, bucket: str, *, seconds: float, rate_per_second: float,
                         burst: int, now: datetime) -> None:
        await self._rate(bucket, rate_per_second, burst, now, block=seconds)

    async def _rate(self, bucket: str, rate: float, burst: int, now: datetime, *,
                    block: float, reserve: int = 0) -> float:
        async with self._lock:
            tokens, at = self._buckets.get(bucket) or (float(burst), now)
            if now > at:
                tokens = min(float(burst), tokens + (now - at).total_seconds() * rate)
                at = now
            if reserve > 0 and block <= 0 and tokens - 1 < reserve:
                self._buckets.put(bucket, (tokens, at), _RATE_TTL)
                return (reserve + 1 - tokens) / rate  # nothing taken: ask again then
            tokens = min(tokens, -block * rate) if block > 0 else tokens - 1
            self._buckets.put(bucket, (tokens, at), _RATE_TTL)
            return 0.0 if tokens >= 0 else -tokens / rate
