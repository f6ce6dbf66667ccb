"""The cheap path per delivery (issue 12): a job's core calls, and a worker that leases again as
soon as a slot frees."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import timedelta

import pytest

from bot.audit import MemorySink
from bot.channel import Address, Message
from bot.channels.recording import RecordingChannel
from bot.clock import ManualClock
from bot.core.client import CoreClient, RetryPolicy
from bot.process.worker import WorkerConfig
from bot.store.base import DeliveryKey
from bot.store.memory import MemoryStore
from devcore.client import DevCoreClient
from tests.conftest import CLARIFY_TOKEN
from tests.engine.kit import counted, create, node


@dataclass
class GatedChannel(RecordingChannel):
    """A send that waits until the test lets it through."""

    entered: asyncio.Event = field(default_factory=asyncio.Event)
    gate: asyncio.Event = field(default_factory=asyncio.Event)

    async def send(self, address: Address, message: Message, *, key: DeliveryKey) -> str:
        self.entered.set()
        await self.gate.wait()
        return await super().send(address, message, key=key)


async def test_a_busy_worker_leases_again_when_a_slot_frees_not_a_poll_later(
    dev_client: DevCoreClient, bot_client: CoreClient, clock: ManualClock
) -> None:
    """Every slot busy: the next job is leased the moment one finishes, although the poll
    interval is an hour."""
    channel = GatedChannel()
    config = WorkerConfig(concurrency=1, poll_interval_seconds=3600, heartbeat_seconds=3600)
    rig = node(core=bot_client, store=MemoryStore(clock=clock), channel=channel,
               sink=MemorySink(), clock=clock, worker_id="worker-1", config=config)
    first = await create(dev_client, authority={"authored_by": ["p-sarah"]})
    second = await create(dev_client, authority={"authored_by": ["p-ahmed"]})
    running = asyncio.create_task(rig.worker.run())
    await asyncio.wait_for(channel.entered.wait(), timeout=10)  # a guard, not a pacing sleep
    channel.gate.set()
    for _ in range(2000):  # both jobs, without an hour's poll interval between them
        if len(channel.sent) == 2:
            break
        await asyncio.sleep(0.005)
    rig.worker.stop()
    await asyncio.wait_for(running, timeout=10)
    assert sorted(s.key.clarification_id for s in channel.sent) == sorted([first, second])


@pytest.mark.full_contract  # the people batch and the reports are extensions
@pytest.mark.parametrize("severity", [None, "high"])
async def test_a_job_that_asks_one_person_costs_three_core_calls(
    dev_client: DevCoreClient, core_url: str, clock: ManualClock, severity: str | None
) -> None:
    """Read the clarification, read its people (aliases resolved back; the steward among them),
    report: three calls, besides the poll that leased it, also when a high-severity question
    queues the steward's notice (sent later in its window's message, three calls per message);
    the core still has every delivery."""
    core = CoreClient(base_url=core_url, token=CLARIFY_TOKEN, retry=RetryPolicy(max_attempts=1))
    calls = counted(core)
    channel = RecordingChannel()
    rig = node(core=core, store=MemoryStore(clock=clock), channel=channel, sink=MemorySink(),
               clock=clock, worker_id="worker-1")
    cid = await create(dev_client, authority={"authored_by": ["p-sarah"]}, severity=severity)
    try:
        await rig.worker.run_burst()
        # the poll that leased it, and the dead-letter listing of housekeeping, are not the job's
        per_job = {k: n for k, n in calls.items()
                   if k not in ("POST /v1/jobs/poll", "GET /v1/jobs")}
        assert per_job == {f"GET /v1/clarifications/{cid}": 1, "POST /v1/people/batch": 1,
                           "POST /v1/reports": 1}
        c = await core.get_clarification(clarification_id=cid)
        sent = [s.address.person_id for s in channel.sent]
        assert sorted(d.person_id for d in c.deliveries) == sorted(sent) == ["p-sarah"]
        if severity:
            # the steward's notice goes in its window's message, at a later housekeeping pass:
            # the people (steward and names), the clarification (redacted afresh), the report
            calls.clear()
            clock.advance(timedelta(seconds=60))
            await rig.worker.run_burst()
            per_pass = {k: n for k, n in calls.items()
                        if k not in ("POST /v1/jobs/poll", "GET /v1/jobs")}
            assert per_pass == {f"GET /v1/clarifications/{cid}": 1,
                                "POST /v1/people/batch": 1, "POST /v1/reports": 1}
            c = await core.get_clarification(clarification_id=cid)
            sent = [s.address.person_id for s in channel.sent]
            assert sorted(d.person_id for d in c.deliveries) == sorted(sent) == [
                "p-maria", "p-sarah"]
    finally:
        await core.aclose()


@pytest.mark.baseline_contract
async def test_on_a_baseline_core_a_job_that_asks_one_person_costs_three_core_calls_too(
    dev_client: DevCoreClient, core_url: str, clock: ManualClock, contract: str
) -> None:
    """Against a core with the baseline alone: once the bot has found out what it offers (its
    probes, at the first call: the report's extra fields among what it lacks, so no report is
    ever refused and sent again), a job that asks one person costs the clarification, that
    person (her alias vouched for by the clarification's askedAliases, so no resolve) and one
    delivery report: three calls, as with the extensions."""
    core = CoreClient(base_url=core_url, token=CLARIFY_TOKEN, retry=RetryPolicy(max_attempts=1),
                      extensions=None, clock=clock)
    calls = counted(core)
    rig = node(core=core, store=MemoryStore(clock=clock), channel=RecordingChannel(),
               sink=MemorySink(), clock=clock, worker_id="worker-1")
    try:
        await create(dev_client, authority={"authored_by": ["p-sarah"]})
        await rig.worker.run_burst()
        assert calls["GET /openapi.json"] == 1  # none served: the probes say the rest
        assert calls["POST /v1/clarifications/clr-00001/deliveries"] == 1
        calls.clear()
        cid = await create(dev_client, authority={"authored_by": ["p-sarah"]})
        await rig.worker.run_burst()
        per_job = {k: n for k, n in calls.items()
                   if k not in ("POST /v1/jobs/poll", "GET /v1/clarifications")}
        assert per_job == {f"GET /v1/clarifications/{cid}": 1, "GET /v1/people/p-sarah": 1,
                           f"POST /v1/clarifications/{cid}/deliveries": 1}
    finally:
        await core.aclose()
