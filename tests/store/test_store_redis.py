"""What only the Redis store does: key names and TTLs, restarts, client checks, errors."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta

import pytest
import redis.asyncio as aioredis

from bot.store import keys as k
from bot.store.base import CardRecord, Decision
from bot.store.errors import SlotContended, StoreError, StoreUnavailable, translated
from bot.store.redis import RedisStore

from .conftest import REDIS_URL, T0, WINDOW, admit, at, delivery

PREFIX = "tredis"


async def test_keys_carry_their_ttls(redis_db: aioredis.Redis) -> None:
    """Slots, admissions, caps, windows, batches, cards and order markers expire; the outbox
    never does."""
    store = RedisStore(redis_db, prefix=PREFIX, slot_ttl=timedelta(days=3))
    keys = k.Keys(PREFIX)
    key = delivery("c1")
    await store.reserve(key, worker_id="w1", now=T0)
    await store.mark_sent(key, message_ref="m1")  # an update keeps the slot's TTL
    await admit(store, "c1", threshold=0)
    await store.add_card(CardRecord(key, "slack", "m1"))
    await store.outbox_accept("a1", "{}", order_key="k1", acted_at=1, now=T0)
    [entry] = await store.outbox_claim(now=T0, lease_seconds=30, limit=1)
    await store.outbox_done(entry)
    person = 3 * k.DAY + k.PERSON_REFRESH_SECONDS  # slots, admissions, caps, window
    expected = {
        keys.person("p1"): person, keys.digest("p1"): 3 * k.DAY,
        keys.cards("c1"): k.CARDS_TTL_SECONDS,
        keys.order("k1"): k.ORDER_TTL_SECONDS,
    }
    for name, ttl in expected.items():
        assert ttl - 5 <= await redis_db.ttl(name) <= ttl, name
    await store.outbox_accept("a2", "{}", order_key="k2", acted_at=1, now=T0)
    for name in [keys.outbox_entries, keys.outbox_due, keys.batches_due, keys.outbox_keys]:
        assert await redis_db.ttl(name) == -1, name
    names = [str(name) async for name in redis_db.scan_iter(match="*")]
    assert names and all(name.startswith(f"{PREFIX}:") for name in names)


async def test_a_card_record_round_trips_and_one_written_before_the_move_on_fields_reads(
        redis_db: aioredis.Redis) -> None:
    """The move-on fields and the card's zone as stored and read back; a record of an earlier
    release (no such fields) and one whose time does not read still list, with no move-on time
    and no zone."""
    store = RedisStore(redis_db, prefix=PREFIX)
    name = k.Keys(PREFIX).cards("c1")
    new = CardRecord(delivery("c1"), "slack", "m1", moves_on_at=at(28860.5),
                     moves_on_to_steward=True, reminded=True, time_zone="Europe/Berlin")
    await store.add_card(new)
    raw = json.loads(await redis_db.hget(name, new.delivery.token()))
    assert (raw["moves_on"], raw["to_steward"], raw["reminded"], raw["tz"]) == (
        at(28860.5).timestamp(), True, True, "Europe/Berlin")
    old, odd = delivery("c1", "p2"), delivery("c1", "p3")
    await redis_db.hset(name, old.token(), json.dumps(
        {"delivery": ["c1", "p2", 0, "question"], "platform": "teams", "message_ref": "m2"}))
    await redis_db.hset(name, odd.token(), json.dumps(
        {"delivery": ["c1", "p3", 0, "question"], "platform": "slack", "message_ref": "m3",
         "moves_on": "soon", "to_steward": True}))
    assert await store.cards("c1") == [new, CardRecord(old, "teams", "m2"),
                                       CardRecord(odd, "slack", "m3")]


async def test_mark_once_sets_its_ttl(redis_db: aioredis.Redis) -> None:
    """A once-marker expires after the ttl it was given."""
    store = RedisStore(redis_db, prefix=PREFIX)
    await store.mark_once("steward", "c1", ttl_seconds=120)
    assert 115 <= await redis_db.ttl(k.Keys(PREFIX).once("steward", "c1")) <= 120


async def test_a_restarted_store_keeps_its_state(redis_db: aioredis.Redis, redis_url: str
                                                 ) -> None:
    """A new store on the same prefix, over a new connection, sees caps, windows and the outbox."""
    before = RedisStore.from_url(redis_url, prefix=PREFIX)
    await admit(before, "h1", batched=False)
    await admit(before, "c1")  # the window opens
    await before.outbox_accept("a1", "{}", order_key="k1", acted_at=1, now=T0)
    await before.aclose()

    async with RedisStore.from_url(redis_url, prefix=PREFIX) as after:
        got = [(await admit(after, name)).decision for name in ["c2", "c3", "c4", "c5"]]
        assert got == [Decision.DIRECT, Decision.DIRECT, Decision.DIGESTED, Decision.DIGESTED]
        assert (await admit(after, "h2", batched=False)).decision is Decision.CAPPED
        assert (await admit(after, "c1")).replayed
        assert len(await after.due_batches(now=at(WINDOW))) == 1
        assert await after.outbox_size() == 1


async def test_a_burst_waits_for_pooled_connections(redis_db: aioredis.Redis, redis_url: str
                                                    ) -> None:
    """More concurrent calls than pooled connections wait their turn instead of failing, on one
    server (its blocking pool) and on a cluster (the store's own turns)."""
    async with RedisStore.from_url(redis_url, prefix=PREFIX, max_connections=4) as store:
        marks = await asyncio.gather(*(
            store.mark_once("ns", str(n), ttl_seconds=60) for n in range(200)))
    assert all(marks)


async def test_prefixes_keep_deployments_apart(redis_db: aioredis.Redis) -> None:
    """Two stores on different prefixes in one database share nothing."""
    one = RedisStore(redis_db, prefix="one")
    two = RedisStore(redis_db, prefix="two")
    await admit(one, "c1", cap=1, batched=False)
    assert (await admit(two, "c2", cap=1, batched=False)).decision is Decision.DIRECT


async def test_a_client_without_decoded_responses_is_refused() -> None:
    """The store needs str replies, so a bytes client is refused at construction."""
    client = aioredis.from_url(REDIS_URL)
    with pytest.raises(ValueError):
        RedisStore(client)
    await client.aclose()


async def test_an_unreachable_redis_is_a_store_error() -> None:
    """A connection failure surfaces as StoreUnavailable, with a value-free message."""
    async with RedisStore.from_url("redis://127.0.0.1:1/0", prefix=PREFIX) as store:
        with pytest.raises(StoreUnavailable) as caught:
            await store.mark_once("ns", "secret-key", ttl_seconds=5)
    assert "secret" not in str(caught.value)


async def test_a_write_to_a_connection_lost_under_it_is_store_unavailable() -> None:
    """Found by the soak on Redis Cluster: a call whose pooled connection was lost (its master
    killed) a moment before wrote to a dead socket transport, which on CPython 3.12 raises
    TypeError or AttributeError, not OSError; redis-py passed it on and a web process answered a
    click with a 500. The store reports it as StoreUnavailable like any lost connection, and a
    TypeError of its own code still propagates."""
    async def hang_up(_: asyncio.StreamReader, theirs: asyncio.StreamWriter) -> None:
        theirs.close()

    server = await asyncio.start_server(hang_up, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    _, writer = await asyncio.open_connection("127.0.0.1", port)

    class Store:
        @translated
        async def write(self) -> None:
            writer.writelines([b"PING\r\n"])

        @translated
        async def misuse(self) -> None:
            raise TypeError("a bug, not a lost connection")

    try:
        writer.transport.abort()
        await asyncio.sleep(0)  # the transport's connection_lost runs
        with pytest.raises(StoreUnavailable) as caught:
            await Store().write()
        assert str(caught.value) == "store unavailable"
        with pytest.raises(TypeError):
            await Store().misuse()
    finally:
        server.close()
        await server.wait_closed()


async def test_a_slot_that_keeps_changing_is_contended(redis_db: aioredis.Redis) -> None:
    """A compare-and-set that loses every try gives up with SlotContended, a store error, and
    leaves the slot as it was."""
    store = RedisStore(redis_db, prefix=PREFIX)
    key = delivery("c1")
    await store.reserve(key, worker_id="w1", now=T0)

    async def always_changed(*, keys: list[str], args: list[str]) -> int:
        return 0  # what the script answers when another writer got there first

    store._cas = always_changed  # type: ignore[assignment]  # contention on demand
    with pytest.raises(SlotContended) as caught:
        await store.mark_sent(key, message_ref="m1")
    assert isinstance(caught.value, StoreError) and "c1" not in str(caught.value)
    slot = await store.slot(key)
    assert slot is not None and slot.message_ref is None


async def test_aclose_is_safe_to_repeat() -> None:
    """Closing a store twice is harmless."""
    store = RedisStore.from_url(REDIS_URL, prefix=PREFIX)
    await store.aclose()
    await store.aclose()
