"""Finding out which extensions the core offers, at start-up and while the bot runs.

How (docs/core-contract.md, "Detection"):

1. ``GET /openapi.json``. A core that publishes its document says exactly what it offers: an
   extension's routes are offered when the document has each with its method; a field extension
   when its request schema has the field.
2. Without a document, one cheap request per extension, each with a body the contract refuses
   (a value of the wrong type), so nothing is ever applied. A route extension (people batch,
   reports, expedite, jobs read, attention) exists when its probe answers anything but 404/405
   (a 404 that names a missing job or clarification exists too). A field extension (requestId,
   note, leaseSeconds, advance's attempt, the reports' details) is sent on its baseline route
   beside the wrong-typed field: a 422 whose details name an ``unknown_field`` says the core
   lacks it, a 422 that names only the wrong type says it has it. 401, 403, 5xx, transport
   trouble and a 422 without details say nothing: a route stays as believed, a field is assumed
   offered, and a 422 that refuses it later turns it off (``bot.core.calls``). A value
   extension (a reason code beyond the spec) is found in the document's enum of reason codes,
   or probed by sending it beside a wrong-typed field on its baseline route: a 422 whose
   details name an ``enum`` rule says the core lacks it.

Detection runs on the first call, again every ``refresh_seconds`` (default 10 minutes; so an
extension a core gains while the bot runs is used from then on) and ``soon_seconds`` after a
404/405 or a refused field from an extension (so one a core loses is noticed from one failure,
and confirmed). Each change is logged (``core.extension_on`` / ``core.extension_off``) and shown
by ``clarify_core_extension_offered``; every use of a fallback counts in
``clarify_core_extension_fallbacks_total``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import structlog

from bot.clock import Clock
from bot.core.extensions import ABOUT, FIELD_EXTENSIONS, VALUE_EXTENSIONS, Extension, Offered
from bot.core.models.wire import extension_of

log = structlog.get_logger("bot.core.discovery")

OPENAPI_PATH = "/openapi.json"
PROBE_ID = "clarify-bot-probe"  # no job, clarification or person has this id
# the resource codes a 404 of an existing route names (the route is there, the id is not)
RESOURCE_CODES = frozenset({"JOB_NOT_FOUND", "CLARIFICATION_NOT_FOUND", "PERSON_NOT_FOUND",
                            "FACT_NOT_FOUND"})


@dataclass(frozen=True, slots=True)
class Probe:
    method: str
    path: str
    query: dict[str, str] = field(default_factory=dict)
    body: dict[str, Any] | None = None


# a body the contract refuses (a wrong type), so an offered route answers 422 and applies nothing
PROBES: dict[Extension, Probe] = {
    Extension.PEOPLE_BATCH: Probe("POST", "/v1/people/batch", body={"personIds": 0}),
    Extension.REPORTS: Probe("POST", "/v1/reports", body={"deliveries": 0}),
    Extension.EXPEDITE: Probe("POST", f"/v1/jobs/{PROBE_ID}/expedite", body={"attempt": -1}),
    Extension.JOBS_READ: Probe("GET", "/v1/jobs",
                               query={"state": "dead_lettered", "kind": "clarify:", "limit": "1"}),
    Extension.ATTENTION: Probe("GET", "/v1/attention", query={"limit": "1"}),
}
# the field on its baseline route, beside one of the wrong type
FIELD_PROBES: dict[Extension, Probe] = {
    Extension.ANSWER_REQUEST_ID: Probe("POST", f"/v1/clarifications/{PROBE_ID}/answer",
                                       body={"answerIndex": "probe", "requestId": "probe"}),
    Extension.ANSWER_NOTE: Probe("POST", f"/v1/clarifications/{PROBE_ID}/answer",
                                 body={"answerIndex": "probe", "note": "probe"}),
    Extension.ANSWER_ORDER: Probe("POST", f"/v1/clarifications/{PROBE_ID}/answer",
                                  body={"answerIndex": "probe",
                                        "respondedAt": "2026-01-01T00:00:00Z"}),
    Extension.HEARTBEAT_LEASE: Probe("POST", f"/v1/jobs/{PROBE_ID}/heartbeat",
                                     body={"leaseToken": 0, "leaseSeconds": 60}),
    Extension.ADVANCE_ATTEMPT: Probe("POST", f"/v1/jobs/{PROBE_ID}/advance",
                                     body={"leaseToken": 0, "attempt": 1}),
    Extension.REPORT_DETAILS: Probe(
        "POST", f"/v1/clarifications/{PROBE_ID}/deliveries",
        body={"personId": 0, "deliveryId": "probe", "kind": "question", "attempt": 0}),
}
# the value on the baseline route that carries it, beside a wrong-typed field
VALUE_PROBES: dict[Extension, Probe] = {
    Extension.PERSON_AWAY: Probe("POST", f"/v1/clarifications/{PROBE_ID}/events",
                                 body={"type": 0, "reasonCode": "PERSON_AWAY"}),
}
# a spec reason code: the enum of a document that holds it is the contract's reason codes
_SPEC_CODE = "DAILY_CAP_EXCEEDED"

# (status, error code, validation rules) of one request; None when nothing came back
Reply = tuple[int, str, tuple[str, ...]] | None
Send = Callable[[Probe], Awaitable[Reply]]
FetchDocument = Callable[[], Awaitable[dict[str, Any] | None]]


def offered_by_reply(reply: Reply) -> bool | None:
    """What a route probe's answer says: True (there), False (not there), None (nothing)."""
    if reply is None:
        return None
    status, code, _ = reply
    if status in (404, 405, 501):
        return status == 404 and code in RESOURCE_CODES
    if status in (401, 403, 429) or status >= 500:
        return None
    return True


def field_offered_by_reply(reply: Reply) -> bool | None:
    """What a field probe's answer says: the core refuses the field as unknown (False), or
    only the wrong-typed one beside it (True); None: nothing to tell from it."""
    if reply is None or reply[0] != 422 or not reply[2]:
        return None
    return "unknown_field" not in reply[2]


def value_offered_by_reply(reply: Reply) -> bool | None:
    """What a value probe's answer says: the core refuses the value (an ``enum`` rule: False),
    or only the wrong-typed field beside it (True); None: nothing to tell from it."""
    if reply is None or reply[0] != 422 or not reply[2]:
        return None
    return "enum" not in reply[2]


def values_in_document(schemas: dict[str, Any]) -> set[str] | None:
    """The reason codes a document's schemas name (the enum that holds a spec code); None
    when it names none (nothing to tell)."""
    for schema in schemas.values():
        found = schema.get("enum") if isinstance(schema, dict) else None
        if isinstance(found, list) and _SPEC_CODE in found:
            return {str(v) for v in found}
    return None


def offered_by_document(doc: dict[str, Any]) -> frozenset[Extension] | None:
    """What a published OpenAPI document offers; None when it is not one."""
    from bot.core.routes import ROUTES  # the route table imports this package's models

    paths = doc.get("paths")
    if not isinstance(paths, dict):
        return None
    schemas = doc.get("components", {}).get("schemas", {}) if isinstance(
        doc.get("components"), dict) else {}
    found: set[Extension] = set()
    for ext, about in ABOUT.items():
        if about.routes and all(_has(paths, r.path, r.method) for r in ROUTES
                                if r.operation_id in about.routes):
            found.add(ext)
    fields: dict[Extension, bool] = {}
    for r in ROUTES:
        if r.request is None or not _has(paths, r.path, r.method):
            continue
        properties = _request_properties(paths[r.path][r.method.lower()], schemas)
        for name, info in r.request.model_fields.items():
            named = extension_of(info)
            if named is None:
                continue
            alias = info.alias or name
            known = Extension(named)
            present = properties is None or alias in properties  # unreadable: assume offered
            fields[known] = fields.get(known, True) and present
    found.update(ext for ext, present in fields.items() if present)
    codes = values_in_document(schemas if isinstance(schemas, dict) else {})
    for ext in VALUE_EXTENSIONS:  # an enum the document does not show: assumed offered
        if codes is None or set(ABOUT[ext].values) <= codes:
            found.add(ext)
    return frozenset(found)


def _has(paths: dict[str, Any], path: str, method: str) -> bool:
    item = paths.get(path)
    return isinstance(item, dict) and method.lower() in item


def _request_properties(operation: Any, schemas: dict[str, Any]) -> set[str] | None:
    try:
        schema = operation["requestBody"]["content"]["application/json"]["schema"]
        for _ in range(4):  # follow a few $refs
            ref = schema.get("$ref")
            if not isinstance(ref, str):
                break
            schema = schemas[ref.rsplit("/", 1)[-1]]
        properties = schema["properties"]
    except (KeyError, TypeError, AttributeError):
        return None
    return set(properties) if isinstance(properties, dict) else None


@dataclass
class Discovery:
    """Keeps ``offered`` true to what the core offers (module docstring)."""

    offered: Offered
    clock: Clock
    fetch_document: FetchDocument
    send: Send
    changed: Callable[[Offered], None] = lambda _: None
    refresh_seconds: float = 600.0
    soon_seconds: float = 60.0
    source: str = "not yet detected"  # "openapi", "probes", for /readyz and the logs
    detected_at: datetime | None = None
    _due: datetime | None = None  # None: before the first detection
    _running: asyncio.Task[None] | None = None
    _first: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def ensure(self) -> None:
        """Before a call: the first detection is awaited; a later due one runs alongside."""
        if self._due is None:
            async with self._first:
                if self._due is None:
                    await self.detect()
            return
        if self.clock.now() >= self._due and (self._running is None or self._running.done()):
            self._running = asyncio.ensure_future(self.detect())

    def soon(self) -> None:
        """An extension failed: detect again ``soon_seconds`` from now (not at once: a core
        restarting would otherwise be probed on every call)."""
        soon = self.clock.now() + timedelta(seconds=self.soon_seconds)
        if self._due is not None and soon < self._due:
            self._due = soon

    async def detect(self) -> None:
        found, source = await self._find()
        now = self.clock.now()
        if found is None:  # nothing could be learnt (the core is away): try again soon
            self._due = now + timedelta(seconds=self.soon_seconds)
            log.warning("core.extensions_unknown", keeping=self.offered.names)
            return
        first = self.detected_at is None
        on, off = self.offered.set(found)
        self.source, self.detected_at = source, now
        self._due = now + timedelta(seconds=self.refresh_seconds)
        for ext in sorted(on if not first else ()):
            log.info("core.extension_on", extension=str(ext), source=source)
        for ext in sorted(off if not first else ()):
            log.warning("core.extension_off", extension=str(ext), source=source)
        if first or on or off:
            self.changed(self.offered)
            log.info("core.extensions", offered=self.offered.names, source=source,
                     fallbacks=sorted(str(e) for e in set(ABOUT) - set(self.offered)))

    async def _find(self) -> tuple[frozenset[Extension] | None, str]:
        doc = await self.fetch_document()
        if doc is not None and (published := offered_by_document(doc)) is not None:
            return published, "openapi"
        probes = {**PROBES, **FIELD_PROBES, **VALUE_PROBES}
        replies = await asyncio.gather(*(self.send(probe) for probe in probes.values()))
        found: set[Extension] = set()
        learnt = False
        for ext, reply in zip(probes, replies, strict=True):
            if ext in VALUE_EXTENSIONS:
                verdict = value_offered_by_reply(reply)
            elif ext in FIELD_EXTENSIONS:
                verdict = field_offered_by_reply(reply)
            else:
                verdict = offered_by_reply(reply)
            if verdict is None:
                # no news: a route as believed, a field or value assumed (a refusal turns it
                # off later)
                if ext in FIELD_EXTENSIONS or ext in VALUE_EXTENSIONS or ext in self.offered:
                    found.add(ext)
                continue
            learnt = True
            if verdict:
                found.add(ext)
        if not learnt:
            return None, "probes"
        # the routes only the CLI uses are tried where used (a 404 there is the fallback)
        found.update({Extension.HISTORY, Extension.ERASURE, Extension.FACTS})
        return frozenset(found), "probes"

    async def aclose(self) -> None:
        if self._running is not None and not self._running.done():
            self._running.cancel()
            await asyncio.gather(self._running, return_exceptions=True)


def parse_document(content: bytes) -> dict[str, Any] | None:
    try:
        doc = json.loads(content)
    except (ValueError, RecursionError):
        return None
    return doc if isinstance(doc, dict) else None
