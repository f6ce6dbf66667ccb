"""A Redis written by the release before hash tags: the store moves it into today's layout on
first use, and nothing it held is lost (answers waiting above all)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import redis.asyncio as aioredis

from bot.store import codec
from bot.store import keys as k
from bot.store.base import Decision, DeliverySlot, SlotState
from bot.store.redis import RedisStore

from .conftest import DAY, REDIS_URL, T0, WINDOW, admit, at, delivery

P = "tlegacy"


@pytest.fixture
async def plain() -> AsyncIterator[aioredis.Redis]:
    client = aioredis.from_url(REDIS_URL, decode_responses=True)
    async for name in client.scan_iter(match=f"{P}:*"):
        await client.delete(name)
    yield client
    await client.aclose()


async def _old_release(r: aioredis.Redis) -> tuple[str, str]:
    """Keys as the earlier release wrote them: an answer waiting (and one parked), a card sent,
    the cap used up, a digest window with its batch."""
    key = delivery("c1")
    sent = DeliverySlot(key=key, state=SlotState.SENT, worker_id="w1", reserved_at=T0,
                        message_ref="m1")
    await r.set(f"{P}:slot:{key.token()}", codec.slot_json(sent), ex=500)
    await r.set(f"{P}:adm:{key.token()}", '{"decision": "direct"}', ex=500)
    await r.set(f"{P}:cap:{DAY}:p1", 5, ex=400)
    batch = k.batch_id("p1", T0.timestamp())
    due = codec.num(codec.epoch(at(WINDOW)))
    await r.hset(f"{P}:win:p1", mapping={"start": codec.num(codec.epoch(T0)), "due": due,
                                         "direct": 3, "charged": 1, "batch": batch})
    await r.hset(f"{P}:batch:{batch}", mapping={
        "person": "p1", "due": due, "n": 1,
        "i:c9": '1|{"clarification_id": "c9", "person_id": "p1", "attempt": 0, '
                '"job_id": "j9"}'})
    await r.zadd(f"{P}:batches:due", {batch: due})
    doc = codec.outbox_json('{"answer": 1}', created_at=T0, order_key="c1|slack|acme|U1",
                            acted_at=7)
    await r.hset(f"{P}:outbox:entries", "a1", doc)
    await r.zadd(f"{P}:outbox:due", {"a1": codec.num(codec.epoch(T0))})
    await r.hset(f"{P}:outbox:attempts", "a1", 2)
    await r.hset(f"{P}:outbox:parked", "a0", "{}")
    await r.hset(f"{P}:order:c1|slack|acme|U1", "seen", 7)
    await r.set(f"{P}:order-lease:c1|slack|acme|U1", "1 a1", ex=60)
    return key.token(), batch


async def test_a_store_of_the_earlier_layout_keeps_everything_after_the_move(
        plain: aioredis.Redis) -> None:
    token, batch = await _old_release(plain)
    async with RedisStore.from_url(REDIS_URL, prefix=P, migrate=True) as store:
        [entry] = await store.outbox_claim(now=at(1), lease_seconds=30, limit=5)
        assert (entry.entry_id, entry.attempts, entry.acted_at) == ("a1", 3, 7)
        assert await store.outbox_parked() == 1
        slot = await store.slot(delivery("c1"))
        assert slot is not None and slot.state is SlotState.SENT and slot.message_ref == "m1"
        assert (await admit(store, "c1", batched=False)).replayed
        assert (await admit(store, "h1", batched=False, cap=5)).decision is Decision.CAPPED
        digest = await admit(store, "c8", threshold=3, cap=9)
        assert digest.batch_id == batch  # the open window's batch takes more items
        claimed = await store.claim_batch(batch, now=at(WINDOW), lease_seconds=60)
        assert claimed is not None
        assert [i.clarification_id for i in claimed.items] == ["c9", "c8"]
        await store.outbox_done(entry)
        assert await store.outbox_size() == 0
    keys = k.Keys(P)
    assert await plain.ttl(keys.person("p1")) >= 500  # as long as the longest moved, or longer
    assert await plain.hget(keys.person("p1"), k.slot_field(token))
    left = sorted([n async for n in plain.scan_iter(match=f"{P}:*")])
    assert not [n for n in left if n.startswith((f"{P}:outbox:", f"{P}:order", f"{P}:batch:"))
                or (":{" not in n and n not in (keys.batches_due, f"{P}:layout"))]


async def test_answers_an_earlier_release_accepts_after_the_move_move_at_the_next_start(
        plain: aioredis.Redis) -> None:
    """A rolling upgrade: a process of the earlier release still accepts an answer into the old
    outbox after the move; the next start of a new process moves it too (no scan needed)."""
    async with RedisStore.from_url(REDIS_URL, prefix=P, migrate=True) as store:
        assert await store.outbox_size() == 0
    doc = codec.outbox_json("{}", created_at=T0, order_key="c2|slack|acme|U2", acted_at=3)
    await plain.hset(f"{P}:outbox:entries", "late", doc)
    await plain.zadd(f"{P}:outbox:due", {"late": codec.num(codec.epoch(T0))})
    async with RedisStore.from_url(REDIS_URL, prefix=P, migrate=True) as store:
        [entry] = await store.outbox_claim(now=at(1), lease_seconds=30, limit=5)
        assert entry.entry_id == "late"


async def test_a_store_of_the_tagged_layout_moves_into_one_hash_per_person(
        plain: aioredis.Redis) -> None:
    """The release before this one kept a person's slots, admissions, cap counters and window in
    keys of their own (tagged for Redis Cluster); they move into the person's hash, keeping
    their meaning, and the old keys go."""
    key = delivery("c1")
    sent = DeliverySlot(key=key, state=SlotState.SENT, worker_id="w1", reserved_at=T0,
                        message_ref="m1")
    tag = "{p:p1}"
    await plain.set(f"{P}:slot:{tag}:{key.token()}", codec.slot_json(sent), ex=500)
    await plain.set(f"{P}:adm:{tag}:{key.token()}", '{"decision": "direct"}', ex=500)
    await plain.set(f"{P}:cap:{tag}:{DAY}", 5, ex=400)
    await plain.set(f"{P}:cap:{tag}:2026-07-05", 1, ex=300)  # the day before: kept beside it
    batch = k.batch_id("p1", T0.timestamp())
    ms = k.batch_parts(batch)[1]
    due = codec.num(codec.epoch(at(WINDOW)))
    await plain.hset(f"{P}:win:{tag}", mapping={"start": codec.num(codec.epoch(T0)), "due": due,
                                                "direct": 3, "charged": 1, "batch": batch,
                                                "ms": ms})
    await plain.hset(f"{P}:digest:{tag}", mapping={
        f"{ms}:due": due, f"{ms}:n": 1,
        f"{ms}:i:c9": '1|{"clarification_id": "c9", "person_id": "p1", "attempt": 0, '
                      '"job_id": "j9"}'})
    await plain.zadd(f"{P}:batches:due", {batch: due})
    await plain.set(f"{P}:layout", "tagged-1")
    async with RedisStore.from_url(REDIS_URL, prefix=P, migrate=True) as store:
        slot = await store.slot(key)
        assert slot is not None and slot.state is SlotState.SENT and slot.message_ref == "m1"
        assert (await admit(store, "c1", batched=False)).replayed
        assert (await admit(store, "h1", batched=False, cap=5)).decision is Decision.CAPPED
        assert (await admit(store, "h2", batched=False, cap=2,
                            day="2026-07-05")).decision is Decision.DIRECT
        assert (await admit(store, "h3", batched=False, cap=2,
                            day="2026-07-05")).decision is Decision.CAPPED
        digest = await admit(store, "c8", threshold=3, cap=9)
        assert digest.batch_id == batch
        claimed = await store.claim_batch(batch, now=at(WINDOW), lease_seconds=60)
        assert claimed is not None
        assert [i.clarification_id for i in claimed.items] == ["c9", "c8"]
    keys = k.Keys(P)
    left = sorted([n async for n in plain.scan_iter(match=f"{P}:*")])
    assert left == sorted([keys.person("p1"), keys.digest("p1"), keys.batches_due,
                           f"{P}:layout"])
    assert await plain.ttl(keys.person("p1")) >= 500
