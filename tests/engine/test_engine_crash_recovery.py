"""Nobody vanishes after a crash: a worker stopped between reserving a card and sending it, with
the Redis store and the reference core over HTTP. The person is either asked exactly once (the
job comes back at the reservation's own attempt and the platform shows no card) or skipped with
DELIVERY_FAILED in the audit file, the core's trail and the steward's escalation; a card that did
reach the platform before the crash is recovered and audited."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from bot.channels.recording import RecordingChannel
from bot.core.client import CoreClient
from bot.core.models import (
    AnswerRequest,
    DeliveryKind,
    ReasonCode,
    Role,
)
from bot.core.models import (
    Channel as ContractChannel,
)
from bot.store.base import DeliveryKey, SlotState
from bot.store.errors import StoreUnavailable
from cards.views import StewardEscalationView
from devcore.client import DevCoreClient
from tests.engine.kit import DiesBeforeSend, Restart, crash_after, create, read_lines

LEASE = timedelta(seconds=60)
WINDOW = timedelta(hours=48)
NEXT_ATTEMPT = LEASE + WINDOW + timedelta(minutes=1)


def audit_lines(rig: Restart, type_: str) -> list[dict]:
    """The audit file's events of one type, parsed from their JSON lines."""
    events = [json.loads(line) for line in read_lines(rig.sink.path)]
    return [ev for ev in events if ev["type"] == type_]


async def test_crash_before_send_of_an_earlier_attempt_is_a_reason_coded_skip(
    restart: Callable[[RecordingChannel], Restart],
    dev_client: DevCoreClient,
    bot_client: CoreClient, truth: CoreClient, contract: str,
) -> None:
    """The first candidate's send is cancelled after the reservation: the job returns at the
    next attempt, the platform has no card, so that person is skipped with DELIVERY_FAILED in
    the audit file, the core's trail and (one window later) the escalation's skipped list, with
    the reason as a field; they never get a card, and the next candidate is asked."""
    channel = DiesBeforeSend(cancel=True)
    rig = restart(channel)
    cid = await create(dev_client, authority={"authored_by": ["p-sarah", "p-ahmed"]})
    channel.key = DeliveryKey(cid, "p-sarah", 0, "question")
    await rig.worker("worker-killed").worker.run_burst()
    assert channel.died and channel.sent == []
    slot = await rig.stores[0].slot(channel.key)
    assert slot is not None and slot.state is SlotState.RESERVED

    rig.clock.advance(NEXT_ATTEMPT)
    await rig.worker("worker-restarted").worker.run_burst()
    assert [(s.address.person_id, s.key.attempt) for s in channel.sent] == [("p-ahmed", 1)]
    (skip,) = [ev for ev in audit_lines(rig, "skipped") if ev["person_id"] == "p-sarah"]
    assert (skip["reason_code"], skip["attempt"]) == ("DELIVERY_FAILED", 0)
    assert skip["reason_codes"] == ["DELIVERY_FAILED"]
    c = await truth.get_clarification(clarification_id=cid)
    assert [(ev.person_id, ev.reason_code) for ev in c.events if ev.type == "skipped"] == [
        ("p-sarah", ReasonCode.DELIVERY_FAILED)]
    assert await rig.stores[1].slot(channel.key) is None  # released: nothing to reconcile again

    rig.clock.advance(NEXT_ATTEMPT)
    await rig.worker("worker-escalates").worker.run_burst()
    (escalation,) = [s for s in channel.sent if s.key.kind == "steward_escalation"]
    assert isinstance(escalation.message, StewardEscalationView)
    assert [(s.person, s.reason) for s in escalation.message.skipped] == [
        ("Sarah Chen", ReasonCode.DELIVERY_FAILED)]
    assert escalation.message.unanswered == ("Ahmed Karimi",)
    (escalated,) = audit_lines(rig, "escalated")
    assert escalated["skips"] == [{"person_id": "p-sarah", "reason_code": "DELIVERY_FAILED"}]
    c = await truth.get_clarification(clarification_id=cid)
    (core_escalated,) = [ev for ev in c.events if ev.type == "escalated"]
    if contract == "full":  # a baseline core's events carry no skips (the skip's own does)
        assert [(s.person_id, s.reason_code) for s in core_escalated.skips] == [
            ("p-sarah", ReasonCode.DELIVERY_FAILED)]
        assert core_escalated.reason_codes == [ReasonCode.DELIVERY_FAILED]
    assert channel.to("p-sarah") == []


async def test_crash_before_send_in_the_same_attempt_asks_exactly_once(
    restart: Callable[[RecordingChannel], Restart],
    dev_client: DevCoreClient,
    bot_client: CoreClient, truth: CoreClient,
) -> None:
    """A critical question's second card is cancelled after its reservation: the job comes
    back at that card's own attempt, the platform shows nothing, so it is sent then, exactly
    once, and nobody is recorded as skipped."""
    channel = DiesBeforeSend(cancel=True)
    rig = restart(channel)
    cid = await create(dev_client, authority={"authored_by": ["p-sarah", "p-ahmed", "p-lee"]},
                       severity="critical")
    channel.key = DeliveryKey(cid, "p-ahmed", 1, "question")
    await rig.worker("worker-killed").worker.run_burst()
    rig.clock.advance(NEXT_ATTEMPT)
    await rig.worker("worker-restarted").worker.run_burst()
    to_ahmed = [s for s in channel.to("p-ahmed") if s.key.clarification_id == cid]
    assert [s.key for s in to_ahmed] == [channel.key]
    assert [ev for ev in audit_lines(rig, "skipped") if ev["person_id"] == "p-ahmed"] == []
    c = await truth.get_clarification(clarification_id=cid)
    assert ("p-ahmed", to_ahmed[0].ref) in {(d.person_id, d.message_ref) for d in c.deliveries}


@pytest.mark.parametrize(("severity", "ranking", "hit"), [
    pytest.param(None, ["p-sarah", "p-ahmed"], ("p-sarah", 0), id="earlier-attempt"),
    pytest.param("critical", ["p-sarah", "p-ahmed", "p-lee"], ("p-ahmed", 1), id="same-attempt"),
])
async def test_recovered_delivery_writes_its_audit_event(
    restart: Callable[[RecordingChannel], Restart],
    dev_client: DevCoreClient,
    severity: str | None,
    ranking: list[str],
    hit: tuple[str, int],
) -> None:
    """A card the platform accepted before the crash is found by the next worker, recorded,
    and written to the audit file as a delivery marked recovered, exactly once."""
    rig = restart(RecordingChannel())
    cid = await create(dev_client, authority={"authored_by": ranking}, severity=severity)
    target = DeliveryKey(cid, *hit, "question")
    crash_after(rig.channel, target)
    await rig.worker("worker-killed").worker.run_burst()
    rig.clock.advance(NEXT_ATTEMPT)
    await rig.worker("worker-restarted").worker.run_burst()
    recovered = [ev for ev in audit_lines(rig, "delivery") if ev.get("extra", {}).get("recovered")]
    assert [(ev["person_id"], ev["attempt"]) for ev in recovered] == [hit]
    assert "after a crash" in recovered[0]["message"]
    assert len([s for s in rig.channel.sent if s.key == target]) == 1


@pytest.mark.parametrize(("acl_roles", "reason"), [
    pytest.param(("viewer", "editor", "steward"), ReasonCode.DELIVERY_FAILED, id="could-read"),
    pytest.param(("steward",), ReasonCode.NO_READ_PERMISSION, id="could-not-read"),
])
async def test_crash_before_anything_was_reserved_is_a_reason_coded_skip(
    restart: Callable[[RecordingChannel], Restart],
    dev_client: DevCoreClient,
    bot_client: CoreClient, truth: CoreClient,
    acl_roles: tuple[str, ...],
    reason: ReasonCode,
) -> None:
    """A worker leases the job and dies before it reserved anything (found by bench/soak.py:
    killed while reading the clarification or the people). The job comes back one attempt
    later with no reservation for the first candidate: they are on the core's trail and in the
    audit file as skipped, with the reason they would have been skipped for (DELIVERY_FAILED
    when only the stopped worker kept them from being asked), never silently passed over."""
    rig = restart(RecordingChannel())
    cid = await create(dev_client, authority={"authored_by": ["p-sarah", "p-ahmed"]},
                       severity="high", read_roles=acl_roles)
    leased = await bot_client.poll_jobs(kinds=["clarify:"], max_jobs=10, lease_seconds=60)
    assert cid in {j.payload.clarification_id for j in leased.jobs}  # and the worker dies

    rig.clock.advance(NEXT_ATTEMPT)
    await rig.worker("worker-restarted").worker.run_burst()
    (skip,) = [ev for ev in audit_lines(rig, "skipped") if ev["person_id"] == "p-sarah"]
    assert (skip["reason_code"], skip["attempt"]) == (reason.value, 0)
    c = await truth.get_clarification(clarification_id=cid)
    assert [ev.reason_code for ev in c.events
            if ev.type == "skipped" and ev.person_id == "p-sarah"] == [reason]
    assert rig.channel.to("p-sarah") == []


@pytest.mark.parametrize("answered", [False, True], ids=["still-open", "answered-meanwhile"])
async def test_card_sent_but_its_report_lost_to_a_crash_is_reported_on_the_next_pass(
    restart: Callable[[RecordingChannel], Restart],
    dev_client: DevCoreClient,
    bot_client: CoreClient, truth: CoreClient,
    answered: bool, contract: str,
) -> None:
    """A worker sends the card, records it in the store and is killed before the job's
    reports go to the core (found by bench/soak.py: the core's trail showed an answer but no
    card). The next pass reports it once, also when the person answered meanwhile and the job
    is only completed; the card is not sent again."""
    rig = restart(RecordingChannel())
    cid = await create(dev_client, authority={"authored_by": ["p-sarah", "p-ahmed"]},
                       severity="high")
    killed = rig.worker("worker-killed")

    async def killed_before_the_reports(scope: object) -> None:
        return None

    killed.engine.core.flush = killed_before_the_reports  # type: ignore[method-assign,assignment]
    await killed.worker.run_burst()
    assert [s.key.person_id for s in rig.channel.sent if s.key.kind == "question"] == ["p-sarah"]
    c = await truth.get_clarification(clarification_id=cid)
    assert c.deliveries == []
    if answered:
        await bot_client.answer_clarification(clarification_id=cid, request=AnswerRequest(
            answer_index=0, responder="p-sarah", rights=Role.EDITOR, channel=ContractChannel.SLACK))

    rig.clock.advance(NEXT_ATTEMPT)
    await rig.worker("worker-restarted").worker.run_burst()
    c = await truth.get_clarification(clarification_id=cid)
    # a baseline report names no attempt: the core takes the job's current one
    attempt = 0 if contract == "full" else 1
    assert [(d.person_id, d.attempt, d.kind) for d in c.deliveries
            if d.person_id == "p-sarah"] == [("p-sarah", attempt, DeliveryKind.QUESTION)]
    assert [s.key.person_id for s in rig.channel.sent].count("p-sarah") == 1


async def test_card_sent_whose_record_the_store_refused_still_reaches_the_core(
    restart: Callable[[RecordingChannel], Restart],
    dev_client: DevCoreClient,
    bot_client: CoreClient, truth: CoreClient,
) -> None:
    """The card goes out, then the store fails to record it (found by bench/soak.py: Redis
    restarted a moment after the send). The job fails, but the core has the card's delivery
    report: the store holds no record a later pass could report from, and without it the person
    who answers that card was on the trail with neither a card nor a skip."""
    rig = restart(RecordingChannel())
    cid = await create(dev_client, authority={"authored_by": ["p-sarah", "p-ahmed"]},
                       severity="high")
    failing = rig.worker("worker-store-down")

    async def store_down(*_: object, **__: object) -> None:
        raise StoreUnavailable()

    rig.stores[-1].record_sent = store_down  # type: ignore[method-assign,assignment]
    await failing.worker.run_burst()
    assert [s.key.person_id for s in rig.channel.sent if s.key.kind == "question"] == ["p-sarah"]
    c = await truth.get_clarification(clarification_id=cid)
    assert [(d.person_id, d.attempt, d.kind) for d in c.deliveries] == [
        ("p-sarah", 0, DeliveryKind.QUESTION)]


async def test_skips_reach_the_core_before_the_advance_that_passes_them(
    restart: Callable[[RecordingChannel], Restart],
    dev_client: DevCoreClient,
    bot_client: CoreClient, truth: CoreClient,
) -> None:
    """The first candidate may not read the source: skipped, and the job advanced past them
    inside the lease. A worker killed right after that advance (found by bench/soak.py: the job
    then ran out of attempts and dead-lettered with nobody's skip on the trail) has already put
    the skip on the core's trail."""
    rig = restart(RecordingChannel())
    cid = await create(dev_client, authority={"authored_by": ["p-sarah", "p-ahmed"]},
                       severity="high", read_roles=("steward",))
    killed = rig.worker("worker-killed")
    core = killed.engine.core
    advance, flush = core.advance_job, core.flush
    died: list[bool] = []

    async def advance_then_die(**kwargs: Any) -> Any:
        await advance(**kwargs)
        died.append(True)
        raise asyncio.CancelledError  # SIGKILL: nothing after this reaches the core

    async def flush_unless_dead(scope: Any) -> None:
        if not died:
            await flush(scope)

    core.advance_job = advance_then_die  # type: ignore[method-assign]
    core.flush = flush_unless_dead  # type: ignore[method-assign]
    with contextlib.suppress(asyncio.CancelledError):
        await killed.worker.run_burst()
    assert died
    c = await truth.get_clarification(clarification_id=cid)
    assert [(ev.person_id, ev.reason_code) for ev in c.events if ev.type == "skipped"] == [
        ("p-sarah", ReasonCode.NO_READ_PERMISSION)]
