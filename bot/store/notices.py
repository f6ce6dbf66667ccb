"""Steward notices batched per steward: each steward's durable list (``NoticeLists``), on Redis
and in memory.

A steward's notices live under one ``{tenant|steward}`` hash tag: the queue (a sorted set of
clarification ids scored by when they are due), the items (their JSON), the ids seen (so a job
run again queues nothing twice) and the batch taken for sending (its id, its lease's end and its
items). Every script touches one steward's keys only, so it stays on one Redis Cluster node; the
due set (``keys.notices_due``) is kept beside them with single-key commands: after each script
the steward's next due time is written there, and a steward with nothing left is removed and
then looked at once more, so a notice queued meanwhile is never left without a due entry.

A batch holds its items until ``notice_done``: a worker that dies between taking and sending
leaves it leased, and when the lease runs out the same batch (same id, same items) is taken
again, so its message keeps one delivery key and is not sent twice where the platform can tell.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol
from uuid import uuid4

from bot.store import codec
from bot.store import keys as k
from bot.store.errors import translated
from bot.store.records import NoticeBatch, NoticeItem

if TYPE_CHECKING:  # redis-py's asyncio client, named for types only (bot.store.redis loads it)
    import redis.asyncio as aioredis
    from redis.asyncio.cluster import RedisCluster


class NoticeLists(Protocol):
    async def notice_add(self, tenant_id: str, steward_id: str, item: NoticeItem, *,
                         now: datetime, window_seconds: int) -> bool:
        """Queue a notice on the steward's durable list; False when this clarification's
        notice was queued before (within ``keys.SLOT_TTL_SECONDS``). The first notice of a
        quiet period opens a window: every notice queued inside it is due at its end."""
        ...

    async def notices_due(self, *, now: datetime, limit: int = 100) -> list[tuple[str, str]]:
        """(tenant, steward) pairs whose notices are due, or whose taken batch's lease ran out."""
        ...

    async def notice_take(self, tenant_id: str, steward_id: str, *, now: datetime,
                          lease_seconds: int, limit: int) -> NoticeBatch | None:
        """The steward's batch to send, held for ``lease_seconds``: a batch taken before whose
        lease ran out (the same id and items: its holder died), else up to ``limit`` due
        notices (oldest window first, then by clarification id) as a new batch. None when
        nothing is due or a live lease holds the steward's batch."""
        ...

    async def notice_done(self, batch: NoticeBatch, *, now: datetime) -> None:
        """The batch was sent (or given up): forget it."""
        ...

# The next due time of one steward's list: the batch's lease end, or the first queued notice's
# due time, whichever comes first; false when the list is empty.
_NEXT = """
local function next_due(queue, batch)
  local best = nil
  local held = redis.call('HGET', batch, 'until')
  if held then best = tonumber(held) end
  local first = redis.call('ZRANGE', queue, 0, 0, 'WITHSCORES')
  if first[2] and (not best or tonumber(first[2]) < best) then best = tonumber(first[2]) end
  if best then return tostring(best) end
  return false
end
"""

# KEYS: queue, items, seen, batch | ARGV: id, item JSON, now, window, seen ttl
# -> {1 queued / 0 seen before, next due}
NOTICE_ADD = _NEXT + """
local queue, items, seen, batch = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local now = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', seen, '-inf', now - tonumber(ARGV[5]))
if redis.call('ZADD', seen, 'NX', ARGV[3], ARGV[1]) == 0 then
  return {0, next_due(queue, batch)}
end
local due = now + tonumber(ARGV[4])
local first = redis.call('ZRANGE', queue, 0, 0, 'WITHSCORES')
if first[2] then due = tonumber(first[2]) end  -- the open window's end
redis.call('ZADD', queue, tostring(due), ARGV[1])
redis.call('HSET', items, ARGV[1], ARGV[2])
for _, key in ipairs(KEYS) do redis.call('EXPIRE', key, ARGV[5]) end
return {1, next_due(queue, batch)}
"""

# KEYS: queue, items, batch | ARGV: now, lease end, limit, new batch id
# -> {batch id or false, items joined by newlines, next due}
NOTICE_TAKE = _NEXT + """
local queue, items, batch = KEYS[1], KEYS[2], KEYS[3]
local held = redis.call('HMGET', batch, 'id', 'until', 'items')
if held[1] then
  if tonumber(held[2]) > tonumber(ARGV[1]) then return {false, '', next_due(queue, batch)} end
  redis.call('HSET', batch, 'until', ARGV[2])
  return {held[1], held[3], next_due(queue, batch)}
end
local ids = redis.call('ZRANGEBYSCORE', queue, '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[3]))
if #ids == 0 then return {false, '', next_due(queue, batch)} end
local docs = redis.call('HMGET', items, unpack(ids))
local kept = {}
for _, doc in ipairs(docs) do if doc then table.insert(kept, doc) end end
redis.call('ZREM', queue, unpack(ids))
redis.call('HDEL', items, unpack(ids))
local joined = table.concat(kept, '\\n')
redis.call('HSET', batch, 'id', ARGV[4], 'until', ARGV[2], 'items', joined)
return {ARGV[4], joined, next_due(queue, batch)}
"""

# KEYS: queue, batch | ARGV: batch id -> next due
NOTICE_DONE = _NEXT + """
if redis.call('HGET', KEYS[2], 'id') == ARGV[1] then redis.call('DEL', KEYS[2]) end
return next_due(KEYS[1], KEYS[2])
"""

# KEYS: queue, batch -> next due
NOTICE_NEXT = _NEXT + "return next_due(KEYS[1], KEYS[2])\n"


def item_json(item: NoticeItem) -> str:
    return json.dumps({"c": item.clarification_id, "j": item.job_id, "a": item.attempt,
                       "p": list(item.asked)}, separators=(",", ":"))


def item_from(doc: str) -> NoticeItem:
    raw = json.loads(doc)
    return NoticeItem(raw["c"], raw["j"], int(raw["a"]), tuple(raw["p"]))


def batch_id(tenant_id: str, steward_id: str, now: datetime) -> str:
    """A new batch's id: its message's delivery key, so never one an earlier batch had (two
    batches can be taken at the same instant)."""
    return f"{tenant_id}|{steward_id}|{round(codec.epoch(now) * 1000)}|{uuid4().hex[:12]}"


class RedisNotices:
    """``NoticeLists`` for ``RedisStore`` (which provides ``_redis`` and ``_keys``)."""

    _redis: aioredis.Redis | RedisCluster
    _keys: k.Keys

    def _notice_scripts(self) -> None:
        self._n_add = self._redis.register_script(NOTICE_ADD)
        self._n_take = self._redis.register_script(NOTICE_TAKE)
        self._n_done = self._redis.register_script(NOTICE_DONE)
        self._n_next = self._redis.register_script(NOTICE_NEXT)

    def _n_keys(self, tenant_id: str, steward_id: str, *parts: str) -> list[str]:
        return [self._keys.notices(tenant_id, steward_id, part) for part in parts]

    @translated
    async def notice_add(self, tenant_id: str, steward_id: str, item: NoticeItem, *,
                         now: datetime, window_seconds: int) -> bool:
        added, due = await self._n_add(
            keys=self._n_keys(tenant_id, steward_id, "queue", "items", "seen", "batch"),
            args=[item.clarification_id, item_json(item), codec.num(codec.epoch(now)),
                  window_seconds, k.SLOT_TTL_SECONDS])
        await self._n_schedule(tenant_id, steward_id, due)
        return bool(added)

    @translated
    async def notices_due(self, *, now: datetime, limit: int = 100) -> list[tuple[str, str]]:
        owners = await self._redis.zrangebyscore(
            self._keys.notices_due, "-inf", codec.num(codec.epoch(now)), start=0, num=limit)
        return [_owner(str(owner)) for owner in owners]

    @translated
    async def notice_take(self, tenant_id: str, steward_id: str, *, now: datetime,
                          lease_seconds: int, limit: int) -> NoticeBatch | None:
        at = codec.epoch(now)
        taken, joined, due = await self._n_take(
            keys=self._n_keys(tenant_id, steward_id, "queue", "items", "batch"),
            args=[codec.num(at), codec.num(at + lease_seconds), limit,
                  batch_id(tenant_id, steward_id, now)])
        await self._n_schedule(tenant_id, steward_id, due)
        if not taken:
            return None
        items = tuple(item_from(doc) for doc in joined.split("\n") if doc)
        return NoticeBatch(str(taken), tenant_id, steward_id, items)

    @translated
    async def notice_done(self, batch: NoticeBatch, *, now: datetime) -> None:
        due = await self._n_done(
            keys=self._n_keys(batch.tenant_id, batch.steward_id, "queue", "batch"),
            args=[batch.batch_id])
        await self._n_schedule(batch.tenant_id, batch.steward_id, due)

    async def _n_schedule(self, tenant_id: str, steward_id: str, due: Any) -> None:
        """The steward's entry in the due set follows their list's next due time. An empty
        list's entry is removed, then the list is read once more: a notice queued by another
        worker in between has written its own entry before that read, or is seen by it."""
        owner = f"{tenant_id}|{steward_id}"
        if due:
            await self._redis.zadd(self._keys.notices_due, {owner: float(due)})
            return
        await self._redis.zrem(self._keys.notices_due, owner)
        due = await self._n_next(keys=self._n_keys(tenant_id, steward_id, "queue", "batch"))
        if due:
            await self._redis.zadd(self._keys.notices_due, {owner: float(due)})


def _owner(owner: str) -> tuple[str, str]:
    tenant_id, _, steward_id = owner.partition("|")  # no tenant id holds a "|"
    return tenant_id, steward_id


@dataclass(slots=True)
class _Held:
    batch: NoticeBatch
    until: datetime


@dataclass(slots=True)
class _List:
    queue: dict[str, tuple[datetime, NoticeItem]] = field(default_factory=dict)  # by id
    seen: dict[str, datetime] = field(default_factory=dict)
    held: _Held | None = None

    def next_due(self) -> datetime | None:
        times = [due for due, _ in self.queue.values()]
        if self.held is not None:
            times.append(self.held.until)
        return min(times, default=None)


class MemoryNotices:
    """``NoticeLists`` for ``MemoryStore`` (one lock stands in for the scripts)."""

    _lock: Any
    _notice_lists: dict[tuple[str, str], _List]

    async def notice_add(self, tenant_id: str, steward_id: str, item: NoticeItem, *,
                         now: datetime, window_seconds: int) -> bool:
        async with self._lock:
            book = self._notice_lists.setdefault((tenant_id, steward_id), _List())
            horizon = now - timedelta(seconds=k.SLOT_TTL_SECONDS)
            book.seen = {c: at for c, at in book.seen.items() if at > horizon}
            if item.clarification_id in book.seen:
                return False
            book.seen[item.clarification_id] = now
            first = min((due for due, _ in book.queue.values()), default=None)
            due = first if first is not None else now + timedelta(seconds=window_seconds)
            book.queue[item.clarification_id] = (due, item)
            return True

    async def notices_due(self, *, now: datetime, limit: int = 100) -> list[tuple[str, str]]:
        async with self._lock:
            ready = sorted((due, owner) for owner, book in self._notice_lists.items()
                           if (due := book.next_due()) is not None and due <= now)
            return [owner for _, owner in ready[:limit]]

    async def notice_take(self, tenant_id: str, steward_id: str, *, now: datetime,
                          lease_seconds: int, limit: int) -> NoticeBatch | None:
        async with self._lock:
            book = self._notice_lists.get((tenant_id, steward_id))
            if book is None:
                return None
            until = now + timedelta(seconds=lease_seconds)
            if book.held is not None:
                if book.held.until > now:
                    return None
                book.held.until = until
                return book.held.batch
            # a sorted set's order: by due time, then by id
            ready = sorted((due, c) for c, (due, _) in book.queue.items() if due <= now)[:limit]
            if not ready:
                return None
            items = tuple(book.queue.pop(c)[1] for _, c in ready)
            batch = NoticeBatch(batch_id(tenant_id, steward_id, now), tenant_id, steward_id,
                                items)
            book.held = _Held(batch, until)
            return batch

    async def notice_done(self, batch: NoticeBatch, *, now: datetime) -> None:
        async with self._lock:
            book = self._notice_lists.get((batch.tenant_id, batch.steward_id))
            if book is not None and book.held is not None \
                    and book.held.batch.batch_id == batch.batch_id:
                book.held = None
