"""Limits that keep the store bounded: the outbox's most entries, and a TTL on every per-person
key (on Redis and the cluster, read with PTTL; in memory, by moving the injected clock)."""

from __future__ import annotations

import json

import pytest
import redis.asyncio as aioredis

from bot.clock import ManualClock
from bot.store import keys as k
from bot.store.base import Acceptance, CardRecord, Decision, DigestItem, Store
from bot.store.errors import OutboxFull, StoreError
from bot.store.memory import MemoryStore
from bot.store.redis import RedisStore
from tests.support.redis_dump import every_key_and_value

from .conftest import DAY, T0, WINDOW, Backend, admit, at, delivery


def _bounded(backend: Backend, most: int) -> Store:
    if backend.kind == "memory":
        return MemoryStore(clock=backend.clock, outbox_max=most)
    return RedisStore(backend.client(), prefix=backend.prefix, outbox_max=most)


async def test_a_full_outbox_takes_nothing_new_and_keeps_what_it_took(backend: Backend) -> None:
    """At its most entries the outbox refuses a new answer (a value-free store error), still
    knows a duplicate as one, and takes answers again once one has been settled."""
    store = _bounded(backend, 2)
    for n in (1, 2):
        got = await store.outbox_accept(f"a{n}", "{}", order_key=f"k{n}", acted_at=n, now=T0)
        assert got is Acceptance.QUEUED
    with pytest.raises(OutboxFull) as caught:
        await store.outbox_accept("a3", '{"answer": "secret"}', order_key="k3", acted_at=3,
                                  now=T0)
    assert isinstance(caught.value, StoreError) and "secret" not in str(caught.value)
    assert await store.outbox_accept("a1", "{}", order_key="k1", acted_at=1, now=T0) \
        is Acceptance.DUPLICATE
    assert await store.outbox_size() == 2
    [first, *_] = await store.outbox_claim(now=at(1), lease_seconds=30, limit=1)
    await store.outbox_done(first)
    assert await store.outbox_accept("a3", "{}", order_key="k3", acted_at=3, now=at(2)) \
        is Acceptance.QUEUED
    claimed = await store.outbox_claim(now=at(3), lease_seconds=30, limit=5)
    assert sorted(e.entry_id for e in claimed) == sorted({"a1", "a2", "a3"} - {first.entry_id})


async def test_per_person_state_expires_with_the_clock_and_waiting_answers_do_not() -> None:
    """Memory: slots, admissions, caps, digest batches, card references, order markers and
    conversation references are gone once their TTL has passed on the injected clock, not
    before; an answer waiting in the outbox never expires."""
    clock = ManualClock(T0)
    ttls = k.Ttls(slot=100, cap=50, cards=200, order=300, conversation=400)
    store = MemoryStore(clock=clock, ttls=ttls)
    key = delivery("c1")
    await store.reserve(key, worker_id="w1", now=T0)
    await store.add_card(CardRecord(key, "slack", "m1"))
    assert (await admit(store, "h1", cap=1, batched=False)).decision is Decision.DIRECT
    await admit(store, "n1", threshold=0, cap=5)  # opens a digest batch
    await store.conversation_put("acme", "U1", "{}", now=T0)
    await store.outbox_accept("a1", "{}", order_key="k1", acted_at=5, now=T0)
    [entry] = await store.outbox_claim(now=T0, lease_seconds=30, limit=1)
    await store.outbox_done(entry)
    await store.outbox_accept("a2", "{}", order_key="k2", acted_at=5, now=T0)  # stays waiting

    clock.advance(49)
    assert (await admit(store, "h2", cap=1, batched=False)).decision is Decision.CAPPED
    clock.advance(1)  # the cap's day record is gone: the person may be asked again
    assert (await admit(store, "h3", cap=1, batched=False)).decision is Decision.DIRECT
    clock.advance(50)  # 100 s: slots, admissions and batches
    assert await store.slot(key) is None
    assert not (await admit(store, "h1", cap=5, batched=False)).replayed
    assert await store.claim_batch(k.batch_id("p1", T0.timestamp()), now=at(WINDOW),
                                   lease_seconds=60) is None
    assert await store.cards("c1") != []
    clock.advance(100)  # 200 s: card references
    assert await store.cards("c1") == []
    assert await store.outbox_accept("a1", "{}", order_key="k1", acted_at=5, now=at(200)) \
        is Acceptance.DUPLICATE
    clock.advance(100)  # 300 s: the order marker; a replay of a settled action is not known
    assert await store.outbox_accept("a1", "{}", order_key="k1", acted_at=5, now=at(300)) \
        is Acceptance.QUEUED
    assert await store.conversation_get("acme", "U1") == "{}"
    clock.advance(100)
    assert await store.conversation_get("acme", "U1") is None
    clock.advance(365 * k.DAY)
    waiting = await store.outbox_claim(now=clock.now(), lease_seconds=30, limit=5)
    assert {e.entry_id for e in waiting} == {"a1", "a2"}


# keys of no person: shared queues, kept until their entries are settled
SHARED = ("batches:due", "{outbox}:entries", "{outbox}:due", "{outbox}:attempts",
          "{outbox}:failures", "{outbox}:parked", "{outbox}:keys", "{outbox}:leases",
          "{outbox}:queue")


async def test_every_per_person_key_a_delivery_and_answer_leave_has_a_ttl(
        redis_db: aioredis.Redis) -> None:
    """After cards were admitted, reserved, sent and digested, a digest claimed and sent, answers
    accepted, forwarded and settled (one still waiting), a conversation, a once-marker, a page
    and a rate bucket kept: SCAN finds only shared queues without a TTL, every other key has
    one, and each kind of per-person key is among them."""
    prefix = "tscan"
    store = RedisStore(redis_db, prefix=prefix)
    held = await store.admit(delivery("c1"), item=_item("c1"), day=DAY, now=T0, cap=5,
                             threshold=1, window_seconds=WINDOW, batched=True, reserve_for="w1")
    assert held.reserved is not None
    await store.record_sent(held.reserved, CardRecord(delivery("c1"), "slack", "m1"))
    digested = await admit(store, "c2", threshold=1)
    assert digested.batch_id is not None
    await store.mark_digested(delivery("c2"), batch_id=digested.batch_id, worker_id="w1",
                              now=T0)
    await admit(store, "c3", threshold=1, person_id="p2")
    await admit(store, "c4", threshold=1, person_id="p2")  # p2's digest waits for its window
    assert await store.claim_batch(digested.batch_id, now=at(WINDOW), lease_seconds=60)
    await store.finish_batch(digested.batch_id)
    await store.outbox_accept("a1", "{}", order_key="c1|slack|acme|U1", acted_at=1, now=T0)
    await store.outbox_accept("a2", "{}", order_key="c1|slack|acme|U2", acted_at=1, now=T0)
    [entry] = await store.outbox_claim(now=T0, lease_seconds=30, limit=1, entry_id="a1")
    await store.outbox_done(entry)
    await store.conversation_put("acme", "AAD-1", "{}", now=T0)
    await store.mark_once("steward", "c1", ttl_seconds=60)
    await store.kv_put("digest", "page-1", "{}", ttl_seconds=60)
    await store.rate_take("slack:T1:chat.postMessage:U1", rate_per_second=1, burst=3, now=T0)

    found = {name: await redis_db.pttl(name)
             async for name in redis_db.scan_iter(match=f"{prefix}:*")}
    without = sorted(n for n, ttl in found.items() if ttl <= 0)
    assert without == sorted(f"{prefix}:{name}" for name in SHARED
                             if f"{prefix}:{name}" in found)
    kinds = {name.split(":")[1] for name in found if "{p:" in name}
    assert kinds == {"person", "digest"}
    assert any(":{outbox}:order:" in n for n in found) and any(":cards:" in n for n in found)


def _item(clarification_id: str) -> DigestItem:
    return DigestItem(clarification_id, "p1", 0, job_id=f"job-{clarification_id}")


async def test_erasing_a_person_removes_their_keys_on_every_node(
        redis_db: aioredis.Redis) -> None:
    """erase_person finds one person's keys wherever their slot lives (every node of a cluster):
    slots, admissions, caps, window, digest batches, card references, settled answers' markers
    and leases; another person's keys and answers still waiting stay."""
    prefix = "terase"
    store = RedisStore(redis_db, prefix=prefix)
    for person in ("p1", "p2"):
        held = await store.admit(delivery("c1", person), item=_item("c1"), day=DAY, now=T0,
                                 cap=5, threshold=1, window_seconds=WINDOW, batched=True,
                                 reserve_for="w1")
        assert held.reserved is not None
        await store.record_sent(held.reserved, CardRecord(delivery("c1", person), "slack", "m"),
                                unreported=True)  # and the card's not-yet-reported mark
        await admit(store, "c2", person_id=person, threshold=1)  # a digest batch
    await store.outbox_accept("a1", "{}", order_key="c1|slack|acme|U1", acted_at=1, now=T0)
    [entry] = await store.outbox_claim(now=T0, lease_seconds=30, limit=1)
    await store.outbox_done(entry)
    await store.outbox_accept("a2", "{}", order_key="c2|slack|acme|U1", acted_at=1, now=T0)
    done = await store.erase_person("p1", chat_users=["U1"])
    assert (done["delivery_slots"], done["admissions"], done["cap_counters"],
            done["digest_windows"], done["digest_batches"], done["message_refs"]) == \
        (1, 2, 1, 1, 1, 1)
    assert done["answers_waiting_kept"] == 1 and done["answer_order_markers"] == 1
    left = [name async for name in redis_db.scan_iter(match=f"{prefix}:*")]
    assert not [n for n in left if "{p:p1}" in n]
    assert [n for n in left if "{p:p2}" in n]
    assert await store.slot(delivery("c1", "p2")) is not None
    assert [(c.delivery.person_id, c.unreported) for c in await store.cards("c1")] == \
        [("p2", True)]
    assert not [f for f in await redis_db.hkeys(f"{prefix}:cards:c1") if "p1" in str(f)]
    assert await store.outbox_size() == 1


async def test_after_an_erasure_no_key_or_value_names_the_person_on_any_node(
        redis_db: aioredis.Redis) -> None:
    """SCAN over every key, field and value after erase_person (Redis and Cluster): none of
    the person's ids (person id, Slack user, AAD object id, Teams user id, display name) is
    left; notices of a steward that named them and someone else are kept, without them."""
    from bot.chat import person_order_token
    from bot.store.base import NoticeItem

    prefix = "tscrub"
    store = RedisStore(redis_db, prefix=prefix)
    aad, teams_id = "8f1c2d3e-0000-4000-8000-00000000a001", "29:1teamsUserOfSarah"
    names = ("p-sarah", "U0SARAH", aad, teams_id, "Sarah Chen")
    for person in ("p-sarah", "p-ahmed"):
        await admit(store, "c1", person_id=person, threshold=1)
        order = f"c1|p|{person_order_token(person)}"
        await store.outbox_accept(f"{order}|1|f", "{}", order_key=order, acted_at=1, now=T0)
    for entry in await store.outbox_claim(now=T0, lease_seconds=30, limit=5):
        await store.outbox_done(entry, now=T0)
    await store.conversation_put("acme", aad, json.dumps(
        {"user": {"id": teams_id, "name": "Sarah Chen", "aadObjectId": aad}}), now=T0)
    await store.notice_add("acme", "p-maria", NoticeItem("c1", "j1", 0, ("p-sarah", "p-ahmed")),
                           now=T0, window_seconds=60)
    await store.notice_add("acme", "p-maria", NoticeItem("c2", "j2", 0, ("p-sarah",)),
                           now=T0, window_seconds=60)
    await store.rate_take("slack:T0ACME:chat.postMessage:U0SARAH", rate_per_second=1, burst=3,
                          now=T0)
    await store.limit_admit("slack:T0ACME:U0SARAH", per_second=1, burst=3, ttl_seconds=60,
                            now=T0)
    await store.kv_put("declining", "c1|p-sarah", "later", ttl_seconds=60)
    before = await every_key_and_value(redis_db, prefix)
    assert "p-sarah" in before and aad in before and "Sarah Chen" in before

    done = await store.erase_person("p-sarah", chat_users=["U0SARAH", aad])
    assert (done["notices_rewritten"], done["notices_dropped"]) == (1, 1)
    assert done["conversation_refs"] == 1 and done["answer_order_markers"] == 1
    left = await every_key_and_value(redis_db, prefix)
    assert not [line for line in left.splitlines() if any(n in line for n in names)]
    assert "p-ahmed" in left  # nobody else's data went
    batch = await store.notice_take("acme", "p-maria", now=at(120), lease_seconds=60, limit=10)
    assert batch is not None and [item.asked for item in batch.items] == [("p-ahmed",)]
