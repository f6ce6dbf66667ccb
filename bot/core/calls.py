"""One call of a route, what every core client shares: the wire, the bearer token, retries and
error mapping.

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
import random as _random
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Self

import httpx
import structlog
from pydantic import BaseModel, SecretStr

from bot.clock import Clock, SystemClock
from bot.core import tolerance
from bot.core.decoding import api_error, error_fields, parse, retry_after, rules
from bot.core.discovery import OPENAPI_PATH, Discovery, Probe, Reply, parse_document
from bot.core.encoding import body_of, build_path, build_query
from bot.core.errors import (
    CoreConnectError,
    CoreTimeout,
    CoreTransportError,
    ErrorCode,
    ExtensionUnavailable,
    UnexpectedResponse,
)
from bot.core.extensions import ALL, VALUE_EXTENSIONS, Extension, Offered
from bot.core.http import AiohttpTransport, AiohttpWire, Transport, Trouble, WireResponse, encode
from bot.core.instruments import INSTRUMENTS
from bot.core.models import WireModel
from bot.core.routes import Route, route
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
# the core client's retries (docs/reliability.md, "Retries"): RetryPolicy's defaults, spelled out
CORE_RETRY = RetryPolicy(max_attempts=4, base=0.25, cap=8.0, retry_after_cap=30.0, jitter=1.0)


class BaseCoreClient:
    """Transport, auth, retries, logging and error mapping shared by the core clients."""

    def __init__(
        self,
        *,
        base_url: str,
        token: SecretStr | str,
        transport: Transport | None = None,
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
        used as it is whatever the core answers. ``transport``: what sends each request
        (``bot.core.http``): aiohttp's session and pool unless a test gives its fake core."""
        secret = token if isinstance(token, SecretStr) else SecretStr(token)
        if not _TOKEN_SHAPE.match(secret.get_secret_value()):
            # checked here so that no HTTP library builds an error message around a bad header
            raise ValueError("the core token must be non-empty printable ASCII without spaces")
        self._token = secret
        self._base_url = base_url
        self._retry = retry or CORE_RETRY
        self._sleep = sleep
        self._random = random
        self._clock = clock or SystemClock()
        headers = {"Accept": "application/json", "User-Agent": "clarify-bot"}
        # aiohttp's session and pool to the core; a test's transport in its place runs under
        # the same wire, so production's mapping of failures is the one tested
        self._http = AiohttpWire(
            base_url, headers=headers,
            transport=transport or AiohttpTransport(timeout=timeout, limits=limits))
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
        await self._http.aclose()

    # ------------------------------------------------------------ one call

    async def _call[T: BaseModel](
        self,
        operation_id: str,
        response_model: type[T],
        *,
        path: Mapping[str, str] | None = None,
        query: Mapping[str, object] | None = None,
        body: WireModel | Mapping[str, Any] | None = None,
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
        url = build_path(r, path or {})
        params = build_query(r, query or {})
        payload, sent = (None, set()) if body is None else self._payload(body)
        retry = r.retry if resend is None else resend
        response = await self._send(r, url=url, params=params, payload=payload, retry=retry,
                                    refused=resend_refused)
        if response.status_code not in r.success:
            error = api_error(response, now=self._clock.now(), operation=operation_id)
            if ext is not None and response.status_code in (404, 405) \
                    and error.code in _ROUTE_GONE:
                self._lost(ext, operation_id)
                raise ExtensionUnavailable(str(ext)) from error
            if not (sent and resend_without_extensions and response.status_code == 422
                    and error.code in ("", ErrorCode.VALIDATION_FAILED.value)):
                raise error
            # the core may not know an extension's field: the same request without them (a
            # refused value alone: with the spec's code in place of the extension's, the
            # fields kept)
            assert isinstance(body, WireModel)
            gone = _refused(sent, getattr(error, "rules", ()))
            payload = body_of(body, lambda ext: ext in self.offered and ext not in gone)[0]
            response = await self._send(r, url=url, params=params, payload=payload, retry=retry,
                                        refused=resend_refused)
            if response.status_code not in r.success:
                raise api_error(response, now=self._clock.now(),
                                 operation=operation_id) from error
            for field_ext in sorted(gone):
                self._lost(Extension(field_ext), operation_id)
        return parse(r, response, response_model, dropped), response.status_code

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

    def _payload(self, body: WireModel | Mapping[str, Any]) -> tuple[bytes, set[str]]:
        return body_of(body, lambda ext: ext in self.offered)

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
        code = error_fields(answer)[0] if answer.status_code >= 400 else ""
        refused = rules(answer) if answer.status_code == 422 else ()
        return answer.status_code, code, refused

    async def _send(
        self, r: Route, *, url: str, params: dict[str, str], payload: bytes | None,
        retry: bool, refused: bool = True,
    ) -> WireResponse:
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

    def _delay(self, attempt: int, response: WireResponse) -> float:
        return self._retry.delay(attempt, retry_after=retry_after(response, self._clock.now()),
                                 draw=self._random())


# ---------------------------------------------------------------- helpers



def _refused(sent: set[str], rules: tuple[str, ...]) -> set[str]:
    """The extensions a 422 refused of those a request carried: its value extensions alone when
    it names a value outside an enum and no unknown field, else every one."""
    values = {ext for ext in sent if Extension(ext) in VALUE_EXTENSIONS}
    if values and "enum" in rules and "unknown_field" not in rules:
        return values
    return set(sent)


def _publish(offered: Offered) -> None:
    for ext in Extension:
        INSTRUMENTS.offered(ext, ext in offered)


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
