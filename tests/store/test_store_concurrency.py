"""Contract under contention: caps and batch claims hold across workers, state across restarts."""

from __future__ import annotations

import asyncio

from bot.store.base import Decision

from .conftest import WINDOW, Backend, admit, at


async def test_concurrent_admits_respect_the_cap(backend: Backend) -> None:
    """Fifty concurrent admits for one person with cap 5, over several clients, give 5 DIRECT."""
    stores = [backend.open() for _ in range(5)]
    results = await asyncio.gather(*(
        admit(stores[n % len(stores)], f"c{n}", cap=5, batched=False) for n in range(50)))
    counts = [a.decision for a in results]
    assert counts.count(Decision.DIRECT) == 5
    assert counts.count(Decision.CAPPED) == 45


async def test_concurrent_normal_admits_make_one_digest(backend: Backend) -> None:
    """Concurrent normal cards give exactly threshold DIRECT and one batch for the rest."""
    stores = [backend.open() for _ in range(5)]
    results = await asyncio.gather(*(
        admit(stores[n % len(stores)], f"c{n}", threshold=3) for n in range(30)))
    assert [a.decision for a in results].count(Decision.DIRECT) == 3
    assert len({a.batch_id for a in results if a.decision is Decision.DIGESTED}) == 1
    batch = await stores[0].claim_batch(
        next(a.batch_id for a in results if a.batch_id), now=at(WINDOW), lease_seconds=60)
    assert batch is not None and len(batch.items) == 27


async def test_two_stores_claiming_one_batch_one_wins(backend: Backend) -> None:
    """Two workers claiming the same due batch at once: exactly one gets it."""
    one, two = backend.open(), backend.open()
    await admit(one, "c1", threshold=1)
    batch_id = (await admit(one, "c2", threshold=1)).batch_id or ""
    claims = await asyncio.gather(
        one.claim_batch(batch_id, now=at(WINDOW), lease_seconds=60),
        two.claim_batch(batch_id, now=at(WINDOW), lease_seconds=60),
    )
    assert sum(claim is not None for claim in claims) == 1


async def test_concurrent_outbox_claims_do_not_share_entries(backend: Backend) -> None:
    """Workers claiming the outbox at once never get the same entry twice, nor two entries of
    one person's answers to one clarification."""
    stores = [backend.open() for _ in range(4)]
    for n in range(20):
        await stores[0].outbox_accept(f"a{n}", "{}", order_key=f"k{n % 10}", acted_at=n,
                                      now=at(0))
    batches = await asyncio.gather(*(
        s.outbox_claim(now=at(1), lease_seconds=30, limit=3) for s in stores * 2))
    ids = [entry.entry_id for batch in batches for entry in batch]
    keys = [entry.order_key for batch in batches for entry in batch]
    assert len(ids) == len(set(ids)) == len(keys) == len(set(keys)) == 10
