"""The whole stack for Slack tests: reference core + worker + Slack adapter + the Slack stand-in.

The worker delivers through the real slack_sdk client to ``LocalSlack`` on 127.0.0.1; people
"click" by sending real signed HTTP requests (Slack's v0 scheme) to the adapter's running aiohttp
server, built by the stand-in as Slack builds them (``LocalSlack.block_actions``), or sent by the
stand-in itself (``stack.slack.click``, connected to the stack's adapter). The core's clock is a
ManualClock; signatures use real time, as Slack's do.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import aiohttp
import pytest
from aiohttp import web
from slack_sdk.signature import SignatureVerifier
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.app import SlackAdapter, build_slack_adapter
from adapters.slack.channel import SlackChannel
from bot.answering.answers import AnswerService
from bot.answering.outbox import OutboxConsumers
from bot.audit import MemorySink
from bot.clock import ManualClock, SystemClock
from bot.core.calls import DEFAULT_LIMITS, DEFAULT_TIMEOUT
from bot.core.client import CoreClient, RetryPolicy
from bot.core.discovery import PROBE_ID
from bot.core.http import AiohttpTransport, WireRequest, WireResponse
from bot.process.runtime import Engine
from bot.reach.recording import ReachRecorder
from bot.settings import ClarifySettings, SlackSettings
from bot.store.base import Store
from bot.store.memory import MemoryStore
from cards.actions import ActionCodec
from devcore.client import DevCoreClient
from devcore.core import ReferenceCore
from devslack import BOT_TOKEN, LocalSlack, Message
from tests.conftest import CLARIFY_TOKEN, extensions_for
from tests.core import faults
from tests.engine.conftest import (
    acme_core,
    acme_engine,
    no_sleep,
)
from tests.support.rigs import Drives

SIGNING_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
ACME_TEAM, ACME_ORG = "T0ACME", "E0ACME"  # the workspace (of its Grid org) the people are in
CODEC_KEY = b"slack e2e tests: action signing key"
PEOPLE = {"U0SARAH": "p-sarah", "U0AHMED": "p-ahmed", "U0PRIYA": "p-priya",
          "U0MARIA": "p-maria", "U0TOM": "p-tom", "U0JONAS": "p-jonas", "U0LEE": "p-lee"}


@pytest.fixture
def core(clock: ManualClock) -> ReferenceCore:
    return acme_core(clock)


@pytest.fixture
async def fake_slack() -> AsyncIterator[LocalSlack]:
    async with LocalSlack() as slack:
        slack.add_workspace(ACME_TEAM, enterprise_id=ACME_ORG, name="Acme")
        for user_id in PEOPLE:
            slack.add_user(user_id, team=ACME_TEAM)
        yield slack


class SlackPeople:
    """People reading their DMs in the fake Slack and pressing buttons as Slack reports them:
    signed requests to the bot's ``/slack/events`` (``url``)."""

    slack: LocalSlack
    url: str
    http: aiohttp.ClientSession
    signing_secret: str

    def cards_of(self, user_id: str, clarification_id: str | None = None) -> list[Message]:
        """The bot's messages in a person's DM (newest last), optionally for one clarification."""
        found = []
        for message in self.slack.dm_of(user_id):
            delivery = ((message.metadata or {}).get("event_payload") or {}).get("delivery", "")
            if clarification_id is None or delivery.startswith(f"{clarification_id}|") \
                    or clarification_id in json.dumps(message.blocks):
                found.append(message)
        return found

    def card(self, user_id: str, clarification_id: str) -> Message:
        cards = self.cards_of(user_id, clarification_id)
        assert cards, f"no card for {user_id}"
        return cards[-1]

    def text_of(self, message: Message) -> str:
        """Everything a person can read in the message."""
        current = next(m for m in self.slack.messages
                       if m.channel == message.channel and m.ts == message.ts)
        return current.text + json.dumps(current.blocks, ensure_ascii=False)

    async def click(self, user_id: str, message: Message, action_id: str, *,
                    team_id: str = "T0ACME", enterprise_id: str | None = "E0ACME",
                    payload_edit: Any = None, timestamp: float | None = None,
                    secret: str | None = None, seen: Message | None = None
                    ) -> aiohttp.ClientResponse:
        """Press a button of a message as Slack would report it (signed block_actions);
        ``seen`` is the message as the person still sees it (a copy taken before an update)."""
        current = seen or next(m for m in self.slack.messages
                               if m.channel == message.channel and m.ts == message.ts)
        payload = self.slack.block_actions(user_id, channel=current.channel, ts=current.ts,
                                           action_id=action_id, message=current)
        from_workspace(payload, team_id, enterprise_id)
        if payload_edit is not None:
            payload_edit(payload)
        return await self.post_payload(payload, timestamp=timestamp, secret=secret)

    async def submit(self, user_id: str, view: dict[str, Any], values: dict[str, Any], *,
                     team_id: str = "T0ACME", enterprise_id: str | None = "E0ACME"
                     ) -> aiohttp.ClientResponse:
        """Submit a modal (as the stand-in keeps it, or made up) with the given input values
        (block_id → element state)."""
        payload = self.slack.view_submission(user_id, {"id": "V0001", **view}, values)
        from_workspace(payload, team_id, enterprise_id)
        return await self.post_payload(payload)

    async def post_payload(self, payload: dict[str, Any], *, timestamp: float | None = None,
                           secret: str | None = None, raw: bytes | None = None
                           ) -> aiohttp.ClientResponse:
        body = raw if raw is not None else urlencode({"payload": json.dumps(payload)}).encode()
        return await self.post_signed(body, timestamp=timestamp, secret=secret)

    async def post_signed(self, body: bytes, *, timestamp: float | None = None,
                          secret: str | None = None, headers: dict[str, str] | None = None,
                          content_type: str = "application/x-www-form-urlencoded"
                          ) -> aiohttp.ClientResponse:
        stamp = str(int(timestamp if timestamp is not None else time.time()))
        signature = SignatureVerifier(secret or self.signing_secret).generate_signature(
            timestamp=stamp, body=body)
        sent_headers = {"Content-Type": content_type, "X-Slack-Request-Timestamp": stamp,
                        "X-Slack-Signature": signature or ""}
        sent_headers.update(headers or {})
        response = await self.http.post(f"{self.url}/slack/events", data=body,
                                        headers=sent_headers)
        await response.read()
        return response


# repr=False: on Python 3.12, asyncio's runner formats the task that made this fixture (its
# value included) as it restores the SIGINT handler; a generated repr walks every part (~30 ms)
@dataclass(repr=False)
class Stack(SlackPeople, Drives):
    core: ReferenceCore
    clock: ManualClock
    bot: CoreClient  # reads what the core recorded (the full contract), never the bot's client
    dev: DevCoreClient
    slack: LocalSlack
    store: Store
    engine: Engine
    answers: AnswerService
    consumers: OutboxConsumers
    adapter: SlackAdapter
    sink: MemorySink
    url: str
    http: aiohttp.ClientSession
    signing_secret: str = SIGNING_SECRET
    core_url: str = ""
    contract: str = "full"  # what the reference core serves the bot

    async def settle(self) -> None:
        """Let every answer that was acknowledged finish (outbox, core, card updates)."""
        await self.adapter.drain()
        await self.consumers.run_burst()
        await self.answers.followups.drain()
        await self.engine.interactions.board.drain()  # App Homes re-published
        await self.engine.interactions.declines.tasks.drain()  # a next turn on a held lease


class Switchable:
    """The real transport (aiohttp's session) that can be switched off (connection refused, as
    aiohttp raises it) or slowed for some calls."""

    def __init__(self) -> None:
        self.inner = AiohttpTransport(timeout=DEFAULT_TIMEOUT, limits=DEFAULT_LIMITS)
        self.down = False
        self.delay = 0.0
        self.slow: Callable[[WireRequest], bool] = lambda _: True
        self.fail_after: Callable[[WireRequest], bool] = lambda _: False
        self.answers_taken = 0  # answer POSTs the core actually received
        self.answering = asyncio.Event()  # set when an answer POST is sent

    async def handle(self, request: WireRequest) -> WireResponse:
        if self.down:
            raise faults.refused("the core is switched off")
        is_answer = request.method == "POST" and request.url.path.endswith("/answer") \
            and PROBE_ID not in request.url.path  # the extension discovery's probe is none
        if is_answer:
            self.answering.set()
        if self.delay and self.slow(request):
            await asyncio.sleep(self.delay)  # a slow core, in real time: the ack must not wait
        response = await self.inner.handle(request)
        if is_answer:
            self.answers_taken += 1
        if self.fail_after(request):
            self.down = True  # the core answered, then went away before anything else
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


@pytest.fixture
def transport() -> Switchable:
    return Switchable()


@pytest.fixture
async def switchable_client(core_url: str, transport: Switchable, contract: str
                            ) -> AsyncIterator[CoreClient]:
    async with CoreClient(base_url=core_url, token=CLARIFY_TOKEN, transport=transport,
                          retry=RetryPolicy(max_attempts=1),
                          extensions=extensions_for(contract)) as client:
        yield client


async def responders(reader: CoreClient, cid: str) -> list[tuple[str, int | None]]:
    """Who answered what, read through a client that is never switched off."""
    c = await reader.get_clarification(clarification_id=cid)
    return [(r.responder, r.answer_index) for r in c.responses]


def from_workspace(payload: dict[str, Any], team_id: str, enterprise_id: str | None) -> None:
    """The payload as if it came from workspace ``team_id`` (of org ``enterprise_id``), whatever
    the stand-in knows of the person: a test names the workspace a callback claims."""
    payload["user"]["team_id"] = team_id
    payload["team"] = {"id": team_id, "domain": "acme",
                       **({"enterprise_id": enterprise_id} if enterprise_id else {})}
    payload["enterprise"] = {"id": enterprise_id} if enterprise_id else None
    payload.pop("is_enterprise_install", None)


@pytest.fixture
async def make_stack(core: ReferenceCore, clock: ManualClock, core_url: str,
                     bot_client: CoreClient, truth: CoreClient, contract: str,
                     dev_client: DevCoreClient, fake_slack: LocalSlack):
    """Build a stack (optionally with other settings or store); servers close after the test."""
    runners: list[web.AppRunner] = []
    sessions: list[aiohttp.ClientSession] = []

    async def make(*, clarify: ClarifySettings | None = None, store: Store | None = None,
                   core_client: CoreClient | None = None, slack: SlackSettings | None = None,
                   reach: ReachRecorder | None = None) -> Stack:
        store = store or MemoryStore(clock=clock)
        client = core_client or bot_client
        sink = MemorySink()
        codec = ActionCodec(CODEC_KEY)
        web_client = AsyncWebClient(token=BOT_TOKEN, base_url=fake_slack.url)
        channel = SlackChannel(client=web_client, codec=codec, store=store, clock=clock,
                               sleep=no_sleep)
        engine = acme_engine(core=client, store=store, channel=channel, sink=sink, clock=clock,
                             clarify=clarify, slack=slack, reach=reach)
        answers = engine.answers
        engine.worker.also_check(channel.check_credentials)
        consumers = OutboxConsumers(answers)
        adapter = build_slack_adapter(
            signing_secret=SIGNING_SECRET, client=web_client,
            answers=answers, interactions=engine.interactions, channel=channel, codec=codec,
            audit=engine.audit, clock=clock, refusals=engine.refusals,
            signature_clock=SystemClock())
        app = web.Application()
        app.add_routes(adapter.routes())
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        runners.append(runner)
        port = runner.addresses[0][1]
        http = aiohttp.ClientSession()
        sessions.append(http)
        fake_slack.connect(f"http://127.0.0.1:{port}/slack/events", SIGNING_SECRET)
        return Stack(core=core, clock=clock, bot=truth, dev=dev_client, slack=fake_slack,
                     store=store, engine=engine, answers=answers, consumers=consumers,
                     adapter=adapter, sink=sink,
                     url=f"http://127.0.0.1:{port}", http=http, core_url=core_url,
                     contract=contract)

    yield make
    for http in sessions:
        await http.close()
    for runner in runners:
        await runner.cleanup()


@pytest.fixture
async def stack(make_stack: Any) -> Stack:
    return await make_stack()


async def payload_of(stack: Stack, user_id: str, message: Message, action_id: str,
                     **kwargs: Any) -> dict[str, Any]:
    """The block_actions payload ``stack.click`` would send, without sending it."""
    kept: dict[str, Any] = {}

    async def keep(payload: dict[str, Any], **_: Any) -> None:
        kept.update(json.loads(json.dumps(payload)))

    stack.post_payload = keep  # type: ignore[method-assign]
    try:
        await stack.click(user_id, message, action_id, **kwargs)
    finally:
        del stack.post_payload
    return kept
