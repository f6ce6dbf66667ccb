"""The reason code PERSON_AWAY, an extension of the contract's values (docs/core-contract.md,
"Extensions", ``person-away``): sent while the core offers it, the spec's DAILY_CAP_EXCEEDED in
its place otherwise, on every body that carries a reason code; found in the document's enum or
by a probe; a core that refuses it turns it off, and the call goes again with the spec's code."""

from __future__ import annotations

import json
from typing import Any

from bot.core.baseline import extension_values
from bot.core.discovery import (
    VALUE_PROBES,
    offered_by_document,
    value_offered_by_reply,
)
from bot.core.encoding import body_of
from bot.core.extensions import ALL, Extension
from bot.core.models import (
    AdvanceRequest,
    EventReport,
    EventReportItem,
    ExpediteRequest,
    ReasonCode,
    ReportBatch,
    SkipInput,
)
from bot.core.openapi import build_openapi
from tests.core.conftest import FakeCore, respond

AWAY, CAP = ReasonCode.PERSON_AWAY, ReasonCode.DAILY_CAP_EXCEEDED
READ = ReasonCode.NO_READ_PERMISSION


def _sent(body: Any, offered: set[str]) -> tuple[dict[str, Any], set[str]]:
    raw, carried = body_of(body, lambda ext: ext in offered)
    return json.loads(raw), carried


def escalation() -> EventReport:
    return EventReport(type="escalated", person_id="p-stew", message="m", event_id="e-1",
                       reason_codes=[CAP, AWAY, READ],
                       skips=[SkipInput(person_id="p-a", reason_code=AWAY),
                              SkipInput(person_id="p-a", reason_code=CAP),
                              SkipInput(person_id="p-b", reason_code=READ)])


def test_offered_the_code_goes_as_it_is_and_is_named_as_carried() -> None:
    data, carried = _sent(escalation(), {"person-away", "report-details"})
    assert data["reasonCodes"] == ["DAILY_CAP_EXCEEDED", "NO_READ_PERMISSION", "PERSON_AWAY"]
    assert {"personId": "p-a", "reasonCode": "PERSON_AWAY"} in data["skips"]
    assert carried == {"person-away", "report-details"}


def test_not_offered_the_specs_code_goes_in_its_place_everywhere() -> None:
    """Each list stays each-once and sorted; a skip entry the swap made a repeat is dropped."""
    data, carried = _sent(escalation(), {"report-details"})
    assert data["reasonCodes"] == ["DAILY_CAP_EXCEEDED", "NO_READ_PERMISSION"]
    assert data["skips"] == [{"personId": "p-a", "reasonCode": "DAILY_CAP_EXCEEDED"},
                             {"personId": "p-b", "reasonCode": "NO_READ_PERMISSION"}]
    assert carried == {"report-details"}
    skip, _ = _sent(EventReport(type="skipped", person_id="p-a", reason_code=AWAY), set())
    assert skip["reasonCode"] == "DAILY_CAP_EXCEEDED"
    advance, _ = _sent(AdvanceRequest(lease_token="l", attempt=2, reason_code=AWAY),
                       {"advance-attempt"})
    assert advance["reasonCode"] == "DAILY_CAP_EXCEEDED"
    expedite, _ = _sent(ExpediteRequest(attempt=1, reason_code=AWAY), set())
    assert expedite["reasonCode"] == "DAILY_CAP_EXCEEDED"
    batch, _ = _sent(ReportBatch(events=[EventReportItem(
        clarification_id="c-1", report=EventReport(type="skipped", reason_code=AWAY))]), set())
    assert batch["events"][0]["report"]["reasonCode"] == "DAILY_CAP_EXCEEDED"


def test_the_baseline_core_finds_the_code_where_it_stands() -> None:
    """What the reference core's baseline mode refuses: each place the code is, as a path."""
    data = escalation().wire()
    assert sorted(extension_values(EventReport, data)) == [
        (("reasonCodes", 1), "person-away"), (("skips", 0, "reasonCode"), "person-away")]


def test_the_document_says_it_by_its_enum() -> None:
    full = build_openapi()
    assert Extension.PERSON_AWAY in (offered_by_document(full) or set())
    enum = full["components"]["schemas"]["ReasonCode"]
    assert enum["x-extension-values"] == {"PERSON_AWAY": "person-away"}
    older = json.loads(json.dumps(full))
    older["components"]["schemas"]["ReasonCode"]["enum"].remove("PERSON_AWAY")
    assert Extension.PERSON_AWAY not in (offered_by_document(older) or set())


def test_a_probe_answer_says_it() -> None:
    probe = VALUE_PROBES[Extension.PERSON_AWAY]
    assert probe.body == {"type": 0, "reasonCode": "PERSON_AWAY"}
    assert value_offered_by_reply((422, "VALIDATION_FAILED", ("type",))) is True
    assert value_offered_by_reply((422, "VALIDATION_FAILED", ("type", "enum"))) is False
    assert value_offered_by_reply((404, "CLARIFICATION_NOT_FOUND", ())) is None
    assert value_offered_by_reply(None) is None


async def test_a_core_that_refuses_the_code_turns_it_off_and_takes_the_specs(
        core: FakeCore, make_client: Any) -> None:
    """Believed offered, the code is refused as a value outside the enum: the report goes again
    at once with DAILY_CAP_EXCEEDED, its other extensions' fields kept, and the code is not
    sent again."""
    refused = respond(422, json={"code": "VALIDATION_FAILED", "message": "m", "status": 422,
                                 "details": [{"loc": ["reasonCode"], "rule": "enum",
                                              "msg": "m"}]})
    taken = respond(200, json={"type": "skipped", "at": "2026-07-04T09:00:00Z"})
    core.script(refused, taken, taken)
    async with make_client() as client:
        assert client.offers(Extension.PERSON_AWAY) and set(client.offered) == set(ALL)
        report = EventReport(type="skipped", person_id="p-a", reason_code=AWAY, event_id="e-1")
        await client.report_event(clarification_id="c-1", report=report)
        sent = [json.loads(r.content) for r in core.requests]
        assert [s["reasonCode"] for s in sent] == ["PERSON_AWAY", "DAILY_CAP_EXCEEDED"]
        assert sent[1]["eventId"] == "e-1"
        assert not client.offers(Extension.PERSON_AWAY)
        assert client.offers(Extension.REPORT_DETAILS)
        await client.report_event(clarification_id="c-1", report=report)
        assert json.loads(core.requests[-1].content)["reasonCode"] == "DAILY_CAP_EXCEEDED"


async def test_an_advance_the_core_refuses_for_the_code_goes_again_with_the_specs(
        core: FakeCore, make_client: Any) -> None:
    refused = respond(422, json={"code": "VALIDATION_FAILED", "message": "m", "status": 422,
                                 "details": [{"loc": ["reasonCode"], "rule": "enum",
                                              "msg": "m"}]})
    core.script(refused, respond(200, json={"id": "job-1"}))
    async with make_client() as client:
        await client.advance_job(job_id="job-1", lease_token="l", attempt=2, reason_code=AWAY)
        sent = [json.loads(r.content) for r in core.requests]
        assert [s.get("reasonCode") for s in sent] == ["PERSON_AWAY", "DAILY_CAP_EXCEEDED"]
        assert sent[1]["attempt"] == 2
        assert not client.offers(Extension.PERSON_AWAY)
        assert client.offers(Extension.ADVANCE_ATTEMPT)
