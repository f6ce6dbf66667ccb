"""One person's delivery state (slots, admissions, the cap counter, the digest window): what
stays and what goes while the person keeps receiving cards, on every store; and on Redis, what a
card costs in commands (at most 6 a card in all)."""

from __future__ import annotations

from datetime import timedelta

import redis.asyncio as aioredis

from bot.store import keys as k
from bot.store.base import CardRecord, Decision, DigestItem, SlotState, Store
from bot.store.redis import RedisStore

from .conftest import DAY, REDIS_URL, T0, Backend, admit, delivery

DAYS = timedelta(days=1)


async def _direct(store: Store, name: str, when_days: float, backend: Backend) -> Decision:
    backend.clock.set(T0 + when_days * DAYS)  # the memory store expires on its clock
    key = delivery(name)
    item = DigestItem(name, "p1", 0, job_id=f"job-{name}")
    admission = await store.admit(
        key, item=item, day=(T0 + when_days * DAYS).date().isoformat(),
        now=T0 + when_days * DAYS, cap=50, threshold=50, window_seconds=1800, batched=True,
        reserve_for="w1")
    return admission.decision


async def test_a_persons_old_slots_and_admissions_go_while_new_cards_keep_coming(
        backend: Backend) -> None:
    """A card's slot and admission last the slot TTL (8 days), even when the person receives a
    card every few days and so their state as a whole never goes quiet."""
    store = backend.open()
    assert await _direct(store, "c1", 0, backend) is Decision.DIRECT
    assert await _direct(store, "c2", 4, backend) is Decision.DIRECT
    assert await _direct(store, "c3", 9, backend) is Decision.DIRECT  # c1 is 9 days old now
    assert await store.slot(delivery("c1")) is None
    assert await store.slot(delivery("c2")) is not None
    again = await admit(store, "c2", now=T0 + 9 * DAYS, day=(T0 + 9 * DAYS).date().isoformat())
    assert again.replayed  # 5 days old: still the first decision
    fresh = await admit(store, "c1", now=T0 + 9 * DAYS, day=(T0 + 9 * DAYS).date().isoformat())
    assert not fresh.replayed


async def test_the_cap_counts_per_local_day_and_a_late_replica_still_counts_yesterday(
        store: Store) -> None:
    """Two a day: the third of a day is capped; the next day starts from nothing; a replica
    whose clock still says yesterday is held to yesterday's count, not given a fresh one."""
    tomorrow = (T0 + DAYS).date().isoformat()
    got = [(await admit(store, f"h{n}", cap=2, batched=False)).decision
           for n in range(3)]
    assert got == [Decision.DIRECT, Decision.DIRECT, Decision.CAPPED]
    assert (await admit(store, "n1", cap=2, batched=False, now=T0 + DAYS,
                        day=tomorrow)).decision is Decision.DIRECT
    assert (await admit(store, "late", cap=2, batched=False,
                        day=DAY)).decision is Decision.CAPPED
    assert (await admit(store, "n2", cap=2, batched=False, now=T0 + DAYS,
                        day=tomorrow)).decision is Decision.DIRECT
    assert (await admit(store, "n3", cap=2, batched=False, now=T0 + DAYS,
                        day=tomorrow)).decision is Decision.CAPPED


async def test_a_persons_hash_stays_small_over_weeks_of_cards(redis_db: aioredis.Redis) -> None:
    """100 cards over 20 days, five a day: the hash holds about the last 8 days' cards (two
    fields each), not all of them, and keeps its TTL."""
    store = RedisStore(redis_db, prefix="tps")
    for n in range(100):
        when = T0 + timedelta(hours=4.8 * n)
        key = delivery(f"c{n}")
        item = DigestItem(f"c{n}", "p1", 0, job_id=f"j{n}")
        await store.admit(key, item=item, day=when.date().isoformat(), now=when, cap=50,
                          threshold=50, window_seconds=1800, batched=True, reserve_for="w1")
    fields = await redis_db.hlen(k.Keys("tps").person("p1"))
    assert fields <= 2 * (8 * 5 + 2) + 10
    assert await redis_db.ttl(k.Keys("tps").person("p1")) > 8 * 86400


async def test_a_usual_card_costs_five_redis_commands_scripts_included() -> None:
    """The second card of a person within the hour: the admission (EVALSHA, HMGET, HSET: it
    reserves the slot too) and the record of the send (the card remembered: HSET, EXPIRE)."""
    client = aioredis.from_url(REDIS_URL, decode_responses=True)
    try:
        store = RedisStore(client, prefix="tcost")
        await admit(store, "warm")  # the person's hash made, its TTL set
        await client.config_resetstat()
        key = delivery("c1")
        item = DigestItem("c1", "p1", 0, job_id="j1")
        held = await store.admit(key, item=item, day=DAY, now=T0, cap=5, threshold=3,
                                 window_seconds=1800, batched=True, reserve_for="w1")
        assert held.decision is Decision.DIRECT and held.created and held.reserved is not None
        await store.record_sent(held.reserved, CardRecord(key, "slack", "D1:1"))
        stats = await client.info("commandstats")
        calls = {name.removeprefix("cmdstat_"): v["calls"] for name, v in stats.items()
                 if name != "cmdstat_config|resetstat"}
        assert sum(calls.values()) == 5, calls
        slot = await store.slot(key)
        assert slot is not None and slot.state is SlotState.SENT and slot.message_ref == "D1:1"
    finally:
        await client.aclose()
