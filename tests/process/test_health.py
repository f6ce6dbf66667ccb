"""Readiness: bounded, concurrent, cached checks that name a refused setting."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import aiohttp
import pytest
from aiohttp import web
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.channel import SlackChannel
from bot.channel import CredentialsRejected
from bot.clock import SystemClock
from bot.core.client import CoreClient, RetryPolicy
from bot.process.health import Check, Connecting, Readiness
from bot.process.service import health_routes, readiness_checks
from bot.store.memory import MemoryStore
from cards.actions import ActionCodec


class Dial:
    """A monotonic clock the test turns by hand."""

    def __init__(self) -> None:
        self.seconds = 1000.0

    def __call__(self) -> float:
        return self.seconds


async def test_a_result_is_reused_until_it_expires() -> None:
    """A check's result is cached for its TTL, then probed again."""
    calls: list[int] = []
    dial = Dial()

    async def probe() -> None:
        calls.append(1)

    check = Check("store", probe, ttl_seconds=60, now=dial)
    assert [await check.result() for _ in range(3)] == ["ok"] * 3
    dial.seconds += 59
    await check.result()
    assert len(calls) == 1
    dial.seconds += 2
    await check.result()
    assert len(calls) == 2


async def test_connecting_is_not_kept_the_next_ask_looks_again() -> None:
    """"connecting" (the bot's own connection being made) is not cached: the next ask probes
    again and reads "ok" once the connection is made; "ok" is then kept for the TTL."""
    calls: list[int] = []
    connected = asyncio.Event()

    async def probe() -> None:
        calls.append(1)
        if not connected.is_set():
            raise Connecting()

    check = Check("slack_socket", probe, ttl_seconds=5, now=Dial())
    assert [await check.result() for _ in range(2)] == ["connecting"] * 2
    connected.set()
    assert [await check.result() for _ in range(2)] == ["ok"] * 2
    assert len(calls) == 3


async def test_concurrent_requests_share_one_probe_and_refusals_name_the_setting() -> None:
    """Many readiness requests at once run one probe; a refusal reads "rejected: SETTING"."""
    calls: list[int] = []
    gate = asyncio.Event()

    async def probe() -> None:
        calls.append(1)
        await gate.wait()
        raise CredentialsRejected("invalid_auth", setting="SLACK_BOT_TOKEN")

    check = Check("slack", probe, ttl_seconds=60, now=Dial())
    waiting = [asyncio.create_task(check.result()) for _ in range(5)]
    await asyncio.sleep(0)
    gate.set()
    assert await asyncio.gather(*waiting) == ["rejected: SLACK_BOT_TOKEN"] * 5
    assert len(calls) == 1


async def test_a_hanging_dependency_is_a_timeout_not_a_hang() -> None:
    """A probe that never returns is reported as "timeout" after the check's bound."""
    async def never() -> None:
        await asyncio.Event().wait()

    readiness = Readiness([Check("core", never, ttl_seconds=5, timeout_seconds=0.05)])
    assert await readiness.results() == {"core": "timeout"}


@pytest.fixture
async def silent_url() -> AsyncIterator[str]:
    """An HTTP address that accepts connections and never answers."""
    held: list[asyncio.StreamWriter] = []

    async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)
        await reader.read()

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/"
    finally:
        server.close()
        for writer in held:
            writer.close()


@pytest.mark.slow
async def test_readyz_answers_within_two_seconds_when_core_and_slack_hang(silent_url: str
                                                                          ) -> None:
    """With the core and Slack accepting connections but never answering, /readyz still
    answers (503, each named "timeout") inside a 2-second client deadline."""
    store = MemoryStore()
    slack = SlackChannel(client=AsyncWebClient(token="xoxb-x", base_url=silent_url),
                         codec=ActionCodec(b"k" * 32), store=store, clock=SystemClock())
    async with CoreClient(base_url=silent_url.rstrip("/"), token="t",
                          retry=RetryPolicy(max_attempts=1)) as core:
        app = web.Application()
        checks = readiness_checks(store=store, core=core,
                                  credentials={"slack": slack.check_credentials})
        app.add_routes(health_routes(checks))
        runner = web.AppRunner(app)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        try:
            url = f"http://127.0.0.1:{runner.addresses[0][1]}/readyz"
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=2)) as http, \
                    http.get(url) as ready:
                assert ready.status == 503
                body = await ready.json()
        finally:
            await runner.cleanup()
    assert body["checks"] == {"store": "ok", "core": "timeout", "slack": "timeout"}
