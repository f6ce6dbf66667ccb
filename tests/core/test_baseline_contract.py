"""The baseline contract as the models mark it, and the tolerant reader.

The bot may require of a core's answer only what the baseline names, may always send only what
the baseline takes, and reads what a core sends beyond (or instead of) the vocabulary it knows
without failing: an unknown enum value as the value that grants least, unknown and missing
optional fields counted, a list entry that does not parse dropped, never the whole answer.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from bot.core.baseline import _models_in, extensions_of, project
from bot.core.client import CoreClient
from bot.core.extensions import ABOUT, Extension
from bot.core.models import (
    AnswerRequest,
    AnswerResult,
    Clarification,
    ClarificationState,
    DeliveryReport,
    EvidenceClass,
    FactVersion,
    HeartbeatRequest,
    LeasedJob,
    Person,
    PollRequest,
    ReasonCode,
    ResponseRecord,
    Role,
    Severity,
)
from bot.core.models.enums import EXTENSION_CODES
from bot.core.models.wire import extension_of, is_additive
from bot.core.routes import ROUTES
from bot.core.tolerance import SAMPLE, read_json, read_python
from bot.metrics import REGISTRY
from tests.core.conftest import FakeCore, clarification, respond

DOCS = Path(__file__).resolve().parents[2] / "docs" / "core-contract.md"


def _response_models() -> set[type[BaseModel]]:
    found: set[type[BaseModel]] = set()
    todo = [r.response for r in ROUTES if r.response is not None and r.extension is None
            and r.auth != "dev"]
    while todo:
        model = todo.pop()
        if model is None or model in found:
            continue
        found.add(model)
        for field in model.model_fields.values():
            todo.extend(_models_in(field.annotation))
    return found


def test_no_response_field_is_required_that_the_baseline_does_not_name() -> None:
    """Every field a baseline route's answer must carry is a baseline field (not additive, not
    an extension's): a core that leaves the rest out still parses."""
    for model in _response_models():
        for name, field in model.model_fields.items():
            if field.is_required():
                assert not is_additive(field) and extension_of(field) is None, (model, name)


def test_every_extension_field_is_optional_and_named() -> None:
    """A request field of an extension has a default (it is only sent when offered), and its
    extension is one the bot knows."""
    for route in ROUTES:
        if route.request is None:
            continue
        for name, field in route.request.model_fields.items():
            ext = extension_of(field)
            if ext is not None:
                assert not field.is_required(), (route.operation_id, name)
                assert ext in {e.value for e in Extension}, ext


def test_every_extension_has_an_entry_in_the_docs() -> None:
    """docs/core-contract.md lists each extension: what it is for, the fallback, detection."""
    text = DOCS.read_text(encoding="utf-8")
    for ext in Extension:
        assert re.search(rf"^\| `{re.escape(ext.value)}` \|", text, re.M), ext
    for ext, about in ABOUT.items():
        for route in about.routes:
            assert route in {r.operation_id for r in ROUTES}
        if about.values:  # a value extension's codes are the contract's, marked as its own
            assert {EXTENSION_CODES[ReasonCode(v)][0] for v in about.values} == {ext.value}
        elif not about.routes:  # a field extension has fields somewhere
            assert any(ext.value in extensions_of(r.request) for r in ROUTES if r.request)


def test_a_baseline_projection_drops_exactly_the_marked_fields() -> None:
    """The reference core's baseline answer of a full record: no additive field anywhere."""
    full = Clarification.model_validate(clarification())
    shown = project(full)
    assert "relations" not in shown and "createdAt" not in shown and "jobId" not in shown
    assert "title" not in shown["document"] and "url" in shown["document"]
    assert set(shown["quorum"]) == {"state"}
    again = read_python(Clarification, shown)
    assert again.quorum.required == full.quorum_policy.required_confirmations


def _counted(kind: str, model: str) -> float:
    return REGISTRY.value("clarify_core_tolerated_total", kind=kind, model=model)


def test_unknown_enum_values_read_as_what_grants_least_and_are_counted() -> None:
    """A newer core's state, severity and roles: the state reads as open, the severity as
    normal, an unknown role in the ACL admits nobody, an unknown membership role is a viewer's;
    each is counted by enum, never by value."""
    body = clarification()
    body["state"] = "withdrawn"
    body["severity"] = "urgent"
    body["document"]["acl"]["readRoles"] = ["auditor", "editor"]
    before = _counted("unknown_value", "ClarificationState")
    c = read_python(Clarification, body)
    assert c.state is ClarificationState.OPEN and c.severity is Severity.NORMAL
    assert c.document.acl.read_roles == [Role.EDITOR]
    assert _counted("unknown_value", "ClarificationState") == before + 1
    person = read_python(Person, {"personId": "p-1", "displayName": "P",
                                  "memberships": [{"workspaceId": "w", "role": "owner"}]})
    assert person.memberships[0].role is Role.VIEWER


def test_the_specs_evidence_classes_are_complete() -> None:
    """source_version is one of the spec's evidence classes: a fact read with it parses."""
    assert {e.value for e in EvidenceClass} == {
        "source_span", "source_version", "system_extraction", "human_clarification",
        "human_attestation", "steward_override", "quorum_confirmation"}
    fact = read_python(FactVersion, {
        "logicalId": "f", "versionTx": "2026-07-04T09:00:00Z", "confidence": 0.5,
        "provenance": {"evidenceClass": "source_version"}})
    assert fact.provenance.evidence_class is EvidenceClass.SOURCE_VERSION


def test_unknown_and_missing_optional_fields_are_counted_not_refused() -> None:
    """Ignored and defaulted on every answer; counted on a sample of each model's answers (the
    counter says a core sends them), at no cost to the others."""
    body = {**clarification(), "somethingNew": {"deep": [1, 2]}}
    del body["ranking"]
    raw = json.dumps(body).encode()
    unknown = _counted("unknown_field", "Clarification")
    absent = _counted("absent_field", "Clarification")
    for _ in range(SAMPLE):  # one of them is the sample
        assert read_json(Clarification, raw).ranking == []
    assert _counted("unknown_field", "Clarification") == unknown + 1
    assert _counted("absent_field", "Clarification") == absent + 1


def test_a_baseline_record_is_completed_from_what_it_implies() -> None:
    """Without the counts, indices, intervals and binding: each derived from the record."""
    full = clarification()
    full["candidates"].append({"index": 1, "label": "1 Oct 2026",
                               "validFrom": "2026-10-01T00:00:00Z"})
    body: dict[str, Any] = project(Clarification.model_validate(full))
    body["state"] = "answered"
    body["quorum"] = {"state": "satisfied"}
    for candidate in body["candidates"]:
        candidate.pop("index", None)
    body["responses"] = [{"responseId": "r1", "responder": "p-sarah",
                          "rightsAtAnswerTime": "editor", "answerIndex": 1, "channel": "slack",
                          "responseTx": "2026-07-05T10:00:00Z", "bindingStatus": "bound"}]
    c = read_python(Clarification, body)
    assert [x.index for x in c.candidates] == [0, 1]
    assert c.responses[0].interval.valid_from == c.candidates[1].valid_from
    assert (c.quorum.remaining, c.quorum.confirmed_by) == (0, ["p-sarah"])
    assert c.bound_interval == c.responses[0].interval
    assert c.bound_fact_version_tx == c.responses[0].response_tx


async def test_one_bad_job_in_a_poll_does_not_cost_the_good_ones(
        core: FakeCore, make_client: Any) -> None:
    """A poll's entry that does not parse is left to its lease (counted); the others are
    handled."""
    good = {"id": "job-1", "kind": "clarify:temporal", "attempts": 0, "maxAttempts": 2,
            "payload": {"clarificationId": "c1", "ranking": ["p"]}, "leaseToken": "l",
            "leaseExpiresAt": "2026-07-04T09:01:00Z"}
    core.script(respond(200, json={"jobs": [{"id": "job-0", "kind": 7}, good]}))
    before = _counted("bad_entry", "LeasedJob")
    async with make_client() as client:
        assert isinstance(client, CoreClient)
        polled = await client.poll_jobs(kinds=["clarify:"])
    assert [j.id for j in polled.jobs] == ["job-1"]
    assert _counted("bad_entry", "LeasedJob") == before + 1


@pytest.mark.parametrize("operation", ["heartbeat_job", "complete_job", "fail_job"])
async def test_a_lease_operation_needs_only_a_success(
        core: FakeCore, make_client: Any, operation: str) -> None:
    """An acknowledgement the bot does not read (204, or a body of another shape) is a success,
    not a failed job."""
    core.script(respond(204))
    async with make_client() as client:
        result = await getattr(client, operation)(job_id="job-1", lease_token="l")
    assert result is None


def test_the_docs_name_every_field_of_the_baseline() -> None:
    """docs/core-contract.md "The baseline" names every baseline field of the answers the
    bot reads (so the document a core's builder reads is the models' own list)."""
    text = DOCS.read_text(encoding="utf-8").split("## The baseline", 1)[1].split("\n## ", 1)[0]
    for model in (LeasedJob, Clarification, Person, AnswerResult, ResponseRecord):
        for name, field in model.model_fields.items():
            if not is_additive(field) and extension_of(field) is None:
                alias = field.alias or name
                assert f"`{alias}`" in text, (model.__name__, alias)


def test_request_models_know_their_extension_fields() -> None:
    assert extensions_of(AnswerRequest) == {"answer-request-id", "answer-note", "answer-order"}
    assert extensions_of(HeartbeatRequest) == {"heartbeat-lease"}
    assert extensions_of(DeliveryReport) == {"report-details"}
    assert extensions_of(PollRequest) == set()


def test_repairs_reach_into_nested_lists_and_stop_where_no_mark_allows() -> None:
    """An unknown reason code on the fourth event is no reason code, the other events stay; a
    candidate that does not parse is not dropped (answer indices would move): the record is
    refused as a whole, value-free."""
    body = clarification()
    body["events"] = [{"type": "skipped", "at": T, "personId": f"p-{n}",
                       "reasonCode": "NO_READ_PERMISSION"} for n in range(5)]
    body["events"][3]["reasonCode"] = "SOMETHING_NEW"
    body["events"][1]["at"] = "not a time"
    c = read_python(Clarification, body)
    assert [ev.person_id for ev in c.events] == ["p-0", "p-2", "p-3", "p-4"]
    assert [ev.reason_code for ev in c.events][2] is None
    body["candidates"][0]["validFrom"] = "not a time"
    with pytest.raises(ValueError):
        read_python(Clarification, body)


T = "2026-07-04T09:00:00Z"
