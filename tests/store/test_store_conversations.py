"""Teams conversation references, on both backends: kept per (tenant, AAD user), replaced,
forgotten, never read across tenants."""

from __future__ import annotations

import redis.asyncio as aioredis

from bot.clock import ManualClock
from bot.store import keys as k
from bot.store.base import Conversations
from bot.store.memory import MemoryStore
from bot.store.redis import RedisStore

from .conftest import T0, Backend

USER = "6f2a9f0e-1c1d-4a59-9d43-1b6e3c1f0a11"
REF = '{"conversation": {"id": "a:1"}, "serviceUrl": "https://smba.trafficmanager.net/emea/"}'


async def test_a_reference_is_kept_and_read_back(store: Conversations) -> None:
    """What was put for a user in a tenant is what is read for them there."""
    await store.conversation_put("acme", USER, REF, now=T0)
    assert await store.conversation_get("acme", USER) == REF


async def test_a_reference_is_tenant_scoped(store: Conversations) -> None:
    """The same AAD object id in another tenant reads nothing: no reference crosses tenants."""
    await store.conversation_put("acme", USER, REF, now=T0)
    assert await store.conversation_get("globex", USER) is None
    await store.conversation_put("globex", USER, '{"other": 1}', now=T0)
    assert await store.conversation_get("acme", USER) == REF


async def test_a_later_reference_replaces_the_earlier(store: Conversations) -> None:
    """A new conversation (a reinstall) replaces the old one."""
    await store.conversation_put("acme", USER, REF, now=T0)
    await store.conversation_put("acme", USER, '{"conversation": {"id": "a:2"}}', now=T0)
    assert await store.conversation_get("acme", USER) == '{"conversation": {"id": "a:2"}}'


async def test_aad_object_ids_match_without_case(store: Conversations) -> None:
    """GUIDs are case-insensitive: Teams may send either case for the same user."""
    await store.conversation_put("acme", USER.upper(), REF, now=T0)
    assert await store.conversation_get("acme", USER) == REF


async def test_an_uninstall_forgets_the_reference(store: Conversations) -> None:
    """Deleting removes it; deleting what is not there is not an error."""
    await store.conversation_put("acme", USER, REF, now=T0)
    await store.conversation_delete("acme", USER)
    assert await store.conversation_get("acme", USER) is None
    await store.conversation_delete("acme", USER)


async def test_a_reference_survives_another_store_over_the_same_state(backend: Backend) -> None:
    """Replicas share references: one puts, another reads and deletes."""
    first, second = backend.open(), backend.open()
    await first.conversation_put("acme", USER, REF, now=T0)
    assert await second.conversation_get("acme", USER) == REF
    await second.conversation_delete("acme", USER)
    assert await first.conversation_get("acme", USER) is None


async def test_a_reference_key_carries_its_ttl(redis_db: aioredis.Redis) -> None:
    """On Redis a reference expires CONVERSATION_TTL_SECONDS after it was last put."""
    store = RedisStore(redis_db, prefix="tconv")
    await store.conversation_put("acme", USER, REF, now=T0)
    expires_at = await redis_db.expiretime(k.Keys("tconv").conversation("acme", USER))
    assert expires_at == int(T0.timestamp()) + k.CONVERSATION_TTL_SECONDS


async def test_a_tenant_cannot_name_another_tenants_key() -> None:
    """Key names keep (tenant, user) pairs apart even when a tenant id holds the separator of
    the other parts (":" is allowed in tenant ids, "|" is not)."""
    keys = k.Keys("p")
    assert keys.conversation("a:b", "c") != keys.conversation("a", "b:c")


async def test_a_reference_expires_with_the_clock_in_memory() -> None:
    """The memory store ages a reference out on the injected clock, like Redis's TTL."""
    clock = ManualClock(T0)
    store = MemoryStore(clock=clock)
    await store.conversation_put("acme", USER, REF, now=T0)
    clock.advance(k.CONVERSATION_TTL_SECONDS - 1)
    assert await store.conversation_get("acme", USER) == REF
    clock.advance(1)
    assert await store.conversation_get("acme", USER) is None
