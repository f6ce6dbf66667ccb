"""What every core client shares: one HTTP pool, the bearer token, retries and error mapping.

``BaseCoreClient._call`` sends one route of ``routes.ROUTES``: it builds the path and query, retries
idempotent routes with full-jitter backoff (``CORE_RETRY``, a ``bot.retry.RetryPolicy``; a
``Retry-After`` on 429 and 503, in seconds or as an HTTP date, is a floor, capped), sends any
call again after a 429 (the core refused it: nothing was done; the poll excepted, whose loop
waits itself), logs each
attempt without token or body, and turns every failure into a ``bot.core.errors.CoreError``
(transport trouble, an error body, or a success body that does not match the contract). The bot's
``CoreClient`` and the development client add one method per route on top.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import math
import random as _random
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime
from email.utils import parsedate_to_datetime
from enum import Enum
from typing import Any, Self
from urllib.parse import quote

import httpx
import structlog
from pydantic import BaseModel, SecretStr, ValidationError

from bot.clock import Clock, SystemClock
from bot.core import baseline, tolerance
from bot.core import models as m
from bot.core.discovery import OPENAPI_PATH, Discovery, Probe, Reply, parse_document
from bot.core.errors import (
    CoreAPIError,
    CoreConnectError,
    CoreTimeout,
    CoreTransportError,
    ErrorCode,
    ExtensionUnavailable,
    UnexpectedResponse,
    exception_for,
    message_of,
)
from bot.core.extensions import ALL, Extension, Offered
from bot.core.instruments import INSTRUMENTS
from bot.core.routes import Route, route
from bot.core.wire import AiohttpWire, Answer, HttpxWire, Trouble, Wire, encode
from bot.retry import RetryPolicy

log = structlog.get_logger("bot.core.client")

Sleep = Callable[[float], Awaitable[object]]

DEFAULT_TIMEOUT = httpx.Timeout(connect=2.0, read=10.0, write=5.0, pool=2.0)
# explicit, and sized by the service from [core] max_connections (docs/configuration.md)
DEFAULT_LIMITS = httpx.Limits(max_connections=32, max_keepalive_connections=32)
RETRY_STATUSES = frozenset({429, 502, 503, 504})
# an extension's route is gone when the core answers one of these (an unknown path or method);
# a 404 naming a missing resource is not that
_ROUTE_GONE = frozenset({"", ErrorCode.ROUTE_NOT_FOUND.value, ErrorCode.METHOD_NOT_ALLOWED.value})
_TOKEN_SHAPE = re.compile(r"^[\x21-\x7e]+$")  # printable ASCII, no spaces: a safe header value
_MAX_MESSAGE = 300
# the core client's retries (docs/reliability.md, "Retries"): RetryPolicy's defaults, spelled out
CORE_RETRY = RetryPolicy(max_attempts=4, base=0.25, cap=8.0, retry_after_cap=30.0, jitter=1.0)


class BaseCoreClient:
    """Transport, auth, retries, logging and error mapping shared by the core clients."""

    def __init__(
        self,
        *,
        base_url: str,
        token: SecretStr | str,
        transport: httpx.AsyncBaseTransport | None = None,
        timeout: httpx.Timeout = DEFAULT_TIMEOUT,
        limits: httpx.Limits = DEFAULT_LIMITS,
        retry: RetryPolicy | None = None,
        sleep: Sleep = asyncio.sleep,
        random: Callable[[], float] = _random.random,
        clock: Clock | None = None,
        extensions: frozenset[Extension] | None = ALL,
        fixed_extensions: bool = False,
        extensions_refresh_seconds: float = 600.0,
    ) -> None:
        """``extensions``: what the core is taken to offer at first, or None to find out
        (``[core] extensions = "auto"``, the service's default: ``bot.core.discovery``). By
        default every extension is assumed and one the core refuses (a 404 or 405 of its
        route, a 422 to its field) is not used again; ``fixed_extensions``: an operator's list,
        used as it is whatever the core answers."""
        secret = token if isinstance(token, SecretStr) else SecretStr(token)
        if not _TOKEN_SHAPE.match(secret.get_secret_value()):
            # checked here so that httpx never builds an error message around a bad header
            raise ValueError("the core token must be non-empty printable ASCII without spaces")
        self._token = secret
        self._base_url = base_url
        self._retry = retry or CORE_RETRY
        self._sleep = sleep
        self._random = random
        self._clock = clock or SystemClock()
        headers = {"Accept": "application/json", "User-Agent": "clarify-bot"}
        # aiohttp to the core; an injected httpx transport (tests' fakes) keeps httpx's client
        self._http: Wire = (
            HttpxWire(base_url, transport=transport, timeout=timeout, limits=limits,
                      headers=headers) if transport is not None
            else AiohttpWire(base_url, timeout=timeout, limits=limits, headers=headers))
        self.offered = Offered(extensions or frozenset(), fixed=fixed_extensions)
        self.discovery: Discovery | None = None
        if extensions is None:
            self.discovery = Discovery(
                offered=self.offered, clock=self._clock, fetch_document=self._document,
                send=self._probe, changed=_publish, refresh_seconds=extensions_refresh_seconds)
        _publish(self.offered)

    def offers(self, extension: Extension) -> bool:
        """Whether the core offers ``extension`` (as far as the bot knows now)."""
        return extension in self.offered

    async def detect_extensions(self) -> None:
        """Find out now what the core offers (start-up, ``check-config``); with a fixed list,
        nothing to find out."""
        if self.discovery is not None:
            await self.discovery.detect()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(base_url={self._base_url!r})"

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connection pool; safe to call more than once."""
        if self.discovery is not None:
            await self.discovery.aclose()
        if not self._http.closed:
            await self._http.aclose()

    # ------------------------------------------------------------ one call

    async def _call[T: BaseModel](
        self,
        operation_id: str,
        response_model: type[T],
        *,
        path: Mapping[str, str] | None = None,
        query: Mapping[str, object] | None = None,
        body: m.WireModel | Mapping[str, Any] | None = None,
        resend_without_extensions: bool = True,
        resend: bool | None = None,
        dropped: list[tolerance.Dropped] | None = None,
        resend_refused: bool = True,
    ) -> tuple[T, int]:
        """One route. A 422 to a request that carried an extension's fields is sent again
        without them once (the core may not know them), unless ``resend_without_extensions`` is
        False: a caller for whom leaving a field out changes what the call does. ``resend``
        overrides the route's retry-safety for transport failures and 5xx (False: never sent
        twice for those). A 429 is sent again after its Retry-After whatever the route, unless
        ``resend_refused`` is False (the caller waits itself: the poll's loop). ``dropped``
        receives the list entries the reader dropped from the answer."""
        r = route(operation_id)
        if self.discovery is not None:
            await self.discovery.ensure()
        ext = r.extension
        if ext is not None and ext not in self.offered:
            INSTRUMENTS.fallback(ext)
            raise ExtensionUnavailable(str(ext))
        url = _build_path(r, path or {})
        params = _build_query(r, query or {})
        payload, sent = (None, set()) if body is None else self._payload(body)
        retry = r.retry if resend is None else resend
        response = await self._send(r, url=url, params=params, payload=payload, retry=retry,
                                    refused=resend_refused)
        if response.status_code not in r.success:
            error = _api_error(response, now=self._clock.now(), operation=operation_id)
            if ext is not None and response.status_code in (404, 405) \
                    and error.code in _ROUTE_GONE:
                self._lost(ext, operation_id)
                raise ExtensionUnavailable(str(ext)) from error
            if not (sent and resend_without_extensions and response.status_code == 422
                    and error.code in ("", ErrorCode.VALIDATION_FAILED.value)):
                raise error
            # the core may not know an extension's field: the same request without them
            assert isinstance(body, m.WireModel)
            payload = _body(body, lambda _: False)[0]
            response = await self._send(r, url=url, params=params, payload=payload, retry=retry,
                                        refused=resend_refused)
            if response.status_code not in r.success:
                raise _api_error(response, now=self._clock.now(),
                                 operation=operation_id) from error
            for field_ext in sorted(sent):
                self._lost(Extension(field_ext), operation_id)
        return _parse(r, response, response_model, dropped), response.status_code

    async def _ack[T: BaseModel](self, operation_id: str, response_model: type[T], **call: Any
                                 ) -> T | None:
        """A lease operation (heartbeat, advance, complete, fail, expedite) or a report: any 2xx is
        success, and a body the bot cannot read is not a failure (None) — the job's handling
        does not depend on it."""
        try:
            return (await self._call(operation_id, response_model, **call))[0]
        except UnexpectedResponse as exc:
            if not 200 <= exc.status < 300:
                raise
            log.info("core.ack_unread", operation=operation_id, status=exc.status)
            return None

    def _payload(self, body: m.WireModel | Mapping[str, Any]) -> tuple[bytes, set[str]]:
        return _body(body, lambda ext: ext in self.offered)

    def _lost(self, ext: Extension, operation_id: str) -> None:
        if self.offered.lose(ext):
            log.warning("core.extension_off", extension=str(ext), operation=operation_id,
                        why="refused by the core")
            _publish(self.offered)
        if self.discovery is not None:
            self.discovery.soon()
        INSTRUMENTS.fallback(ext)

    async def _document(self) -> dict[str, Any] | None:
        """The core's OpenAPI document, when it publishes one."""
        try:
            answer = await self._http.send("GET", OPENAPI_PATH, params={}, body=None,
                                           headers={})
        except Trouble:
            return None
        return parse_document(answer.content) if answer.status_code == 200 else None

    async def _probe(self, probe: Probe) -> Reply:
        """One request of the discovery, sent once: its status and error code."""
        headers = {"Authorization": f"Bearer {self._token.get_secret_value()}"}
        payload = None
        if probe.body is not None:
            payload = encode(probe.body)
            headers["Content-Type"] = "application/json"
        try:
            answer = await self._http.send(probe.method, probe.path, params=probe.query,
                                           body=payload, headers=headers)
        except Trouble:
            return None
        code = _error_fields(answer)[0] if answer.status_code >= 400 else ""
        rules = _rules(answer) if answer.status_code == 422 else ()
        return answer.status_code, code, rules

    async def _send(
        self, r: Route, *, url: str, params: dict[str, str], payload: bytes | None,
        retry: bool, refused: bool = True,
    ) -> Answer:
        """``retry``: a transport failure or a 429/502/503/504 is sent again (a retry-safe
        call); ``refused``: a 429 is sent again whatever the call (the core did nothing)."""
        headers = {"Authorization": f"Bearer {self._token.get_secret_value()}"}
        if payload is not None:
            headers["Content-Type"] = "application/json"
        for attempt in itertools.count(1):
            last = self._retry.last(attempt)
            started = time.perf_counter()
            try:
                response = await self._http.send(
                    r.method, url, params=params, body=payload, headers=headers
                )
            except Trouble as trouble:
                error = _translate(trouble, r)
                _log_attempt(r, attempt, started, status=None, error=type(error).__name__)
                if not retry or last or not trouble.resendable:
                    raise error from trouble.__cause__
                await self._sleep(self._retry.delay(attempt, draw=self._random()))
                continue
            _log_attempt(r, attempt, started, status=response.status_code, error=None)
            status = response.status_code
            again = (retry and status in RETRY_STATUSES) or (refused and status == 429)
            if not again or last:
                return response
            await self._sleep(self._delay(attempt, response))
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _delay(self, attempt: int, response: Answer) -> float:
        return self._retry.delay(attempt, retry_after=_retry_after(response, self._clock.now()),
                                 draw=self._random())


# ---------------------------------------------------------------- helpers


def _body(body: m.WireModel | Mapping[str, Any], offered: Callable[[str], bool]
          ) -> tuple[bytes, set[str]]:
    """The request's bytes without the fields of extensions not ``offered``, and the
    extensions whose fields it still carries."""
    if not isinstance(body, m.WireModel):
        return encode(body), set()
    model = type(body)
    extensions = _EXTENSIONS.get(model)
    if extensions is None:
        extensions = _EXTENSIONS[model] = frozenset(baseline.extensions_of(model))
    if not extensions:
        if model.wire is m.WireModel.wire:  # what wire() holds, serialised by pydantic at once
            return body.model_dump_json(by_alias=True, exclude_none=True).encode(), set()
        return encode(body.wire()), set()
    data, _ = baseline.strip(model, body.wire(), offered)
    sent = {ext for ext in extensions if offered(ext)} & _present(model, data)
    return encode(data), sent


_EXTENSIONS: dict[type[m.WireModel], frozenset[str]] = {}


def _present(model: type[m.WireModel], data: dict[str, Any]) -> set[str]:
    """The extensions whose fields ``data`` carries."""
    return {ext for _, ext in baseline.extension_fields(model, data)}


def _publish(offered: Offered) -> None:
    for ext in Extension:
        INSTRUMENTS.offered(ext, ext in offered)


def _build_path(r: Route, params: Mapping[str, str]) -> str:
    for value in params.values():
        # "." and ".." would be collapsed by URL normalisation and reach another route
        if value in ("", ".", ".."):
            raise ValueError(f"{r.operation_id}: a path parameter cannot be empty, '.' or '..'")
    return r.path.format(**{k: quote(v, safe="") for k, v in params.items()})


def _build_query(r: Route, query: Mapping[str, object]) -> dict[str, str]:
    unknown = set(query) - set(r.query)
    if unknown:
        raise ValueError(f"{r.operation_id} takes no query parameter {sorted(unknown)}")
    return {k: _query_value(v) for k, v in query.items() if v is not None}


def _query_value(value: object) -> str:
    if isinstance(value, Enum):
        return str(value.value)
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValueError("a time in a query must be timezone-aware")
        return value.isoformat()
    return str(value)


def _translate(trouble: Trouble, r: Route) -> CoreTransportError:
    error: CoreTransportError
    if trouble.kind is CoreTimeout:
        error = CoreTimeout(f"{r.operation_id}: the core did not answer in time")
    elif trouble.kind is CoreConnectError:
        error = CoreConnectError(f"{r.operation_id}: could not connect to the core")
    else:
        error = CoreTransportError(f"{r.operation_id}: the connection to the core failed")
    error.operation = r.operation_id
    return error


def _retry_after(response: Answer, now: datetime) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or an HTTP date), or None: also for a
    number that is not finite (``inf``, ``1e999``, ``nan``), which no wait can follow and no
    JSON log line can carry."""
    raw = response.headers.get("Retry-After")
    if raw is None:
        return None
    try:
        seconds = float(raw)
    except ValueError:
        pass
    else:
        return max(0.0, seconds) if math.isfinite(seconds) else None
    try:
        when = parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, (when - now).total_seconds())


def _api_error(response: Answer, *, now: datetime, operation: str = "") -> CoreAPIError:
    status = response.status_code
    retry_after = _retry_after(response, now)
    if status < 400:
        message = f"The core answered HTTP {status}, which this call never uses."
        return UnexpectedResponse(status=status, code="", message=message, operation=operation)
    code, message = _error_fields(response)
    cls = exception_for(status=status, code=code)
    error = cls(status=status, code=code, message=message, retry_after=retry_after,
                rules=_rules(response) if status == 422 else ())
    error.operation = operation
    return error


def _rules(response: Answer) -> tuple[str, ...]:
    """The rule codes of a validation error's details (a closed list; anything else dropped)."""
    try:
        details = response.json().get("details")
    except (ValueError, RecursionError, AttributeError):
        return ()
    if not isinstance(details, list):
        return ()
    return tuple(d["rule"] for d in details[:20] if isinstance(d, dict)
                 and isinstance(d.get("rule"), str) and d["rule"] in _RULES)


_RULES = frozenset({"required", "unknown_field", "type", "format", "enum", "pattern", "too_small",
                    "too_large", "too_short", "too_long", "exactly_one", "policy", "reference",
                    "invalid"})


def _error_fields(response: Answer) -> tuple[str, str]:
    """The body's code and value-free message, or ("", a generic message) without a JSON body."""
    generic = f"The core answered HTTP {response.status_code} without an error body."
    try:
        body = response.json()
    except (ValueError, RecursionError):  # RecursionError: nested too deep to decode
        return "", generic
    code = body.get("code") if isinstance(body, dict) else None
    if not isinstance(code, str) or not code:
        return "", generic
    message = body.get("message")
    if not isinstance(message, str) or not message:
        message = message_of(ErrorCode(code)) if code in ErrorCode else generic
    # the core promises value-free messages; trimming keeps a misbehaving one from flooding logs
    return code[:64], " ".join(message.split())[:_MAX_MESSAGE]


def _parse[T: BaseModel](r: Route, response: Answer, model: type[T],
                         dropped: list[tolerance.Dropped] | None = None) -> T:
    try:  # pydantic parses the bytes itself; only an answer that fails is repaired
        return tolerance.read_json(model, response.content, dropped=dropped)
    except (ValueError, RecursionError) as exc:  # ValidationError, for bad JSON too; too deep
        fields: tuple[str, ...] = ()
        if isinstance(exc, ValidationError):
            fields = tolerance.fields_of(e["loc"] for e in exc.errors(include_input=False))
        elif not isinstance(exc, RecursionError) and _is_json(response.content):
            fields = ("(body)",)  # valid JSON of another shape altogether
        where = " at " + ", ".join(fields[:5]) if fields else ""
        # nothing unreadable is silent: logged (the places, never a value) and counted
        log.warning("core.answer_unreadable", operation=r.operation_id,
                    status=response.status_code, fields=list(fields))
        INSTRUMENTS.unreadable(r.operation_id)
        # `from None`: a ValidationError's text repeats the input, which may hold span text
        raise UnexpectedResponse(
            status=response.status_code,
            code="",
            message=f"The core's {r.operation_id} response does not match the contract{where}.",
            operation=r.operation_id,
            fields=fields,
        ) from None


def _is_json(content: bytes) -> bool:
    try:
        json.loads(content)
    except (ValueError, RecursionError):
        return False
    return True


def _log_attempt(
    r: Route, attempt: int, started: float, *, status: int | None, error: str | None
) -> None:
    fields = {
        "operation": r.operation_id,
        "method": r.method,
        "attempt": attempt,
        "status": status,
        "duration_ms": round((time.perf_counter() - started) * 1000, 1),
    }
    failed = (error or str(status)) if error is not None or status is None or status >= 400 \
        else None
    INSTRUMENTS.attempt(r.operation_id, time.perf_counter() - started, failed=failed)
    if error is None and status is not None and status < 400:
        log.debug("core_request", **fields)
    else:
        log.info("core_request", **fields, error=error)
