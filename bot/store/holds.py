"""Jobs held for a person's working hours (docs/delivery.md, "Working hours"): each held job's
hold (its lease token and when it is due) and when a worker should look at it next, claimed by
one replica at a time, on Redis and in memory.

On Redis a hash of holds by job id and a due set beside it (``keys.Keys.holds``,
``keys.Keys.holds_due``); a claim is the due sets' one script (``bot.store.due``). Every hold
written or read is also remembered in the process (``bot.store.generation``): what it gives back
to a store that lost its data (``bot.process.storewatch``).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

from bot.store import codec
from bot.store import keys as k
from bot.store.due import CLAIM_DUE
from bot.store.errors import translated

if TYPE_CHECKING:  # redis-py's asyncio client, named for types only (bot.store.redis loads it)
    import redis.asyncio as aioredis
    from redis.asyncio.cluster import RedisCluster


class HeldJobs(Protocol):
    async def hold_put(self, job_id: str, value: str, *, at: datetime) -> None:
        """Keep a job held for working hours (its lease token and when it is due) and when a
        worker should look at it next, ``at`` (docs/delivery.md "Working hours")."""
        ...

    async def holds_due(self, *, now: datetime, limit: int = 100) -> list[tuple[str, str]]:
        """Held jobs whose ``at`` has come, (job id, value), earliest first."""
        ...

    async def hold_claim(self, job_id: str, *, now: datetime, lease_seconds: int) -> bool:
        """Take a hold whose ``at`` has come for ``lease_seconds`` (its ``at`` moves to then):
        one claim wins, so one replica at a time extends or releases it, and a claimant that
        dies lets it come due again when the claim ends. False when not due, gone, or held by
        another claim."""
        ...

    async def hold_text(self, job_id: str) -> str | None:
        """One held job's hold, as kept."""
        ...

    async def hold_drop(self, job_id: str) -> None:
        """Forget a held job (delivered, settled, or its lease lost)."""
        ...


class RedisHolds:
    """``HeldJobs`` for ``RedisStore`` (which provides ``_redis``, ``_keys`` and the holds this
    process remembers, ``bot.store.generation.RedisGenerations``)."""

    _redis: aioredis.Redis | RedisCluster
    _keys: k.Keys
    _remembered_holds: dict[str, str]

    def _hold_scripts(self) -> None:
        self._claim_hold_due = self._redis.register_script(CLAIM_DUE)

    @translated
    async def hold_put(self, job_id: str, value: str, *, at: datetime) -> None:
        # remembered in this process too: what it gives back to a store that lost its data
        # (bot.process.storewatch)
        self._remembered_holds[job_id] = value
        await self._redis.hset(self._keys.holds, job_id, value)  # type: ignore[misc]
        await self._redis.zadd(self._keys.holds_due, {job_id: at.timestamp()})

    @translated
    async def holds_due(self, *, now: datetime, limit: int = 100) -> list[tuple[str, str]]:
        found_ids = await self._redis.zrangebyscore(self._keys.holds_due, "-inf",
                                                    now.timestamp(), start=0, num=limit)
        ids = [i for i in found_ids if isinstance(i, str)]
        if not ids:
            return []
        values = await self._redis.hmget(self._keys.holds, ids)  # type: ignore[misc]
        found = [(i, v) for i, v in zip(ids, values, strict=True) if isinstance(v, str)]
        gone = [i for i, v in zip(ids, values, strict=True) if not isinstance(v, str)]
        if gone:
            await self._redis.zrem(self._keys.holds_due, *gone)
        return found

    @translated
    async def hold_claim(self, job_id: str, *, now: datetime, lease_seconds: int) -> bool:
        at = codec.epoch(now)
        won = await self._claim_hold_due(
            keys=[self._keys.holds_due],
            args=[job_id, codec.num(at), codec.num(at + lease_seconds)])
        return bool(won)

    @translated
    async def hold_text(self, job_id: str) -> str | None:
        value = await self._redis.hget(self._keys.holds, job_id)  # type: ignore[misc]
        if isinstance(value, str):
            self._remembered_holds[job_id] = value
        return value if isinstance(value, str) else None

    @translated
    async def hold_drop(self, job_id: str) -> None:
        self._remembered_holds.pop(job_id, None)
        await self._redis.hdel(self._keys.holds, job_id)  # type: ignore[misc]
        await self._redis.zrem(self._keys.holds_due, job_id)


class MemoryHolds:
    """``HeldJobs`` for ``MemoryStore`` (one lock stands in for the scripts; the holds this
    process remembers are ``bot.store.generation.MemoryGenerations``')."""

    _lock: Any
    _memory_holds: dict[str, str]

    def _init_holds(self) -> None:
        self._holds: dict[str, tuple[str, datetime]] = {}

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
