"""The cheap path per delivery: a job's core calls, and a worker that leases again as
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
from bot.core.batching import JobScope
from bot.core.client import CoreClient, RetryPolicy
from bot.core.models import (
    Channel as ContractChannel,
)
from bot.core.models import (
    DeliveryKind,
    DeliveryReport,
    EventReport,
    ReasonCode,
)
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


def _reports(calls: dict[str, int]) -> int:
    """Report calls among ``calls``: the batch, or the baseline's one route per report."""
    return sum(n for k, n in calls.items()
               if k == "POST /v1/reports" or k.endswith(("/deliveries", "/events")))


async def test_a_report_is_held_only_where_a_scope_is_passed_and_goes_at_once_without(
    dev_client: DevCoreClient, bot_client: CoreClient
) -> None:
    """The batching is explicit at the call site: a report or a person read given a job's
    ``scope`` waits in it (until ``flush``) or is answered from it; the same call without one
    goes to the core at once, also while a scope holds reports of its own."""
    cid = await create(dev_client, authority={"authored_by": ["p-sarah"]})
    before = await bot_client.get_clarification(clarification_id=cid)  # probes done by now
    calls = counted(bot_client)

    def delivery(n: int, person_id: str) -> DeliveryReport:
        return DeliveryReport(delivery_id=f"dl.held.{n}", person_id=person_id,
                              channel=ContractChannel.SLACK, kind=DeliveryKind.QUESTION,
                              attempt=0, message_ref=f"1700000000.00000{n}")

    def event(n: int) -> EventReport:
        return EventReport(event_id=f"ev.held.{n}", type="skipped", person_id="p-ahmed",
                           reason_code=ReasonCode.NO_DELIVERY_ALIAS, attempt=0,
                           message="Candidate has no chat alias.")

    scope = JobScope()
    assert await bot_client.report_delivery(clarification_id=cid, report=delivery(1, "p-sarah"),
                                            scope=scope) is None
    assert await bot_client.report_event(clarification_id=cid, report=event(1),
                                         scope=scope) is None
    assert _reports(calls) == 0  # held
    assert [d.report.delivery_id for d in scope.deliveries] == ["dl.held.1"]
    assert [ev.report.event_id for ev in scope.events] == ["ev.held.1"]

    # no scope: at once, though a scope holds reports meanwhile
    await bot_client.report_delivery(clarification_id=cid, report=delivery(2, "p-ahmed"))
    await bot_client.report_event(clarification_id=cid, report=event(2))
    assert _reports(calls) == 2
    now = await bot_client.get_clarification(clarification_id=cid)
    assert before.asked == [] and now.asked == ["p-ahmed"]
    assert len(now.events) > len(before.events)
    assert len(scope.deliveries) == len(scope.events) == 1  # still held

    calls.clear()
    await bot_client.flush(scope)
    assert 1 <= _reports(calls) <= 2  # one batch, or one call per report on a baseline core
    assert not scope.deliveries and not scope.events
    after = await bot_client.get_clarification(clarification_id=cid)
    assert sorted(after.asked) == ["p-ahmed", "p-sarah"]
    assert len(after.events) > len(now.events)

    # a person: read into the job's scope (its people batch, or on a baseline core its first
    # read), answered from it after; without a scope, each read asks the core
    await bot_client.read_people(scope, tenant_id="acme", person_ids=["p-sarah"])
    await bot_client.get_person(person_id="p-sarah", tenant_id="acme", scope=scope)
    calls.clear()
    held = await bot_client.get_person(person_id="p-sarah", tenant_id="acme", scope=scope)
    assert sum(calls.values()) == 0
    fresh = await bot_client.get_person(person_id="p-sarah", tenant_id="acme")
    assert calls == {"GET /v1/people/p-sarah": 1} and fresh == held
