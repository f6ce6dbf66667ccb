"""A reverse proxy on 127.0.0.1 in front of the reference core, as production puts one: every
request is forwarded over real HTTP, and a test can make it answer in the core's place or alter
the core's answers.

- ``throttle(route, status, retry_after, times)``: the next ``times`` requests of a route are
  answered ``status`` (429, 503) with that ``Retry-After`` and an error body, never forwarded;
- ``alter(route, change)``: each 2xx JSON answer of a route goes through ``change`` (it edits
  the decoded body in place) before the bot reads it: a core a version ahead or behind.

A route is named ``"METHOD /v1/path/{param}"`` as in the route table; ``seen`` counts the
requests that reached the proxy by that name.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp import web

from bot.core.routes import ROUTES

_HOP = {"content-length", "content-type", "transfer-encoding", "content-encoding",
        "connection", "host", "keep-alive"}
Change = Callable[[Any], None]


def _pattern(path: str) -> re.Pattern[str]:
    return re.compile("^" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(path)) + "$")


_ROUTES = [(f"{r.method} {r.path}", r.method, _pattern(r.path)) for r in ROUTES]


def route_of(method: str, path: str) -> str:
    """The route table's name of a request (``"GET /v1/clarifications/{clarificationId}"``)."""
    for name, verb, pattern in _ROUTES:
        if verb == method and pattern.match(path):
            return name
    return f"{method} {path}"


@dataclass
class Throttle:
    status: int
    retry_after: str | None
    times: int


@dataclass
class CoreProxy:
    core_url: str
    url: str = ""
    seen: Counter[str] = field(default_factory=Counter)
    throttles: dict[str, Throttle] = field(default_factory=dict)
    changes: dict[str, list[Change]] = field(default_factory=dict)

    def throttle(self, route: str, *, status: int = 429, retry_after: str | None = "10",
                 times: int = 1) -> None:
        self.throttles[route] = Throttle(status, retry_after, times)

    def alter(self, route: str, change: Change) -> None:
        self.changes.setdefault(route, []).append(change)

    async def _forward(self, request: web.Request) -> web.Response:
        name = route_of(request.method, request.path)
        self.seen[name] += 1
        body = await request.read()
        throttle = self.throttles.get(name)
        if throttle is not None and throttle.times > 0:
            throttle.times -= 1
            code = "RATE_LIMITED" if throttle.status == 429 else "UNAVAILABLE"
            headers = {} if throttle.retry_after is None else {
                "Retry-After": throttle.retry_after}
            return web.json_response({"code": code, "message": "Try again later.",
                                      "status": throttle.status},
                                     status=throttle.status, headers=headers)
        async with aiohttp.ClientSession() as http, http.request(
                request.method, self.core_url + request.path_qs, data=body,
                headers={k: v for k, v in request.headers.items() if k.lower() not in _HOP}
                | {"Content-Type": request.headers.get("Content-Type", "application/json")},
        ) as got:
            content = await got.read()
            if 200 <= got.status < 300 and content and self.changes.get(name):
                data = json.loads(content)
                for change in self.changes[name]:
                    change(data)
                content = json.dumps(data).encode()
            return web.Response(status=got.status, body=content,
                                content_type=got.content_type,
                                headers={k: v for k, v in got.headers.items()
                                         if k.lower() not in _HOP})


@asynccontextmanager
async def core_proxy(core_url: str) -> AsyncIterator[CoreProxy]:
    """The proxy, listening on a free port of 127.0.0.1 until the block ends."""
    proxy = CoreProxy(core_url)
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", proxy._forward)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    proxy.url = f"http://127.0.0.1:{runner.addresses[0][1]}"
    try:
        yield proxy
    finally:
        await runner.cleanup()
