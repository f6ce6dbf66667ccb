"""Slack's retry loops take their waits from ``bot.retry``: the Web API calls (``SLACK_RETRY``:
4 tries, 1 s doubling, half of each wait random; a 429's Retry-After a floor, waited in full)
and Socket Mode's attempts to get a WebSocket URL (``SOCKET_RETRY``: until it comes, 1 s
doubling to 30 s). Through the fake Slack Web API over HTTP, the waits recorded from the
injected sleep, the draws from the injected random source."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.channel import SlackChannel
from adapters.slack.mount import SOCKET_RETRY, Hosted
from adapters.slack.web import web_client
from adapters.slack.webapi import SLACK_RETRY
from bot.channel import ChannelError
from bot.clock import ManualClock
from bot.settings import SlackRates
from bot.store.memory import MemoryStore
from cards.actions import ActionCodec
from devslack import APP_TOKEN, BOT_TOKEN, LocalSlack
from tests.support.processes import free_port

CODEC = ActionCodec(b"k" * 32)
BODY = {"text": "t", "blocks": []}


@dataclass
class Waits:
    taken: list[float] = field(default_factory=list)

    async def __call__(self, seconds: float) -> None:
        self.taken.append(seconds)


@pytest.fixture
async def client(fake_slack: LocalSlack) -> AsyncIterator[AsyncWebClient]:
    web = AsyncWebClient(token=BOT_TOKEN, base_url=fake_slack.url)
    yield web
    if web.session is not None:
        await web.session.close()


def _channel(client: AsyncWebClient, waits: Waits, draw: float, *, paced: bool = True
             ) -> SlackChannel:
    clock = ManualClock()
    return SlackChannel(client=client, codec=CODEC, store=MemoryStore(clock=clock), clock=clock,
                        sleep=waits, random=lambda: draw, rates=SlackRates(paced=paced))


async def _posted(client: AsyncWebClient) -> tuple[str, str]:
    """A message of the bot's in Sarah's DM, to update."""
    posted = await client.chat_postMessage(channel="U0SARAH", text="a card")
    return str(posted["channel"]), str(posted["ts"])


@pytest.mark.parametrize(("draw", "waits"), [(1.0, [1.0, 2.0, 4.0]), (0.0, [0.5, 1.0, 2.0])])
async def test_5xx_answers_are_retried_with_the_policys_waits(
        fake_slack: LocalSlack, client: AsyncWebClient, draw: float, waits: list[float]) -> None:
    """Three 500s, then chat.update lands: three waits, each its ceiling with a draw of 1 and
    half of it with a draw of 0 (before: 1, 2, 4 s whatever happened)."""
    dm, ts = await _posted(client)
    waited = Waits()
    fake_slack.fail_next("chat.update", status=500, times=3)
    await _channel(client, waited, draw).replace(dm, ts, BODY, workspace=None)
    assert waited.taken == waits == [SLACK_RETRY.delay(n, draw=draw) for n in (1, 2, 3)]
    assert len(fake_slack.calls_to("chat.update")) == 4


async def test_the_last_5xx_gives_up_without_waiting(fake_slack: LocalSlack,
                                                     client: AsyncWebClient) -> None:
    dm, ts = await _posted(client)
    waited = Waits()
    fake_slack.fail_next("chat.update", status=500, times=10)
    with pytest.raises(ChannelError) as raised:
        await _channel(client, waited, 1.0).replace(dm, ts, BODY, workspace=None)
    assert not raised.value.certain and waited.taken == [1.0, 2.0, 4.0]
    assert len(fake_slack.calls_to("chat.update")) == SLACK_RETRY.max_attempts


async def test_an_unpaced_429_waits_at_least_its_retry_after(fake_slack: LocalSlack,
                                                             client: AsyncWebClient) -> None:
    """Outside the shared buckets a 429 is waited here: its Retry-After (3 s) while that is
    longer than the backoff, then the backoff (4 s) once that is longer."""
    dm, ts = await _posted(client)
    waited = Waits()
    fake_slack.fail_next("chat.update", status=429, retry_after=3, times=3)
    await _channel(client, waited, 1.0, paced=False).replace(dm, ts, BODY, workspace=None)
    assert waited.taken == [3.0, 3.0, 4.0]


async def test_a_retry_after_that_is_no_finite_number_waits_the_default(
        fake_slack: LocalSlack, client: AsyncWebClient) -> None:
    """A Retry-After of 401 digits (a float of infinity) is no wait anyone can follow: read as
    the default second, not a sleep that never ends and a bucket blocked for ever."""
    dm, ts = await _posted(client)
    waited = Waits()
    fake_slack.fail_next("chat.update", status=429, retry_after=10**400, times=1)
    await _channel(client, waited, 1.0, paced=False).replace(dm, ts, BODY, workspace=None)
    assert waited.taken == [1.0]


async def test_a_refused_connection_backs_off(client: AsyncWebClient) -> None:
    """Nothing listens: the call is tried four times, with the policy's waits between (it was
    a flat 1 s), and given up as certainly not sent."""
    nowhere = web_client(token=BOT_TOKEN, base_url=f"http://127.0.0.1:{free_port()}/api/")
    waited = Waits()
    try:
        with pytest.raises(ChannelError) as raised:
            await _channel(nowhere, waited, 1.0).replace("D0X", "1.0", BODY, workspace=None)
    finally:
        if nowhere.session is not None:
            await nowhere.session.close()
    assert raised.value.certain and raised.value.reason == "unavailable"
    assert waited.taken == [1.0, 2.0, 4.0]


async def test_a_dropped_connection_is_resent_by_the_policy_only() -> None:
    """A server that reads each request and hangs up: slack_sdk's own handler would send
    each attempt twice (on real time); the channel's client sends it once per attempt of
    SLACK_RETRY, whose waits are the ones taken."""
    requests = 0

    async def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal requests
        await reader.readuntil(b"\r\n\r\n")
        requests += 1
        writer.close()

    server = await asyncio.start_server(hang_up, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    dropping = web_client(token=BOT_TOKEN, base_url=f"http://127.0.0.1:{port}/api/")
    waited = Waits()
    try:
        with pytest.raises(ChannelError) as raised:
            await _channel(dropping, waited, 1.0).replace("D0X", "1.0", BODY, workspace=None)
    finally:
        if dropping.session is not None:
            await dropping.session.close()
        server.close()
        await server.wait_closed()
    assert not raised.value.certain  # it may have been taken
    assert requests == SLACK_RETRY.max_attempts and waited.taken == [1.0, 2.0, 4.0]


# ---------------------------------------------------------------- Socket Mode


@dataclass
class SocketClient:
    web_client: AsyncWebClient
    app_token: str = APP_TOKEN
    wss_uri: str | None = None


@dataclass
class Socket:
    """What ``Hosted.connect`` uses of slack_sdk's Socket Mode handler."""

    client: SocketClient
    connected: int = 0

    async def connect_async(self) -> None:
        self.connected += 1


async def test_socket_mode_url_retries_follow_the_policy(fake_slack: LocalSlack,
                                                         client: AsyncWebClient) -> None:
    """apps.connections.open fails seven times (Slack away), then hands out the URL: the waits
    double from 1 s and stay at the 30 s cap (before: 1, 2, 5, 10, 30 s), then the
    connection is made once."""
    fake_slack.socket_url = "wss://127.0.0.1/link"
    fake_slack.fail_next("apps.connections.open", status=503, times=7)
    sock = Socket(SocketClient(web_client=client))
    waited = Waits()
    hosted = Hosted(adapter=None, socket=sock, sleep=waited,  # type: ignore[arg-type]
                    random=lambda: 1.0)
    await hosted.connect()
    assert waited.taken == [1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0]
    assert waited.taken == [SOCKET_RETRY.ceiling(n) for n in range(1, 8)]
    assert sock.client.wss_uri == "wss://127.0.0.1/link" and sock.connected == 1


async def test_socket_mode_url_retries_are_jittered(fake_slack: LocalSlack,
                                                    client: AsyncWebClient) -> None:
    fake_slack.socket_url = "wss://127.0.0.1/link"
    fake_slack.fail_next("apps.connections.open", status=503, times=3)
    waited = Waits()
    hosted = Hosted(adapter=None, socket=Socket(SocketClient(web_client=client)),  # type: ignore[arg-type]
                    sleep=waited, random=lambda: 0.0)
    await hosted.connect()
    assert waited.taken == [0.5, 1.0, 2.0]
