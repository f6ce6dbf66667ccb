"""``Retry-After`` everywhere: every call to the core honours a 429's or a 503's Retry-After
(seconds, or an HTTP date) through the one ``RetryPolicy``, the job poll included, against the
reference core over real HTTP behind a proxy that answers in its place
(``tests/support/core_proxy.py``). Nothing sleeps: the client's sleep and the worker's idle wait
are injected, and record the waits asked for.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import timedelta
from email.utils import format_datetime
from typing import Any

import pytest

from bot.audit import MemorySink
from bot.channels.recording import RecordingChannel
from bot.clock import ManualClock
from bot.core.batching import JobScope
from bot.core.calls import CORE_RETRY
from bot.core.client import CoreClient
from bot.core.models import (
    AnswerRequest,
    EventReport,
    LeasedJob,
    ReasonCode,
    Role,
    SlackIdentity,
)
from bot.core.models import (
    Channel as ContractChannel,
)
from bot.process.worker import WorkerConfig
from bot.store.memory import MemoryStore
from devcore.client import DevCoreClient
from tests.conftest import CLARIFY_TOKEN, extensions_for
from tests.engine.kit import create, node
from tests.support.core_proxy import CoreProxy, core_proxy

POLL = "POST /v1/jobs/poll"


@dataclass
class Waits:
    """An injected sleep: records each wait asked for, moves the clock by it, never sleeps."""

    clock: ManualClock
    asked: list[float] = field(default_factory=list)
    then: Callable[[], None] | None = None  # called after each wait (a test's stop)

    async def __call__(self, seconds: float) -> None:
        self.asked.append(seconds)
        self.clock.advance(timedelta(seconds=seconds))
        if self.then is not None:
            self.then()
        await asyncio.sleep(0)


@dataclass
class Rig:
    proxy: CoreProxy
    client: CoreClient
    waits: Waits


@pytest.fixture
async def rig(core_url: str, contract: str, clock: ManualClock) -> AsyncIterator[Rig]:
    """The bot's client through the proxy with the core client's own policy (``CORE_RETRY``),
    its jitter drawn at the ceiling."""
    async with core_proxy(core_url) as proxy:
        waits = Waits(clock)
        async with CoreClient(base_url=proxy.url, token=CLARIFY_TOKEN, retry=CORE_RETRY,
                              sleep=waits, random=lambda: 1.0, clock=clock,
                              extensions=extensions_for(contract)) as client:
            await client.detect_extensions()
            yield Rig(proxy, client, waits)


def _http_date(clock: ManualClock, seconds: int) -> str:
    return format_datetime(clock.now() + timedelta(seconds=seconds), usegmt=True)


# ---------------------------------------------------------------- the poll


@pytest.mark.parametrize(("status", "retry_after", "waited"), [
    (429, "10", 10.0),
    (503, "5", 5.0),
    (429, "date:12", 12.0),  # an HTTP date, 12 s after the clock's now
    (503, "3600", CORE_RETRY.retry_after_cap),  # honoured up to the cap
], ids=["429-seconds", "503-seconds", "429-http-date", "503-capped"])
async def test_the_poll_loop_waits_out_a_retry_after(
        rig: Rig, clock: ManualClock, dev_client: DevCoreClient, status: int,
        retry_after: str, waited: float) -> None:
    """The poll answered with a Retry-After (a 0.2 s poll interval): the worker's loop waits
    that long before it polls again (once polled 51 times in 10 s); the poll is not resent by
    the client meanwhile; then the job is leased and handled."""
    header = _http_date(clock, 12) if retry_after.startswith("date:") else retry_after
    rig.proxy.throttle(POLL, status=status, retry_after=header)
    channel = RecordingChannel()
    worker = node(core=rig.client, store=MemoryStore(clock=clock), channel=channel,
                  sink=MemorySink(), clock=clock, worker_id="w-1",
                  config=WorkerConfig(poll_interval_seconds=0.2)).worker
    idle = Waits(clock)
    worker.idle_sleep = idle
    idle.then = lambda: worker.stop() if len(idle.asked) == 2 else None
    await create(dev_client, authority={"authored_by": ["p-sarah"]})
    await asyncio.wait_for(worker.run(), 30)
    # refused, waited out; then one poll leases the job, the next finds nothing and waits the
    # poll interval
    assert idle.asked == [waited, 0.2]
    assert rig.proxy.seen[POLL] == 3
    assert rig.waits.asked == []  # the client never waited for the poll itself
    assert [s.address.person_id for s in channel.sent] == ["p-sarah"]


async def test_a_core_rate_limiting_the_poll_for_ten_seconds_sees_one_poll_per_retry_after(
        rig: Rig, clock: ManualClock, dev_client: DevCoreClient) -> None:
    """The poll refused for 10 s, each time with ``Retry-After: 3``, the poll interval 0.2 s:
    four refused polls 3 s apart, then the one that leases (not 51 polls, one every 0.2 s)."""
    rig.proxy.throttle(POLL, retry_after="3", times=4)
    worker = node(core=rig.client, store=MemoryStore(clock=clock), channel=RecordingChannel(),
                  sink=MemorySink(), clock=clock, worker_id="w-1",
                  config=WorkerConfig(poll_interval_seconds=0.2)).worker
    idle = Waits(clock)
    worker.idle_sleep = idle
    idle.then = lambda: worker.stop() if idle.asked[-1] == 0.2 else None
    start = clock.now()
    await create(dev_client, authority={"authored_by": ["p-sarah"]})
    await asyncio.wait_for(worker.run(), 30)
    assert idle.asked == [3.0, 3.0, 3.0, 3.0, 0.2]
    assert rig.proxy.seen[POLL] == 6  # four refused, one leasing, one finding nothing
    assert clock.now() - start == timedelta(seconds=12.2)


# ---------------------------------------------------------------- every other route family


async def _leased(rig: Rig, dev_client: DevCoreClient) -> LeasedJob:
    await create(dev_client, authority={"authored_by": ["p-sarah"], "named": ["p-ahmed"]})
    (job,) = (await rig.client.poll_jobs(kinds=["clarify:"], lease_seconds=60)).jobs
    return job


async def _cid(rig: Rig, dev_client: DevCoreClient) -> str:
    return await create(dev_client, authority={"authored_by": ["p-sarah"]})


Call = Callable[[Rig, DevCoreClient], Awaitable[Any]]


async def heartbeat(rig: Rig, dev: DevCoreClient) -> Any:
    job = await _leased(rig, dev)
    return await rig.client.heartbeat_job(job_id=job.id, lease_token=job.lease_token)


async def advance(rig: Rig, dev: DevCoreClient) -> Any:
    job = await _leased(rig, dev)
    return await rig.client.advance_job(job_id=job.id, lease_token=job.lease_token, attempt=1)


async def complete(rig: Rig, dev: DevCoreClient) -> Any:
    job = await _leased(rig, dev)
    return await rig.client.complete_job(job_id=job.id, lease_token=job.lease_token)


async def fail(rig: Rig, dev: DevCoreClient) -> Any:
    """Not retry-safe: a 429 is still resent (the core refused it, nothing was done)."""
    job = await _leased(rig, dev)
    return await rig.client.fail_job(job_id=job.id, lease_token=job.lease_token)


async def read_clarification(rig: Rig, dev: DevCoreClient) -> Any:
    return await rig.client.get_clarification(clarification_id=await _cid(rig, dev))


async def list_clarifications(rig: Rig, dev: DevCoreClient) -> Any:
    await _cid(rig, dev)
    return (await rig.client.list_clarifications(tenant_id="acme")).items


async def answer(rig: Rig, dev: DevCoreClient) -> Any:
    request = AnswerRequest(answer_index=0, responder="p-sarah", rights=Role.EDITOR,
                            channel=ContractChannel.SLACK)
    return await rig.client.answer_clarification(clarification_id=await _cid(rig, dev),
                                                 request=request)


async def report(rig: Rig, dev: DevCoreClient) -> Any:
    """The job's reports together where the core offers the batch, else on their own route."""
    cid = await _cid(rig, dev)
    scope = JobScope()
    await rig.client.report_event(clarification_id=cid, scope=scope, report=EventReport(
        type="skipped", person_id="p-sarah", reason_code=ReasonCode.NO_DELIVERY_ALIAS,
        event_id="ev-1", message="Skipped."))
    await rig.client.flush(scope, linger=0)
    return [ev for ev in (await rig.client.get_clarification(clarification_id=cid)).events
            if ev.type == "skipped"]


async def person(rig: Rig, dev: DevCoreClient) -> Any:
    return await rig.client.get_person(person_id="p-sarah", tenant_id="acme")


async def resolve(rig: Rig, dev: DevCoreClient) -> Any:
    return await rig.client.resolve_person(
        tenant_id="acme", identity=SlackIdentity(user_id="U0SARAH", team_id="T0ACME"))


EVENTS = "POST /v1/clarifications/{clarificationId}/events"
FAMILIES: list[tuple[str, Call, dict[str, str]]] = [
    # (name, the call, the route throttled on the full core and on the baseline one)
    ("heartbeat", heartbeat, {"full": "POST /v1/jobs/{jobId}/heartbeat"}),
    ("advance", advance, {"full": "POST /v1/jobs/{jobId}/advance"}),
    ("complete", complete, {"full": "POST /v1/jobs/{jobId}/complete"}),
    ("fail", fail, {"full": "POST /v1/jobs/{jobId}/fail"}),
    ("clarification", read_clarification, {"full": "GET /v1/clarifications/{clarificationId}"}),
    ("clarification-list", list_clarifications, {"full": "GET /v1/clarifications"}),
    ("answer", answer, {"full": "POST /v1/clarifications/{clarificationId}/answer"}),
    ("reports", report, {"full": "POST /v1/reports", "baseline": EVENTS}),
    ("person", person, {"full": "GET /v1/people/{personId}"}),
    ("resolve", resolve, {"full": "POST /v1/people/resolve"}),
]


@pytest.mark.parametrize("retry_after", ["7", "date:9"], ids=["seconds", "http-date"])
@pytest.mark.parametrize(("name", "call", "routes"), FAMILIES,
                         ids=[family[0] for family in FAMILIES])
async def test_every_route_family_waits_out_a_429s_retry_after_once(
        rig: Rig, dev_client: DevCoreClient, clock: ManualClock, contract: str, name: str,
        call: Call, routes: dict[str, str], retry_after: str) -> None:
    """A 429 with a Retry-After (seconds or an HTTP date) on any route: the client waits
    exactly that long once, through the policy, sends the call again, and it succeeds."""
    throttled = routes.get(contract, routes["full"])
    header = _http_date(clock, 9) if retry_after.startswith("date:") else retry_after
    rig.proxy.throttle(throttled, retry_after=header)
    before = rig.proxy.seen[throttled]  # a baseline core's detection probed some routes
    result = await call(rig, dev_client)
    assert result, name
    assert rig.waits.asked == [7.0 if retry_after == "7" else 9.0]
    assert rig.proxy.seen[throttled] == before + 2


@pytest.mark.full_contract  # the people batch is an extension
async def test_the_people_batch_waits_out_a_503s_retry_after(rig: Rig) -> None:
    """The people batch (retry-safe) answered 503 with a Retry-After: waited once, resent."""
    rig.proxy.throttle("POST /v1/people/batch", status=503, retry_after="4")
    batch = await rig.client.get_people(tenant_id="acme", person_ids=["p-sarah"])
    assert [entry.person_id for entry in batch.people] == ["p-sarah"]
    assert rig.waits.asked == [4.0]
