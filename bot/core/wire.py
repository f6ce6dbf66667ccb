"""The core client's HTTP layer: one request out, one ``Answer`` back, failures as ``Trouble``.

The bot talks to the core over aiohttp (``AiohttpWire``): one session and connection pool per
client, HTTP/1.1 kept alive, no redirects, no cookies, no proxies from the environment.
Measured in bench/delivery.py (docs/performance.md), a call costs the worker about a fifth of the
CPU it cost through httpx's client and httpcore's pool, and the core calls were the largest part
of a card's cost. ``HttpxWire`` keeps an injected ``httpx`` transport working (the tests' fake
core behind ``httpx.MockTransport``, a transport that can be switched off); the retries, error
mapping and logging above are the same for both (``bot.core.transport``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlencode

import aiohttp
import httpx
from yarl import URL

from bot.core.errors import CoreConnectError, CoreError, CoreTimeout, CoreTransportError


@dataclass(frozen=True, slots=True)
class Answer:
    """The core's response: status, headers (case-insensitive ``get``) and the body's bytes."""

    status_code: int
    headers: Mapping[str, str]
    content: bytes

    def json(self) -> Any:
        return json.loads(self.content)


class Trouble(CoreError):
    """The request failed below HTTP: which client error it becomes, and whether sending it
    again can help (a refused or reset connection can; a malformed URL cannot). It never leaves
    the client: ``bot.core.transport`` raises the ``kind`` it names instead."""

    def __init__(self, kind: type[CoreTransportError], *, resendable: bool) -> None:
        super().__init__(kind.__name__)
        self.kind = kind
        self.resendable = resendable


class Wire(Protocol):
    @property
    def closed(self) -> bool: ...

    async def send(self, method: str, path: str, *, params: Mapping[str, str],
                   body: bytes | None, headers: Mapping[str, str]) -> Answer: ...

    async def aclose(self) -> None: ...


def encode(payload: object) -> bytes:
    """A JSON body as httpx's ``json=`` would send it: compact, UTF-8, no NaN."""
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"),
                      allow_nan=False).encode()


class AiohttpWire:
    """aiohttp's client session, sized and timed like the httpx client it replaced: ``limits``
    bounds the pool, and its connections are kept alive ``keepalive_expiry`` seconds (aiohttp
    keeps every idle one up to the bound; ``max_keepalive_connections = 0`` closes each after
    its request);
    ``timeout``'s connect, read and pool limits map onto aiohttp's (it has no write timeout: a
    request's body is small and the read timeout starts once it is written)."""

    def __init__(self, base_url: str, *, timeout: httpx.Timeout, limits: httpx.Limits,
                 headers: Mapping[str, str]) -> None:
        self._base = base_url.rstrip("/")
        self._headers = dict(headers)
        pool = timeout.pool
        self._timeout = aiohttp.ClientTimeout(
            total=None, sock_connect=timeout.connect, sock_read=timeout.read,
            connect=None if pool is None or timeout.connect is None else pool + timeout.connect)
        self._limits = limits
        self._session: aiohttp.ClientSession | None = None
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    def _open(self) -> aiohttp.ClientSession:
        # made on first use: a session belongs to the running event loop
        keep = self._limits.max_keepalive_connections != 0  # aiohttp: all of the pool, or none
        connector = aiohttp.TCPConnector(
            limit=self._limits.max_connections or 0, limit_per_host=0, force_close=not keep,
            keepalive_timeout=(self._limits.keepalive_expiry or None) if keep else None)
        self._session = aiohttp.ClientSession(
            connector=connector, timeout=self._timeout, headers=self._headers,
            cookie_jar=aiohttp.DummyCookieJar(), trust_env=False)
        return self._session

    async def send(self, method: str, path: str, *, params: Mapping[str, str],
                   body: bytes | None, headers: Mapping[str, str]) -> Answer:
        if self._closed:
            raise RuntimeError("the core client is closed")
        session = self._session or self._open()
        url = self._base + path + ("?" + urlencode(params) if params else "")
        try:
            async with session.request(method, URL(url, encoded=True), data=body,
                                       headers=headers, allow_redirects=False) as response:
                return Answer(response.status, response.headers, await response.read())
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
        self._closed = True
        if self._session is not None:
            await self._session.close()


class HttpxWire:
    """An injected httpx transport (tests' fakes) under httpx's client."""

    def __init__(self, base_url: str, *, transport: httpx.AsyncBaseTransport,
                 timeout: httpx.Timeout, limits: httpx.Limits,
                 headers: Mapping[str, str]) -> None:
        self._http = httpx.AsyncClient(
            base_url=base_url, transport=transport, timeout=timeout, limits=limits,
            follow_redirects=False,  # a redirect must never carry the token elsewhere
            headers=dict(headers))

    @property
    def closed(self) -> bool:
        return self._http.is_closed

    async def send(self, method: str, path: str, *, params: Mapping[str, str],
                   body: bytes | None, headers: Mapping[str, str]) -> Answer:
        try:
            response = await self._http.request(method, path, params=params, content=body,
                                                headers=headers)
        except httpx.TimeoutException as exc:
            raise Trouble(CoreTimeout, resendable=True) from exc
        except httpx.ConnectError as exc:
            raise Trouble(CoreConnectError, resendable=True) from exc
        except (httpx.NetworkError, httpx.RemoteProtocolError) as exc:
            raise Trouble(CoreTransportError, resendable=True) from exc
        except httpx.TransportError as exc:
            # local mistakes (bad URL, proxy set-up, our own protocol errors) fail the same way
            raise Trouble(CoreTransportError, resendable=False) from exc
        return Answer(response.status_code, response.headers, response.content)

    async def aclose(self) -> None:
        if not self._http.is_closed:
            await self._http.aclose()
