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

from bot.core import models as m
from bot.core.errors import ErrorCode, message_of, status_of
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

_INFO_DESCRIPTION = """\
The REST contract between the clarify-bot and the Telha core (spec: temporal clarification, \
sections 5-8). JSON bodies are camelCase. Request bodies reject unknown fields (422); \
response bodies may grow additively, so clients must ignore fields they do not know.

**Authentication.** `Authorization: Bearer <token>`; see the security schemes for the token \
kinds. A missing or unknown token is 401 `UNAUTHENTICATED`; a token whose audience may not call \
an endpoint is 403 `AUDIENCE_FORBIDDEN`.

**Audience fence.** A `clarify` token leases only `clarify:` job kinds; an `ingest` token never \
does (403 `JOB_KIND_FORBIDDEN`), and it may call no other endpoint here.

**Tenancy.** Everything is stored per tenant, facts included: ids are only unique within a \
tenant. A resource of a tenant outside the token's scope is 404 (existence is not leaked); \
naming such a tenant explicitly (people resolve and lookup, fact reads, list filter, dev create) \
is 403 `TENANT_SCOPE_MISMATCH`.

**Reads.** The clarify audience reads the full clarification (the bot gates each delivery); an API \
key reads it in full only when its person passes the same source read check the bot uses, \
otherwise (and always for a key bound to no person) it gets the redacted view (`redacted: true`).

**Lists.** Keyset paging: `nextCursor` is the position of the last item shown, so items created \
between two pages are never repeated and none is skipped.

**Errors.** Every error body is `ErrorBody` `{code, message, status, details?}`; messages and \
validation `details` never echo input values or caller-chosen keys (`loc` is a schema path; an \
unknown field is reported at its parent). Malformed JSON is 400 `MALFORMED_BODY`, a body over \
1 MiB is 413 `PAYLOAD_TOO_LARGE`, a schema violation is 422 `VALIDATION_FAILED`, an unknown path \
is 404 `ROUTE_NOT_FOUND` and a wrong method is 405 `METHOD_NOT_ALLOWED`.
"""

_SECURITY_SCHEMES: Json = {
    "clarifyToken": (
        "Service token with audience `clarify` (the clarify-bot), scoped to a list of tenant "
        "ids. Leases `clarify:` jobs, reads clarifications and people, and answers on behalf "
        "of a verified responder (it must assert `responder` and `rights`)."
    ),
    "apiKey": (
        "Tenant API key. Bound to a principal (tenant, person, role) it may read and answer "
        "as that principal only; unbound (tenant only) it may read but answering is 403 "
        "`PRINCIPAL_REQUIRED`. Asserting another `responder`, any `rights`, a chat `channel` or "
        "a `messageRef` is 403 `RESPONDER_ASSERTION_FORBIDDEN`; its answers are recorded with "
        "channel `cli`. It reads a clarification in full only when its person may read the "
        "source; otherwise, and always when unbound, it gets the redacted view."
    ),
    "ingestToken": (
        "Service token with audience `ingest` (ingestion workers). No operation here accepts "
        "it: other endpoints answer 403 `AUDIENCE_FORBIDDEN`, and poll answers 403 "
        "`JOB_KIND_FORBIDDEN` (the audience fence)."
    ),
    "devToken": "Development token of the reference core; accepted only by `/dev/v1/*`.",
}
_SECURITY_BY_AUTH: dict[str, list[str]] = {
    "clarify": ["clarifyToken"],
    "clarify+apikey": ["clarifyToken", "apiKey"],
    "dev": ["devToken"],
    "any": ["clarifyToken", "apiKey", "devToken"],
    "none": [],
}

_TAGS = {
    "jobs": "Leased `clarify:` jobs: one attempt per ranked candidate, then the steward.",
    "clarifications": "Clarification records, answers, delivery and event reports.",
    "people": "Tenant-scoped identity resolution for delivery and responder mapping.",
    "facts": "Bitemporal fact versions (append-only corrections).",
    "dev": "Reference-core controls (dev token only).",
    "meta": "The contract itself and liveness.",
}

_NOTES = {
    "pollJobs": (
        "Leases up to `maxJobs` available jobs (visible now, oldest first, tenants in the "
        "token's scope) whose kind starts with one of `kinds`. Audience fence: a `clarify` "
        "token may ask only for prefixes starting with `clarify:`; anything else, and any "
        "`ingest` token, is 403 `JOB_KIND_FORBIDDEN`. `attempts` is 0-based and indexes "
        "`payload.ranking`; `maxAttempts = len(ranking) + 1`, the last attempt being the "
        "redacted steward escalation. Lease expiry without completion is a retryable "
        "failure: attempts + 1, visible again after the per-kind backoff (for "
        "`clarify:temporal` the tenant's escalation window); at `maxAttempts` the job is "
        "dead-lettered."
    ),
    "heartbeatJob": (
        "Extends a held lease from now by `leaseSeconds` when given (which then becomes the "
        "lease's duration), otherwise by the lease's own duration."
    ),
    "advanceJob": (
        "Sets `attempts` to `attempt` inside the lease with no backoff, so a skipped "
        "candidate never burns an escalation window. Advancing to the current attempt is a "
        "no-op; going backwards is 422; beyond `maxAttempts - 1` is 409 `ATTEMPTS_EXHAUSTED`."
    ),
    "completeJob": "Marks the job completed; repeating with the same lease token is a no-op.",
    "failJob": (
        "Retryable: attempts + 1 and visible again after the per-kind backoff "
        "(min(base * 2^(n-1), cap)); not retryable: dead-lettered at once."
    ),
    "listJobs": (
        "Oldest first, keyset-paged. `state=dead_lettered&kind=clarify:` lists dead letters "
        "(the steward digest)."
    ),
    "listClarifications": (
        "Newest first, keyset-paged; `cursor` is opaque (take it from `nextCursor`). "
        "`documentTitle` is empty (`redacted: true`) where the caller may not read the source."
    ),
    "getClarification": (
        "The full record for the clarify audience and for an API key whose person may read the "
        "source; otherwise the redacted view (`redacted: true`: no span excerpt, question, "
        "document title, candidate labels or free-form `sourceText`)."
    ),
    "getFact": (
        "Bitemporal read: the version believed at transaction time `asOfTx` (default now); with "
        "`asOfValid`, 404 `FACT_NOT_FOUND` unless that version's validity `[validFrom, "
        "validTo)` contains the instant. `tenantId` is needed only when the logical id exists in "
        "more than one tenant of the token's scope (422 otherwise)."
    ),
    "getFactHistory": (
        "Every version, oldest first; with `asOfValid` only the versions valid at that instant."
    ),
    "answerClarification": (
        "**Responder assertion.** A `clarify` token must send `responder` and `rights` "
        "(missing: 422); any other caller answers as its own principal: a different "
        "`responder`, or any `rights`, is 403 `RESPONDER_ASSERTION_FORBIDDEN` and nothing is "
        "recorded. Only the clarify audience asserts `channel` and `messageRef`: an API key's "
        "answer is recorded with channel `cli` and no message ref, and a key sending `slack`, "
        "`teams` or any `messageRef` is 403 `RESPONDER_ASSERTION_FORBIDDEN`.\n\n"
        "Exactly one of `answerIndex` and `answerCustom`. A free-form answer takes calendar "
        "dates `YYYY-MM-DD` (half-open: `validTo` is exclusive and must be after `validFrom`) or, "
        "without dates, a `sourceText` in a documented textual form; anything else is 422 "
        "`ANSWER_UNNORMALISABLE` (nothing recorded).\n\n**Replays first.** A resent "
        "`requestId`, or the same normalised answer from the same responder, returns the first "
        "outcome with `replayed: true` before any policy check, whatever changed since.\n\n"
        "**Outcome matrix.** 200 `bound` (quorum met, new fact version, "
        "`factVersionTx`) or `steward_override`; 202 `partially_confirmed` "
        "(`quorumRemaining`), `attestation` (rights below the required role), `conflicted` "
        "(binding-capable responses disagree: steward review), `conflicting_attestation` "
        "(disagrees with an answered clarification; the binding stays). An agreeing answer to "
        "an answered clarification from a new responder is 409 `CLARIFY_ALREADY_ANSWERED`."
    ),
    "reportDelivery": "Adds the person to `asked`. Idempotent on `deliveryId`.",
    "reportEvent": "Appends an audit event (skip, escalation, notice). Idempotent on `eventId`.",
    "resolvePerson": (
        "An alias of a person in another tenant is not found; two persons sharing the alias "
        "are 409 `ALIAS_AMBIGUOUS`. `verified`: the chat identity maps to a verified "
        "enterprise identity (only those bind)."
    ),
    "devCreateClarification": (
        "201 with a new clarification; 200 with `deduplicated: true` when the same (tenant, "
        "document, content hash, span, kind) exists (never reopened)."
    ),
    "devMoveClock": "Send `advanceSeconds` or `set`; moving backwards is 422.",
}

_SUCCESS = {
    ("answerClarification", 200): "Bound, or steward override applied.",
    ("answerClarification", 202): (
        "Recorded, not bound: partially_confirmed, attestation, conflicted or "
        "conflicting_attestation."
    ),
    ("devCreateClarification", 200): "Deduplicated: the existing clarification.",
    ("devCreateClarification", 201): "Created.",
}

_QUERY: dict[str, tuple[Json, str]] = {
    "severity": ({"$ref": f"{_SCHEMAS}Severity"}, "Only clarifications of this severity."),
    "cursor": ({"type": "string", "maxLength": 500},
               "Opaque cursor from `nextCursor`; an unrecognised one is 422."),
    "limit": ({"type": "integer", "minimum": 1, "maximum": 200}, "Page size."),
    "tenantId": ({"$ref": f"{_SCHEMAS}Id"}, "Tenant id (must be in the token's scope)."),
    "kind": ({"type": "string", "maxLength": 64}, "Job kind prefix, e.g. `clarify:`."),
    "asOfTx": ({"type": "string", "format": "date-time"}, "Transaction time; default now."),
    "asOfValid": ({"type": "string", "format": "date-time"},
                  "Valid time: only a version whose [validFrom, validTo) contains it."),
}
# the rule pydantic's model validator enforces, stated so that generators can honour it
_EXACTLY_ONE: dict[type[BaseModel], tuple[str, str]] = {
    m.AnswerRequest: ("answerIndex", "answerCustom"),
    m.ClockRequest: ("advanceSeconds", "set"),
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
                 "description": _INFO_DESCRIPTION},
        "servers": [{"url": SERVER_URL, "description": "Reference core (devcore) on loopback."}],
        "tags": [{"name": name, "description": text} for name, text in _TAGS.items()],
        "paths": dict(paths),
        "components": {
            "schemas": schemas,
            "securitySchemes": {
                name: {"type": "http", "scheme": "bearer", "description": text}
                for name, text in _SECURITY_SCHEMES.items()
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
    pairs: list[tuple[type[BaseModel], JsonSchemaMode]] = [(m.ErrorBody, "serialization")]
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
        "Id": {**TypeAdapter(m.Id).json_schema(), "description": "Path ids and tenant ids."},
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
    if note := _NOTES.get(r.operation_id):
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
        described = _SUCCESS.get((r.operation_id, status), "OK")
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
