"""What only the memory store does: expiry of once-markers on the injected clock."""

from __future__ import annotations

from bot.clock import ManualClock
from bot.store.memory import MemoryStore

from .conftest import T0


async def test_mark_once_expires_with_the_clock() -> None:
    """A marker is granted again once its ttl has passed on the injected clock, not before."""
    clock = ManualClock(T0)
    store = MemoryStore(clock=clock)
    assert await store.mark_once("ns", "k", ttl_seconds=60)
    clock.advance(59)
    assert not await store.mark_once("ns", "k", ttl_seconds=60)
    clock.advance(1)
    assert await store.mark_once("ns", "k", ttl_seconds=60)
