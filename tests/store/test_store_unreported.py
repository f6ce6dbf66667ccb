"""Contract: the index of clarifications whose question cards may still be unreported to the core
(``bot.store.unreported``: add, due, claim, later, done, waiting), on memory, a real Redis and a
real Redis Cluster."""

from __future__ import annotations

import asyncio

from bot.store.base import UnreportedIndex

from .conftest import Backend, at

LEASE = 60


async def test_clarifications_come_due_in_order_and_the_earlier_time_stays(
        store: UnreportedIndex) -> None:
    """Two answers find marks: the clarification is looked at by the earlier of their times."""
    await store.unreported_add("c2", due=at(20))
    await store.unreported_add("c1", due=at(30))
    await store.unreported_add("c1", due=at(10))  # earlier: moved
    await store.unreported_add("c1", due=at(15))  # later: not moved
    assert await store.unreported_waiting() == 2
    assert await store.unreported_due(now=at(9)) == []
    assert await store.unreported_due(now=at(10)) == ["c1"]
    assert await store.unreported_due(now=at(20)) == ["c1", "c2"]
    assert await store.unreported_due(now=at(20), limit=1) == ["c1"]


async def test_one_worker_looks_and_a_dead_ones_claim_comes_due_again(
        backend: Backend) -> None:
    first, second = backend.open(), backend.open()
    await first.unreported_add("c1", due=at(10))
    assert not await first.unreported_claim("c1", now=at(9), lease_seconds=LEASE)
    won = await asyncio.gather(*(s.unreported_claim("c1", now=at(10), lease_seconds=LEASE)
                                 for s in (first, second, first, second)))
    assert sorted(won) == [False, False, False, True]
    assert await second.unreported_due(now=at(10 + LEASE - 1)) == []
    assert await second.unreported_claim("c1", now=at(10 + LEASE), lease_seconds=LEASE)
    assert not await second.unreported_claim("never", now=at(10), lease_seconds=LEASE)


async def test_later_moves_a_clarification_and_done_forgets_it(store: UnreportedIndex) -> None:
    await store.unreported_add("c1", due=at(10))
    assert await store.unreported_claim("c1", now=at(10), lease_seconds=LEASE)
    await store.unreported_later("c1", due=at(40))  # another job's card, still young
    assert await store.unreported_due(now=at(39)) == []
    assert await store.unreported_due(now=at(40)) == ["c1"]
    await store.unreported_done("c1")
    assert await store.unreported_waiting() == 0
    await store.unreported_later("c1", due=at(50))  # forgotten: not brought back
    assert await store.unreported_due(now=at(1000)) == []
