"""The delivery ledger: one slot per delivery (reserved, sent or digested, never sent twice) and
the record of every card sent (where it is, so that it can be updated), on Redis and in memory.

On Redis a person's slots are fields of their delivery-state hash (``keys.Keys.person``, the
``{p:<person>}`` hash tag, shared with their admissions: ``bot.store.admissions``) and a
clarification's cards one hash; in memory one lock stands in for the scripts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from bot.clock import Clock
from bot.store import codec
from bot.store import keys as k
from bot.store.errors import SlotContended, SlotNotFound, translated
from bot.store.expiring import Expiring
from bot.store.records import CardRecord, DeliveryKey, DeliverySlot, SlotState

if TYPE_CHECKING:  # redis-py's asyncio client, named for types only (bot.store.redis loads it)
    import redis.asyncio as aioredis
    from redis.asyncio.cluster import RedisCluster


class DeliveryLedger(Protocol):
    # ------------------------------------------------ idempotent delivery
    async def reserve(self, key: DeliveryKey, *, worker_id: str, now: datetime
                      ) -> tuple[DeliverySlot, bool]:
        """Reserve a delivery; returns the slot and True when this call created it."""
        ...

    async def mark_sent(self, key: DeliveryKey, *, message_ref: str) -> DeliverySlot:
        """Record the message reference after a successful send (state SENT)."""
        ...

    async def record_sent(self, slot: DeliverySlot, card: CardRecord, *,
                          unreported: bool = False) -> DeliverySlot:
        """``mark_sent`` and ``add_card`` at once: the slot as this worker holds it becomes SENT
        with the card's reference, and the card is remembered (on Redis the card alone is
        written: a reserved slot whose card is remembered reads as SENT). ``unreported``: the
        card is marked not yet reported to the core in the same write, since the slot's
        reservation."""
        ...

    async def mark_digested(self, key: DeliveryKey, *, batch_id: str, worker_id: str,
                            now: datetime) -> DeliverySlot:
        """Record that the card waits in a digest batch (creating the slot when none exists)."""
        ...

    async def release(self, key: DeliveryKey) -> None:
        """Forget a reservation whose send certainly did not happen (so it may be retried)."""
        ...

    async def slot(self, key: DeliveryKey) -> DeliverySlot | None: ...

    # ------------------------------------------------ cards to update
    async def add_card(self, card: CardRecord, *,
                       unreported_since: datetime | None = None) -> None: ...

    async def cards(self, clarification_id: str) -> list[CardRecord]:
        """The clarification's cards, each with ``unreported_since`` while its mark is kept."""
        ...

    async def clear_unreported(self, keys: Sequence[DeliveryKey]) -> None:
        """Clear these cards' not-yet-reported marks (the core has their reports)."""
        ...

    async def replace_card(self, card: CardRecord) -> bool:
        """Replace the record of ``card``'s delivery (its reminder marks it ``reminded``), only
        while one is kept: a card erased or expired meanwhile is not written back. False when
        there was none. The record's time to live is not renewed."""
        ...


# One person's delivery state is one hash (``keys.Keys.person``). Its TTL is renewed, and its
# slots and admissions older than their TTL dropped, by the first write after ``refresh`` seconds
# (field ``x`` says when that last ran), so the usual write is one HSET and nothing more.
# ``touch`` takes the ``x`` read, adds it to the writes when renewing, and says whether the caller
# must EXPIRE the hash after its HSET. (``bot.store.admissions``'s ADMIT writes the same hash.)
TOUCH = """
local function touch(h, x, now, keep, refresh, sets)
  if x and tonumber(now) - tonumber(x) < tonumber(refresh) then return false end
  if x then
    local gone, all = {}, redis.call('HGETALL', h)
    for i = 1, #all, 2 do
      local kind = string.sub(all[i], 1, 2)
      if kind == 'a:' or kind == 's:' then
        local ok, doc = pcall(cjson.decode, all[i + 1])
        local at = ok and type(doc) == 'table' and tonumber(doc.at or doc.reserved_at)
        if not at or tonumber(now) - at > tonumber(keep) then table.insert(gone, all[i]) end
      end
    end
    for i = 1, #gone, 500 do
      redis.call('HDEL', h, unpack(gone, i, math.min(i + 499, #gone)))
    end
  end
  sets['x'] = now
  return true
end
local function write(h, sets, fresh, ttl)
  local flat = {}
  for name, value in pairs(sets) do
    table.insert(flat, name)
    table.insert(flat, value)
  end
  redis.call('HSET', h, unpack(flat))
  if fresh then redis.call('EXPIRE', h, ttl) end
end
"""

# KEYS: person | ARGV: slot field, slot JSON, now, hash ttl, slot ttl, refresh
# -> {stored JSON, 1 when created}
RESERVE = TOUCH + """
local r = redis.call('HMGET', KEYS[1], ARGV[1], 'x')
if r[1] then return {r[1], 0} end
local sets = {[ARGV[1]] = ARGV[2]}
write(KEYS[1], sets, touch(KEYS[1], r[2], ARGV[3], ARGV[5], ARGV[6], sets), ARGV[4])
return {ARGV[2], 1}
"""

# KEYS: person | ARGV: slot field, expected JSON, new JSON
# -> 1 swapped, 0 changed meanwhile, -1 missing
COMPARE_AND_SET = """
local current = redis.call('HGET', KEYS[1], ARGV[1])
if not current then return -1 end
if current ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
return 1
"""

# KEYS: a hash; ARGV: field, value -> 1 when the field was there and now holds the value, else 0
# (nothing written: an expired hash or an erased field stays gone)
REPLACE_FIELD = """
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1
"""

_CAS_TRIES = 5


class RedisLedger:
    """``DeliveryLedger`` for ``RedisStore`` (which provides ``_redis``, ``_keys`` and
    ``_ttls``)."""

    _redis: aioredis.Redis | RedisCluster
    _keys: k.Keys
    _ttls: k.Ttls
    _slot_ttl: int

    def _ledger_scripts(self) -> None:
        self._reserve = self._redis.register_script(RESERVE)
        self._cas: Any = self._redis.register_script(COMPARE_AND_SET)
        self._replace_field = self._redis.register_script(REPLACE_FIELD)

    async def _reserve_slot(self, fresh: DeliverySlot) -> tuple[str, bool]:
        """The slot as stored (JSON) and whether this call stored ``fresh`` (``RESERVE``: the
        person hash's TTL, the slots' TTL and the renewal period go with it, ``TOUCH``)."""
        key = fresh.key
        raw, created = await self._reserve(
            keys=[self._keys.person(key.person_id)],
            args=[k.slot_field(key.token()), codec.slot_json(fresh),
                  codec.num(codec.epoch(fresh.reserved_at)), self._ttls.person(),
                  self._slot_ttl, k.PERSON_REFRESH_SECONDS])
        return raw, bool(created)

    @translated
    async def reserve(self, key: DeliveryKey, *, worker_id: str, now: datetime
                      ) -> tuple[DeliverySlot, bool]:
        fresh = DeliverySlot(key=key, state=SlotState.RESERVED, worker_id=worker_id,
                             reserved_at=now)
        raw, created = await self._reserve_slot(fresh)
        if created:
            return fresh, True
        return await self._as_recorded(codec.slot_from(key, raw)), False

    async def _as_recorded(self, slot: DeliverySlot) -> DeliverySlot:
        """A reserved slot whose card is remembered was sent: a card's send is recorded by
        remembering the card alone (``record_sent``), so the slot is read with its card."""
        if slot.state is not SlotState.RESERVED:
            return slot
        raw = await self._redis.hget(self._keys.cards(slot.key.clarification_id),
                                     slot.key.token())
        if raw is None:
            return slot
        return replace(slot, state=SlotState.SENT, message_ref=codec.card_from(raw).message_ref)

    async def mark_sent(self, key: DeliveryKey, *, message_ref: str) -> DeliverySlot:
        return await self._update(key, state=SlotState.SENT, message_ref=message_ref)

    @translated
    async def record_sent(self, slot: DeliverySlot, card: CardRecord, *,
                          unreported: bool = False) -> DeliverySlot:
        """Remembering the card is the record: the slot as reserved reads as SENT from then on
        (``_as_recorded``), so the person's hash is not written again for the send."""
        await self.add_card(card, unreported_since=slot.reserved_at if unreported else None)
        return DeliverySlot(key=slot.key, state=SlotState.SENT, worker_id=slot.worker_id,
                            reserved_at=slot.reserved_at, message_ref=card.message_ref,
                            batch_id=slot.batch_id)

    @translated
    async def mark_digested(self, key: DeliveryKey, *, batch_id: str, worker_id: str,
                            now: datetime) -> DeliverySlot:
        """A digested card is not sent on its own, so it may have no reservation: make one."""
        fresh = DeliverySlot(key=key, state=SlotState.DIGESTED, worker_id=worker_id,
                             reserved_at=now, batch_id=batch_id)
        _, created = await self._reserve_slot(fresh)
        if created:
            return fresh
        return await self._update(key, state=SlotState.DIGESTED, batch_id=batch_id)

    @translated
    async def _update(self, key: DeliveryKey, *, state: SlotState, message_ref: str | None = None,
                      batch_id: str | None = None) -> DeliverySlot:
        """Compare-and-set, so a concurrent update is re-read, never overwritten blindly."""
        name, field = self._keys.person(key.person_id), k.slot_field(key.token())
        for _ in range(_CAS_TRIES):
            raw = await self._redis.hget(name, field)
            if raw is None:
                raise SlotNotFound()
            slot = codec.slot_from(key, raw)
            new = DeliverySlot(key=key, state=state, worker_id=slot.worker_id,
                               reserved_at=slot.reserved_at,
                               message_ref=message_ref or slot.message_ref,
                               batch_id=batch_id or slot.batch_id)
            swapped = await self._cas(keys=[name], args=[field, raw, codec.slot_json(new)])
            if swapped == 1:
                return new
            if swapped == -1:
                raise SlotNotFound()
        raise SlotContended()

    @translated
    async def release(self, key: DeliveryKey) -> None:
        await self._redis.hdel(self._keys.person(key.person_id), k.slot_field(key.token()))

    @translated
    async def slot(self, key: DeliveryKey) -> DeliverySlot | None:
        raw = await self._redis.hget(self._keys.person(key.person_id), k.slot_field(key.token()))
        return None if raw is None else await self._as_recorded(codec.slot_from(key, raw))

    # ------------------------------------------------ cards to update
    @translated
    async def add_card(self, card: CardRecord, *,
                       unreported_since: datetime | None = None) -> None:
        """The card is a field of its clarification's hash; its mark (its time) another field
        of the same HSET, named by ``k.unreported_field``."""
        name, token = self._keys.cards(card.delivery.clarification_id), card.delivery.token()
        fields = [token, codec.card_json(card)]
        if unreported_since is not None:
            fields += [k.unreported_field(token), codec.num(codec.epoch(unreported_since))]
        async with self._redis.pipeline(transaction=False) as pipe:  # one key: both run
            pipe.hset(name, items=fields)
            pipe.expire(name, self._ttls.cards)
            await pipe.execute()

    @translated
    async def cards(self, clarification_id: str) -> list[CardRecord]:
        raw = await self._redis.hgetall(self._keys.cards(clarification_id))
        fields = {_text(name): doc for name, doc in raw.items()}
        marks = {name: _since(doc) for name, doc in fields.items() if k.is_unreported_field(name)}
        return sorted((_marked(codec.card_from(doc), marks.get(k.unreported_field(name)))
                       for name, doc in fields.items() if name not in marks),
                      key=codec.card_order)

    @translated
    async def clear_unreported(self, keys: Sequence[DeliveryKey]) -> None:
        """One HDEL a clarification's hash (a cluster's slots apart), pipelined."""
        by_hash: dict[str, list[str]] = {}
        for key in keys:
            by_hash.setdefault(self._keys.cards(key.clarification_id), []).append(
                k.unreported_field(key.token()))
        if len(by_hash) == 1:  # the usual job: one clarification, one command
            [(name, fields)] = by_hash.items()
            await self._redis.hdel(name, *fields)
            return
        if not by_hash:
            return
        async with self._redis.pipeline(transaction=False) as pipe:
            for name, fields in by_hash.items():
                pipe.hdel(name, *fields)
            await pipe.execute()

    @translated
    async def replace_card(self, card: CardRecord) -> bool:
        """One script on the card's hash: written only where its field is (never recreating a
        hash that expired or a field an erasure deleted)."""
        name = self._keys.cards(card.delivery.clarification_id)
        return bool(await self._replace_field(keys=[name],
                                              args=[card.delivery.token(), codec.card_json(card)]))


class MemoryLedger:
    """``DeliveryLedger`` for ``MemoryStore`` (one lock stands in for the scripts)."""

    _lock: Any
    _ttls: k.Ttls

    def _init_ledger(self, clock: Clock) -> None:
        self._slots: Expiring[str, DeliverySlot] = Expiring(clock)
        self._cards: Expiring[str, dict[str, CardRecord]] = Expiring(clock)
        self._unreported: Expiring[str, datetime] = Expiring(clock)  # by delivery token

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

    async def record_sent(self, slot: DeliverySlot, card: CardRecord, *,
                          unreported: bool = False) -> DeliverySlot:
        sent = await self.mark_sent(slot.key, message_ref=card.message_ref)
        await self.add_card(card, unreported_since=slot.reserved_at if unreported else None)
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
    async def add_card(self, card: CardRecord, *,
                       unreported_since: datetime | None = None) -> None:
        async with self._lock:
            by_token = self._cards.get(card.delivery.clarification_id) or {}
            by_token[card.delivery.token()] = card
            self._cards.put(card.delivery.clarification_id, by_token, self._ttls.cards)
            if unreported_since is not None:
                self._unreported.put(card.delivery.token(), unreported_since, self._ttls.cards)

    async def cards(self, clarification_id: str) -> list[CardRecord]:
        async with self._lock:
            return sorted((_marked(card, self._unreported.get(token)) for token, card in
                           (self._cards.get(clarification_id) or {}).items()),
                          key=codec.card_order)

    async def clear_unreported(self, keys: Sequence[DeliveryKey]) -> None:
        async with self._lock:
            for key in keys:
                self._unreported.pop(key.token())

    async def replace_card(self, card: CardRecord) -> bool:
        async with self._lock:
            by_token = self._cards.get(card.delivery.clarification_id)
            if by_token is None or card.delivery.token() not in by_token:
                return False
            by_token[card.delivery.token()] = card
            return True


def _marked(card: CardRecord, since: datetime | None) -> CardRecord:
    """The card as read: unreported as its mark says (never as a record written back by
    ``replace_card`` said)."""
    return card if card.unreported_since == since else replace(card, unreported_since=since)


def _since(raw: str | bytes) -> datetime | None:
    try:
        return codec.when(_text(raw))
    except (TypeError, ValueError, OverflowError, OSError):
        return None  # not a time: read as no mark


def _text(name: str | bytes) -> str:
    return name.decode() if isinstance(name, bytes) else name
