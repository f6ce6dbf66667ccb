"""Teams conversation references: each user's 1:1 conversation per tenant (which proactive
sends continue), kept until the app is uninstalled or ``keys.CONVERSATION_TTL_SECONDS``, on
Redis (one key each, ``keys.Keys.conversation``) and in memory."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

from bot.clock import Clock
from bot.store import keys as k
from bot.store.errors import translated
from bot.store.expiring import Expiring

if TYPE_CHECKING:  # redis-py's asyncio client, named for types only (bot.store.redis loads it)
    import redis.asyncio as aioredis
    from redis.asyncio.cluster import RedisCluster


class Conversations(Protocol):
    async def conversation_put(self, tenant_id: str, aad_object_id: str, reference_json: str,
                               *, now: datetime) -> None:
        """Keep the 1:1 conversation reference of a Teams user in a tenant (replacing any
        earlier one); it lasts ``keys.CONVERSATION_TTL_SECONDS`` from ``now``."""
        ...

    async def conversation_get(self, tenant_id: str, aad_object_id: str) -> str | None:
        """The reference kept for that user in that tenant, or None (never another tenant's)."""
        ...

    async def conversation_delete(self, tenant_id: str, aad_object_id: str) -> None:
        """Forget it (the app was uninstalled); forgetting nothing is not an error."""
        ...


class RedisConversations:
    """``Conversations`` for ``RedisStore`` (which provides ``_redis``, ``_keys`` and
    ``_ttls``)."""

    _redis: aioredis.Redis | RedisCluster
    _keys: k.Keys
    _ttls: k.Ttls

    @translated
    async def conversation_put(self, tenant_id: str, aad_object_id: str, reference_json: str,
                               *, now: datetime) -> None:
        expires = now + timedelta(seconds=self._ttls.conversation)
        await self._redis.set(self._keys.conversation(tenant_id, aad_object_id), reference_json,
                              exat=int(expires.timestamp()))

    @translated
    async def conversation_get(self, tenant_id: str, aad_object_id: str) -> str | None:
        value = await self._redis.get(self._keys.conversation(tenant_id, aad_object_id))
        return value if isinstance(value, str) else None

    @translated
    async def conversation_delete(self, tenant_id: str, aad_object_id: str) -> None:
        await self._redis.delete(self._keys.conversation(tenant_id, aad_object_id))


class MemoryConversations:
    """``Conversations`` for ``MemoryStore`` (read against the injected clock)."""

    _lock: Any
    _clock: Clock
    _ttls: k.Ttls

    def _init_conversations(self, clock: Clock) -> None:
        self._conversations: Expiring[tuple[str, str], str] = Expiring(clock)

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
