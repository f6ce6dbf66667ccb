"""Nothing unreadable is silent, and nothing unreadable spends a person's turn: the worker against
the reference core over real HTTP, through a proxy that alters the core's answers as a core a
version ahead or behind would (``tests/support/core_proxy.py``).

A job without ``attempts`` takes its turn from the clarification's trail; a clarification, a
person or a polled job the bot cannot read is logged with the places at fault (never a value),
counted, and its job held (lease kept, read again later) until it reads.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import pytest
import structlog

from bot.audit import MemorySink
from bot.channels.recording import RecordingChannel
from bot.clock import ManualClock
from bot.core.client import CoreClient, RetryPolicy
from bot.engine.handler import JobOutcome
from bot.engine.holds import HOLD_LEASE_SECONDS, UNREAD_LOOK_SECONDS
from bot.metrics import REGISTRY
from bot.store.memory import MemoryStore
from devcore.client import DevCoreClient
from devcore.core import ReferenceCore
from tests.conftest import CLARIFY_TOKEN, extensions_for
from tests.engine.kit import Node, create, node
from tests.support.core_proxy import CoreProxy, core_proxy

WINDOW = timedelta(hours=48)  # the acme escalation window (the clarify:temporal backoff)
LOOK_AGAIN = timedelta(seconds=UNREAD_LOOK_SECONDS)
POLL = "POST /v1/jobs/poll"
HEARTBEAT = "POST /v1/jobs/{jobId}/heartbeat"
ADVANCE = "POST /v1/jobs/{jobId}/advance"
CLARIFICATION = "GET /v1/clarifications/{clarificationId}"
PERSON = "GET /v1/people/{personId}"
PEOPLE = "POST /v1/people/batch"
SECRET = "zq-secret-value"  # put where a value could leak: never in a log line


# repr=False: on Python 3.12, asyncio's runner formats the task that made this fixture (its
# value included) as it restores the SIGINT handler; a generated repr walks every part (~30 ms)
@dataclass(repr=False)
class Bot:
    proxy: CoreProxy
    client: CoreClient
    node: Node
    channel: RecordingChannel

    def asked(self) -> list[str]:
        return [s.address.person_id for s in self.channel.sent if s.key.kind == "question"]

    async def burst(self) -> None:
        await self.node.worker.run_burst()


@pytest.fixture
async def bot(core_url: str, contract: str, clock: ManualClock) -> AsyncIterator[Bot]:
    async with core_proxy(core_url) as proxy, CoreClient(
            base_url=proxy.url, token=CLARIFY_TOKEN, retry=RetryPolicy(max_attempts=1),
            extensions=extensions_for(contract), clock=clock) as client:
        channel = RecordingChannel()
        yield Bot(proxy, client, node(core=client, store=MemoryStore(clock=clock),
                                      channel=channel, sink=MemorySink(), clock=clock,
                                      worker_id="w-1"), channel)


def _value(name: str, **labels: str) -> float:
    return REGISTRY.value(name, **labels)


def _job(core: ReferenceCore, clarification_id: str) -> Any:
    [job] = [j for j in core.jobs.jobs.values()
             if j.payload.clarification_id == clarification_id]
    return job


def _no_values(logs: list[Any]) -> None:
    assert SECRET not in repr(logs)


def _held_lease(contract: str) -> timedelta:
    """How far a held job's lease is extended: the held lease, or (a baseline core: no
    heartbeat-lease extension) the lease's own duration, looked at again before it ends."""
    return timedelta(seconds=HOLD_LEASE_SECONDS if contract == "full" else 60)


async def _look_again(bot: Bot, clock: ManualClock) -> None:
    """Time passes until a held job is read again, the worker keeping house every 30 s (as it
    does every 15 polls): a baseline core's short held lease is kept alive meanwhile."""
    for _ in range(LOOK_AGAIN // timedelta(seconds=30) + 1):
        clock.advance(timedelta(seconds=30))
        await bot.burst()


# ---------------------------------------------------------------- a job without attempts


def _without_attempts(job: dict[str, Any]) -> None:
    job.pop("attempts", None)
    job.pop("maxAttempts", None)


def _each_job(change: Callable[[dict[str, Any]], None]) -> Callable[[Any], None]:
    """A poll answer's change: ``change`` applied to each of its jobs."""
    def apply(body: Any) -> None:
        for job in body["jobs"]:
            change(job)

    return apply


async def test_a_job_without_attempts_takes_its_turn_from_the_clarifications_trail(
        bot: Bot, dev_client: DevCoreClient, core: ReferenceCore, clock: ManualClock) -> None:
    """A core that leaves ``attempts`` (and ``maxAttempts``) out of every job: the first lease
    asks the first candidate (nobody's turn shows on the record), and once her window has run
    out the next lease asks the second (her turn shows), counted and logged as derived; no turn
    is spent in silence."""
    bot.proxy.alter(POLL, _each_job(_without_attempts))
    for route in (HEARTBEAT, ADVANCE):
        bot.proxy.alter(route, _without_attempts)
    derived = _value("clarify_core_tolerated_total", kind="derived", model="LeasedJob")
    cid = await create(dev_client, authority={"authored_by": ["p-sarah"], "named": ["p-ahmed"]})
    with structlog.testing.capture_logs() as logs:
        await bot.burst()
        assert bot.asked() == ["p-sarah"]
        clock.advance(WINDOW + timedelta(minutes=5))
        await bot.burst()
    assert bot.asked() == ["p-sarah", "p-ahmed"]
    assert _job(core, cid).attempts == 1  # the core's own count agrees with the one derived
    assert _value("clarify_core_tolerated_total", kind="derived",
                  model="LeasedJob") == derived + 2
    lines = [line for line in logs if line["event"] == "handler.attempts_derived"]
    assert [line["attempt"] for line in lines] == [0, 1]
    assert bot.node.worker.outcomes == {JobOutcome.ASKED: 2}


async def test_a_job_keeping_its_attempts_in_the_payload_is_read_there(
        bot: Bot, dev_client: DevCoreClient, core: ReferenceCore, clock: ManualClock) -> None:
    """The spec's changelog names the field ``JobPayload.attempts``: a core that sends it in
    the payload rather than on the job is read there, nothing derived."""
    def moved(job: dict[str, Any]) -> None:
        job["payload"]["attempts"] = job.pop("attempts")

    bot.proxy.alter(POLL, _each_job(moved))
    cid = await create(dev_client, authority={"authored_by": ["p-sarah"], "named": ["p-ahmed"]})
    with structlog.testing.capture_logs() as logs:
        await bot.burst()
        clock.advance(WINDOW + timedelta(minutes=5))
        await bot.burst()
    assert bot.asked() == ["p-sarah", "p-ahmed"]
    assert _job(core, cid).attempts == 1
    assert not [line for line in logs if line["event"] == "handler.attempts_derived"]


# ---------------------------------------------------------------- a clarification or person


async def test_a_clarification_that_does_not_read_holds_its_job_until_it_reads(
        bot: Bot, dev_client: DevCoreClient, core: ReferenceCore, clock: ManualClock,
        contract: str) -> None:
    """The clarification's answer cannot be read (its candidates are not a list): the read is
    logged with the field at fault and counted, nobody is asked, and the job is held, its lease
    extended, not spent. Once the core's answer reads again, the first candidate is asked at
    the job's first attempt."""
    def broken(body: dict[str, Any]) -> None:
        body["candidates"] = SECRET

    bot.proxy.alter(CLARIFICATION, broken)
    cid = await create(dev_client, authority={"authored_by": ["p-sarah"], "named": ["p-ahmed"]})
    unread = _value("clarify_core_unreadable_total", operation="getClarification")
    held = _value("clarify_jobs_unreadable_total", read="clarification", action="held")
    with structlog.testing.capture_logs() as logs:
        await bot.burst()
    assert bot.asked() == []
    assert _value("clarify_core_unreadable_total", operation="getClarification") == unread + 1
    assert _value("clarify_jobs_unreadable_total", read="clarification",
                  action="held") == held + 1
    [line] = [line for line in logs if line["event"] == "core.answer_unreadable"]
    assert line["operation"] == "getClarification" and line["fields"] == ["candidates"]
    [hold] = [line for line in logs if line["event"] == "handler.held_unreadable"]
    assert hold["read"] == "clarification" and hold["fields"] == ["candidates"]
    _no_values(logs)
    job = _job(core, cid)
    assert job.attempts == 0 and job.lease_expires_at == clock.now() + _held_lease(contract)
    await _look_again(bot, clock)  # read again: still unreadable, still held
    assert bot.asked() == [] and _job(core, cid).attempts == 0

    bot.proxy.changes.clear()  # the core's answer reads again
    await _look_again(bot, clock)
    assert bot.asked() == ["p-sarah"]
    assert bot.channel.sent[0].key.attempt == 0  # her turn, the job's first


async def test_a_person_that_does_not_read_holds_the_job_instead_of_skipping_them(
        bot: Bot, dev_client: DevCoreClient, core: ReferenceCore, clock: ManualClock) -> None:
    """The candidate's record cannot be read (in the people batch and on its own route): logged
    with the field at fault, counted, the job held with nobody skipped; read again once it
    reads, she is asked."""
    def broken_person(person: dict[str, Any]) -> None:
        if person.get("personId") == "p-sarah":
            person["memberships"] = SECRET

    def broken_batch(body: dict[str, Any]) -> None:
        for entry in body["people"]:
            if entry.get("person"):
                broken_person(entry["person"])

    bot.proxy.alter(PERSON, broken_person)
    bot.proxy.alter(PEOPLE, broken_batch)
    cid = await create(dev_client, authority={"authored_by": ["p-sarah"], "named": ["p-ahmed"]})
    held = _value("clarify_jobs_unreadable_total", read="person", action="held")
    with structlog.testing.capture_logs() as logs:
        await bot.burst()
    assert bot.asked() == []
    assert _value("clarify_jobs_unreadable_total", read="person", action="held") == held + 1
    [line] = [line for line in logs if line["event"] == "core.answer_unreadable"]
    assert line["operation"] == "getPerson" and line["fields"] == ["memberships"]
    _no_values(logs)
    c = await bot.client.get_clarification(clarification_id=cid)
    assert not [ev for ev in c.events if ev.type == "skipped"]
    assert _job(core, cid).attempts == 0

    bot.proxy.changes.clear()
    await _look_again(bot, clock)
    assert bot.asked() == ["p-sarah"]


@pytest.mark.parametrize("status", [503, 429])
async def test_a_core_refusing_the_jobs_read_for_now_holds_the_job_instead_of_its_turn(
        bot: Bot, dev_client: DevCoreClient, core: ReferenceCore, clock: ManualClock,
        contract: str, status: int) -> None:
    """The clarification read refused past the client's retries (a 503 or a 429, with
    ``Retry-After: 120``): nobody is asked, the job is held with its lease kept (logged with the
    read and the error), not left to a lease that runs out and spends the first candidate's
    turn; read again after the Retry-After, she is asked at the job's first attempt."""
    bot.proxy.throttle(CLARIFICATION, status=status, retry_after="120", times=1)
    cid = await create(dev_client, authority={"authored_by": ["p-sarah"], "named": ["p-ahmed"]})
    with structlog.testing.capture_logs() as logs:
        await bot.burst()
    assert bot.asked() == []
    [line] = [line for line in logs if line["event"] == "handler.held_core_trouble"]
    assert line["operation"] == "getClarification" and line["read"] == "clarification"
    job = _job(core, cid)
    assert job.attempts == 0 and job.lease_expires_at == clock.now() + _held_lease(contract)
    for _ in range(5):  # 150 s, the worker keeping house every 30 s
        clock.advance(timedelta(seconds=30))
        await bot.burst()
    assert bot.asked() == ["p-sarah"]
    assert bot.channel.sent[0].key.attempt == 0 and _job(core, cid).attempts == 0


async def test_a_core_refusing_the_jobs_read_again_and_again_is_read_again_sooner_then_later(
        bot: Bot, dev_client: DevCoreClient, core: ReferenceCore, clock: ManualClock) -> None:
    """A core down for a few seconds (503s without Retry-After): the held job is read again
    5 s later, then 10 s, then 20 s (doubled per refusal in a row, at most 600 s), so a
    short outage costs seconds, not a minute per job; once the read answers, she is asked at
    the job's first attempt, once."""
    bot.proxy.throttle(CLARIFICATION, status=503, retry_after=None, times=3)
    cid = await create(dev_client, authority={"authored_by": ["p-sarah"], "named": ["p-ahmed"]})
    with structlog.testing.capture_logs() as logs:
        await bot.burst()
        for _ in range(40):  # the worker keeping house every 5 s, for 200 s
            if bot.asked():
                break
            clock.advance(timedelta(seconds=5))
            await bot.burst()
    troubles = [line["troubles"] for line in logs if line["event"] == "handler.held_core_trouble"]
    assert troubles == [1, 2, 3]
    dues = [datetime.fromisoformat(line["again"]) for line in logs
            if line["event"] == "handler.held_core_trouble"]
    assert [(b - a).total_seconds() for a, b in zip(dues, dues[1:], strict=False)] == [10, 20]
    assert bot.asked() == ["p-sarah"]
    assert bot.channel.sent[0].key.attempt == 0 and _job(core, cid).attempts == 0


# ---------------------------------------------------------------- a polled job


async def test_a_polled_job_that_does_not_read_is_held_by_its_id_and_lease_token(
        bot: Bot, dev_client: DevCoreClient, core: ReferenceCore, clock: ManualClock,
        contract: str) -> None:
    """A polled job whose payload does not read (nor does the heartbeat's), but whose id and
    lease token do: logged with the field at fault and counted, its lease extended by the held
    lease (its turn not spent), read again from the heartbeat's answer until it reads; then
    handled as any job, at its first attempt."""
    def broken(body: dict[str, Any]) -> None:
        for job in body["jobs"]:
            job["payload"] = SECRET

    bot.proxy.alter(POLL, broken)
    bot.proxy.alter(HEARTBEAT, lambda body: body.update(payload=SECRET))  # the same core
    cid = await create(dev_client, authority={"authored_by": ["p-sarah"], "named": ["p-ahmed"]})
    held = _value("clarify_jobs_unreadable_total", read="job", action="held")
    with structlog.testing.capture_logs() as logs:
        await bot.burst()
        job = _job(core, cid)
        assert job.lease_expires_at == clock.now() + _held_lease(contract)
        await _look_again(bot, clock)  # the heartbeat's answer does not read either
    assert bot.asked() == [] and job.attempts == 0
    assert _value("clarify_jobs_unreadable_total", read="job", action="held") == held + 2
    lines = [line for line in logs if line["event"] == "worker.job_unreadable"]
    assert [line["action"] for line in lines] == ["held", "held"]
    assert lines[0]["fields"] == ["payload"]
    dropped = [line for line in logs if line["event"] == "core.entries_dropped"]
    assert (dropped[0]["model"], dropped[0]["count"], dropped[0]["fields"]) == (
        "LeasedJob", 1, ["payload"])
    _no_values(logs)

    bot.proxy.changes.clear()  # the core's answers read again
    await _look_again(bot, clock)
    assert bot.asked() == ["p-sarah"]
    assert bot.channel.sent[0].key.attempt == 0


async def test_a_polled_job_that_names_nothing_is_left_to_its_lease_loudly(
        bot: Bot, dev_client: DevCoreClient, core: ReferenceCore) -> None:
    """Neither the id nor the lease token of a polled job reads: nothing can reach it, so its
    lease runs out; that is logged as an error with the fields at fault and counted."""
    def broken(body: dict[str, Any]) -> None:
        for job in body["jobs"]:
            job["id"], job["leaseToken"] = [SECRET], None

    bot.proxy.alter(POLL, broken)
    await create(dev_client, authority={"authored_by": ["p-sarah"]})
    left = _value("clarify_jobs_unreadable_total", read="job", action="left")
    with structlog.testing.capture_logs() as logs:
        await bot.burst()
    assert bot.asked() == []
    assert _value("clarify_jobs_unreadable_total", read="job", action="left") == left + 1
    [line] = [line for line in logs if line["event"] == "worker.job_unreadable"]
    assert line["log_level"] == "error" and line["fields"] == ["id", "leaseToken"]
    _no_values(logs)
