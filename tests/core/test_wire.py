"""The core client over aiohttp's session (``bot.core.http.AiohttpTransport``), against a real
server on 127.0.0.1.

The rest of tests/core gives the client a fake core in place of that session, under the same
wire; these tests cover what only the session does: the pool, keep-alive, timeouts, refused and
dropped connections, redirects, and the URL as sent.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

import httpx
import pytest
from aiohttp import web

from bot.core.client import CoreClient, RetryPolicy
from bot.core.errors import CoreConnectError, CoreTimeout, UnexpectedResponse
from tests.core.conftest import TOKEN, job_view
from tests.support.processes import free_port

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass
class Server:
    url: str
    seen: list[web.Request] = field(default_factory=list)
    peers: set[tuple[str, int]] = field(default_factory=set)
    handler: Handler | None = None


@pytest.fixture
async def server() -> AsyncIterator[Server]:
    state = Server(url="")

    async def handle(request: web.Request) -> web.StreamResponse:
        state.seen.append(request)
        peer = request.transport.get_extra_info("peername") if request.transport else None
        if peer:
            state.peers.add(peer[:2])
        assert state.handler is not None
        return await state.handler(request)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    # a handler that never answers is cancelled at cleanup, not awaited for 60 s
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    state.url = f"http://127.0.0.1:{port}/core"
    yield state
    await runner.cleanup()


def client(url: str, **kwargs: object) -> CoreClient:
    async def no_sleep(_: float) -> None:
        return None

    return CoreClient(base_url=url, token=TOKEN, sleep=no_sleep,  # type: ignore[arg-type]
                      random=lambda: 0.5, **kwargs)  # type: ignore[arg-type]


async def test_requests_carry_the_path_query_token_and_json_body(server: Server) -> None:
    """The base URL's path is kept, path values are quoted once, the query is encoded, the
    body is compact JSON, and connections are kept alive across calls."""
    async def answer(request: web.Request) -> web.Response:
        return web.json_response(job_view() if request.method == "GET" else
                                 {"jobs": [], "serverTime": "2026-01-01T00:00:00Z"})
    server.handler = answer
    async with client(server.url) as core:
        await core.get_job(job_id="job/1 ä")
        await core.get_job(job_id="job-2")
    first = server.seen[0]
    assert first.raw_path == "/core/v1/jobs/job%2F1%20%C3%A4"
    assert first.headers["Authorization"] == f"Bearer {TOKEN}"
    assert first.headers["Accept"] == "application/json"
    assert len(server.peers) == 1  # one connection, kept alive


async def test_a_dropped_connection_is_retried_and_a_refused_one_is_a_connect_error(
    server: Server,
) -> None:
    calls = 0

    async def drop_first(request: web.Request) -> web.StreamResponse:
        nonlocal calls
        calls += 1
        if calls == 1:
            assert request.transport is not None
            request.transport.close()  # the core went away mid-request
            return web.Response()
        return web.json_response(job_view())
    server.handler = drop_first
    async with client(server.url) as core:
        job = await core.get_job(job_id="job-1")
    assert job.id == "job-1" and calls == 2

    port = free_port()  # a port nobody listens on
    async with client(f"http://127.0.0.1:{port}", retry=RetryPolicy(max_attempts=2)) as core:
        with pytest.raises(CoreConnectError) as info:
            await core.get_job(job_id="job-1")
    assert TOKEN not in str(info.value)


async def test_a_slow_core_is_a_timeout_after_the_retries(server: Server) -> None:
    calls = 0

    async def slow(request: web.Request) -> web.Response:
        nonlocal calls
        calls += 1
        await asyncio.Event().wait()  # never answers
        return web.json_response(job_view())
    server.handler = slow
    timeout = httpx.Timeout(0.05, connect=1.0)
    async with client(server.url, timeout=timeout, retry=RetryPolicy(max_attempts=2)) as core:
        with pytest.raises(CoreTimeout):
            await core.get_job(job_id="job-1")
    assert calls == 2


async def test_a_redirect_is_not_followed(server: Server) -> None:
    """A redirect never carries the token elsewhere: it is an unexpected answer."""
    async def redirect(request: web.Request) -> web.Response:
        if request.path.startswith("/elsewhere"):
            return web.json_response(job_view())
        raise web.HTTPFound("/elsewhere")
    server.handler = redirect
    async with client(server.url) as core:
        with pytest.raises(UnexpectedResponse):
            await core.get_job(job_id="job-1")
    assert [r.path for r in server.seen] == ["/core/v1/jobs/job-1"]


async def test_the_pool_is_bounded_by_max_connections(server: Server) -> None:
    release, two = asyncio.Event(), asyncio.Event()
    waiting = 0

    async def hold(request: web.Request) -> web.Response:
        nonlocal waiting
        waiting += 1
        if waiting == 2:
            two.set()
        await release.wait()
        return web.json_response(job_view())
    server.handler = hold
    limits = httpx.Limits(max_connections=2, max_keepalive_connections=2)
    async with client(server.url, limits=limits) as core:
        calls = [asyncio.create_task(core.get_job(job_id=f"job-{n}")) for n in range(5)]
        await asyncio.wait_for(two.wait(), 10)
        for _ in range(50):  # turns of the loop in which a third connection could arrive
            await asyncio.sleep(0)
        assert waiting == 2
        release.set()
        await asyncio.gather(*calls)
    assert len(server.peers) == 2


async def test_a_closed_client_refuses_to_send(server: Server) -> None:
    core = client(server.url)
    await core.aclose()
    await core.aclose()  # twice is fine
    with pytest.raises(RuntimeError):
        await core.get_job(job_id="job-1")


async def test_a_reply_that_is_not_json_is_an_unexpected_response(server: Server) -> None:
    async def garbage(request: web.Request) -> web.Response:
        return web.Response(text="<html>gateway</html>", content_type="text/html")
    server.handler = garbage
    async with client(server.url) as core:
        with pytest.raises(UnexpectedResponse) as info:
            await core.get_job(job_id="job-1")
    assert "<html>" not in str(info.value) and "does not match the contract" in str(info.value)


async def test_no_keepalive_opens_a_connection_per_request(server: Server) -> None:
    async def answer(request: web.Request) -> web.Response:
        return web.json_response(job_view())
    server.handler = answer
    limits = httpx.Limits(max_connections=4, max_keepalive_connections=0)
    async with client(server.url, limits=limits) as core:
        await core.get_job(job_id="job-1")
        await core.get_job(job_id="job-2")
    assert len(server.peers) == 2
