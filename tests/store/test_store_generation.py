"""The store's generation and the watch that notices a store that lost its data: memory and a real
Redis, an injected clock, no sleeping (bot.store.generation, bot.process.storewatch)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import timedelta
from typing import Any, cast
from uuid import uuid4

import pytest
import redis.asyncio as aioredis

from bot.audit import Audit, MemorySink
from bot.clock import ManualClock
from bot.core.client import CoreClient
from bot.metrics import REGISTRY
from bot.process.storewatch import RETRY_SECONDS, StoreWatch
from bot.store.errors import StoreUnavailable
from bot.store.generation import Generation, Loss, compare
from bot.store.memory import MemoryStore
from bot.store.redis import RedisStore
from tests.store.conftest import REDIS_URL, T0

Lose = Callable[[], Awaitable[None]]


@pytest.fixture(params=["memory", "redis"])
async def backend(request: pytest.FixtureRequest
                  ) -> AsyncIterator[tuple[Callable[[], Any], Lose, ManualClock]]:
    """Opens stores over one shared state (a process each), and loses that state."""
    clock = ManualClock(T0)
    if request.param == "memory":
        memory = MemoryStore(clock=clock)

        async def forget_memory() -> None:
            memory.forget()

        yield (lambda: memory), forget_memory, clock
        return
    prefix = f"gen-{uuid4().hex[:8]}"
    admin = aioredis.Redis.from_url(REDIS_URL, decode_responses=True)
    clients: list[aioredis.Redis] = []

    def make() -> RedisStore:
        client = aioredis.Redis.from_url(REDIS_URL, decode_responses=True)
        clients.append(client)
        return RedisStore(client, prefix=prefix)

    async def forget_redis() -> None:
        async for name in admin.scan_iter(match=f"{prefix}:*", count=500):
            await admin.delete(name)

    yield make, forget_redis, clock
    await forget_redis()
    for client in clients:
        await client.aclose()
    await admin.aclose()


def watch(store: Any, clock: ManualClock, sink: MemorySink | None = None) -> StoreWatch:
    audit = Audit(sink=sink if sink is not None else MemorySink(),
                  core=cast(CoreClient, None))  # store-level events never go to the core
    return StoreWatch(store=store, clock=clock, audit=audit, interval_seconds=10)


def lost(kind: Loss) -> float:
    return REGISTRY.value("clarify_store_data_lost_total", kind=kind.value)


def gen(id_: str = "a", epoch: int = 3, origin: str = "first_use") -> Generation:
    return Generation(id=id_, created_at=T0, origin=origin, epoch=epoch)


def test_compare_says_what_happened_to_the_store() -> None:
    assert compare(None, gen()) is None  # just started: nothing to compare with
    assert compare(gen(), gen(epoch=3)) is None
    assert compare(gen(), gen(epoch=9)) is None  # other processes checked meanwhile
    assert compare(gen(), None) is Loss.EMPTIED
    assert compare(gen(), gen("b")) is Loss.REPLACED
    assert compare(gen(), gen("b", origin="reset")) is Loss.RESET
    assert compare(gen(), gen(epoch=2)) is Loss.ROLLED_BACK


async def test_the_generation_is_made_once_raised_by_each_check_and_never_made_by_a_check(
        backend: tuple[Callable[[], Any], Lose, ManualClock]) -> None:
    make, forget, clock = backend
    store = make()
    first, made = await store.generation_start(now=clock.now())
    again, made_again = await make().generation_start(now=clock.now())
    assert made and not made_again and again.id == first.id and first.origin == "first_use"
    before, epoch = await store.generation_check(now=clock.now() + timedelta(seconds=5))
    assert before is not None and before.id == first.id and epoch == first.epoch + 1
    read = await store.generation_read()
    assert read is not None and read.epoch == epoch
    assert read.checked_at == clock.now() + timedelta(seconds=5)
    await forget()
    assert await store.generation_check(now=clock.now()) == (None, 0)
    assert await store.generation_read() is None  # a check never makes one
    reset = await store.generation_reset(now=clock.now())
    assert reset.origin == "reset" and reset.id != first.id


async def test_a_store_that_came_back_empty_is_noticed_counted_and_audited_once(
        backend: tuple[Callable[[], Any], Lose, ManualClock]) -> None:
    """Two processes (a web and a worker) watch one store; it loses everything. Each notices
    and counts; the audit has one event, with what the store held at the last check."""
    make, forget, clock = backend
    sink = MemorySink()
    web, worker = watch(make(), clock, sink), watch(make(), clock, sink)
    await web.start()
    await worker.start()
    first = web.generation
    assert first is not None and worker.generation is not None
    assert worker.generation.id == first.id
    store = make()
    await store.reminder_add("0|1|0|clr-1", due=clock.now() + timedelta(hours=1))
    await store.outbox_accept("e1", "{}", order_key="k", acted_at=1, now=clock.now())
    assert await web.check() is None and await worker.check() is None
    emptied, replaced = lost(Loss.EMPTIED), lost(Loss.REPLACED)
    reminders = REGISTRY.value("clarify_reminders_lost_total")
    answers = REGISTRY.value("clarify_answers_lost_total")

    await forget()
    assert await web.check() is Loss.EMPTIED
    assert await worker.check() is Loss.REPLACED  # the web process started the next one
    assert lost(Loss.EMPTIED) == emptied + 1 and lost(Loss.REPLACED) == replaced + 1
    assert web.generation is not None and worker.generation is not None
    assert web.generation.id == worker.generation.id != first.id
    assert web.generation.origin == "after_loss"
    [event] = sink.of("store_data_lost")
    assert event.extra == {"kind": "emptied", "previous": first.id,
                           "generation": web.generation.id, "holds": "0", "reminders": "1",
                           "answers": "1"}
    assert REGISTRY.value("clarify_reminders_lost_total") == reminders + 1
    assert REGISTRY.value("clarify_answers_lost_total") == answers + 1
    # nothing lost since: the next checks find nothing, and count nothing more
    assert await web.check() is None and await worker.check() is None
    assert lost(Loss.EMPTIED) == emptied + 1 and len(sink.of("store_data_lost")) == 1


async def test_each_loss_has_its_own_audit_id(
        backend: tuple[Callable[[], Any], Lose, ManualClock]) -> None:
    make, forget, clock = backend
    sink = MemorySink()
    one = watch(make(), clock, sink)
    await one.start()
    for _ in range(2):
        await forget()
        assert await one.check() is Loss.EMPTIED
    ids = [event.event_id for event in sink.of("store_data_lost")]
    assert len(ids) == 2 and len(set(ids)) == 2


async def test_an_older_snapshot_is_noticed_as_rolled_back_by_every_process() -> None:
    """The same generation at a lower epoch than a process saw: a restored snapshot. The
    process that notices starts a new generation, so the others notice too."""
    clock = ManualClock(T0)
    prefix = f"gen-{uuid4().hex[:8]}"
    client = aioredis.Redis.from_url(REDIS_URL, decode_responses=True)
    try:
        a, b = (watch(RedisStore(client, prefix=prefix), clock) for _ in range(2))
        await a.start()
        await b.start()
        snapshot = await client.hgetall(f"{prefix}:generation")
        for _ in range(3):
            assert await a.check() is None and await b.check() is None
        rolled, replaced = lost(Loss.ROLLED_BACK), lost(Loss.REPLACED)
        await client.hset(f"{prefix}:generation", mapping=snapshot)  # the older file, back
        assert await a.check() is Loss.ROLLED_BACK
        assert await b.check() is Loss.REPLACED
        assert lost(Loss.ROLLED_BACK) == rolled + 1 and lost(Loss.REPLACED) == replaced + 1
        assert a.generation is not None and a.generation.id != snapshot["id"]
    finally:
        async for name in client.scan_iter(match=f"{prefix}:*"):
            await client.delete(name)
        await client.aclose()


async def test_an_operators_reset_is_noticed_as_a_reset(
        backend: tuple[Callable[[], Any], Lose, ManualClock]) -> None:
    make, _, clock = backend
    one = watch(make(), clock)
    await one.start()
    resets = lost(Loss.RESET)
    await make().generation_reset(now=clock.now())
    assert await one.check() is Loss.RESET
    assert lost(Loss.RESET) == resets + 1


async def test_the_worker_checks_on_the_injected_clock_only_when_due(
        backend: tuple[Callable[[], Any], Lose, ManualClock]) -> None:
    make, _, clock = backend
    store = make()
    one = watch(store, clock)
    await one.start()
    start = await store.generation_read()
    assert await one.check_if_due() is None
    assert (await store.generation_read()).epoch == start.epoch  # not due: no check
    clock.advance(timedelta(seconds=10))
    assert await one.check_if_due() is None
    assert (await store.generation_read()).epoch == start.epoch + 1


class Flaky:
    """A store that fails while ``down`` (Redis restarting), else the memory store."""

    def __init__(self, store: MemoryStore) -> None:
        self.store, self.down = store, False

    def __getattr__(self, name: str) -> Any:
        found = getattr(self.store, name)
        if not callable(found) or name.startswith("_") or name.startswith("holds_"):
            return found

        async def call(*args: Any, **kwargs: Any) -> Any:
            if self.down:
                raise StoreUnavailable()
            return await found(*args, **kwargs)

        return call


async def test_a_check_while_the_store_is_away_counts_nothing_and_the_reconnect_checks_at_once(
        ) -> None:
    clock = ManualClock(T0)
    memory = MemoryStore(clock=clock)
    flaky = Flaky(memory)
    one = watch(flaky, clock)
    await one.start()
    emptied = lost(Loss.EMPTIED)
    flaky.down = True
    memory.forget()  # restarted empty while away
    assert await one.check() is None and one.failing
    assert lost(Loss.EMPTIED) == emptied
    assert await one.check_if_due() is None  # still away: due at once, not after the interval
    flaky.down = False
    assert await one.check_if_due() is Loss.EMPTIED  # the first check after the reconnect
    assert not one.failing and lost(Loss.EMPTIED) == emptied + 1


async def test_the_watch_loop_paces_itself_and_retries_sooner_while_the_store_is_away() -> None:
    clock = ManualClock(T0)
    flaky = Flaky(MemoryStore(clock=clock))
    one = watch(flaky, clock)
    waits: list[float] = []
    import asyncio

    stopping = asyncio.Event()

    async def sleep(seconds: float) -> None:
        waits.append(seconds)
        if len(waits) == 2:
            flaky.down = True
        if len(waits) == 4:
            stopping.set()

    one.sleep = sleep
    await one.run(stopping)
    assert waits == [10, 10, RETRY_SECONDS, RETRY_SECONDS]


async def test_what_a_process_shows_of_the_store_is_value_free(
        backend: tuple[Callable[[], Any], Lose, ManualClock]) -> None:
    make, _, clock = backend
    store = make()
    one = watch(store, clock)
    await one.start()
    secret = "zqheld-lease-token"
    await store.hold_put("job-1", json.dumps({"job": None, "due": T0.isoformat(),
                                              "named": ["job-1", secret]}), at=clock.now())
    await one.check()
    shown = json.dumps(one.status())
    assert one.generation is not None and one.generation.id in shown
    assert secret not in shown


async def test_a_hold_another_replica_released_is_forgotten_after_two_healthy_checks(
        backend: tuple[Callable[[], Any], Lose, ManualClock]) -> None:
    make, _, clock = backend
    store = make()
    one = watch(store, clock)
    await one.start()
    await store.hold_put("job-1", "{}", at=clock.now())
    await store.hold_put("job-2", "{}", at=clock.now())
    other = make()
    if other is store:  # one memory store: another replica's drop, without this one's memory
        del store._holds["job-1"]
    else:
        await other.hold_drop("job-1")
    assert await one.check() is None
    assert set(store.holds_remembered()) == {"job-1", "job-2"}  # absent once: kept
    assert await one.check() is None
    assert set(store.holds_remembered()) == {"job-2"}


class NoJobsCore:
    """A core that does not list its jobs (no jobs-read extension): all a worker's recovery
    asks of it."""

    def offers(self, _: object) -> bool:
        return False


class FailsOnce(Flaky):
    """The store fails the next ``hold_put`` only (Redis dropping again mid-recovery)."""

    def __init__(self, store: MemoryStore) -> None:
        super().__init__(store)
        self.fail_put = False

    def __getattr__(self, name: str) -> Any:
        if name == "hold_put" and self.fail_put:
            self.fail_put = False

            async def fail(*_: Any, **__: Any) -> None:
                raise StoreUnavailable()

            return fail
        return super().__getattr__(name)


async def test_a_recovery_cut_short_by_the_store_is_finished_at_the_next_check() -> None:
    from bot.process.holdrecovery import HoldRecovery

    clock = ManualClock(T0)
    memory = MemoryStore(clock=clock)
    store = FailsOnce(memory)
    one = watch(store, clock)
    one.recovery = HoldRecovery(store=store, core=cast(CoreClient, NoJobsCore()),
                                audit=one.audit, clock=clock)
    await one.start()
    text = json.dumps({"job": None, "due": (T0 + timedelta(hours=6)).isoformat(),
                       "named": ["job-1", "token-1"]})
    await store.hold_put("job-1", text, at=clock.now())
    given = REGISTRY.value("clarify_holds_recovered_total")
    memory.forget()
    store.fail_put = True
    assert await one.check() is None  # noticed, then the give-back failed: counted as away
    assert one.pending is not None and await memory.hold_text("job-1") is None
    assert await one.check() is None  # healthy again: the recovery finished
    assert one.pending is None and await memory.hold_text("job-1") == text
    assert REGISTRY.value("clarify_holds_recovered_total") == given + 1
