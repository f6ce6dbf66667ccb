"""Reading a platform's request body at the edge, bounded in size and time (Slack and Teams)."""

from __future__ import annotations

import asyncio

from aiohttp import web


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
