"""How the reference core reads what a client sends: whole bodies, whatever their framing.

A body may reach the server in several pieces (chunked transfer, TCP segments), may be nested far
deeper than any contract shape, or may claim an encoding it does not have. Each case is either
read whole or refused with its documented code; none is a 500.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator

import httpx
import pytest

from tests.conftest import CLARIFY_TOKEN

BOT = {"Authorization": f"Bearer {CLARIFY_TOKEN}"}
POLL = b'{"kinds": ["clarify:"], "maxJobs": 1}'


async def _pieces(*parts: bytes) -> AsyncIterator[bytes]:
    for part in parts:
        yield part
        await asyncio.sleep(0.05)  # lets the server see the first piece on its own


async def test_a_body_sent_in_pieces_is_read_whole(core_url: str) -> None:
    """A valid body split across chunks is the same request as in one piece, not 400."""
    async with httpx.AsyncClient(base_url=core_url) as http:
        response = await http.post("/v1/jobs/poll", headers=BOT,
                                   content=_pieces(POLL[:10], POLL[10:]))
    assert response.status_code == 200, response.text
    assert len(response.json()["jobs"]) == 1


async def test_a_streamed_body_over_the_limit_is_413(core_url: str) -> None:
    """Without a Content-Length the 1 MiB limit still holds: 413, not a half-read body."""
    chunk = b" " * (256 * 1024)
    async with httpx.AsyncClient(base_url=core_url) as http:
        response = await http.post("/v1/jobs/poll", headers=BOT,
                                   content=_pieces(*[chunk] * 5, POLL))
    assert response.status_code == 413
    assert response.json()["code"] == "PAYLOAD_TOO_LARGE"


@pytest.mark.parametrize("content", [
    b"[" * 100_000 + b"]" * 100_000,
    b'{"kinds": ' + b"[" * 5_000 + b"]" * 5_000 + b"}",
])
async def test_deeply_nested_json_is_a_coded_refusal(core_url: str, content: bytes) -> None:
    """JSON nested past the parser's depth is malformed for us (400), never an INTERNAL 500."""
    async with httpx.AsyncClient(base_url=core_url) as http:
        response = await http.post("/v1/jobs/poll", headers=BOT, content=content)
    assert response.status_code == 400
    assert response.json()["code"] == "MALFORMED_BODY"


async def test_a_body_that_is_not_the_encoding_it_claims_is_400(core_url: str) -> None:
    """Content-Encoding: gzip on a plain body cannot be decoded: 400 MALFORMED_BODY, not 500."""
    async with httpx.AsyncClient(base_url=core_url) as http:
        response = await http.post("/v1/jobs/poll", content=POLL,
                                   headers={**BOT, "Content-Encoding": "gzip"})
    assert response.status_code == 400
    assert response.json()["code"] == "MALFORMED_BODY"


async def test_a_cursor_hiding_deep_nesting_is_refused_like_any_forged_cursor(
    core_url: str,
) -> None:
    """A cursor decoding to JSON nested thousands deep is 422 VALIDATION_FAILED, not 500."""
    cursor = base64.urlsafe_b64encode(b"[" * 4_000 + b"]" * 4_000).decode().rstrip("=")
    async with httpx.AsyncClient(base_url=core_url) as http:
        for path in ("/v1/clarifications", "/v1/jobs"):
            response = await http.get(path, params={"cursor": cursor}, headers=BOT)
            assert response.status_code == 422, path
            assert response.json()["message"] == "Query parameter cursor is invalid."
