"""A Redis restarted empty while a question is held for the person's morning, as real processes
(docs/reliability.md, "A store that lost its data").

A worker (`clarify-bot serve --role worker`) and a web process (`--role web`) run on a Redis
server this test starts itself (no persistence), on a clock the test moves
(tests/support/clocked_serve.py); the reference core (acme) and a fake Slack Web API are served
from the test's own event loop. The clock starts on Tuesday 1 December 2026 at 01:00 UTC, 02:00
in Berlin where Ahmed is: his normal question is held for 08:00 there (07:00 UTC).

Redis is then shut down without saving and started again, empty, on the same port. Each process
notices (its store watch checks every second here, ``store.watch_seconds``); the worker gives the
hold back from its memory, and the card goes out at 08:00 Berlin, once. The loss is counted by
both processes and audited once. In the second test the worker dies with Redis: the new worker
finds the lease the core says the bot holds, nobody gives its hold back, and it is counted
lost and audited; when the core hands the job again, Ahmed's skip says the store lost its data.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import redis.asyncio as aioredis

from bot.core.client import CoreClient
from bot.core.models import JobState, ReasonCode
from bot.store.redis import RedisStore
from devcore.client import DevCoreClient
from devcore.core import ReferenceCore
from devslack import LocalSlack
from tests.bot.test_service import SECRETS
from tests.engine import test_working_hours_processes as hours
from tests.engine.conftest import new_clarification
from tests.engine.test_working_hours_processes import (
    BERLIN_8AM,
    PASS,
    STEP,
    WINDOW,
    WorkerProcess,
    held_by,
    job_of,
    posts_to,
    question_cards,
    worker_settings,
)
from tests.support.clocked_serve import ClockFile
from tests.support.processes import Processes, free_port, plain_env, wait_until

# the fixtures of the working hours' process tests: the same clock (Tuesday 01:00 UTC), acme core,
# clock file the processes read, and fake Slack with each person's zone
clock, core, moving, slack = hours.clock, hours.core, hours.moving, hours.slack
# slow: bot processes and a redis-server of its own
pytestmark = [pytest.mark.full_contract, pytest.mark.slow]
LOSSES = ("emptied", "replaced", "reset", "rolled_back")


@dataclass
class RedisServer:
    """A redis-server of the test's own, without persistence, restarted empty on demand."""

    port: int
    process: asyncio.subprocess.Process | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    async def start(self) -> None:
        self.process = await asyncio.create_subprocess_exec(
            "redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
            "--appendonly", "no", stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL)
        await wait_until(self.answers, "redis-server to answer", 20)

    async def answers(self) -> bool:
        client = aioredis.from_url(self.url)
        try:
            return bool(await client.ping())
        except (aioredis.ConnectionError, OSError):
            return False
        finally:
            await client.aclose()

    async def restart_empty(self) -> None:
        """SHUTDOWN NOSAVE, then the same port again: nothing of before survives."""
        assert self.process is not None
        client = aioredis.from_url(self.url)
        with contextlib.suppress(aioredis.ConnectionError):
            await client.shutdown(nosave=True)
        await client.aclose()
        await self.process.wait()
        await self.start()

    async def stop(self) -> None:
        if self.process is not None and self.process.returncode is None:
            self.process.kill()
            await self.process.wait()


@pytest.fixture
async def redis_server() -> AsyncIterator[RedisServer]:
    server = RedisServer(free_port())
    await server.start()
    yield server
    await server.stop()


@pytest.fixture
async def store(redis_server: RedisServer) -> AsyncIterator[RedisStore]:
    async with RedisStore.from_url(redis_server.url, prefix="lost") as opened:
        yield opened


@dataclass
class Bot(WorkerProcess):
    """A bot process: its metrics port (the worker's health port, or the web server's port)
    and its audit file."""

    audit: Path = Path()

    def audited(self, type_: str) -> list[dict[str, Any]]:
        if not self.audit.exists():
            return []
        return [doc for doc in map(json.loads, self.audit.read_text().splitlines())
                if doc.get("type") == type_]

    async def lost(self) -> float:
        try:
            return sum([await self.metric(f'clarify_store_data_lost_total{{kind="{k}"}}')
                        for k in LOSSES])
        except aiohttp.ClientError:
            return 0


@pytest.fixture
def bots(core_url: str, slack: LocalSlack, redis_server: RedisServer, moving: ClockFile,
         tmp_path: Path, processes: Processes) -> Callable[..., Awaitable[Bot]]:
    """Start a bot process on the clock file and the test's own Redis (its store watched
    every second, audited to a file of its own); killed after the test."""
    async def start(name: str, *, role: str = "worker") -> Bot:
        health, port = free_port(), free_port()
        audit = tmp_path / f"{name}.audit.jsonl"
        settings = worker_settings(core=core_url, redis=redis_server.url, prefix="lost",
                                   slack=slack.url, health=health, server={"port": port},
                                   store={"watch_seconds": 1},
                                   audit={"sink": "jsonl", "path": audit})
        started = await processes.serve(settings, role=role, name=name, clock_file=moving.path,
                                        env=plain_env(**SECRETS))
        bot = Bot(started.process, health if role == "worker" else port, started.stderr,
                  audit=audit)
        await wait_until(lambda: bot.metric_is("clarify_holds_lost_total", 0), f"{name} up", 30)
        return bot

    return start


async def checked_beyond(store: RedisStore, epoch: int) -> bool:
    found = await store.generation_read()
    return found is not None and found.epoch >= epoch


async def a_pass(*alive: Bot) -> None:
    async def one(bot: Bot) -> None:
        start = await bot.polls()
        await wait_until(lambda: bot.polls_reached(start + PASS), "a housekeeping pass", 30)

    await asyncio.gather(*(one(bot) for bot in alive))


async def step(worker: Bot, moving: ClockFile, to: datetime | None = None) -> None:
    moving.set(to or moving.now() + STEP)
    await a_pass(worker)


async def test_redis_restarted_empty_while_a_question_is_held_one_card_at_8_loss_counted(
        bots: Callable[..., Awaitable[Bot]], core: ReferenceCore, moving: ClockFile,
        slack: LocalSlack, store: RedisStore, redis_server: RedisServer,
        dev_client: DevCoreClient, truth: CoreClient) -> None:
    worker = await bots("worker")
    web = await bots("web", role="web")
    cid = await new_clarification(dev_client, authority={"authored_by": ["p-ahmed"]})
    job = await held_by(worker, core, store, cid)  # type: ignore[arg-type]
    token = job.lease_token
    generation = await store.generation_read()
    assert generation is not None
    # both processes check every second, each check raising the epoch: a few more checks, and
    # each has counted the hold in what the store held at its last check
    await wait_until(lambda: checked_beyond(store, generation.epoch + 4), "more checks", 30)

    await redis_server.restart_empty()
    await wait_until(lambda: worker.lost(), "the worker to notice the loss", 30)
    await wait_until(lambda: web.lost(), "the web process to notice the loss", 30)
    await wait_until(lambda: worker.metric_is("clarify_holds_recovered_total", 1),
                "the hold given back", 30)
    async with RedisStore.from_url(redis_server.url, prefix="lost") as after:
        assert await after.hold_text(job.id) is not None
        now = await after.generation_read()
    assert now is not None and now.id != generation.id and now.origin == "after_loss"
    async with aiohttp.ClientSession() as http, http.get(
            f"http://127.0.0.1:{web.health}/readyz") as got:
        shown = (await got.json())["store_generation"]
    assert shown["id"] == now.id and shown["losses_seen"] == 1

    while moving.now() < BERLIN_8AM:
        await step(worker, moving)
        if moving.now() < BERLIN_8AM:
            assert question_cards(slack, "U0AHMED") == []
            assert job.lease_token == token and job.attempts == 0
            assert job.lease_expires_at is not None and job.lease_expires_at > moving.now()
    await wait_until(lambda: question_cards(slack, "U0AHMED"), "the card at 08:00 Berlin", 30)
    for _ in range(3):
        await step(worker, moving)
    assert len(question_cards(slack, "U0AHMED")) == 1 and posts_to(slack, "U0AHMED") == 1
    c = await truth.get_clarification(clarification_id=cid)
    assert [(d.person_id, d.attempt, d.delivered_at) for d in c.deliveries] == [
        ("p-ahmed", 0, BERLIN_8AM)]
    assert not [ev for ev in c.events if ev.type == "skipped"]

    # counted by each process that noticed, once; audited once in all; nothing counted lost
    assert await worker.lost() == 1 and await web.lost() == 1
    assert await worker.metric("clarify_holds_lost_total") == 0
    [loss] = worker.audited("store_data_lost") + web.audited("store_data_lost")
    assert loss["extra"]["holds"] == "1" and loss["extra"]["previous"] == generation.id
    [given] = worker.audited("hold_recovered")
    assert (given["clarification_id"], given["person_id"]) == (cid, "p-ahmed")
    assert [line["kind"] for line in worker.logged("store.data_lost")] in (
        ["emptied"], ["replaced"])


async def test_redis_emptied_with_its_worker_the_hold_is_counted_lost_and_the_skip_says_why(
        bots: Callable[..., Awaitable[Bot]], core: ReferenceCore, moving: ClockFile,
        slack: LocalSlack, store: RedisStore, redis_server: RedisServer,
        dev_client: DevCoreClient, truth: CoreClient) -> None:
    first = await bots("w1")
    cid = await new_clarification(dev_client,
                                  authority={"authored_by": ["p-ahmed"], "named": ["p-sarah"]})
    job = await held_by(first, core, store, cid)  # type: ignore[arg-type]
    lease_end = job.lease_expires_at
    assert lease_end is not None
    await first.sigkill()
    await redis_server.restart_empty()

    second = await bots("w2")
    await wait_until(lambda: second.metric_is("clarify_holds_lost_total", 1), "the hold lost", 30)
    [gone] = second.audited("hold_lost")
    assert (gone["clarification_id"], gone["person_id"], gone["attempt"]) == (cid, "p-ahmed", 0)
    assert "lost its data" in gone["message"]
    assert question_cards(slack, "U0AHMED") == []

    # nobody carries the lease on: it runs out, and the window's backoff brings the job back
    moving.set(lease_end + STEP)
    await a_pass(second)
    assert job.state is JobState.AVAILABLE and job.attempts == 1
    await step(second, moving, to=job.visible_at)
    london_8am = datetime(2026, 12, 3, 8, 0, tzinfo=UTC)
    while moving.now() < london_8am:
        await step(second, moving)
    await wait_until(lambda: question_cards(slack, "U0SARAH"), "Sarah's card", 30)
    assert question_cards(slack, "U0AHMED") == [] and posts_to(slack, "U0AHMED") == 0
    c = await truth.get_clarification(clarification_id=cid)
    [skip] = [ev for ev in c.events if ev.type == "skipped"]
    assert (skip.person_id, skip.reason_code) == ("p-ahmed", ReasonCode.DELIVERY_FAILED)
    assert "store (Redis) lost its data" in skip.message
    assert "a worker stopped" not in skip.message
    assert job_of(core, cid).visible_at is not None
    assert WINDOW == timedelta(hours=48)
