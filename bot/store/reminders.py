"""The reminders' due index (``bot.engine.reminders``): question cards' reminders by when they
are due, each claimed by one worker at a time, on Redis and in memory.

On Redis one sorted set (``keys.Keys.reminders_due``); a claim is the due sets' one script
(``bot.store.due``). In memory one lock stands in for it.
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


class ReminderIndex(Protocol):
    async def reminder_add(self, member: str, *, due: datetime) -> None:
        """Index a question card's reminder by when it is due; a member indexed already keeps
        its due time (a job handled again does not move it)."""
        ...

    async def reminders_due(self, *, now: datetime, limit: int = 100) -> list[str]:
        """Members due by ``now`` that no live claim holds, earliest first."""
        ...

    async def reminder_claim(self, member: str, *, now: datetime, lease_seconds: int) -> bool:
        """Hold a due member for ``lease_seconds`` (one claim wins; a holder that dies lets it
        come due again when the lease ends). False when not due or held by another."""
        ...

    async def reminder_later(self, member: str, *, due: datetime) -> None:
        """Move an indexed member to a new due time (the next working hour)."""
        ...

    async def reminder_done(self, member: str) -> None:
        """Forget a member: its reminder went out, or never will."""
        ...


class RedisReminders:
    """``ReminderIndex`` for ``RedisStore`` (which provides ``_redis`` and ``_keys``)."""

    _redis: aioredis.Redis | RedisCluster
    _keys: k.Keys

    def _reminder_scripts(self) -> None:
        self._claim_reminder_due = self._redis.register_script(CLAIM_DUE)

    @translated
    async def reminder_add(self, member: str, *, due: datetime) -> None:
        await self._redis.zadd(self._keys.reminders_due, {member: codec.epoch(due)}, nx=True)

    @translated
    async def reminders_due(self, *, now: datetime, limit: int = 100) -> list[str]:
        found = await self._redis.zrangebyscore(
            self._keys.reminders_due, "-inf", codec.num(codec.epoch(now)), start=0, num=limit)
        return [str(member) for member in found]

    @translated
    async def reminder_claim(self, member: str, *, now: datetime, lease_seconds: int) -> bool:
        at = codec.epoch(now)
        won = await self._claim_reminder_due(
            keys=[self._keys.reminders_due],
            args=[member, codec.num(at), codec.num(at + lease_seconds)])
        return bool(won)

    @translated
    async def reminder_later(self, member: str, *, due: datetime) -> None:
        await self._redis.zadd(self._keys.reminders_due, {member: codec.epoch(due)}, xx=True)

    @translated
    async def reminder_done(self, member: str) -> None:
        await self._redis.zrem(self._keys.reminders_due, member)


class MemoryReminders:
    """``ReminderIndex`` for ``MemoryStore`` (one lock stands in for the scripts)."""

    _lock: Any

    def _init_reminders(self) -> None:
        self._reminders: dict[str, datetime] = {}  # member -> due (or lease end)

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
