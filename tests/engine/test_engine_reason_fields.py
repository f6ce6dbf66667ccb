"""Reason codes are structured fields on every skip, escalation and dead-letter event: parsed
from the JSON-lines audit file and read from the core's event trail, never from the words."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

from bot.channels.recording import RecordingChannel
from bot.clock import ManualClock
from bot.core.client import CoreClient
from bot.core.models import EventReport, ReasonCode
from bot.store.memory import MemoryStore
from devcore.client import DevCoreClient
from tests.engine.kit import TeeSink, create, node, read_lines

SKIPS = [{"person_id": "p-tom", "reason_code": "NO_READ_PERMISSION"},
         {"person_id": "p-olga", "reason_code": "NO_DELIVERY_ALIAS"}]
CODES = ["NO_DELIVERY_ALIAS", "NO_READ_PERMISSION"]


async def test_reason_codes_are_fields_in_audit_and_core_trail(
    dev_client: DevCoreClient, bot_client: CoreClient, truth: CoreClient, clock: ManualClock,
    tmp_path: Path, contract: str
) -> None:
    """Nobody can be asked (Tom may not read, Olga has no alias): each skip line carries its
    code; the escalation and, after the lease, the dead-letter listing carry the (person, code)
    pairs and the set of codes, in the audit file and in the core's events alike (a baseline
    core's events carry the one code of each skip: docs/core-contract.md)."""
    sink = TeeSink(tmp_path / "audit.jsonl")
    worker = node(core=bot_client, store=MemoryStore(clock=clock), channel=RecordingChannel(),
                  sink=sink, clock=clock, worker_id="worker-1").worker
    cid = await create(dev_client, authority={"authored_by": ["p-tom", "p-olga"]})
    await worker.run_burst()
    clock.advance(timedelta(seconds=61))  # the escalation's lease runs out: dead letter
    await worker.run_burst()

    lines = [json.loads(line) for line in read_lines(sink.path)]
    by_type = {t: [ev for ev in lines if ev["type"] == t]
               for t in ("skipped", "escalated", "dead_letter_reported")}
    assert [(ev["person_id"], ev["reason_code"], ev["reason_codes"])
            for ev in by_type["skipped"]] == [
        ("p-tom", "NO_READ_PERMISSION", ["NO_READ_PERMISSION"]),
        ("p-olga", "NO_DELIVERY_ALIAS", ["NO_DELIVERY_ALIAS"])]
    for type_ in ("escalated", "dead_letter_reported"):
        (event,) = by_type[type_]
        assert event["skips"] == SKIPS and event["reason_codes"] == CODES, type_

    c = await truth.get_clarification(clarification_id=cid)
    skipped = [ev for ev in c.events if ev.type == "skipped"]
    if contract == "baseline":
        assert [(ev.person_id, ev.reason_code) for ev in skipped] == [
            ("p-tom", ReasonCode.NO_READ_PERMISSION),
            ("p-olga", ReasonCode.NO_DELIVERY_ALIAS)]
        return
    trail = {ev.type: ev for ev in c.events}
    for type_ in ("escalated", "dead_letter_reported"):
        event = trail[type_]
        assert [s.model_dump(mode="json") for s in event.skips] == SKIPS, type_
        assert [code.value for code in event.reason_codes] == CODES, type_
    assert [(ev.reason_code, ev.reason_codes) for ev in skipped] == [
        (ReasonCode.NO_READ_PERMISSION, [ReasonCode.NO_READ_PERMISSION]),
        (ReasonCode.NO_DELIVERY_ALIAS, [ReasonCode.NO_DELIVERY_ALIAS])]


async def test_plain_events_send_no_empty_reason_lists(
    dev_client: DevCoreClient, bot_client: CoreClient, clock: ManualClock, tmp_path: Path
) -> None:
    """An event without codes (a delivery) has no reason fields at all, in the audit file and
    on the wire, so a core that predates them still takes it."""
    sink = TeeSink(tmp_path / "audit.jsonl")
    worker = node(core=bot_client, store=MemoryStore(clock=clock), channel=RecordingChannel(),
                  sink=sink, clock=clock, worker_id="worker-1").worker
    await create(dev_client, authority={"authored_by": ["p-sarah"]})
    await worker.run_burst()
    (delivery,) = [json.loads(line) for line in read_lines(sink.path)]
    assert delivery["type"] == "delivery"
    assert "reason_codes" not in delivery and "skips" not in delivery
    report = EventReport(event_id="e-1", type="steward_notified", message="x")
    assert set(report.wire()) == {"eventId", "type", "message"}
