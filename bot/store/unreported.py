"""The clarifications whose question cards may still be unreported to the core, by when to look
again (``bot.engine.unreported``): a card is recorded with a not-yet-reported mark, its job clears
the mark once the core has its report, and an answer that finds a mark still there indexes the
clarification here for a worker to look at once a live job would have reported it. Claimed by one
worker at a time, on Redis and in memory.

On Redis one sorted set (``keys.Keys.unreported_due``); a claim is the due sets' one script
(``bot.store.due``). In memory one lock stands in for it.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

from bot.store import codec
from bot.store import keys as k
from bot.store.due import CLAIM_DUE, due_first
from bot.store.errors import translated

if TYPE_CHECKING:  # redis-py's asyncio client, named for types only (bot.store.redis loads it)
    import redis.asyncio as aioredis
    from redis.asyncio.cluster import RedisCluster


class UnreportedIndex(Protocol):
    async def unreported_add(self, clarification_id: str, *, due: datetime) -> None:
        """Look at the clarification's marked cards at ``due``; an earlier time already set
        stays."""
        ...

    async def unreported_due(self, *, now: datetime, limit: int = 100) -> list[str]:
        """Clarifications due by ``now`` that no live claim holds, earliest first."""
        ...

    async def unreported_claim(self, clarification_id: str, *, now: datetime,
                               lease_seconds: int) -> bool:
        """Hold a due clarification for ``lease_seconds`` (one claim wins; a holder that dies
        lets it come due again when the lease ends)."""
        ...

    async def unreported_later(self, clarification_id: str, *, due: datetime) -> None: ...

    async def unreported_done(self, clarification_id: str) -> None: ...

    async def unreported_waiting(self) -> int:
        """How many clarifications wait to be looked at (the soak waits for none)."""
        ...


class RedisUnreported:
    """``UnreportedIndex`` for ``RedisStore`` (which provides ``_redis`` and ``_keys``)."""

    _redis: aioredis.Redis | RedisCluster
    _keys: k.Keys

    def _unreported_scripts(self) -> None:
        self._claim_unreported_due = self._redis.register_script(CLAIM_DUE)

    @translated
    async def unreported_add(self, clarification_id: str, *, due: datetime) -> None:
        await self._redis.zadd(self._keys.unreported_due, {clarification_id: codec.epoch(due)},
                               lt=True)

    @translated
    async def unreported_due(self, *, now: datetime, limit: int = 100) -> list[str]:
        found = await self._redis.zrangebyscore(
            self._keys.unreported_due, "-inf", codec.num(codec.epoch(now)), start=0, num=limit)
        return [str(member) for member in found]

    @translated
    async def unreported_claim(self, clarification_id: str, *, now: datetime,
                               lease_seconds: int) -> bool:
        at = codec.epoch(now)
        return bool(await self._claim_unreported_due(
            keys=[self._keys.unreported_due],
            args=[clarification_id, codec.num(at), codec.num(at + lease_seconds)]))

    @translated
    async def unreported_later(self, clarification_id: str, *, due: datetime) -> None:
        await self._redis.zadd(self._keys.unreported_due, {clarification_id: codec.epoch(due)},
                               xx=True)

    @translated
    async def unreported_done(self, clarification_id: str) -> None:
        await self._redis.zrem(self._keys.unreported_due, clarification_id)

    @translated
    async def unreported_waiting(self) -> int:
        return int(await self._redis.zcard(self._keys.unreported_due))


class MemoryUnreported:
    """``UnreportedIndex`` for ``MemoryStore`` (one lock stands in for the script)."""

    _lock: Any

    def _init_unreported(self) -> None:
        self._unreported_due: dict[str, datetime] = {}  # clarification -> due (or lease end)

    async def unreported_add(self, clarification_id: str, *, due: datetime) -> None:
        async with self._lock:
            held = self._unreported_due.get(clarification_id)
            self._unreported_due[clarification_id] = due if held is None else min(held, due)

    async def unreported_due(self, *, now: datetime, limit: int = 100) -> list[str]:
        async with self._lock:
            return due_first(self._unreported_due, now, limit)

    async def unreported_claim(self, clarification_id: str, *, now: datetime,
                               lease_seconds: int) -> bool:
        async with self._lock:
            due = self._unreported_due.get(clarification_id)
            if due is None or due > now:
                return False
            self._unreported_due[clarification_id] = now + timedelta(seconds=lease_seconds)
            return True

    async def unreported_later(self, clarification_id: str, *, due: datetime) -> None:
        async with self._lock:
            if clarification_id in self._unreported_due:
                self._unreported_due[clarification_id] = due

    async def unreported_done(self, clarification_id: str) -> None:
        async with self._lock:
            self._unreported_due.pop(clarification_id, None)

    async def unreported_waiting(self) -> int:
        async with self._lock:
            return len(self._unreported_due)
