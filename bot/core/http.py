"""The core client's HTTP layer: one ``WireRequest`` out, one ``WireResponse`` back, failures as
``Trouble``.

Two parts, as httpx draws its client over a transport:

- a **transport** sends one request and returns the response, raising what aiohttp raises when
  the request fails below HTTP (a refused or reset connection, a timeout, a body cut short, a
  TLS failure). In production it is ``AiohttpTransport``: one aiohttp session and connection
  pool per client, HTTP/1.1 kept alive, no redirects, no cookies, no proxies from the
  environment. Tests give a ``MockTransport`` instead: a function that answers or raises
  aiohttp's errors (httpx's ``MockTransport`` idea), or one around the real transport.
- the **wire** (``AiohttpWire``) builds the request (the base URL, the client's headers) and
  maps every failure of whichever transport onto ``Trouble``: the one mapping production and
  tests both run (``tests/core/test_transport_errors.py``).

Why aiohttp and not httpx: measured in bench/delivery.py (docs/performance.md), a call costs the
worker about a fifth of the CPU it cost through httpx's client and httpcore's pool, and the core
calls were the largest part of a card's cost. httpx's ``Timeout`` and ``Limits`` still say how
the pool is sized and timed (``[core]`` in docs/configuration.md).
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlencode

import aiohttp
import httpx
from multidict import CIMultiDict
from yarl import URL

from bot.core.errors import CoreConnectError, CoreError, CoreTimeout, CoreTransportError


@dataclass(frozen=True, slots=True)
class WireRequest:
    """One request as it leaves the client: the full URL (already encoded), every header (the
    client's own and the call's; case-insensitive) and the body's bytes, if any."""

    method: str
    url: URL
    headers: Mapping[str, str]
    content: bytes | None


@dataclass(frozen=True, slots=True)
class WireResponse:
    """The core's response: status, headers (case-insensitive ``get``) and the body's bytes."""

    status_code: int
    headers: Mapping[str, str]
    content: bytes

    def json(self) -> Any:
        return json.loads(self.content)


class Trouble(CoreError):
    """The request failed below HTTP: which client error it becomes, and whether sending it
    again can help (a refused or reset connection can; a malformed URL cannot). It never leaves
    the client: ``bot.core.calls`` raises the ``kind`` it names instead."""

    def __init__(self, kind: type[CoreTransportError], *, resendable: bool) -> None:
        super().__init__(kind.__name__)
        self.kind = kind
        self.resendable = resendable


class Transport(Protocol):
    """Sends one request: its response, or what aiohttp raises for a failure below HTTP."""

    async def handle(self, request: WireRequest) -> WireResponse: ...

    async def aclose(self) -> None: ...


Handler = Callable[[WireRequest], WireResponse | Awaitable[WireResponse]]


class MockTransport:
    """A function as the transport (a test's fake core): it returns the response, or raises the
    aiohttp error a failure below HTTP would (the wire maps it as production's)."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler

    async def handle(self, request: WireRequest) -> WireResponse:
        response = self.handler(request)
        if inspect.isawaitable(response):
            response = await response
        return response

    async def aclose(self) -> None:
        return None


def encode(payload: object) -> bytes:
    """A JSON body as httpx's ``json=`` would send it: compact, UTF-8, no NaN."""
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"),
                      allow_nan=False).encode()


class AiohttpTransport:
    """aiohttp's client session, sized and timed like the httpx client it replaced: ``limits``
    bounds the pool, and its connections are kept alive ``keepalive_expiry`` seconds (aiohttp
    keeps every idle one up to the bound; ``max_keepalive_connections = 0`` closes each after
    its request);
    ``timeout``'s connect, read and pool limits map onto aiohttp's (it has no write timeout: a
    request's body is small and the read timeout starts once it is written)."""

    def __init__(self, *, timeout: httpx.Timeout, limits: httpx.Limits) -> None:
        pool = timeout.pool
        self._timeout = aiohttp.ClientTimeout(
            total=None, sock_connect=timeout.connect, sock_read=timeout.read,
            connect=None if pool is None or timeout.connect is None else pool + timeout.connect)
        self._limits = limits
        self._session: aiohttp.ClientSession | None = None

    def _open(self) -> aiohttp.ClientSession:
        # made on first use: a session belongs to the running event loop
        keep = self._limits.max_keepalive_connections != 0  # aiohttp: all of the pool, or none
        connector = aiohttp.TCPConnector(
            limit=self._limits.max_connections or 0, limit_per_host=0, force_close=not keep,
            keepalive_timeout=(self._limits.keepalive_expiry or None) if keep else None)
        self._session = aiohttp.ClientSession(
            connector=connector, timeout=self._timeout,
            cookie_jar=aiohttp.DummyCookieJar(), trust_env=False)
        return self._session

    async def handle(self, request: WireRequest) -> WireResponse:
        session = self._session or self._open()
        async with session.request(request.method, request.url, data=request.content,
                                   headers=request.headers, allow_redirects=False) as response:
            return WireResponse(response.status, response.headers, await response.read())

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()


class AiohttpWire:
    """The request built and sent over ``transport``, and its failures (aiohttp's errors, from
    the real transport or a test's) mapped onto ``Trouble``."""

    def __init__(self, base_url: str, *, transport: Transport,
                 headers: Mapping[str, str]) -> None:
        self._base = base_url.rstrip("/")
        self._headers = dict(headers)
        self._transport = transport
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    def request(self, method: str, path: str, *, params: Mapping[str, str],
                body: bytes | None, headers: Mapping[str, str]) -> WireRequest:
        url = self._base + path + ("?" + urlencode(params) if params else "")
        every = CIMultiDict(self._headers)
        every.update(headers)
        return WireRequest(method, URL(url, encoded=True), every, body)

    async def send(self, method: str, path: str, *, params: Mapping[str, str],
                   body: bytes | None, headers: Mapping[str, str]) -> WireResponse:
        if self._closed:
            raise RuntimeError("the core client is closed")
        request = self.request(method, path, params=params, body=body, headers=headers)
        try:
            return await self._transport.handle(request)
        except aiohttp.InvalidURL as exc:
            raise Trouble(CoreTransportError, resendable=False) from exc
        except (TimeoutError, aiohttp.ServerTimeoutError) as exc:
            raise Trouble(CoreTimeout, resendable=True) from exc
        except aiohttp.ClientConnectorError as exc:
            raise Trouble(CoreConnectError, resendable=True) from exc
        except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError,
                aiohttp.ClientPayloadError, aiohttp.ClientResponseError) as exc:
            raise Trouble(CoreTransportError, resendable=True) from exc
        except aiohttp.ClientError as exc:
            raise Trouble(CoreTransportError, resendable=False) from exc

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            await self._transport.aclose()
