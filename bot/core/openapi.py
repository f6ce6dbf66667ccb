"""Builds the OpenAPI 3.1 document of the core contract from the route table and the wire models.

``python -m bot.core.openapi --write`` regenerates ``bot/contract/openapi.json``; ``--check``
exits 1 when the committed document is stale.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from http import HTTPStatus
from pathlib import Path
from typing import Any

from pydantic import BaseModel, TypeAdapter
from pydantic.json_schema import JsonSchemaMode, models_json_schema

from bot.core import contract_text as prose
from bot.core.errors import ErrorCode, message_of, status_of
from bot.core.models import AnswerRequest, ClockRequest, ErrorBody, Id
from bot.core.routes import HEALTH_PATH, OPENAPI_PATH, ROUTES, Route

CONTRACT_VERSION = "1.0.0"
CONTRACT_PATH = Path(__file__).resolve().parent.parent / "contract" / "openapi.json"
SERVER_URL = "http://127.0.0.1:8700"
REGENERATE = "python -m bot.core.openapi --write"

Json = dict[str, Any]
_Refs = dict[tuple[type, str], Json]  # (model, json-schema mode) -> {"$ref": ...}
_SCHEMAS = "#/components/schemas/"
_ERROR_BODY = {"$ref": f"{_SCHEMAS}ErrorBody"}
_JSON = "application/json"
# any endpoint of the core may answer these, whatever its own documented errors are
_COMMON_ERRORS = (ErrorCode.RATE_LIMITED, ErrorCode.INTERNAL, ErrorCode.UNAVAILABLE)

_SECURITY_BY_AUTH: dict[str, list[str]] = {
    "clarify": ["clarifyToken"],
    "clarify+apikey": ["clarifyToken", "apiKey"],
    "apikey": ["apiKey"],
    "dev": ["devToken"],
    "any": ["clarifyToken", "apiKey", "devToken"],
    "none": [],
}

_QUERY: dict[str, tuple[Json, str]] = {
    "severity": ({"$ref": f"{_SCHEMAS}Severity"}, "Only clarifications of this severity."),
    "cursor": ({"type": "string", "maxLength": 500},
               "Opaque cursor from `nextCursor`; an unrecognised one is 422."),
    "limit": ({"type": "integer", "minimum": 1, "maximum": 200}, "Page size."),
    "tenantId": ({"$ref": f"{_SCHEMAS}Id"}, "Tenant id (must be in the token's scope)."),
    "kind": ({"type": "string", "maxLength": 64}, "Job kind prefix, e.g. `clarify:`."),
    "documentId": ({"$ref": f"{_SCHEMAS}Id"}, "Only clarifications of this source document."),
    "since": ({"type": "string", "format": "date-time"},
              "Only clarifications updated at or after this time."),
    "asOfTx": ({"type": "string", "format": "date-time"}, "Transaction time; default now."),
    "asOfValid": ({"type": "string", "format": "date-time"},
                  "Valid time: only a version whose [validFrom, validTo) contains it."),
}
# the rule pydantic's model validator enforces, stated so that generators can honour it
_EXACTLY_ONE: dict[type[BaseModel], tuple[str, str]] = {
    AnswerRequest: ("answerIndex", "answerCustom"),
    ClockRequest: ("advanceSeconds", "set"),
}


def build_openapi() -> Json:
    """The OpenAPI 3.1.0 document of the core contract."""
    refs, schemas = _component_schemas()
    paths: dict[str, Json] = defaultdict(dict)
    for r in ROUTES:
        paths[r.path][r.method.lower()] = _operation(r, refs)
    paths[OPENAPI_PATH]["get"] = _meta_operation(
        "getOpenApi", "This document.", {"type": "object"})
    paths[HEALTH_PATH]["get"] = _meta_operation(
        "health", "Liveness: answers `{\"status\": \"ok\"}`.", {"$ref": f"{_SCHEMAS}Health"})
    return {
        "openapi": "3.1.0",
        "info": {"title": "Telha core — clarify contract", "version": CONTRACT_VERSION,
                 "description": prose.INFO_DESCRIPTION},
        "servers": [{"url": SERVER_URL, "description": "Reference core (devcore) on loopback."}],
        "tags": [{"name": name, "description": text} for name, text in prose.TAGS.items()],
        "paths": dict(paths),
        "components": {
            "schemas": schemas,
            "securitySchemes": {
                name: {"type": "http", "scheme": "bearer", "description": text}
                for name, text in prose.SECURITY_SCHEMES.items()
            },
            "responses": _shared_responses(),
        },
    }


# ---------------------------------------------------------------- schemas


def _component_schemas() -> tuple[_Refs, Json]:
    """Component schemas and the ``$ref`` of each (model, mode) the routes use.

    Requests are validation-mode schemas, responses serialization-mode ones. A model whose two
    schemas differ gets pydantic's ``-Input``/``-Output`` names, and two models sharing a class
    name get module-qualified names, so no name is ever silently overwritten.
    """
    pairs: list[tuple[type[BaseModel], JsonSchemaMode]] = [(ErrorBody, "serialization")]
    for r in ROUTES:
        if r.request is not None:
            pairs.append((r.request, "validation"))
        if r.response is not None:
            pairs.append((r.response, "serialization"))
    keymap, top = models_json_schema(
        list(dict.fromkeys(pairs)), by_alias=True, ref_template=_SCHEMAS + "{model}")
    schemas: Json = top.get("$defs", {})
    for schema in schemas.values():
        for prop in schema.get("properties", {}).values():
            prop.pop("title", None)  # "Answerindex"-style titles derived from aliases are noise
    _require_discriminators(schemas)
    for model, (first, second) in _EXACTLY_ONE.items():
        _require_exactly_one(schemas[_name(keymap[(model, "validation")])], first, second)
    schemas["ErrorBody"]["description"] = (
        "Every error answer. `details` (validation errors only) lists `{loc, msg}` and never "
        "echoes input values.")
    for name, schema in _hand_written_schemas().items():
        if name in schemas:
            raise ValueError(f"component schema name {name!r} is taken by a model")
        schemas[name] = schema
    refs: _Refs = {(model, str(mode)): ref for (model, mode), ref in keymap.items()}
    return refs, schemas


def _name(ref: Json) -> str:
    return str(ref["$ref"]).removeprefix(_SCHEMAS)


def _require_discriminators(schemas: Json) -> None:
    """Mark each union variant's tag required: pydantic refuses a variant without it."""
    for schema in schemas.values():
        for prop in schema.get("properties", {}).values():
            tag = prop.get("discriminator", {}).get("propertyName")
            for ref in prop.get("discriminator", {}).get("mapping", {}).values():
                variant = schemas[_name({"$ref": ref})]
                variant["required"] = sorted({*variant.get("required", []), tag})


def _require_exactly_one(schema: Json, first: str, second: str) -> None:
    schema["oneOf"] = [
        {"required": [a], "properties": {a: {"not": {"type": "null"}}, b: {"type": "null"}}}
        for a, b in ((first, second), (second, first))
    ]


def _hand_written_schemas() -> Json:
    return {
        "Id": {**TypeAdapter(Id).json_schema(), "description": "Path ids and tenant ids."},
        "Health": {
            "type": "object", "required": ["status"],
            "properties": {"status": {"type": "string", "const": "ok"}},
        },
        "Scenario": {
            "type": "object", "additionalProperties": True,
            "description": (
                "A free-form scenario for the reference core: tenants, workspaces, people, "
                "tokens and clarifications. Its shape belongs to devcore, not to the contract."),
        },
    }


# ---------------------------------------------------------------- operations


def _operation(r: Route, refs: _Refs) -> Json:
    op: Json = {
        "operationId": r.operation_id,
        "summary": r.summary,
        "tags": list(r.tags),
        "security": [{name: []} for name in _SECURITY_BY_AUTH[r.auth]],
        "parameters": _path_parameters(r.path) + _query_parameters(r),
        "responses": _responses(r, refs),
        "x-idempotent": r.retry,
    }
    if r.extension is not None:
        op["x-extension"] = str(r.extension)
    if note := prose.NOTES.get(r.operation_id):
        op["description"] = note
    if r.request is not None:
        op["requestBody"] = _body(refs[(r.request, "validation")])
    elif r.method == "POST":
        op["requestBody"] = _body({"$ref": f"{_SCHEMAS}Scenario"})
    if not op["parameters"]:
        del op["parameters"]
    return op


def _meta_operation(operation_id: str, summary: str, schema: Json) -> Json:
    return {
        "operationId": operation_id, "summary": summary, "tags": ["meta"], "security": [],
        "responses": {"200": {"description": "OK", "content": {_JSON: {"schema": schema}}}},
    }


def _body(schema: Json) -> Json:
    return {"required": True, "content": {_JSON: {"schema": schema}}}


def _path_parameters(path: str) -> list[Json]:
    return [
        {"name": name, "in": "path", "required": True, "schema": {"$ref": f"{_SCHEMAS}Id"}}
        for name in re.findall(r"\{(\w+)\}", path)
    ]


def _query_parameters(r: Route) -> list[Json]:
    params = []
    for name in r.query:
        schema, text = _query_schema(r, name)
        params.append({
            "name": name, "in": "query", "required": False,
            "schema": schema, "description": text,
        })
    return params


def _query_schema(r: Route, name: str) -> tuple[Json, str]:
    if name == "state":
        enum = "JobState" if "jobs" in r.tags else "ClarificationState"
        return {"$ref": f"{_SCHEMAS}{enum}"}, "Only items in this state."
    return _QUERY[name]


# ---------------------------------------------------------------- responses


def _responses(r: Route, refs: _Refs) -> Json:
    out: Json = {}
    for status in r.success:
        described = prose.SUCCESS.get((r.operation_id, status), "OK")
        out[str(status)] = {"description": described}
        if r.response is not None:
            out[str(status)]["content"] = {_JSON: {"schema": refs[(r.response, "serialization")]}}
    by_status: dict[int, list[ErrorCode]] = defaultdict(list)
    for code in r.errors:
        by_status[status_of(code)].append(code)
    for status, codes in sorted(by_status.items()):
        out[str(status)] = _error_response(codes)
    for code in _COMMON_ERRORS:
        out[str(status_of(code))] = {"$ref": f"#/components/responses/{_response_name(code)}"}
    return out


def _error_response(codes: list[ErrorCode]) -> Json:
    status = status_of(codes[0])
    listed = "".join(f"\n- `{code}`: {message_of(code)}" for code in codes)
    response: Json = {
        "description": f"{HTTPStatus(status).phrase}:{listed}",
        "content": {_JSON: {
            "schema": dict(_ERROR_BODY),
            "examples": {code.value: {"summary": code.value, "value": _example(code)}
                         for code in codes},
        }},
        "x-error-codes": [code.value for code in codes],
    }
    if status in (429, 503):
        response["headers"] = {"Retry-After": {
            "description": "Seconds to wait before retrying.",
            "schema": {"type": "integer", "minimum": 0},
        }}
    return response


def _example(code: ErrorCode) -> Json:
    body: Json = {"code": code.value, "message": message_of(code), "status": status_of(code)}
    if code is ErrorCode.VALIDATION_FAILED:
        body["details"] = [{"loc": ["leaseToken"], "rule": "required", "msg": "field required"}]
    return body


def _response_name(code: ErrorCode) -> str:
    return "".join(part.capitalize() for part in code.value.split("_"))


def _shared_responses() -> Json:
    """Errors any endpoint may answer, and those of no documented operation (unknown paths)."""
    codes = (*_COMMON_ERRORS, ErrorCode.ROUTE_NOT_FOUND, ErrorCode.METHOD_NOT_ALLOWED)
    return {_response_name(code): _error_response([code]) for code in codes}


# ---------------------------------------------------------------- committed file


def render_openapi(doc: Json | None = None) -> str:
    """The committed form: pretty-printed, sorted keys, one trailing newline."""
    body = build_openapi() if doc is None else doc
    return json.dumps(body, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def load_committed() -> Json:
    """The committed document (what the reference core serves at ``/openapi.json``)."""
    loaded: Json = json.loads(CONTRACT_PATH.read_text(encoding="utf-8"))
    return loaded


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bot.core.openapi", description="Print, write or check the contract.")
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--write", action="store_true", help=f"rewrite {CONTRACT_PATH.name}")
    action.add_argument("--check", action="store_true", help="exit 1 when the file is stale")
    args = parser.parse_args(argv)
    text = render_openapi()
    if args.write:
        CONTRACT_PATH.parent.mkdir(parents=True, exist_ok=True)
        CONTRACT_PATH.write_text(text, encoding="utf-8")
        print(f"wrote {CONTRACT_PATH}")
        return 0
    if args.check:
        current = CONTRACT_PATH.read_text(encoding="utf-8") if CONTRACT_PATH.exists() else ""
        if current != text:
            print(f"{CONTRACT_PATH} is stale; run `{REGENERATE}`", file=sys.stderr)
            return 1
        print(f"{CONTRACT_PATH} is up to date")
        return 0
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
