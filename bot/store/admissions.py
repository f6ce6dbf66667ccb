"""Admissions and digest batches: each card admitted DIRECT, DIGESTED or CAPPED against its
person's daily cap and digest window, and the digest batches those windows fill, claimed for
sending when due, on Redis and in memory.

On Redis one person's admissions, cap counter and window are fields of their delivery-state hash
(shared with the ledger's slots: ``bot.store.ledger``) and their batches one hash beside it, both
under ``{p:<person>}``: admitting a card is one script over them. The due set of batches
(``keys.Keys.batches_due``) is no person's key: it is written after the script.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol, cast

from bot.clock import Clock
from bot.store import codec
from bot.store import keys as k
from bot.store.due import CLAIM_DUE, due_first
from bot.store.errors import translated
from bot.store.expiring import Expiring
from bot.store.group import GroupCommit
from bot.store.ledger import TOUCH
from bot.store.records import (
    Admission,
    Decision,
    DeliveryKey,
    DeliverySlot,
    DigestBatch,
    DigestItem,
    SlotState,
)

if TYPE_CHECKING:  # redis-py's asyncio client, named for types only (bot.store.redis loads it)
    import redis.asyncio as aioredis
    from redis.asyncio.cluster import RedisCluster


class Admissions(Protocol):
    # ------------------------------------------------ caps and digest batching
    async def admit(
        self, key: DeliveryKey, *, item: DigestItem, day: str, now: datetime, cap: int,
        threshold: int, window_seconds: int, batched: bool, reserve_for: str | None = None,
    ) -> Admission:
        """Decide DIRECT, DIGESTED or CAPPED for one delivery, atomically and idempotently.

        With ``reserve_for`` (a worker id), a fresh DIRECT decision also reserves the delivery
        for that worker, as ``reserve`` would, in the same step (one script on Redis):
        ``reserved`` and ``created`` say what ``reserve`` would have returned.

        ``day`` is the person's local calendar day (the cap's key). ``batched`` is True for
        normal severity: inside a person's window (opened by their first normal card, lasting
        ``window_seconds``) the first ``threshold`` normal cards are DIRECT and the rest join one
        digest due at the window's end. A DIRECT card costs 1 against the cap; a whole digest
        costs 1, charged when its first item joins. High and critical (batched=False) are DIRECT
        or CAPPED only. Admitting the same key again returns the first decision (replayed=True).
        """
        ...

    async def due_batches(self, *, now: datetime, limit: int = 100) -> list[str]:
        """Batch ids whose window has ended and that no live claim holds."""
        ...

    async def claim_batch(self, batch_id: str, *, now: datetime, lease_seconds: int
                          ) -> DigestBatch | None:
        """Claim a due batch for sending (None when not due or claimed by another worker)."""
        ...

    async def delay_batch(self, batch_id: str, *, until: datetime) -> None:
        """A claimed batch given back, due again at ``until`` (the person's next working hour),
        its items kept."""
        ...

    async def finish_batch(self, batch_id: str) -> None:
        """The digest was sent: forget the batch."""
        ...


# KEYS (one person's, one hash tag): person, digest batches
# ARGV: now, cap, threshold, batched (1/0), due of a new window, batch id of a new window,
#       that window's start in ms (its batch's fields in the digest hash), item clarification id,
#       item JSON, the person's local day, delivery token, hash ttl, slot ttl, refresh,
#       digest ttl, slot JSON to reserve ('' none)
# -> {decision JSON, 1 when replayed, 1 when this call opened a batch[, slot JSON, 1 when the
#    reservation was made]}: a fresh DIRECT decision reserves the slot as RESERVE does.
#    The caller adds an opened batch to the due set (a key of no person, so not in here).
# The usual card costs one HMGET and one HSET: the admission, the slot, the cap counter and the
# window are fields of one hash, written together.
ADMIT = TOUCH + """
local h, digest = KEYS[1], KEYS[2]
local now, cap_n, threshold = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local batched = ARGV[4] == '1'
local clar, item, day, tok = ARGV[8], ARGV[9], ARGV[10], ARGV[11]
local r = redis.call('HMGET', h, 'a:' .. tok, 's:' .. tok, 'x', 'c', 'c0',
                     'ws', 'wd', 'wn', 'wc', 'wb', 'wm')
if r[1] then return {r[1], 1, 0} end

local sets, opened = {}, 0
local counter, used  -- the field counting `day` and its count, once charge() has looked
local function charge()
  if not counter then
    local prefix = day .. ' '
    for i, name in ipairs({'c', 'c0'}) do
      local v = r[3 + i]
      if not counter and v and string.sub(v, 1, #prefix) == prefix then
        counter, used = name, tonumber(string.sub(v, #prefix + 1))
      end
    end
    if not counter then
      -- a new day: the last one is kept beside it, for a replica whose clock is behind
      if r[4] then sets['c0'] = r[4] end
      counter, used = 'c', 0
    end
  end
  if used >= cap_n then return false end
  used = used + 1
  return true
end

local function decide(decision, batch_id, due_at)
  local doc = cjson.encode({decision = decision, batch_id = batch_id, due_at = due_at, at = now})
  sets['a:' .. tok] = doc
  if counter then sets[counter] = day .. ' ' .. used end
  local out = {doc, 0, opened}
  if decision == 'direct' and ARGV[16] ~= '' then
    if r[2] then
      out = {doc, 0, opened, r[2], 0}
    else
      sets['s:' .. tok] = ARGV[16]
      out = {doc, 0, opened, ARGV[16], 1}
    end
  end
  write(h, sets, touch(h, r[3], now, ARGV[13], ARGV[14], sets), ARGV[12])
  return out
end

if not batched then
  if charge() then return decide('direct') end
  return decide('capped')
end

-- start, due, direct count, charged (0/1), batch id, batch's field prefix
local w = {r[6], r[7], r[8], r[9], r[10], r[11]}
local open = w[2] and tonumber(now) < tonumber(w[2])
if open and w[4] == '1' then
  -- a batch already claimed for sending (a replica with a late clock) takes no more items
  local b = redis.call('HMGET', digest, w[6] .. ':due', w[6] .. ':claimed')
  if not b[1] or b[2] then open = false end
end
if not open then
  w = {now, ARGV[5], '0', '0', ARGV[6], ARGV[7]}
  sets['ws'], sets['wd'], sets['wn'], sets['wc'] = now, ARGV[5], '0', '0'
  sets['wb'], sets['wm'] = ARGV[6], ARGV[7]
end

if tonumber(w[3]) < threshold then
  if not charge() then return decide('capped') end
  sets['wn'] = tostring(tonumber(w[3]) + 1)
  return decide('direct')
end

local f = w[6] .. ':'
if w[4] ~= '1' then
  -- the whole digest costs one unit, charged when its first item joins
  if not charge() then return decide('capped') end
  sets['wc'] = '1'
  redis.call('HSET', digest, f .. 'due', w[2], f .. 'n', 0)
  redis.call('EXPIRE', digest, ARGV[15])
  opened = 1
end
if redis.call('HEXISTS', digest, f .. 'i:' .. clar) == 0 then
  local seq = redis.call('HINCRBY', digest, f .. 'n', 1)
  redis.call('HSET', digest, f .. 'i:' .. clar, seq .. '|' .. item)
end
return decide('digested', w[5], w[2])
"""

# KEYS: a person's digest batches | ARGV: the batch's window start (ms)
# -> the batch's fields (flat, without their prefix), now closed to new items; {} when gone
TAKE_BATCH = """
local f = ARGV[1] .. ':'
if redis.call('HEXISTS', KEYS[1], f .. 'due') == 0 then return {} end
redis.call('HSET', KEYS[1], f .. 'claimed', 1)
local out, all = {}, redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  if string.sub(all[i], 1, #f) == f then
    table.insert(out, string.sub(all[i], #f + 1))
    table.insert(out, all[i + 1])
  end
end
return out
"""

# KEYS: a person's digest batches | ARGV: the batch's window start (ms) -> fields removed
DROP_BATCH = """
local f, gone = ARGV[1] .. ':', {}
for _, name in ipairs(redis.call('HKEYS', KEYS[1])) do
  if string.sub(name, 1, #f) == f then table.insert(gone, name) end
end
if #gone == 0 then return 0 end
return redis.call('HDEL', KEYS[1], unpack(gone))
"""


class RedisAdmissions:
    """``Admissions`` for ``RedisStore``, beside its ledger (``_as_recorded``: a replayed
    reservation read with its card)."""

    _redis: aioredis.Redis | RedisCluster
    _keys: k.Keys
    _ttls: k.Ttls
    _as_recorded: Callable[[DeliverySlot], Awaitable[DeliverySlot]]

    def _admission_scripts(self) -> None:
        # a card's admission, sent with those of other jobs in the same turn (group commit)
        self._admit = GroupCommit(self._redis, self._redis.register_script(ADMIT))
        self._claim_batch_due = self._redis.register_script(CLAIM_DUE)
        self._take_batch = self._redis.register_script(TAKE_BATCH)
        self._drop_batch = self._redis.register_script(DROP_BATCH)

    @translated
    async def admit(
        self, key: DeliveryKey, *, item: DigestItem, day: str, now: datetime, cap: int,
        threshold: int, window_seconds: int, batched: bool, reserve_for: str | None = None,
    ) -> Admission:
        start = codec.epoch(now)
        person, ttl = key.person_id, self._ttls
        names = [self._keys.person(person), self._keys.digest(person)]
        fresh = "" if reserve_for is None else codec.slot_json(DeliverySlot(
            key=key, state=SlotState.RESERVED, worker_id=reserve_for, reserved_at=now))
        batch = k.batch_id(person, start)
        args: list[str | int] = [
            codec.num(start), cap, threshold, int(batched), codec.num(start + window_seconds),
            batch, k.batch_parts(batch)[1], item.clarification_id, codec.item_json(item), day,
            key.token(), ttl.person(window_seconds), ttl.slot, k.PERSON_REFRESH_SECONDS,
            ttl.slot, fresh,
        ]
        raw, replayed, opened, *held = await self._admit(keys=names, args=args)
        doc: dict[str, Any] = json.loads(raw)
        due = doc.get("due_at")
        admission = Admission(decision=Decision(doc["decision"]), batch_id=doc.get("batch_id"),
                              due_at=None if due is None else codec.when(due),
                              replayed=bool(replayed))
        if admission.batch_id is not None and (opened or replayed):
            # the due set is no person's key: added after the script, again on a replay (a
            # crash between the two), never moved (a claim's lease end stays)
            await self._redis.zadd(self._keys.batches_due, {admission.batch_id: str(due)},
                                   nx=True)
        if held:
            slot_raw, created = held
            slot = codec.slot_from(key, slot_raw)
            return replace(admission, reserved=slot if created else await self._as_recorded(slot),
                           created=bool(created))
        return admission

    @translated
    async def due_batches(self, *, now: datetime, limit: int = 100) -> list[str]:
        until = codec.num(codec.epoch(now))
        ids = await self._redis.zrangebyscore(self._keys.batches_due, "-inf", until,
                                              start=0, num=limit)
        return cast(list[str], ids)

    @translated
    async def delay_batch(self, batch_id: str, *, until: datetime) -> None:
        await self._redis.zadd(self._keys.batches_due, {batch_id: codec.epoch(until)}, xx=True)

    @translated
    async def claim_batch(self, batch_id: str, *, now: datetime, lease_seconds: int
                          ) -> DigestBatch | None:
        """Held in the due set first (one claim wins), then closed to new items and read in the
        person's slot: an item admitted before that is in the batch, none after."""
        at = codec.epoch(now)
        won = await self._claim_batch_due(
            keys=[self._keys.batches_due],
            args=[batch_id, codec.num(at), codec.num(at + lease_seconds)])
        if not won:
            return None
        person, start = k.batch_parts(batch_id)
        flat = await self._take_batch(keys=[self._keys.digest(person)], args=[start])
        if not flat:  # sent and forgotten, or expired: nothing to claim
            await self._redis.zrem(self._keys.batches_due, batch_id)
            return None
        fields = dict(zip(flat[::2], flat[1::2], strict=True))
        return codec.batch_from(batch_id, {**fields, "person": person})

    @translated
    async def finish_batch(self, batch_id: str) -> None:
        person, start = k.batch_parts(batch_id)
        await self._drop_batch(keys=[self._keys.digest(person)], args=[start])
        await self._redis.zrem(self._keys.batches_due, batch_id)


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


class MemoryAdmissions:
    """``Admissions`` for ``MemoryStore``, beside its ledger (``reserve``: a fresh DIRECT
    decision's reservation)."""

    _lock: Any
    _ttls: k.Ttls
    reserve: Callable[..., Awaitable[tuple[DeliverySlot, bool]]]

    def _init_admissions(self, clock: Clock) -> None:
        self._admissions: Expiring[str, Admission] = Expiring(clock)
        self._caps: Expiring[tuple[str, str], int] = Expiring(clock)
        self._windows: Expiring[str, _Window] = Expiring(clock)
        self._batches: Expiring[str, _Batch] = Expiring(clock)
        self._batches_due: dict[str, datetime] = {}

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
