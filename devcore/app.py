"""The reference core over HTTP (aiohttp): routes from the contract's route table, one error shape.

This layer only translates: bearer token, JSON body and query parameters in; the core's models and
``CoreFault`` codes out. Every failure, including a crash, leaves as a documented error body.

``Contract.BASELINE`` serves only what every core offers (docs/core-contract.md, "The
baseline"): an extension's route answers 404 ``ROUTE_NOT_FOUND`` as an unknown path does, a
request carrying an extension's field is refused like any unknown field (422), one carrying an
extension's reason code (``PERSON_AWAY``) like any value outside the enum (422), answers leave out
every field beyond the baseline, query parameters beyond it are ignored, and no OpenAPI document
is served (a core need not publish one).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

import structlog
from aiohttp import web
from aiohttp.web_protocol import RequestPayloadError
from pydantic import BaseModel, TypeAdapter, ValidationError

from bot.core import baseline
from bot.core.errors import ErrorCode
from bot.core.models import (
    AnswerRequest,
    Audience,
    ClarificationPage,
    ClarificationState,
    ClockRequest,
    ClockView,
    CreateClarificationRequest,
    DeliveryReport,
    ErasureRequest,
    ErrorBody,
    EventReport,
    JobPage,
    JobState,
    PeopleBatchRequest,
    PollRequest,
    PollResponse,
    ReportBatch,
    ResolveRequest,
    Rfc3339,
    Severity,
    ValidationIssue,
    WireModel,
)
from bot.core.routes import HEALTH_PATH, OPENAPI_PATH, ROUTES, Route
from devcore.core import Contract, ContractSwitch, ReferenceCore, load_scenario
from devcore.directory import Token
from devcore.faults import CoreFault
from devcore.issues import issues
from devcore.paging import Window, window
from devcore.scenario import ScenarioError

log = structlog.get_logger("devcore")
MAX_BODY = 1024 * 1024
CLOCK_LIMIT_YEAR = 3000
CORE_KEY: web.AppKey[ReferenceCore] = web.AppKey("core", ReferenceCore)
CONTRACT_KEY: web.AppKey[ContractSwitch] = web.AppKey("contract", ContractSwitch)


# the query parameters a baseline core reads (any other is ignored, as servers do)
BASELINE_QUERY = {"listClarifications": ("state", "severity", "cursor"),
                  "getPerson": ("tenantId",)}

Handler = Callable[["Call"], Awaitable[tuple[BaseModel, int]]]


class BodyInvalid(Exception):
    """The request body does not match its model; carries value-free issue locations."""

    def __init__(self, issues: list[dict[str, Any]]) -> None:
        super().__init__("invalid body")
        self.issues = issues


class Call:
    """One request after authentication: the core, the token, the parsed body and parameters."""

    def __init__(
        self,
        core: ReferenceCore,
        request: web.Request,
        token: Token | None,
        body: BaseModel | dict[str, Any] | None,
        *,
        query: tuple[str, ...] | None = None,
    ) -> None:
        self.core = core
        self.request = request
        self.token = token
        self.body = body
        self._read = query  # None: every parameter of the route; else only these

    @property
    def caller(self) -> Token:
        assert self.token is not None
        return self.token

    def path(self, name: str) -> str:
        return self.request.match_info[name]

    def query(self, name: str, adapter: TypeAdapter[Any] | None = None) -> Any:
        if self._read is not None and name not in self._read:
            return None
        raw = self.request.query.get(name)
        if raw is None or adapter is None:
            return raw
        try:
            return adapter.validate_python(raw)
        except ValidationError:
            raise CoreFault(
                ErrorCode.VALIDATION_FAILED, f"Query parameter {name} is invalid."
            ) from None


def error_response(fault: CoreFault, details: list[dict[str, Any]] | None = None) -> web.Response:
    body = ErrorBody(
        code=fault.code,
        message=fault.message,
        status=fault.status,
        details=[ValidationIssue(**d) for d in details] if details else None,
    )
    return web.json_response(body.wire(), status=fault.status)


def _bearer(request: web.Request) -> str | None:
    header = request.headers.get("Authorization", "")
    scheme, _, value = header.partition(" ")
    return value.strip() if scheme.lower() == "bearer" and value.strip() else None


def _authorise(core: ReferenceCore, route: Route, request: web.Request) -> Token | None:
    bearer = _bearer(request)
    if route.auth == "dev":
        if not core.is_dev(bearer):
            raise CoreFault(ErrorCode.UNAUTHENTICATED)
        return None
    token = core.authenticate(bearer)
    if route.operation_id == "pollJobs":
        return token  # every service audience may poll; the fence decides the kinds
    if route.auth == "clarify" and token.audience is not Audience.CLARIFY:
        raise CoreFault(ErrorCode.AUDIENCE_FORBIDDEN)
    if route.auth == "clarify+apikey" and token.audience not in (Audience.CLARIFY, None):
        raise CoreFault(ErrorCode.AUDIENCE_FORBIDDEN)
    if route.auth == "apikey" and token.audience is not None:
        raise CoreFault(ErrorCode.AUDIENCE_FORBIDDEN)
    return token


async def _body(route: Route, request: web.Request, contract: Contract
                ) -> BaseModel | dict[str, Any] | None:
    if route.method != "POST":
        return None
    if request.content_length is not None and request.content_length > MAX_BODY:
        raise CoreFault(ErrorCode.PAYLOAD_TOO_LARGE)
    try:  # read() gathers every piece (one read of the stream may return only the first)
        raw = await request.read()  # over client_max_size (MAX_BODY): 413 from the middleware
    except RequestPayloadError:  # e.g. a Content-Encoding the body does not have
        raise CoreFault(ErrorCode.MALFORMED_BODY) from None
    try:
        data = json.loads(raw) if raw.strip() else None
    except (ValueError, UnicodeDecodeError, RecursionError):  # nesting past the parser's depth
        raise CoreFault(ErrorCode.MALFORMED_BODY) from None
    if not isinstance(data, dict):
        raise CoreFault(ErrorCode.VALIDATION_FAILED, "The body must be a JSON object.")
    if route.request is None:
        return data
    if contract is Contract.BASELINE and (beyond := baseline.extension_fields(route.request,
                                                                            data)):
        # a baseline core does not know these fields: refused as unknown, at their parent
        raise BodyInvalid([{"loc": list(loc), "rule": "unknown_field", "msg": "unknown field"}
                           for loc, _ in beyond])
    if contract is Contract.BASELINE and (codes := baseline.extension_values(route.request,
                                                                           data)):
        # nor these reason codes: refused as any value outside the enum is
        raise BodyInvalid([{"loc": list(loc), "rule": "enum",
                            "msg": "must be one of the spec's reason codes"}
                           for loc, _ in codes])
    try:
        return route.request.model_validate(data)
    except ValidationError as exc:
        raise BodyInvalid(issues(exc, route.request)) from None


def _endpoint(route: Route, handler: Handler) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def endpoint(request: web.Request) -> web.Response:
        core = request.app[CORE_KEY]
        contract = request.app[CONTRACT_KEY].value  # per request: a test may switch it
        if contract is Contract.BASELINE and route.extension is not None:
            return error_response(CoreFault(ErrorCode.ROUTE_NOT_FOUND))
        query = (BASELINE_QUERY.get(route.operation_id, ())
                 if contract is Contract.BASELINE else None)
        try:
            token = _authorise(core, route, request)
            body = await _body(route, request, contract)
            model, status = await handler(Call(core, request, token, body, query=query))
        except BodyInvalid as invalid:
            return error_response(CoreFault(ErrorCode.VALIDATION_FAILED), invalid.issues)
        except CoreFault as fault:
            return error_response(fault)
        log.info("core.request", operation=route.operation_id, status=status)
        if contract is Contract.BASELINE:
            body = baseline.project(model)
        elif isinstance(model, WireModel):
            body = model.wire()
        else:
            body = model.model_dump(mode="json")
        return web.json_response(body, status=status)

    return endpoint


# ------------------------------------------------------------------- handlers

_STATE = TypeAdapter(ClarificationState)
_SEVERITY = TypeAdapter(Severity)
_JOB_STATE = TypeAdapter(JobState)
_WHEN = TypeAdapter(Rfc3339)
_LIMIT = TypeAdapter(int)


async def list_clarifications(call: Call) -> tuple[BaseModel, int]:
    items, cursor = call.core.list_clarifications(
        call.caller,
        state=call.query("state", _STATE),
        severity=call.query("severity", _SEVERITY),
        tenant_id=call.query("tenantId"),
        window=_window(call, "clarifications"),
        document_id=call.query("documentId"),
        since=call.query("since", _WHEN),
    )
    return ClarificationPage(items=items, next_cursor=cursor), 200


async def list_attention(call: Call) -> tuple[BaseModel, int]:
    items, cursor = call.core.list_attention(
        call.caller, tenant_id=call.query("tenantId"), window=_window(call, "attention"))
    return ClarificationPage(items=items, next_cursor=cursor), 200


async def list_jobs(call: Call) -> tuple[BaseModel, int]:
    items, cursor = call.core.list_jobs(
        call.caller,
        state=call.query("state", _JOB_STATE),
        kind=call.query("kind"),
        window=_window(call, "jobs"),
    )
    return JobPage(items=items, next_cursor=cursor), 200


def _window(call: Call, listing: str) -> Window:
    return window(listing=listing, cursor=call.query("cursor"), limit=call.query("limit", _LIMIT),
                  largest=call.core.largest_page)


async def answer(call: Call) -> tuple[BaseModel, int]:
    assert isinstance(call.body, AnswerRequest)
    return call.core.answer(call.caller, call.path("clarificationId"), call.body)


async def create(call: Call) -> tuple[BaseModel, int]:
    assert isinstance(call.body, CreateClarificationRequest)
    response, created = call.core.create_clarification(call.body)
    return response, 201 if created else 200


async def move_clock(call: Call) -> tuple[BaseModel, int]:
    assert isinstance(call.body, ClockRequest)
    clock = call.core.clock
    target = call.body.set or clock.now() + timedelta(seconds=call.body.advance_seconds or 0)
    if target.year >= CLOCK_LIMIT_YEAR:  # room for leases and windows past the new "now"
        raise CoreFault(ErrorCode.VALIDATION_FAILED, "The clock cannot move that far.")
    try:
        clock.set(target)
    except ValueError:
        raise CoreFault(ErrorCode.VALIDATION_FAILED, "The clock never goes backwards.") from None
    return ClockView(now=call.core.now()), 200


async def scenario(call: Call) -> tuple[BaseModel, int]:
    assert isinstance(call.body, dict)
    try:
        return load_scenario(call.core, call.body), 200
    except ScenarioError as exc:  # str(exc) may name a key the caller chose: details only
        raise BodyInvalid(exc.details) from None


def _job_op(name: str) -> Handler:
    async def op(call: Call) -> tuple[BaseModel, int]:
        return getattr(call.core, name)(call.caller, call.path("jobId"), call.body), 200

    return op


async def _poll(call: Call) -> tuple[BaseModel, int]:
    assert isinstance(call.body, PollRequest)
    return PollResponse(jobs=call.core.poll(call.caller, call.body)), 200


def _fact_read(*, history: bool) -> Handler:
    async def read(call: Call) -> tuple[BaseModel, int]:
        logical_id, tenant_id = call.path("logicalId"), call.query("tenantId")
        as_of_valid = call.query("asOfValid", _WHEN)
        if history:
            return call.core.fact_history(
                call.caller, logical_id, tenant_id=tenant_id, as_of_valid=as_of_valid), 200
        return call.core.get_fact(
            call.caller, logical_id, tenant_id=tenant_id, as_of_valid=as_of_valid,
            as_of_tx=call.query("asOfTx", _WHEN)), 200

    return read


HANDLERS: dict[str, Handler] = {
    "pollJobs": _poll,
    "heartbeatJob": _job_op("heartbeat"),
    "advanceJob": _job_op("advance"),
    "expediteJob": _job_op("expedite"),
    "completeJob": _job_op("complete"),
    "failJob": _job_op("fail"),
    "getJob": lambda c: _ok(c.core.get_job(c.caller, c.path("jobId"))),
    "listJobs": list_jobs,
    "listClarifications": list_clarifications,
    "getClarification": lambda c: _ok(
        c.core.get_clarification(c.caller, c.path("clarificationId"))
    ),
    "answerClarification": answer,
    "listAttention": list_attention,
    "getDeliveryHistory": lambda c: _ok(
        c.core.delivery_history(c.caller, c.path("clarificationId"))
    ),
    "eraseAttribution": lambda c: _ok(
        c.core.erase_attribution(c.caller, c.path("personId"), _typed(c, ErasureRequest))
    ),
    "reportDelivery": lambda c: _ok(
        c.core.report_delivery(c.caller, c.path("clarificationId"), _typed(c, DeliveryReport))
    ),
    "reportEvent": lambda c: _ok(
        c.core.report_event(c.caller, c.path("clarificationId"), _typed(c, EventReport))
    ),
    "reportBatch": lambda c: _ok(c.core.report_batch(c.caller, _typed(c, ReportBatch))),
    "getPeople": lambda c: _ok(c.core.get_people(c.caller, _typed(c, PeopleBatchRequest))),
    "resolvePerson": lambda c: _ok(c.core.resolve(c.caller, _typed(c, ResolveRequest))),
    "getPerson": lambda c: _ok(
        c.core.get_person(c.caller, c.path("personId"), c.query("tenantId"))
    ),
    "getFact": _fact_read(history=False),
    "getFactHistory": _fact_read(history=True),
    "devCreateClarification": create,
    "devGetClock": lambda c: _ok(ClockView(now=c.core.now())),
    "devMoveClock": move_clock,
    "devLoadScenario": scenario,
}


def _typed[T: BaseModel](call: Call, model: type[T]) -> T:
    """The parsed body, as the route table promises it (checked, not assumed)."""
    assert isinstance(call.body, model)
    return call.body


async def _ok(model: BaseModel) -> tuple[BaseModel, int]:
    return model, 200


# ------------------------------------------------------------------- application


@web.middleware
async def _errors(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    try:
        return await handler(request)
    except web.HTTPNotFound:
        return error_response(CoreFault(ErrorCode.ROUTE_NOT_FOUND))
    except web.HTTPMethodNotAllowed:
        return error_response(CoreFault(ErrorCode.METHOD_NOT_ALLOWED))
    except web.HTTPRequestEntityTooLarge:
        return error_response(CoreFault(ErrorCode.PAYLOAD_TOO_LARGE))
    except web.HTTPException as exc:
        if exc.status >= 400:
            return error_response(CoreFault(ErrorCode.VALIDATION_FAILED))
        raise
    except Exception as exc:  # the contract promises an error body even for a crash
        # the type and place only: a traceback's locals could hold tokens or span text
        log.error("core.crash", path=request.path, error=type(exc).__name__)
        return error_response(CoreFault(ErrorCode.INTERNAL))


@functools.cache
def _openapi_text() -> str:
    """The contract's OpenAPI document as JSON text. It depends only on the route table and the
    wire models, never on a core, so one process builds it once (pydantic's schema generation
    takes tens of milliseconds) and every app it serves shares the immutable text."""
    from bot.core.openapi import build_openapi

    return json.dumps(build_openapi())


def create_app(core: ReferenceCore, *, contract: Contract | ContractSwitch = Contract.FULL
               ) -> web.Application:
    app = web.Application(middlewares=[_errors], client_max_size=MAX_BODY)
    app[CORE_KEY] = core
    switch = contract if isinstance(contract, ContractSwitch) else ContractSwitch(contract)
    app[CONTRACT_KEY] = switch
    document = _openapi_text()  # built before the first app serves: a broken contract fails here

    async def health(_: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    async def openapi(_: web.Request) -> web.Response:
        if switch.value is Contract.BASELINE:  # a core need not publish its document
            return error_response(CoreFault(ErrorCode.ROUTE_NOT_FOUND))
        return web.Response(text=document, content_type="application/json")

    app.router.add_get(OPENAPI_PATH, openapi)
    app.router.add_get(HEALTH_PATH, health)
    for route in ROUTES:
        app.router.add_route(
            route.method, route.path, _endpoint(route, HANDLERS[route.operation_id])
        )
    return app
