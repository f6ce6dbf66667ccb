"""Contract: the durable answer outbox (put, claim with a lease, retry, done)."""

from __future__ import annotations

from bot.store.base import Store

from .conftest import T0, at


async def test_put_twice_is_a_duplicate(store: Store) -> None:
    """The same entry id is added once; the second put returns False and changes nothing."""
    assert await store.outbox_put("a1", '{"answer": 1}', now=T0)
    assert not await store.outbox_put("a1", '{"answer": 2}', now=at(5))
    assert await store.outbox_size() == 1
    [entry] = await store.outbox_claim(now=at(5), lease_seconds=30, limit=10)
    assert (entry.payload, entry.created_at) == ('{"answer": 1}', T0)


async def test_claim_leases_and_counts_attempts(store: Store) -> None:
    """A claimed entry is hidden for the lease, then claimable again with attempts raised."""
    await store.outbox_put("a1", "{}", now=T0)
    [first] = await store.outbox_claim(now=T0, lease_seconds=30, limit=10)
    assert (first.entry_id, first.attempts) == ("a1", 1)
    assert await store.outbox_claim(now=at(29), lease_seconds=30, limit=10) == []
    [second] = await store.outbox_claim(now=at(30), lease_seconds=30, limit=10)
    assert second.attempts == 2


async def test_retry_sets_the_next_due_time(store: Store) -> None:
    """A retried entry comes back at the time given, not before."""
    await store.outbox_put("a1", "{}", now=T0)
    await store.outbox_claim(now=T0, lease_seconds=30, limit=10)
    await store.outbox_retry("a1", at=at(100))
    assert await store.outbox_claim(now=at(99), lease_seconds=30, limit=10) == []
    [entry] = await store.outbox_claim(now=at(100), lease_seconds=30, limit=10)
    assert entry.attempts == 2


async def test_done_removes_the_entry(store: Store) -> None:
    """A forwarded entry leaves the outbox and a late retry does not bring it back."""
    await store.outbox_put("a1", "{}", now=T0)
    await store.outbox_claim(now=T0, lease_seconds=30, limit=10)
    await store.outbox_done("a1")
    await store.outbox_retry("a1", at=at(1))
    assert await store.outbox_size() == 0
    assert await store.outbox_claim(now=at(3600), lease_seconds=30, limit=10) == []


async def test_a_new_entry_after_done_starts_at_one_attempt(store: Store) -> None:
    """Attempts belong to one entry's life: a re-put id after done counts from one again."""
    await store.outbox_put("a1", "{}", now=T0)
    await store.outbox_claim(now=T0, lease_seconds=30, limit=10)
    await store.outbox_done("a1")
    assert await store.outbox_put("a1", "{}", now=at(1))
    [entry] = await store.outbox_claim(now=at(1), lease_seconds=30, limit=10)
    assert entry.attempts == 1


async def test_claim_takes_the_earliest_up_to_the_limit(store: Store) -> None:
    """A claim returns at most limit entries, the earliest due first; the rest wait."""
    for n, entry_id in enumerate(["a3", "a1", "a2"]):
        await store.outbox_put(entry_id, "{}", now=at(n))
    got = await store.outbox_claim(now=at(10), lease_seconds=30, limit=2)
    assert [e.entry_id for e in got] == ["a3", "a1"]
    rest = await store.outbox_claim(now=at(10), lease_seconds=30, limit=2)
    assert [e.entry_id for e in rest] == ["a2"]
    assert await store.outbox_size() == 3


async def test_entries_are_not_claimable_before_they_are_due(store: Store) -> None:
    """An entry put at a time is not claimed by a caller whose now is earlier."""
    await store.outbox_put("a1", "{}", now=at(10))
    assert await store.outbox_claim(now=at(9), lease_seconds=30, limit=10) == []
