"""Contract: each steward's durable notice list (queue, due set, take, done), both stores."""

from __future__ import annotations

import redis.asyncio as aioredis

from bot.store.base import NoticeItem, NoticeLists

from .conftest import Backend, at

WINDOW = 60
LEASE = 300


def item(clarification_id: str, *asked: str) -> NoticeItem:
    return NoticeItem(clarification_id, f"job-{clarification_id}", 0, asked or ("p1",))


async def add(store: NoticeLists, clarification_id: str, seconds: float, *, steward: str = "s1",
              tenant: str = "t1") -> bool:
    return await store.notice_add(tenant, steward, item(clarification_id), now=at(seconds),
                                  window_seconds=WINDOW)


async def test_notices_of_one_window_are_due_together_at_its_end(store: NoticeLists) -> None:
    """The first notice of a quiet period opens the window; the next ones join it."""
    assert await add(store, "c1", 0)
    assert await add(store, "c2", 30)
    assert await store.notices_due(now=at(59)) == []
    assert await store.notice_take("t1", "s1", now=at(59), lease_seconds=LEASE,
                                   limit=20) is None
    assert await store.notices_due(now=at(60)) == [("t1", "s1")]
    batch = await store.notice_take("t1", "s1", now=at(60), lease_seconds=LEASE, limit=20)
    assert batch is not None
    assert [i.clarification_id for i in batch.items] == ["c1", "c2"]
    assert batch.items[0] == item("c1")
    assert (batch.tenant_id, batch.steward_id) == ("t1", "s1")


async def test_a_notice_is_queued_once(store: NoticeLists) -> None:
    """A job handled again queues nothing twice, even after its notice went out."""
    assert await add(store, "c1", 0)
    assert not await add(store, "c1", 10)
    batch = await store.notice_take("t1", "s1", now=at(60), lease_seconds=LEASE, limit=20)
    assert batch is not None and len(batch.items) == 1
    await store.notice_done(batch, now=at(61))
    assert not await add(store, "c1", 100)
    assert await store.notices_due(now=at(10_000)) == []


async def test_stewards_lists_are_apart(store: NoticeLists) -> None:
    await add(store, "c1", 0, steward="s1")
    await add(store, "c1", 0, steward="s2")
    await add(store, "c2", 0, steward="s1", tenant="t2")
    assert sorted(await store.notices_due(now=at(60))) == [("t1", "s1"), ("t1", "s2"),
                                                           ("t2", "s1")]
    batch = await store.notice_take("t2", "s1", now=at(60), lease_seconds=LEASE, limit=20)
    assert batch is not None and [i.clarification_id for i in batch.items] == ["c2"]


async def test_a_taken_batch_comes_back_whole_when_its_lease_runs_out(store: NoticeLists) -> None:
    """A worker killed between take and send loses nothing: the same batch (same id, same
    items) is taken again after the lease; notices queued meanwhile wait for their window."""
    await add(store, "c1", 0)
    first = await store.notice_take("t1", "s1", now=at(60), lease_seconds=LEASE, limit=20)
    assert first is not None
    await add(store, "c2", 70)
    assert await store.notice_take("t1", "s1", now=at(200), lease_seconds=LEASE,
                                   limit=20) is None  # the lease holds
    assert await store.notices_due(now=at(200)) == [("t1", "s1")]  # c2's window ended
    assert await store.notices_due(now=at(129)) == []
    again = await store.notice_take("t1", "s1", now=at(361), lease_seconds=LEASE, limit=20)
    assert again == first
    await store.notice_done(again, now=at(362))
    rest = await store.notice_take("t1", "s1", now=at(362), lease_seconds=LEASE, limit=20)
    assert rest is not None and [i.clarification_id for i in rest.items] == ["c2"]
    assert rest.batch_id != first.batch_id
    await store.notice_done(rest, now=at(363))
    assert await store.notices_due(now=at(100_000)) == []


async def test_a_take_is_limited_and_the_rest_stays_due(store: NoticeLists) -> None:
    for n in range(5):
        await add(store, f"c{n}", n)
    batch = await store.notice_take("t1", "s1", now=at(60), lease_seconds=LEASE, limit=3)
    assert batch is not None and [i.clarification_id for i in batch.items] == ["c0", "c1", "c2"]
    await store.notice_done(batch, now=at(61))
    assert await store.notices_due(now=at(61)) == [("t1", "s1")]
    rest = await store.notice_take("t1", "s1", now=at(61), lease_seconds=LEASE, limit=3)
    assert rest is not None and [i.clarification_id for i in rest.items] == ["c3", "c4"]
    assert rest.batch_id != batch.batch_id  # taken at the same instant, still its own message


async def test_a_stale_done_does_not_drop_the_next_batch(store: NoticeLists) -> None:
    await add(store, "c1", 0)
    first = await store.notice_take("t1", "s1", now=at(60), lease_seconds=LEASE, limit=20)
    assert first is not None
    again = await store.notice_take("t1", "s1", now=at(400), lease_seconds=LEASE, limit=20)
    assert again == first
    await store.notice_done(first, now=at(401))
    assert await store.notices_due(now=at(100_000)) == []


async def test_notices_survive_a_new_store(backend: Backend) -> None:
    """Durable: another store over the same state (a restarted worker) finds them."""
    await add(backend.open(), "c1", 0)
    batch = await backend.open().notice_take("t1", "s1", now=at(60), lease_seconds=LEASE,
                                             limit=20)
    assert batch is not None and [i.clarification_id for i in batch.items] == ["c1"]


async def test_one_stewards_keys_share_a_hash_tag(redis_db: aioredis.Redis) -> None:
    """Every key a notice script names carries the steward's ``{...}`` tag (one Cluster slot)."""
    from bot.store.redis import RedisStore

    store = RedisStore(redis_db, prefix="tagged")
    await add(store, "c1", 0)
    names = [name async for name in redis_db.scan_iter("tagged:notices:*")]
    steward = [n for n in names if not n.endswith(":due")]
    assert {n.split("{")[1].split("}")[0] for n in steward} == {"t1|s1"}
    assert len(steward) == 3  # queue, items, seen


async def test_erasing_a_steward_drops_their_notice_list(redis_db: aioredis.Redis) -> None:
    """Erasure (the bot's side of OQ-5) deletes a steward's own list and due entry; another
    steward's stays."""
    from bot.store.erasure import erase_person
    from bot.store.keys import Keys
    from bot.store.redis import RedisStore

    store = RedisStore(redis_db, prefix="erase")
    await add(store, "c1", 0, steward="s1")
    await add(store, "c1", 0, steward="s2")
    done = await erase_person(redis_db, Keys("erase"), person_id="s1", chat_users=[])
    assert done["steward_notices"] == 3
    assert await store.notices_due(now=at(60)) == [("t1", "s2")]
    assert await store.notice_take("t1", "s1", now=at(60), lease_seconds=LEASE,
                                   limit=20) is None
