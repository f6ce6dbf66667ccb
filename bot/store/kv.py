"""A small key-value area: once-only markers and short-lived documents by (namespace, key), each
with its time to live, on Redis (one key each: ``keys.Keys.once``, ``keys.Keys.latest``) and in
memory (read against the injected clock)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

from bot.clock import Clock
from bot.store import keys as k
from bot.store.errors import translated

if TYPE_CHECKING:  # redis-py's asyncio client, named for types only (bot.store.redis loads it)
    import redis.asyncio as aioredis
    from redis.asyncio.cluster import RedisCluster


class KeyValues(Protocol):
    # ------------------------------------------------ once-only markers
    async def mark_once(self, namespace: str, key: str, *, ttl_seconds: int) -> bool:
        """True the first time (namespace, key) is marked within ttl; False after."""
        ...

    # ------------------------------------------------ small documents
    async def kv_claim(self, namespace: str, key: str, value: str, *, ttl_seconds: int
                       ) -> bool:
        """Keep ``value`` only when (namespace, key) holds none: True for the one caller that
        set it (a claim other processes see; ``kv_put`` replaces it, ``kv_delete`` gives it
        back)."""
        ...

    async def kv_put(self, namespace: str, key: str, value: str, *, ttl_seconds: int) -> None:
        """Keep a small document (e.g. a digest's contents, for its next page)."""
        ...

    async def kv_get(self, namespace: str, key: str) -> str | None: ...

    async def kv_delete(self, namespace: str, key: str) -> bool:
        """Forget a remembered value; True when there was one."""
        ...

    async def swap_latest(self, namespace: str, key: str, value: str, *, ttl_seconds: int
                          ) -> str | None:
        """Remember ``value`` as the latest for (namespace, key); returns the previous one."""
        ...


class RedisKeyValues:
    """``KeyValues`` for ``RedisStore`` (which provides ``_redis`` and ``_keys``)."""

    _redis: aioredis.Redis | RedisCluster
    _keys: k.Keys

    @translated
    async def mark_once(self, namespace: str, key: str, *, ttl_seconds: int) -> bool:
        done = await self._redis.set(self._keys.once(namespace, key), 1, nx=True, ex=ttl_seconds)
        return bool(done)

    @translated
    async def kv_claim(self, namespace: str, key: str, value: str, *, ttl_seconds: int
                       ) -> bool:
        done = await self._redis.set(self._keys.latest(namespace, key), value, nx=True,
                                     ex=ttl_seconds)
        return bool(done)

    @translated
    async def kv_put(self, namespace: str, key: str, value: str, *, ttl_seconds: int) -> None:
        await self._redis.set(self._keys.latest(namespace, key), value, ex=ttl_seconds)

    @translated
    async def kv_delete(self, namespace: str, key: str) -> bool:
        return bool(await self._redis.delete(self._keys.latest(namespace, key)))

    @translated
    async def kv_get(self, namespace: str, key: str) -> str | None:
        value = await self._redis.get(self._keys.latest(namespace, key))
        return value if isinstance(value, str) else None

    @translated
    async def swap_latest(self, namespace: str, key: str, value: str, *, ttl_seconds: int
                          ) -> str | None:
        previous = await self._redis.set(self._keys.latest(namespace, key), value,
                                         ex=ttl_seconds, get=True)
        return previous if isinstance(previous, str) else None


class MemoryKeyValues:
    """``KeyValues`` for ``MemoryStore`` (one lock stands in for the scripts)."""

    _lock: Any
    _clock: Clock

    def _init_key_values(self) -> None:
        self._latest: dict[tuple[str, str], tuple[str, datetime]] = {}
        self._once: dict[tuple[str, str], datetime] = {}

    async def mark_once(self, namespace: str, key: str, *, ttl_seconds: int) -> bool:
        async with self._lock:
            now = self._clock.now()
            expires = self._once.get((namespace, key))
            if expires is not None and now < expires:
                return False
            self._once[(namespace, key)] = now + timedelta(seconds=ttl_seconds)
            return True

    async def kv_claim(self, namespace: str, key: str, value: str, *, ttl_seconds: int
                       ) -> bool:
        async with self._lock:
            now = self._clock.now()
            found = self._latest.get((namespace, key))
            if found is not None and found[1] > now:
                return False
            self._latest[(namespace, key)] = (value, now + timedelta(seconds=ttl_seconds))
            return True

    async def kv_put(self, namespace: str, key: str, value: str, *, ttl_seconds: int) -> None:
        async with self._lock:
            expires = self._clock.now() + timedelta(seconds=ttl_seconds)
            self._latest[(namespace, key)] = (value, expires)

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
