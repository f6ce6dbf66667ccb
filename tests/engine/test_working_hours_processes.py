"""Workers SIGKILLed while they hold a question for the person's working hour, as real processes.

Each worker is `clarify-bot serve --role worker` in its own process on one Redis prefix
(tests/support/clocked_serve.py: the console script, on a clock this test moves); the reference
core (acme, on the test's manual clock) and a fake Slack Web API are served over HTTP from the
test's own event loop. The clock starts on Tuesday 1 December 2026 at 01:00 UTC: 02:00 in
Berlin, where Slack says Ahmed is, so a normal question for him waits for 08:00 there (07:00
UTC) with the default working hours (nothing about them in the settings file).

Time is never slept for: the test moves the clock, then waits (bounded, polling) until the
worker has polled the core enough times to have kept house at least once since (every
``housekeeping_every``-th poll iteration ends in a pass). docs/delivery.md, "Working hours",
names these tests in its failure modes.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import uuid4

import aiohttp
import pytest
import redis.asyncio as aioredis
from aiohttp import web

from bot.clock import ManualClock
from bot.core.client import CoreClient
from bot.core.models import DeliveryKind, JobState, ReasonCode
from bot.engine.holds import HOLD_LEASE_SECONDS, Hold
from bot.process.worker import WorkerConfig
from bot.store.redis import RedisStore
from devcore.client import DevCoreClient
from devcore.core import ReferenceCore
from devcore.jobs import JobRecord
from devslack import LocalSlack
from tests.bot.test_service import SECRETS
from tests.engine.conftest import REDIS_URL, acme_core, new_clarification
from tests.support.clocked_serve import ClockFile
from tests.support.processes import (
    BotProcess,
    Processes,
    free_port,
    merged,
    plain_env,
    serve_settings,
    wait_until,
)

TUESDAY_1AM = datetime(2026, 12, 1, 1, 0, tzinfo=UTC)  # 02:00 Berlin and Madrid, 01:00 London
BERLIN_8AM = datetime(2026, 12, 1, 7, 0, tzinfo=UTC)
STEP = timedelta(minutes=20)  # the hold is looked at 20 minutes before its lease would end
LEASE = timedelta(seconds=60)  # worker.lease_seconds below
WINDOW = timedelta(hours=48)  # acme's escalation window
# polls after a clock step that include one whole housekeeping pass begun after it
PASS = WorkerConfig().housekeeping_every + 2
POLLS = 'clarify_core_request_seconds_count{operation="pollJobs"}'


def worker_settings(*, core: str, redis: str, prefix: str, slack: str, health: int,
                    **tables: Any) -> dict[str, Any]:
    """A worker on Redis under ``prefix``, its health port serving metrics, working hours on
    (their defaults: nothing about them in the file); ``tables`` merged in."""
    return merged(serve_settings(
        core=core, port=free_port(), slack_api=slack, redis=redis, prefix=prefix,
        clarify={"hours": None},
        worker={"poll_interval_seconds": 0.01, "lease_seconds": int(LEASE.total_seconds()),
                "heartbeat_seconds": 20, "nice": 0, "health_port": health},
        log={"level": "info"}), tables)


# a long hold lives on the heartbeat-lease extension (test_working_hours_baseline.py shows a
# hold on a core without it)
# slow: worker processes on a clock file
pytestmark = [pytest.mark.full_contract, pytest.mark.slow]


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(TUESDAY_1AM)


@pytest.fixture
def core(clock: ManualClock) -> ReferenceCore:
    return acme_core(clock)


@pytest.fixture
def moving(clock: ManualClock, tmp_path: Path) -> ClockFile:
    return ClockFile(tmp_path / "clock", clock)


@pytest.fixture
async def slack() -> AsyncIterator[LocalSlack]:
    async with LocalSlack() as fake:
        for user, zone in (("U0AHMED", "Europe/Berlin"), ("U0SARAH", "Europe/London"),
                           ("U0MARIA", "Europe/Madrid"), ("U0PRIYA", "America/New_York")):
            fake.add_user(user, tz=zone)
        yield fake


@pytest.fixture
def prefix() -> Iterator[str]:
    name = f"holding{uuid4().hex[:8]}"
    yield name
    asyncio.run(_forget(name))


async def _forget(prefix: str) -> None:
    client = aioredis.from_url(REDIS_URL, decode_responses=True)
    async for name in client.scan_iter(f"{prefix}:*"):
        await client.delete(name)
    await client.aclose()


@pytest.fixture
async def store(prefix: str) -> AsyncIterator[RedisStore]:
    """The workers' store, read by the test."""
    async with RedisStore.from_url(REDIS_URL, prefix=prefix) as opened:
        yield opened


@dataclass
class WorkerProcess(BotProcess):
    """`clarify-bot serve --role worker`: its process, metrics port (``health``) and JSON log
    lines."""

    @property
    def health(self) -> int:
        return self.port

    async def metric_is(self, name: str, value: float) -> bool:
        try:
            return await self.metric(name) == value
        except aiohttp.ClientError:
            return False  # not listening yet

    async def polls(self) -> float:
        """The polls this process has sent the core (its own request histogram's count)."""
        try:
            return await self.metric(POLLS)
        except aiohttp.ClientError:
            return 0  # not listening yet

    async def polls_reached(self, count: float) -> bool:
        return await self.polls() >= count



@pytest.fixture
def workers(core_url: str, slack: LocalSlack, prefix: str, moving: ClockFile,
            processes: Processes) -> Callable[..., Awaitable[WorkerProcess]]:
    """Start a worker on the clock file, killed after the test."""
    async def start(name: str, *, core: str | None = None) -> WorkerProcess:
        health = free_port()
        started = await processes.serve(
            worker_settings(core=core or core_url, redis=REDIS_URL, prefix=prefix,
                            slack=slack.url, health=health),
            role="worker", name=name, port=health, clock_file=moving.path,
            env=plain_env(**SECRETS))
        return WorkerProcess(started.process, health, started.stderr)

    return start


@dataclass
class Withheld:
    """A way to the core that withholds the heartbeat asking for the held lease: a worker
    behind it stops between recording a hold and extending the hold's lease."""

    url: str
    reached: asyncio.Event


@pytest.fixture
async def withheld(core_url: str) -> AsyncIterator[Withheld]:
    reached, done = asyncio.Event(), asyncio.Event()
    hop = {"content-length", "content-type", "transfer-encoding", "content-encoding",
           "connection", "host"}

    async def forward(request: web.Request) -> web.Response:
        body = await request.read()
        if request.path.endswith("/heartbeat") and json.loads(body or b"{}").get(
                "leaseSeconds") == HOLD_LEASE_SECONDS:
            reached.set()
            await done.wait()  # never forwarded; answered only as the test ends
            return web.Response(status=503)
        async with aiohttp.ClientSession() as http, http.request(
                request.method, core_url + request.path_qs, data=body,
                headers={k: v for k, v in request.headers.items() if k.lower() not in hop}
                | {"Content-Type": request.headers.get("Content-Type", "application/json")},
        ) as got:
            return web.Response(status=got.status, body=await got.read(),
                                content_type=got.content_type,
                                headers={k: v for k, v in got.headers.items()
                                         if k.lower() not in hop})

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", forward)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        yield Withheld(f"http://127.0.0.1:{runner.addresses[0][1]}", reached)
    finally:
        done.set()
        await runner.cleanup()


def job_of(core: ReferenceCore, clarification_id: str) -> JobRecord:
    [job] = [j for j in core.jobs.jobs.values()
             if j.payload.clarification_id == clarification_id]
    return job


async def a_pass(*alive: WorkerProcess) -> None:
    """Wait until each of the live workers has kept house at least once from now on."""
    async def one(worker: WorkerProcess) -> None:
        start = await worker.polls()
        await wait_until(lambda: worker.polls_reached(start + PASS), "a housekeeping pass", 30)

    await asyncio.gather(*(one(worker) for worker in alive))


async def step(*alive: WorkerProcess, moving: ClockFile, to: datetime | None = None) -> None:
    """Move the clock (a STEP, or ``to``), then let every live worker keep house once."""
    moving.set(to or moving.now() + STEP)
    await a_pass(*alive)


async def held_by(worker: WorkerProcess, core: ReferenceCore, store: RedisStore,
                  clarification_id: str) -> JobRecord:
    """Wait until ``worker`` holds the question's job: counted held, the hold in the store, the
    lease extended by the held lease."""
    await wait_until(lambda: worker.metric_is("clarify_jobs_held_total", 1), "the job held", 30)
    job = job_of(core, clarification_id)
    held_lease = timedelta(seconds=HOLD_LEASE_SECONDS)
    await wait_until(lambda: job.lease_expires_at == core.clock.now() + held_lease,
                "the held lease", 30)
    text = await store.hold_text(job.id)
    assert text is not None
    hold = Hold.loads(text)
    assert hold.job.lease_token == job.lease_token and hold.due == BERLIN_8AM
    assert job.attempts == 0
    return job


def question_cards(slack: LocalSlack, user_id: str) -> list[Any]:
    return slack.dm_of(user_id)


def posts_to(slack: LocalSlack, user_id: str) -> int:
    """chat.postMessage calls into the person's DM, failed ones included."""
    return sum(1 for call in slack.calls_to("chat.postMessage")
               if call.args.get("channel") in (user_id, slack.dm_channel(user_id)))


async def until_the_hour(*alive: WorkerProcess, moving: ClockFile, slack: LocalSlack,
                         job: JobRecord, token: str | None) -> None:
    """Move the clock to 08:00 Berlin a STEP at a time, each live worker keeping house after
    each step: until then no card, and the held lease carried on (the same token, extended
    before it ends, no attempt spent); at 08:00 Ahmed's card."""
    while moving.now() < BERLIN_8AM:
        await step(*alive, moving=moving)
        if moving.now() < BERLIN_8AM:
            assert question_cards(slack, "U0AHMED") == []
            assert job.lease_token == token and job.attempts == 0
            assert job.lease_expires_at is not None and job.lease_expires_at > moving.now()
    await wait_until(lambda: question_cards(slack, "U0AHMED"), "the card at 08:00 Berlin", 30)


async def one_card_at_8(*alive: WorkerProcess, moving: ClockFile, slack: LocalSlack,
                        truth: CoreClient, job: JobRecord, token: str | None,
                        clarification_id: str) -> None:
    """Ahmed's one card went out at 08:00 Berlin on the held lease, and its escalation window
    starts then: the lease is the worker's own from 08:00, the card says when it moves on, and
    once the lease ran out the core brings the job back a window later. Nothing more is sent
    however long the workers go on."""
    [card] = question_cards(slack, "U0AHMED")
    c = await truth.get_clarification(clarification_id=clarification_id)
    assert [(d.person_id, d.kind, d.attempt, d.delivered_at) for d in c.deliveries] == [
        ("p-ahmed", DeliveryKind.QUESTION, 0, BERLIN_8AM)]
    assert job.lease_token == token and job.lease_expires_at == BERLIN_8AM + LEASE
    [moves_on] = [b["elements"][0]["text"] for b in card.blocks
                  if b.get("block_id", "").endswith(".moves_on")]
    assert moves_on.endswith("Goes to the workspace steward on 3 December at 08:01.")  # Berlin

    for _ in range(3):  # past the card's lease: the turn runs out as every turn does
        await step(*alive, moving=moving)
    assert len(question_cards(slack, "U0AHMED")) == 1 and posts_to(slack, "U0AHMED") == 1
    assert job.state is JobState.AVAILABLE and job.attempts == 1
    assert job.visible_at == BERLIN_8AM + LEASE + WINDOW
    c = await truth.get_clarification(clarification_id=clarification_id)
    assert len(c.deliveries) == 1 and not [ev for ev in c.events if ev.type == "skipped"]
    for worker in alive:
        assert await worker.metric("clarify_holds_lost_total") == 0
        assert await worker.metric("clarify_jobs_held_total") == 0  # carried on, not held anew


async def test_a_worker_killed_while_holding_is_carried_on_by_a_new_process_one_card_at_8(
        workers: Callable[..., Awaitable[WorkerProcess]], core: ReferenceCore,
        moving: ClockFile, slack: LocalSlack, store: RedisStore, dev_client: DevCoreClient,
        truth: CoreClient) -> None:
    """The first worker holds Ahmed's question at 02:00 Berlin and is SIGKILLed; a new process
    carries the hold on (its lease extended before it ends, never leased again, no attempt
    spent) and sends one card at 08:00 Berlin, whose escalation window starts then."""
    first = await workers("w1")
    cid = await new_clarification(dev_client, authority={"authored_by": ["p-ahmed"]})
    job = await held_by(first, core, store, cid)
    token = job.lease_token
    assert question_cards(slack, "U0AHMED") == []
    await first.sigkill()
    assert await store.hold_text(job.id) is not None  # the hold outlives its worker

    second = await workers("w2")
    await until_the_hour(second, moving=moving, slack=slack, job=job, token=token)
    await one_card_at_8(second, moving=moving, slack=slack, truth=truth, job=job, token=token,
                        clarification_id=cid)
    assert await store.holds_due(now=BERLIN_8AM + timedelta(days=30)) == []
    assert [e["outcome"] for e in second.logged("worker.hold_released")] == ["asked"]


async def test_a_worker_killed_before_it_extended_the_held_lease_leaves_it_to_two_replicas(
        workers: Callable[..., Awaitable[WorkerProcess]], core: ReferenceCore,
        moving: ClockFile, slack: LocalSlack, store: RedisStore, dev_client: DevCoreClient,
        truth: CoreClient, withheld: Withheld) -> None:
    """The first worker is SIGKILLed between recording the hold and extending its lease (its
    heartbeat asking for the held lease never reaches the core): the job keeps the poll's
    60-second lease, the hold is due to be looked at at once, and the next pass of a live
    worker extends it. Two replicas carry it on together, both looking at it when due; one
    card goes out at 08:00 Berlin."""
    first = await workers("w1", core=withheld.url)
    cid = await new_clarification(dev_client, authority={"authored_by": ["p-ahmed"]})
    await wait_until(withheld.reached.is_set, "the held lease's heartbeat", 30)
    job = job_of(core, cid)
    token = job.lease_token
    assert job.lease_expires_at == TUESDAY_1AM + LEASE  # the poll's lease, not extended
    assert await first.metric("clarify_jobs_held_total") == 1
    assert await store.hold_text(job.id) is not None
    await first.sigkill()

    replicas = (await workers("w2"), await workers("w3"))
    await a_pass(*replicas)  # the clock has not moved: inside the poll's lease
    assert job.lease_token == token and job.attempts == 0
    assert job.lease_expires_at == TUESDAY_1AM + timedelta(seconds=HOLD_LEASE_SECONDS)
    await until_the_hour(*replicas, moving=moving, slack=slack, job=job, token=token)
    await one_card_at_8(*replicas, moving=moving, slack=slack, truth=truth, job=job,
                        token=token, clarification_id=cid)
    assert await store.holds_due(now=BERLIN_8AM + timedelta(days=30)) == []


async def test_a_worker_killed_while_holding_whose_lease_ran_out_before_the_next_one_started(
        workers: Callable[..., Awaitable[WorkerProcess]], core: ReferenceCore,
        moving: ClockFile, slack: LocalSlack, store: RedisStore, dev_client: DevCoreClient,
        truth: CoreClient) -> None:
    """Every worker gone for longer than the held lease: the core counts Ahmed's turn as
    expired (attempts + 1, the window's backoff); the next process drops the hold and counts it
    lost; when the core hands the job again, Ahmed's turn has passed (a DELIVERY_FAILED skip:
    never asked late, though it is his working day by then) and Sarah, next in the ranking,
    gets the one card, at her own 08:00."""
    first = await workers("w1")
    cid = await new_clarification(dev_client,
                                  authority={"authored_by": ["p-ahmed"], "named": ["p-sarah"]})
    job = await held_by(first, core, store, cid)
    lease_end = job.lease_expires_at
    assert lease_end == TUESDAY_1AM + timedelta(seconds=HOLD_LEASE_SECONDS)
    await first.sigkill()
    moving.set(lease_end + timedelta(hours=1))  # nobody alive when the lease ends

    second = await workers("w2")
    await a_pass(second)
    assert await second.metric("clarify_holds_lost_total") == 1
    assert await store.hold_text(job.id) is None
    assert [e["error"] for e in second.logged("worker.hold_lost")] in (
        ["LeaseExpired"], ["LeaseMismatch"])
    assert job.state is JobState.AVAILABLE and job.attempts == 1
    assert job.visible_at == lease_end + WINDOW  # the turn expired, with the window's backoff
    assert slack.messages == []

    # Thursday 02:00 UTC (03:00 Berlin, 02:00 London): the core hands the job again
    await step(second, moving=moving, to=job.visible_at)
    await wait_until(lambda: second.metric_is("clarify_jobs_held_total", 1), "held for Sarah", 30)
    london_8am = datetime(2026, 12, 3, 8, 0, tzinfo=UTC)
    while moving.now() < london_8am:
        assert slack.messages == []
        await step(second, moving=moving)
    await wait_until(lambda: question_cards(slack, "U0SARAH"), "Sarah's card", 30)
    for _ in range(3):
        await step(second, moving=moving)  # 09:00 in Berlin by then: Ahmed is at work

    assert len(question_cards(slack, "U0SARAH")) == 1 and posts_to(slack, "U0SARAH") == 1
    assert question_cards(slack, "U0AHMED") == [] and posts_to(slack, "U0AHMED") == 0
    c = await truth.get_clarification(clarification_id=cid)
    assert [(d.person_id, d.attempt, d.delivered_at) for d in c.deliveries] == [
        ("p-sarah", 1, london_8am)]
    skipped = [ev for ev in c.events if ev.type == "skipped"]
    assert [(ev.person_id, ev.reason_code) for ev in skipped] == [
        ("p-ahmed", ReasonCode.DELIVERY_FAILED)]
    assert "a worker stopped before this person was asked" in skipped[0].message
