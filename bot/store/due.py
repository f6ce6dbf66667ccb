"""Due sets: members scored by when they are due, claimed one holder at a time (digest batches,
reminders, held jobs, clarifications with cards left unreported). On Redis a sorted set and one
script; in memory a dict of due times. ``RedisDueSet`` and ``MemoryDueSet`` are one such set
each (the reminders' and the unreported cards' index); the batches and holds keep their own,
tied to the rest of their state."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Protocol

from bot.store import codec
from bot.store.errors import translated

if TYPE_CHECKING:  # redis-py's asyncio client, named for types only (bot.store.redis loads it)
    import redis.asyncio as aioredis
    from redis.asyncio.cluster import RedisCluster

# KEYS: a due set (batches, reminders or holds) | ARGV: member, now, lease end -> 1 claimed
# (held until lease end), 0 not due or held by another claim
CLAIM_DUE = """
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score or tonumber(score) > tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
return 1
"""


def due_first(scores: dict[str, datetime], now: datetime, limit: int) -> list[str]:
    """Ids scored at or before now, soonest first, ties by id: a Redis sorted set's order."""
    ready = sorted((score, name) for name, score in scores.items() if score <= now)
    return [name for _, name in ready[:limit]]


class DueSet(Protocol):
    """One due set: members by when they are due; a claim holds a due member until its lease
    ends (a holder that dies lets it come due again)."""

    async def add(self, member: str, due: datetime, *, earlier: bool = False) -> None:
        """Index ``member`` at ``due``; one indexed already keeps its time (``earlier``: moves
        to ``due`` when that is sooner)."""
        ...

    async def due(self, now: datetime, limit: int) -> list[str]:
        """Members due by ``now`` that no live claim holds, earliest first."""
        ...

    async def claim(self, member: str, now: datetime, lease_seconds: int) -> bool: ...

    async def later(self, member: str, due: datetime) -> None:
        """Move an indexed member (one forgotten is not brought back)."""
        ...

    async def done(self, member: str) -> None: ...

    async def size(self) -> int: ...


class RedisDueSet:
    """``DueSet`` on Redis: one sorted set scored by epoch, claimed by ``CLAIM_DUE``."""

    def __init__(self, redis: aioredis.Redis | RedisCluster, key: str) -> None:
        self._redis, self._key = redis, key
        self._claim = redis.register_script(CLAIM_DUE)

    @translated
    async def add(self, member: str, due: datetime, *, earlier: bool = False) -> None:
        score = {member: codec.epoch(due)}
        await (self._redis.zadd(self._key, score, lt=True) if earlier
               else self._redis.zadd(self._key, score, nx=True))

    @translated
    async def due(self, now: datetime, limit: int) -> list[str]:
        found = await self._redis.zrangebyscore(self._key, "-inf", codec.num(codec.epoch(now)),
                                                start=0, num=limit)
        return [str(member) for member in found]

    @translated
    async def claim(self, member: str, now: datetime, lease_seconds: int) -> bool:
        at = codec.epoch(now)
        return bool(await self._claim(keys=[self._key],
                                      args=[member, codec.num(at), codec.num(at + lease_seconds)]))

    @translated
    async def later(self, member: str, due: datetime) -> None:
        await self._redis.zadd(self._key, {member: codec.epoch(due)}, xx=True)

    @translated
    async def done(self, member: str) -> None:
        await self._redis.zrem(self._key, member)

    @translated
    async def size(self) -> int:
        return int(await self._redis.zcard(self._key))


class MemoryDueSet:
    """``DueSet`` in memory: a dict of due times under the store's one lock."""

    def __init__(self, lock: asyncio.Lock) -> None:
        self._lock = lock
        self._due: dict[str, datetime] = {}  # member -> due (or lease end)

    def __len__(self) -> int:
        return len(self._due)

    async def add(self, member: str, due: datetime, *, earlier: bool = False) -> None:
        async with self._lock:
            held = self._due.setdefault(member, due)
            if earlier and due < held:
                self._due[member] = due

    async def due(self, now: datetime, limit: int) -> list[str]:
        async with self._lock:
            return due_first(self._due, now, limit)

    async def claim(self, member: str, now: datetime, lease_seconds: int) -> bool:
        async with self._lock:
            due = self._due.get(member)
            if due is None or due > now:
                return False
            self._due[member] = now + timedelta(seconds=lease_seconds)
            return True

    async def later(self, member: str, due: datetime) -> None:
        async with self._lock:
            if member in self._due:
                self._due[member] = due

    async def done(self, member: str) -> None:
        async with self._lock:
            self._due.pop(member, None)

    async def size(self) -> int:
        async with self._lock:
            return len(self._due)
