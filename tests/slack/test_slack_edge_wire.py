"""The receiving edge against bytes that lie about themselves, over real HTTP: a Content-Length
longer or shorter than the body that follows. Neither may hold a connection open for ever, and
neither may put a byte of what was sent into a log line.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any
from urllib.parse import urlsplit

from tests.slack.conftest import Stack, payload_of
from tests.slack.test_slack_edge import answers_of, raw_exchange, request_head, signed_headers
from tests.slack.test_slack_security import delivered, form


async def test_a_body_shorter_than_its_content_length_is_refused_in_bounded_time(
        stack: Stack) -> None:
    """A signed click whose Content-Length promises 10 bytes more than are ever sent is answered
    408 once the body read's deadline passes (here lowered to 0.2 s), logged as refused, and
    forwards nothing; before, the server waited for the missing bytes for as long as the sender
    kept the connection open, and never logged it."""
    stack.adapter.body_seconds = 0.2
    cid, card = await delivered(stack, "U0SARAH", authority={"authored_by": ["p-sarah"]})
    body = form(await payload_of(stack, "U0SARAH", card, "clarify.answer.0"))
    head = request_head([*signed_headers(stack, body), ("Content-Length", str(len(body) + 10))])
    status, answered = await raw_exchange(stack, head, [body])
    assert status == 408
    assert json.loads(answered) == {"ok": False, "error": "body_incomplete"}
    assert await answers_of(stack, cid) == []


async def test_a_request_the_server_cannot_parse_is_logged_as_refused_without_its_bytes(
        stack: Stack, capsys: Any) -> None:
    """A click whose Content-Length is shorter than its body (the rest cannot be parsed as the
    next request) is refused by aiohttp's parser. Its log line is a refusal with status and
    kind, at info, and quotes nothing of the request: aiohttp's own message quotes the bytes
    after the declared length, here the click's body."""
    from bot.logs import configure_logging

    configure_logging(level="info")
    cid, card = await delivered(stack, "U0SARAH", authority={"authored_by": ["p-sarah"]})
    body = form(await payload_of(stack, "U0SARAH", card, "clarify.answer.0"))
    capsys.readouterr()
    head = request_head([*signed_headers(stack, body), ("Content-Length", "8")])
    url = urlsplit(stack.url)
    reader, writer = await asyncio.open_connection(url.hostname, url.port)
    writer.write(head + body)
    await writer.drain()
    answered = await asyncio.wait_for(reader.read(), 10)  # the server closes after its 400
    writer.close()
    assert answered.split()[1] == b"400"
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    refusals = [x for x in lines if x["event"] == "http.request_refused"]
    assert [(x["status"], x["reason"], x["level"]) for x in refusals] == [
        (400, "BadHttpMessage", "info")]
    text = json.dumps(lines)
    assert "block_actions" not in text and "U0SARAH" not in text and "exception" not in text
    assert await answers_of(stack, cid) == []
