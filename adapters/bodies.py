"""Request bodies at the edge, bounded in size and time: a platform's callback reads its own
(``read_body``, Slack and Teams); every other request passes ``bounded_bodies``."""

from __future__ import annotations

import asyncio

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from bot.abuse_limits import Limit, count_refusal

SMALL_BODY = 1024  # what a request to a route that reads no body may carry
SMALL_BODY_SECONDS = 10.0


async def read_body(request: web.Request, *, limit: int, seconds: float) -> bytes | None:
    """The whole body, however many reads it takes, or None when it is over ``limit``: judged on
    the declared length first, then while reading (chunked), so it is never buffered whole.
    A body not complete within ``seconds`` (a Content-Length longer than what is sent, a stalled
    sender) raises ``TimeoutError``: nothing would hold the connection open otherwise."""
    if request.content_length is not None and request.content_length > limit:
        return None
    body = bytearray()
    async with asyncio.timeout(seconds):
        while chunk := await request.content.read(limit + 1 - len(body)):
            body += chunk
            if len(body) > limit:
                return None
    return bytes(body)


def bounded_bodies(*, limit: int = SMALL_BODY, seconds: float = SMALL_BODY_SECONDS
                   ) -> Middleware:
    """Every request but a routed POST (the platforms' callbacks read their own bodies with
    ``read_body`` and their own limits) may carry at most ``limit`` bytes, however framed: the
    health checks and ``/metrics`` read none, so a larger body is refused (413) rather than
    left for the server to drain."""

    @web.middleware
    async def bounded(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.method == "POST" and request.match_info.http_exception is None:
            return await handler(request)
        if request.body_exists:
            try:
                whole = await read_body(request, limit=limit, seconds=seconds)
            except TimeoutError:
                return web.json_response({"ok": False, "error": "body_incomplete"}, status=408)
            if whole is None:
                count_refusal(Limit.BODY, "none")
                return web.json_response({"ok": False, "error": "too_large"}, status=413)
        return await handler(request)

    return bounded
