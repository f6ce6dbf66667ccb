"""The tolerant reader at every depth: no answer of the core is read with a model that refuses an
unknown field, and every answer the contract describes survives what a newer or older core does
to it (unknown fields at every depth, unknown values in every enum that may grow, every optional
field left out) with each value the bot knows intact.

The property test draws its answers from the committed OpenAPI document
(``tests/core/contract_values.py``), not from the models that read them.
"""

from __future__ import annotations

import copy
import enum
import json
import typing
from datetime import datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from bot.core.baseline import _models_in
from bot.core.models import (
    AliasResolution,
    Clarification,
    ClarificationPage,
    DeliveryHistory,
    ErrorBody,
    JobPage,
    PeopleBatch,
    PollResponse,
    ReasonCode,
    ResolvedSlackIdentity,
    identity_key,
)
from bot.core.models.wire import UNKNOWN_ITEMS, UNKNOWN_READS_AS, Lenient, LenientList
from bot.core.routes import ROUTES
from bot.core.tolerance import read_python
from bot.metrics import REGISTRY
from tests.core.contract_values import (
    SCHEMAS,
    answer,
    answer_schemas,
    expected,
    grown,
    leaves,
    resolved,
    sites,
    with_nulls,
    without_optionals,
)

EXAMPLES_PER_ANSWER = 25  # hypothesis examples per answer schema (20 schemas: 500 in all)


def _reachable(roots: list[type[BaseModel]]) -> set[type[BaseModel]]:
    found: set[type[BaseModel]] = set()
    todo = list(roots)
    while todo:
        model = todo.pop()
        if model in found:
            continue
        found.add(model)
        for field in model.model_fields.values():
            todo.extend(_models_in(field.annotation))
    return found


ANSWERED = _reachable([r.response for r in ROUTES if r.response is not None])
ASKED = _reachable([r.request for r in ROUTES if r.request is not None])


# ---------------------------------------------------------------- the models' structure


def test_no_model_reachable_from_an_answer_refuses_unknown_fields() -> None:
    """Every model an answer is read with, at every depth, ignores fields it does not know
    (a request model reused inside an answer once dropped every alias resolution)."""
    strict = sorted(model.__name__ for model in ANSWERED
                    if model.model_config.get("extra") == "forbid")
    assert strict == []
    assert AliasResolution in ANSWERED and ResolvedSlackIdentity in ANSWERED


def test_every_model_reachable_from_a_request_refuses_unknown_fields() -> None:
    """Requests stay strict at every depth: a nested object of a request refuses an unknown
    field as the body itself does."""
    lax = sorted(model.__name__ for model in ASKED
                 if model.model_config.get("extra") != "forbid")
    assert lax == []


def _enums_in(annotation: Any) -> list[type[enum.Enum]]:
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return [annotation]
    return [e for arg in typing.get_args(annotation) for e in _enums_in(arg)]


def test_every_enum_an_answer_carries_says_how_an_unknown_value_reads() -> None:
    """Each enum-valued field of an answer, at every depth, is marked lenient (an unknown value
    reads as a fallback, which the field's type admits) or lenient_list (dropped), so a value
    a newer core adds never costs the answer or the entry holding it."""
    for model in ANSWERED:
        for name, field in model.model_fields.items():
            if not _enums_in(field.annotation) or model is ErrorBody:
                continue
            marks = [mk for mk in field.metadata if isinstance(mk, Lenient | LenientList)]
            assert marks, f"{model.__name__}.{name}"
            for mark in marks:
                if isinstance(mark, Lenient) and mark.fallback is None:
                    assert type(None) in typing.get_args(field.annotation), (model, name)


def test_the_document_marks_what_it_lets_grow_and_refuses_nothing_in_answers() -> None:
    """The published document agrees: no schema an answer reaches forbids additional
    properties, and every vocabulary of the contract it reaches (an enum component) says what
    an unknown value reads as. (A chat identity's ``platform`` selects the identity's shape: an
    entry on a platform the bot does not know cannot be used, and is dropped.)"""
    names = set(answer_schemas().values())
    seen: set[str] = set()
    while names:
        name = names.pop()
        if name in seen:
            continue
        seen.add(name)
        schema = SCHEMAS[name]
        assert schema.get("additionalProperties") is not False, name
        for prop, inner in schema.get("properties", {}).items():
            refs = json.dumps(inner)
            names |= {ref.split('"')[0] for ref in refs.split("#/components/schemas/")[1:]}
            target = inner.get("items", inner)
            is_enum = any("enum" in resolved(b) for b in [target, *target.get("anyOf", [])]
                          if "$ref" in b)
            if is_enum and name != "ErrorBody":
                assert UNKNOWN_READS_AS in inner or UNKNOWN_ITEMS in inner, (name, prop)


# ---------------------------------------------------------------- the property test

MODELS = {r.operation_id: r.response for r in ROUTES if r.response is not None}
CASES = sorted({(schema, MODELS[op]) for op, schema in answer_schemas().items()
                if op in MODELS}, key=lambda case: case[0])


def test_every_answer_of_the_document_is_tried() -> None:
    """The property test covers each distinct answer schema of every route (20)."""
    assert len(CASES) == 20
    assert {model for _, model in CASES} == {r.response for r in ROUTES if r.response}


def _same(known: Any, read: Any) -> bool:
    if known is None:  # null is no value (the reader may derive one in its place)
        return True
    if isinstance(known, str) and isinstance(read, str) and known != read:
        try:  # the same instant, however it is written
            return datetime.fromisoformat(known) == datetime.fromisoformat(read)
        except ValueError:
            return False
    return bool(known == read)


def _at(data: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        data = data[part]
    return data


def _read(model: type[BaseModel], body: Any) -> dict[str, Any]:
    return read_python(model, copy.deepcopy(body)).model_dump(mode="json", by_alias=True)


@pytest.mark.parametrize(("schema", "model"), CASES, ids=[name for name, _ in CASES])
@settings(max_examples=EXAMPLES_PER_ANSWER, derandomize=True, database=None, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_25_examples_per_answer_survive_unknown_fields_values_and_absences(
        schema: str, model: type[BaseModel], data: st.DataObject) -> None:
    """25 hypothesis examples per answer schema of the document (500 in all): the answer read
    as it is keeps every value; grown by a newer core (an unknown field in every object at
    every depth, an unknown value in every enum marked as growing, an unknown item in every
    marked enum list) it reads exactly as the same answer with each unknown value replaced by
    its documented fallback, so no list loses an entry to an unknown field; with every
    optional field left out it still reads, keeping every value that is left; and with each
    of those sent as null instead it reads exactly as when they are left out."""
    instance = data.draw(answer(schema), label="answer")
    clean = _read(model, instance)
    for path, known in leaves(instance):
        assert _same(known, _at(clean, path)), (path, known)

    found = sites(instance, SCHEMAS[schema])
    junk = data.draw(st.lists(st.none() | st.integers() | st.text(max_size=5)
                              | st.lists(st.integers(), max_size=2)
                              | st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
                              min_size=1, max_size=4), label="unknown fields carry")
    slots = data.draw(st.lists(st.integers(0, 5), min_size=1, max_size=4), label="slots")
    assert _read(model, grown(instance, found, junk, slots)) == _read(
        model, expected(instance, found))

    bare = without_optionals(instance, SCHEMAS[schema])
    minimal = _read(model, bare)
    for path, known in leaves(bare):
        assert _same(known, _at(minimal, path)), (path, known)
    assert _read(model, with_nulls(bare, SCHEMAS[schema])) == minimal


def test_an_unknown_field_in_an_alias_resolutions_identity_keeps_the_resolution() -> None:
    """The people batch's resolutions read when the core adds a field inside ``identity``:
    none is dropped as a bad entry (all 13 once were)."""
    before = REGISTRY.value("clarify_core_tolerated_total", kind="bad_entry",
                            model="AliasResolution")
    resolutions = [{"identity": {"platform": "slack", "userId": f"U{n}", "teamId": "T1",
                                 "displayName": "added by a newer core"},
                    "personId": "p-ana", "verified": True} for n in range(13)]
    batch = read_python(PeopleBatch, {"people": [
        {"personId": "p-ana", "person": {"personId": "p-ana", "displayName": "Ana"},
         "resolutions": resolutions}]})
    assert [identity_key(r.identity) for r in batch.people[0].resolutions] == [
        ("slack", f"U{n}", "T1", None) for n in range(13)]
    assert REGISTRY.value("clarify_core_tolerated_total", kind="bad_entry",
                          model="AliasResolution") == before


def test_optional_fields_sent_as_null_read_as_left_out() -> None:
    """A baseline clarification whose core writes every field it does not have as null (a
    workspace name, the quorum's counts, each candidate's index, the document's id and title, a
    response's interval, the bound interval) reads, and reads as the same answer without them:
    no job is held for a null, and what the bot derives in their place is derived."""
    body = {"id": "c-1", "tenantId": "acme", "severity": "high", "state": "open",
            "workspace": {"workspaceId": "w", "stewardId": "p-s", "name": None},
            "quorumPolicy": {"requiredConfirmations": 1, "requiredRoles": ["editor"],
                             "allowStewardOverride": True},
            "quorum": {"state": "pending", "required": None, "confirmations": None,
                       "remaining": None, "confirmedBy": None},
            "candidates": [{"label": "a", "validFrom": "2026-07-13T00:00:00Z", "index": None},
                           {"label": "b", "validFrom": "2026-07-20T00:00:00Z", "index": None}],
            "question": "q?", "spanExcerpt": "s",
            "document": {"url": "https://d", "acl": {"workspaceId": "w", "readRoles": []},
                         "documentId": None, "title": None},
            "target": None, "events": None, "askedAliases": None,
            "boundInterval": None, "boundFactVersionTx": None,
            "responses": [{"responseId": "r-1", "responder": "p-ana",
                           "rightsAtAnswerTime": "editor", "answerIndex": 1,
                           "answerCustom": None, "interval": None, "channel": "slack",
                           "responseTx": "2026-07-04T09:00:00Z", "bindingStatus": "bound"}]}
    left_out = copy.deepcopy(body)
    for obj in (left_out, left_out["workspace"], left_out["quorum"], left_out["document"],
                *left_out["candidates"], *left_out["responses"]):
        for key in [k for k, v in obj.items() if v is None]:
            del obj[key]
    read = _read(Clarification, body)
    assert read == _read(Clarification, left_out)
    assert [c["index"] for c in read["candidates"]] == [0, 1]
    # the bound date derived from the binding response, as when the core leaves them out
    assert read["responses"][0]["interval"]["validFrom"].startswith("2026-07-20")
    assert read["boundInterval"] == read["responses"][0]["interval"]


def test_a_hundred_unknown_values_cost_one_repair_pass_not_the_answer() -> None:
    """More unknown values than the reader's repair budget (100) in one answer: every one reads
    as its fallback and the answer is kept (one repair per parse once lost it)."""
    events = [{"type": "skipped", "at": "2026-07-04T09:00:00Z", "personId": f"p-{n}",
               "reasonCode": "A_NEWER_CODE", "reasonCodes": ["A_NEWER_CODE", "DIGESTED"]}
              for n in range(150)]
    history = read_python(DeliveryHistory, {"clarificationId": "c-1", "events": events})
    assert len(history.events) == 150
    assert {ev.reason_code for ev in history.events} == {None}
    assert {tuple(ev.reason_codes) for ev in history.events} == {(ReasonCode.DIGESTED,)}


@pytest.mark.parametrize(("model", "answer", "field"), [
    (PollResponse, {"jobs": None}, "jobs"),
    (ClarificationPage, {"items": None, "nextCursor": "c2"}, "items"),
    (JobPage, {"items": None}, "items"),
    (PeopleBatch, {"people": None}, "people"),
])
def test_a_list_of_entries_sent_as_null_reads_as_empty(model: type[BaseModel],
                                                       answer: dict[str, Any],
                                                       field: str) -> None:
    """A core whose serializer writes an empty list as null (Go's nil slice): a poll with no
    jobs, an empty page of a list, a batch with no one, read as empty (counted
    ``absent_field``), not as an answer that does not read (an idle core's every poll failing,
    a steward's empty queue shown as the core unavailable). A page's cursor is kept."""
    before = REGISTRY.value("clarify_core_tolerated_total", kind="absent_field",
                            model=model.__name__)
    read = read_python(model, dict(answer))
    assert getattr(read, field) == []
    if "nextCursor" in answer:
        assert read.next_cursor == "c2"  # type: ignore[attr-defined]
    assert REGISTRY.value("clarify_core_tolerated_total", kind="absent_field",
                          model=model.__name__) == before + 1
