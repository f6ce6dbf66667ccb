"""Failures below HTTP, and answers that do not read, through the wire production runs.

The fake core is a transport in place of aiohttp's session (``bot.core.http.MockTransport``): it
raises what aiohttp raises (``tests/core/faults.py``), so the mapping under test is the one in
``bot.core.http.AiohttpWire``. The rule: every such failure becomes one of the client's errors
(``CoreConnectError``, ``CoreTimeout``, ``CoreTransportError``, ``UnexpectedResponse``), is sent
again only where that can help and the route is retry-safe, and no token or body text reaches
its message or a log line. The last tests show that aiohttp's own session raises these same
types for the real events, on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import aiohttp
import pytest
from structlog.testing import capture_logs
from yarl import URL

from bot.core.calls import DEFAULT_LIMITS, DEFAULT_TIMEOUT
from bot.core.errors import (
    AuthenticationFailed,
    CoreConnectError,
    CoreError,
    CoreTimeout,
    CoreTransportError,
    UnexpectedResponse,
)
from bot.core.http import AiohttpTransport, WireRequest
from bot.core.models import AnswerCustomInput, AnswerRequest
from bot.core.routes import route

from . import faults
from .conftest import TOKEN, job_view, respond

SECRET = "the secret launch is Friday"
WORDS = f"sending Bearer {TOKEN}: {SECRET}"  # what a library might echo into its message

# (fault, the client's error, whether sending again can help)
FAULTS: list[tuple[Callable[[str], BaseException], type[CoreError], bool]] = [
    (faults.refused, CoreConnectError, True),
    (faults.unresolved, CoreConnectError, True),
    (faults.untrusted, CoreConnectError, True),
    (faults.connect_timeout, CoreTimeout, True),
    (faults.read_timeout, CoreTimeout, True),
    (TimeoutError, CoreTimeout, True),
    (faults.reset, CoreTransportError, True),
    (faults.dropped, CoreTransportError, True),
    (faults.cut_short, CoreTransportError, True),
    (faults.garbled, CoreTransportError, True),
    (faults.bad_url, CoreTransportError, False),
    (faults.other, CoreTransportError, False),
]
IDS = [fault.__name__ for fault, *_ in FAULTS]


def _leaks(texts: list[str]) -> list[str]:
    return [t for t in texts if TOKEN in t or "Friday" in t]


@pytest.mark.parametrize(("fault", "cls", "resendable"), FAULTS, ids=IDS)
async def test_a_lasting_failure_is_the_clients_error_after_the_retries_it_allows(
        fault, cls, resendable, core, sleeps, client) -> None:
    """A retry-safe call is sent again (four attempts in all) only when that can help; the error
    is exactly the mapped class, names the call, is chained to aiohttp's error, and says nothing
    of the token or of what the library put in its message."""
    exc = fault(WORDS)
    core.script(exc)
    with capture_logs() as logs, pytest.raises(CoreError) as info:
        await client.get_job(job_id="job-1")
    assert type(info.value) is cls
    assert info.value.__cause__ is exc
    assert info.value.operation == "getJob" and "getJob" in str(info.value)
    assert len(core.requests) == (4 if resendable else 1)
    assert sleeps.calls == ([0.125, 0.25, 0.5] if resendable else [])
    assert not _leaks([str(info.value), repr(info.value), *map(repr, logs)])
    assert [e["error"] for e in logs if e["event"] == "core_request"] == \
        [cls.__name__] * len(core.requests)


@pytest.mark.parametrize("fault", [f for f, _, again in FAULTS if again],
                         ids=[f.__name__ for f, _, again in FAULTS if again])
async def test_a_passing_failure_is_sent_again_and_answers(fault, core, sleeps, client) -> None:
    core.script(fault(WORDS), respond(200, json=job_view()))
    job = await client.get_job(job_id="job-1")
    assert job.id == "job-1" and len(core.requests) == 2 and sleeps.calls == [0.125]


@pytest.mark.parametrize(("fault", "cls", "resendable"), FAULTS, ids=IDS)
async def test_an_answers_text_is_in_no_error_or_log_line(fault, cls, resendable, core, sleeps,
                                                         client) -> None:
    """The person's own words travel in the request body; a failure below HTTP says nothing of
    them (nor of the token), whatever the library wrote in its message."""
    answer = AnswerRequest(answer_custom=AnswerCustomInput(source_text=SECRET))
    core.script(fault(WORDS))
    with capture_logs() as logs, pytest.raises(CoreError) as info:
        await client.answer_clarification(clarification_id="clar-1", request=answer)
    assert type(info.value) is cls
    again = resendable and route("answerClarification").retry
    assert len(core.requests) == (4 if again else 1)
    assert all(b"Friday" in (r.content or b"") for r in core.requests)  # really sent
    assert not _leaks([str(info.value), repr(info.value), *map(repr, logs)])


@pytest.mark.parametrize(("fault", "cls", "resendable"), FAULTS, ids=IDS)
async def test_a_call_that_is_not_retry_safe_is_sent_once_whatever_the_failure(
        fault, cls, resendable, core, sleeps, client) -> None:
    """A failure below HTTP may come after the core acted: a call that must not be done twice
    (failing a job) is not sent again, and its reason is in no error or log line."""
    assert not route("failJob").retry
    core.script(fault(WORDS))
    with capture_logs() as logs, pytest.raises(CoreError) as info:
        await client.fail_job(job_id="job-1", lease_token="lease-1", reason=SECRET)
    assert type(info.value) is cls
    assert len(core.requests) == 1 and sleeps.calls == []
    assert not _leaks([str(info.value), repr(info.value), *map(repr, logs)])


@pytest.mark.parametrize(("reply", "cls"), [
    (respond(200, content=b'{"id": "job-1", "kind": "Friday'), UnexpectedResponse),
    (respond(200, text=f"<html>{SECRET}</html>"), UnexpectedResponse),
    (respond(200, json={**job_view(), "id": ["Friday"]}), UnexpectedResponse),
    (respond(200, content=b"[" * 100_000), UnexpectedResponse),
    (respond(401, text=f"bad token {TOKEN}, {SECRET}"), AuthenticationFailed),
], ids=["truncated_json", "not_json", "wrong_shape", "nested_too_deep", "error_page"])
async def test_an_answer_that_does_not_read_is_an_error_without_its_text(reply, cls, core,
                                                                          client) -> None:
    core.script(reply)
    with capture_logs() as logs, pytest.raises(CoreError) as info:
        await client.get_job(job_id="job-1")
    assert type(info.value) is cls
    assert not _leaks([str(info.value), repr(info.value), *map(repr, logs)])


async def test_the_wire_hands_the_transport_the_whole_request(core, client) -> None:
    """What a transport receives is what aiohttp sends: the full URL, every header of the client
    and of the call, the body's bytes."""
    core.script(respond(200, json={"jobs": [], "serverTime": "2026-01-01T00:00:00Z"}))
    await client.poll_jobs(kinds=["clarify:"], max_jobs=2)
    sent: WireRequest = core.requests[0]
    assert (sent.method, str(sent.url)) == ("POST", "http://core.test/v1/jobs/poll")
    assert sent.headers["authorization"] == f"Bearer {TOKEN}"
    assert (sent.headers["Accept"], sent.headers["User-Agent"]) == ("application/json",
                                                                    "clarify-bot")
    assert sent.headers["Content-Type"] == "application/json"
    assert core.last_json == {"kinds": ["clarify:"], "maxJobs": 2, "leaseSeconds": 60}


# ---------------------------------------------------------------- the faults are aiohttp's own


@asynccontextmanager
async def raw_server(reply: bytes | None) -> AsyncIterator[str]:
    """A TCP server on 127.0.0.1 that reads a request, writes ``reply`` (None: nothing) and
    closes the connection."""
    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        if reply is not None:
            writer.write(reply)
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/v1/jobs/job-1"
    finally:
        server.close()
        await server.wait_closed()


async def _real(url: str) -> None:
    transport = AiohttpTransport(timeout=DEFAULT_TIMEOUT, limits=DEFAULT_LIMITS)
    try:
        await transport.handle(WireRequest("GET", URL(url), {}, None))
    finally:
        await transport.aclose()


@pytest.mark.parametrize(("reply", "fault"), [
    (None, faults.dropped),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"id\"", faults.cut_short),
    (b"NOT HTTP AT ALL\r\n\r\n", faults.garbled),
], ids=["dropped", "cut_short", "garbled"])
async def test_aiohttps_session_raises_the_faults_type_for_the_real_event(reply, fault) -> None:
    async with raw_server(reply) as url:
        with pytest.raises(aiohttp.ClientError) as info:
            await _real(url)
    assert isinstance(info.value, type(fault()))


async def test_aiohttps_session_raises_the_refused_faults_type_on_a_closed_port() -> None:
    async with raw_server(None) as url:
        pass  # closed again: nobody listens on its port now
    with pytest.raises(aiohttp.ClientError) as info:
        await _real(url)
    assert type(info.value) is type(faults.refused())
