"""Contract: the key-value area (``bot.store.kv``): once-only markers and small documents, on
memory, a real Redis and a real Redis Cluster; and the memory store's expiry of them on the
injected clock."""

from __future__ import annotations

from bot.clock import ManualClock
from bot.store.base import KeyValues
from bot.store.memory import MemoryStore

from .conftest import T0


async def test_mark_once_is_true_only_the_first_time(store: KeyValues) -> None:
    """A marker is granted once per (namespace, key); other keys and namespaces are separate."""
    assert await store.mark_once("steward", "c1", ttl_seconds=3600)
    assert not await store.mark_once("steward", "c1", ttl_seconds=3600)
    assert await store.mark_once("steward", "c2", ttl_seconds=3600)
    assert await store.mark_once("conflict", "c1", ttl_seconds=3600)


async def test_swap_latest_returns_the_previous_value(store: KeyValues) -> None:
    """swap_latest remembers the newest value per key and hands back the one it replaced."""
    assert await store.swap_latest("answer", "c1|p1", "0", ttl_seconds=60) is None
    assert await store.swap_latest("answer", "c1|p1", "0", ttl_seconds=60) == "0"
    assert await store.swap_latest("answer", "c1|p1", "1", ttl_seconds=60) == "0"
    assert await store.swap_latest("answer", "c1|p2", "1", ttl_seconds=60) is None
    assert await store.swap_latest("answer", "c1|p1", "0", ttl_seconds=60) == "1"


async def test_kv_keeps_a_document_until_replaced(store: KeyValues) -> None:
    """kv_put stores a small document that kv_get reads back; unknown keys read as None."""
    assert await store.kv_get("digest", "d.1") is None
    await store.kv_put("digest", "d.1", '{"items": []}', ttl_seconds=60)
    assert await store.kv_get("digest", "d.1") == '{"items": []}'
    await store.kv_put("digest", "d.1", '{"items": [1]}', ttl_seconds=60)
    assert await store.kv_get("digest", "d.1") == '{"items": [1]}'


async def test_mark_once_expires_with_the_clock() -> None:
    """A marker is granted again once its ttl has passed on the injected clock, not before."""
    clock = ManualClock(T0)
    store = MemoryStore(clock=clock)
    assert await store.mark_once("ns", "k", ttl_seconds=60)
    clock.advance(59)
    assert not await store.mark_once("ns", "k", ttl_seconds=60)
    clock.advance(1)
    assert await store.mark_once("ns", "k", ttl_seconds=60)


async def test_kv_claim_is_granted_to_one_caller_until_given_back(store: KeyValues) -> None:
    """kv_claim sets a value only where none is kept: the first caller wins, a second does
    not (the value stays the first's); kv_put replaces it and kv_delete gives it back."""
    assert await store.kv_claim("install", "t|u", "pending", ttl_seconds=60)
    assert not await store.kv_claim("install", "t|u", "other", ttl_seconds=60)
    assert await store.kv_get("install", "t|u") == "pending"
    await store.kv_put("install", "t|u", "installed", ttl_seconds=60)
    assert not await store.kv_claim("install", "t|u", "pending", ttl_seconds=60)
    assert await store.kv_delete("install", "t|u")
    assert await store.kv_claim("install", "t|u", "pending", ttl_seconds=60)


async def test_kv_claim_expires_with_the_clock() -> None:
    clock = ManualClock(T0)
    store = MemoryStore(clock=clock)
    assert await store.kv_claim("ns", "k", "1", ttl_seconds=60)
    clock.advance(59)
    assert not await store.kv_claim("ns", "k", "2", ttl_seconds=60)
    clock.advance(1)
    assert await store.kv_claim("ns", "k", "3", ttl_seconds=60)
