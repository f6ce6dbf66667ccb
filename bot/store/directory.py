"""A platform's directory of people, kept per workspace: what a bulk listing (Slack's
``users.list``) said of each member, as small documents by member id, shared by every replica
so that a person found there costs their platform no lookup of their own. On Redis one hash per
workspace (``keys.Keys.directory``; a page of members written in one pipeline, the hash's time
to live renewed with it, a member read in one ``HGET``; the workspace and each member named by
their keyed hash, ``keys.hashed``, so no key or field names anyone), in memory a dict per
workspace."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from bot.clock import Clock
from bot.store import keys as k
from bot.store.errors import translated
from bot.store.expiring import Expiring

if TYPE_CHECKING:  # redis-py's asyncio client, named for types only (bot.store.redis loads it)
    import redis.asyncio as aioredis
    from redis.asyncio.cluster import RedisCluster


class Directories(Protocol):
    async def directory_put(self, scope: str, members: Mapping[str, str], *,
                            ttl_seconds: int) -> None:
        """Keep each member's document in the directory of ``scope`` (a workspace, as its
        platform's adapter names it), replacing what it held for them; the directory lasts
        ``ttl_seconds`` from now."""
        ...

    async def directory_get(self, scope: str, member: str) -> str | None:
        """The member's document in the directory of ``scope``, or None (never another
        scope's)."""
        ...


class RedisDirectories:
    """``Directories`` for ``RedisStore`` (which provides ``_redis`` and ``_keys``)."""

    _redis: aioredis.Redis | RedisCluster
    _keys: k.Keys

    @translated
    async def directory_put(self, scope: str, members: Mapping[str, str], *,
                            ttl_seconds: int) -> None:
        if not members:
            return
        key = self._keys.directory(scope)
        async with self._redis.pipeline(transaction=False) as pipe:
            pipe.hset(key, mapping={k.hashed(m): v for m, v in members.items()})  # type: ignore[arg-type]
            pipe.expire(key, ttl_seconds)
            await pipe.execute()

    @translated
    async def directory_get(self, scope: str, member: str) -> str | None:
        value = await self._redis.hget(self._keys.directory(scope),  # type: ignore[misc]
                                       k.hashed(member))
        return value if isinstance(value, str) else None


class MemoryDirectories:
    """``Directories`` for ``MemoryStore`` (read against the injected clock)."""

    _lock: Any
    _clock: Clock

    def _init_directories(self, clock: Clock) -> None:
        self._directories: Expiring[str, dict[str, str]] = Expiring(clock)

    async def directory_put(self, scope: str, members: Mapping[str, str], *,
                            ttl_seconds: int) -> None:
        if not members:
            return
        async with self._lock:
            kept = self._directories.get(scope) or {}
            self._directories.put(scope, {**kept, **members}, ttl_seconds)

    async def directory_get(self, scope: str, member: str) -> str | None:
        async with self._lock:
            return (self._directories.get(scope) or {}).get(member)
