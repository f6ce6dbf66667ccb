"""Contract: jobs held for working hours (put, due, text, claim, drop), on memory, a real Redis
and a real Redis Cluster (docs/delivery.md, "Working hours")."""

from __future__ import annotations

import asyncio

from bot.store.base import HeldJobs

from .conftest import Backend, at

CLAIM = 30


async def test_holds_come_due_in_order_and_are_kept_until_dropped(store: HeldJobs) -> None:
    await store.hold_put("job-2", '{"hold": 2}', at=at(20))
    await store.hold_put("job-1", '{"hold": 1}', at=at(10))
    assert await store.holds_due(now=at(9)) == []
    assert await store.holds_due(now=at(20)) == [("job-1", '{"hold": 1}'),
                                                 ("job-2", '{"hold": 2}')]
    assert await store.holds_due(now=at(20), limit=1) == [("job-1", '{"hold": 1}')]
    await store.hold_put("job-1", '{"hold": "1b"}', at=at(100))  # replaced, looked at later
    assert await store.holds_due(now=at(99)) == [("job-2", '{"hold": 2}')]
    assert await store.hold_text("job-1") == '{"hold": "1b"}'
    await store.hold_drop("job-1")
    assert await store.hold_text("job-1") is None
    assert await store.holds_due(now=at(1000)) == [("job-2", '{"hold": 2}')]


async def test_one_claim_of_a_due_hold_wins_and_a_dead_claimants_comes_due_again(
        backend: Backend) -> None:
    """Two replicas' stores race for one due hold: one claim wins, and the hold is not due
    while it lasts; a claimant that dies without putting the hold back or dropping it leaves
    it due again when the claim ends."""
    first, second = backend.open(), backend.open()
    await first.hold_put("job-1", "{}", at=at(10))
    won = await asyncio.gather(*(s.hold_claim("job-1", now=at(10), lease_seconds=CLAIM)
                                 for s in (first, second, first, second)))
    assert sorted(won) == [False, False, False, True]
    assert await second.holds_due(now=at(10 + CLAIM - 1)) == []
    assert not await second.hold_claim("job-1", now=at(10 + CLAIM - 1), lease_seconds=CLAIM)
    assert await second.holds_due(now=at(10 + CLAIM)) == [("job-1", "{}")]
    assert await second.hold_claim("job-1", now=at(10 + CLAIM), lease_seconds=CLAIM)
    await second.hold_put("job-1", "{}", at=at(5000))  # extended: the claim gives way
    assert await first.holds_due(now=at(4999)) == []


async def test_a_claim_needs_the_hold_kept_and_due(store: HeldJobs) -> None:
    assert not await store.hold_claim("job-9", now=at(0), lease_seconds=CLAIM)
    await store.hold_put("job-1", "{}", at=at(10))
    assert not await store.hold_claim("job-1", now=at(9), lease_seconds=CLAIM)
    await store.hold_drop("job-1")
    assert not await store.hold_claim("job-1", now=at(10), lease_seconds=CLAIM)
    assert await store.holds_due(now=at(1000)) == []
