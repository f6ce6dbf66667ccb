"""The committed OpenAPI document: valid, current, and complete against the route table."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from openapi_spec_validator import validate
from pydantic import BaseModel
from schemathesis.core.result import Ok

from bot.core import models, openapi
from bot.core.errors import ErrorCode, status_of
from bot.core.routes import HEALTH_PATH, OPENAPI_PATH, ROUTES, Route

Json = dict[str, Any]


@pytest.fixture(scope="module")
def doc() -> Json:
    return openapi.build_openapi()


def _resolve(doc: Json, node: Json) -> Json:
    while "$ref" in node:
        *_, section, name = node["$ref"].split("/")
        node = doc["components"][section][name]
    return node


def _operations(doc: Json) -> Iterator[tuple[str, str, Json]]:
    for path, item in doc["paths"].items():
        for method, op in item.items():
            yield path, method, op


def _error_responses(doc: Json) -> Iterator[tuple[str, str, str, Json]]:
    for path, method, op in _operations(doc):
        for status, response in op["responses"].items():
            if int(status) >= 400:
                yield path, method, status, _resolve(doc, response)


def test_document_is_valid_openapi_3_1(doc: Json) -> None:
    """The built document passes openapi-spec-validator as OpenAPI 3.1.0."""
    assert doc["openapi"] == "3.1.0"
    validate(doc)


def test_committed_file_is_current(doc: Json) -> None:
    """bot/contract/openapi.json is exactly what build_openapi() renders today."""
    committed = openapi.CONTRACT_PATH.read_text(encoding="utf-8")
    assert committed == openapi.render_openapi(doc), (
        f"bot/contract/openapi.json is stale; regenerate it with `{openapi.REGENERATE}`"
    )


def test_check_command_reports_a_stale_file(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """--check exits 1 on a stale file and 0 once --write has regenerated it."""
    target = tmp_path / "openapi.json"
    target.write_text("{}\n", encoding="utf-8")
    monkeypatch.setattr(openapi, "CONTRACT_PATH", target)
    assert openapi.main(["--check"]) == 1
    assert openapi.REGENERATE in capsys.readouterr().err
    assert openapi.main(["--write"]) == 0
    assert openapi.main(["--check"]) == 0
    assert json.loads(target.read_text(encoding="utf-8")) == openapi.build_openapi()


def test_every_route_appears_with_its_method(doc: Json) -> None:
    """Each row of ROUTES is an operation at its path and method with its operation id."""
    for route in ROUTES:
        op = doc["paths"][route.path][route.method.lower()]
        assert op["operationId"] == route.operation_id
        assert set(op["tags"]) == set(route.tags)
    ids = [op["operationId"] for _, _, op in _operations(doc)]
    assert len(ids) == len(set(ids)) == len(ROUTES) + 2


def test_meta_endpoints_need_no_token(doc: Json) -> None:
    """GET /openapi.json and GET /healthz are documented without security."""
    for path in (OPENAPI_PATH, HEALTH_PATH):
        assert doc["paths"][path]["get"]["security"] == []


def test_security_follows_the_auth_column(doc: Json) -> None:
    """clarify routes take the clarify token, clarify+apikey also API keys, apikey only API keys,
    dev the dev token."""
    expected = {"clarify": ["clarifyToken"], "clarify+apikey": ["clarifyToken", "apiKey"],
                "apikey": ["apiKey"], "dev": ["devToken"]}
    schemes = doc["components"]["securitySchemes"]
    assert set(schemes) == {"clarifyToken", "apiKey", "ingestToken", "devToken"}
    for route in ROUTES:
        op = doc["paths"][route.path][route.method.lower()]
        assert [name for req in op["security"] for name in req] == expected[route.auth]


def test_route_errors_are_documented_under_their_status(doc: Json) -> None:
    """Every error code of a route is listed in the response for its HTTP status."""
    for route in ROUTES:
        responses = doc["paths"][route.path][route.method.lower()]["responses"]
        for code in route.errors:
            response = _resolve(doc, responses[str(status_of(code))])
            assert code.value in response["x-error-codes"], (route.operation_id, code)
            assert code.value in response["description"]


def test_every_error_code_is_documented(doc: Json) -> None:
    """Each ErrorCode appears in some operation's or shared error response."""
    shared = doc["components"]["responses"].values()
    documented = {code for *_, r in _error_responses(doc) for code in r["x-error-codes"]}
    documented |= {code for r in shared for code in r["x-error-codes"]}
    assert documented == {code.value for code in ErrorCode}


def test_every_error_response_references_error_body(doc: Json) -> None:
    """Every 4xx/5xx response body is ErrorBody with one example per listed code."""
    seen = 0
    for path, method, status, response in _error_responses(doc):
        media = response["content"]["application/json"]
        assert media["schema"] == {"$ref": "#/components/schemas/ErrorBody"}, (path, method)
        assert set(media["examples"]) == set(response["x-error-codes"])
        for example in media["examples"].values():
            assert example["value"]["status"] == int(status)
        seen += 1
    assert seen > len(ROUTES)


def test_request_schemas_forbid_unknown_fields(doc: Json) -> None:
    """A model reachable from a request body is additionalProperties false iff it forbids extras."""
    checked: set[str] = set()
    for route in ROUTES:
        if route.request is None:
            continue
        body = doc["paths"][route.path][route.method.lower()]["requestBody"]
        root = _resolve(doc, body["content"]["application/json"]["schema"])
        assert root["additionalProperties"] is False, route.operation_id
        for schema in _reachable(doc, root):
            model = getattr(models, str(schema.get("title")), None)
            if isinstance(model, type) and issubclass(model, BaseModel):
                forbids = model.model_config.get("extra") == "forbid"
                assert (schema.get("additionalProperties") is False) == forbids, model.__name__
                checked.add(model.__name__)
    assert {"AnswerCustomInput", "SlackIdentity", "CandidateInput"} <= checked
    assert doc["components"]["schemas"]["Scenario"]["additionalProperties"] is True


def _reachable(doc: Json, root: Json) -> Iterator[Json]:
    seen: set[str] = set()
    stack: list[Any] = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, dict):
            ref = node.get("$ref")
            if ref is None:
                yield node
                stack.extend(node.values())
            elif ref not in seen:
                seen.add(ref)
                stack.append(_resolve(doc, node))


def test_answer_request_states_exactly_one_answer(doc: Json) -> None:
    """The AnswerRequest schema accepts answerIndex or answerCustom, never both or neither."""
    import jsonschema

    schemas = doc["components"]["schemas"]
    validator = jsonschema.Draft202012Validator(
        {"$ref": "#/components/schemas/AnswerRequest", "components": {"schemas": schemas}})
    assert validator.is_valid({"answerIndex": 0})
    assert validator.is_valid({"answerCustom": {"sourceText": "Q3 2026"}, "answerIndex": None})
    assert not validator.is_valid({"answerIndex": 0, "answerCustom": {"validFrom": "2026-06-12"}})
    assert not validator.is_valid({"channel": "slack"})
    assert not validator.is_valid({"answerIndex": 0, "confidence": 1})


def test_query_parameters_are_typed(doc: Json) -> None:
    """Query parameters carry their enum, range or format."""
    def param(path: str, name: str) -> Json:
        params = doc["paths"][path]["get"]["parameters"]
        return next(p for p in params if p["name"] == name)["schema"]

    assert param("/v1/jobs", "state") == {"$ref": "#/components/schemas/JobState"}
    assert param("/v1/clarifications", "state") == {
        "$ref": "#/components/schemas/ClarificationState"}
    assert param("/v1/clarifications", "severity") == {"$ref": "#/components/schemas/Severity"}
    assert param("/v1/clarifications", "limit") == {
        "type": "integer", "minimum": 1, "maximum": 200}
    assert param("/v1/facts/{logicalId}", "asOfTx")["format"] == "date-time"
    assert param("/v1/facts/{logicalId}", "asOfValid")["format"] == "date-time"
    assert param("/v1/facts/{logicalId}/versions", "asOfValid")["format"] == "date-time"


def test_path_parameters_match_the_paths(doc: Json) -> None:
    """Every {name} in a path is a required path parameter of each of its operations."""
    for path, _, op in _operations(doc):
        declared = {p["name"] for p in op.get("parameters", []) if p["in"] == "path"}
        assert declared == {part[1:-1] for part in path.split("/") if part.startswith("{")}


def test_discriminated_identity_variants_require_their_tag(doc: Json) -> None:
    """SlackIdentity and TeamsIdentity require `platform`, as pydantic's discriminator does."""
    schemas = doc["components"]["schemas"]
    assert "platform" in schemas["SlackIdentity"]["required"]
    assert "platform" in schemas["TeamsIdentity"]["required"]


def test_schemathesis_loads_every_operation(doc: Json) -> None:
    """schemathesis.openapi.from_dict accepts the document and sees every operation."""
    schema = schemathesis.openapi.from_dict(doc)
    results = list(schema.get_all_operations())
    assert all(isinstance(result, Ok) for result in results), results
    operations = [result.ok() for result in results if isinstance(result, Ok)]
    assert {(op.method.upper(), op.path) for op in operations} == {
        (method.upper(), path) for path, method, _ in _operations(doc)}


def test_prose_examples_use_only_documented_fields(doc: Json) -> None:
    """Every JSON example in docs/core-contract.md parses and uses only documented field names."""
    prose = (Path(__file__).parents[2] / "docs" / "core-contract.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```json\n(.*?)```", prose, flags=re.S)
    documented = {name for schema in doc["components"]["schemas"].values()
                  for name in schema.get("properties", {})}
    used: set[str] = set()
    for block in blocks:
        stack: list[Any] = [json.loads(block)]
        while stack:
            node = stack.pop()
            if isinstance(node, dict):
                used |= set(node)
                stack.extend(node.values())
            elif isinstance(node, list):
                stack.extend(node)
    assert len(blocks) >= len(ROUTES)
    assert used - documented == set()


@pytest.mark.parametrize("route", [r for r in ROUTES if r.request], ids=lambda r: r.operation_id)
def test_bodies_valid_by_the_document_are_valid_for_the_models(doc: Json, route: Route) -> None:
    """Request bodies schemathesis generates from the document pass the pydantic request model."""
    operation = schemathesis.openapi.from_dict(doc)[route.path][route.method]
    request = route.request
    assert request is not None

    @settings(max_examples=25, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(operation.as_strategy())
    def check(case: Any) -> None:
        request.model_validate_json(json.dumps(case.body))

    check()
