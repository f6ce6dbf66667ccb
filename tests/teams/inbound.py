"""The Teams inbound stack: reference core + engine + the Teams adapter on a real aiohttp server
(its fixtures are made visible by the conftest).

Tokens are signed with a local RSA key whose JWKS is served on 127.0.0.1, and the validator is
pointed there (``KeyDirectory``): validation is never switched off. The bot's own tokens come
from a recording stand-in for msal, so a test can tell whether the bot ever asked for one.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from microsoft_agents.hosting.core import (
    AccessTokenProviderBase,
    AgentAuthConfiguration,
    ConnectionManager,
    OutboundHostValidator,
)

from adapters.teams.app import TeamsAdapter, build_teams_adapter
from adapters.teams.auth import KeyDirectory, TokenGate
from adapters.teams.invokes import Invokes
from bot.answering.outbox import OutboxConsumers
from bot.audit import MemorySink
from bot.channels.recording import RecordingChannel
from bot.clock import ManualClock
from bot.core.client import CoreClient
from bot.process.runtime import Engine, EngineParts, build_engine
from bot.process.worker import WorkerConfig
from bot.reach.recording import ReachRecorder
from bot.settings import ClarifySettings, TeamsSettings, TeamsTenant
from bot.store.base import Store
from bot.store.memory import MemoryStore
from cards.actions import ActionCodec, ActionKind, ActionRef
from devcore.client import DevCoreClient
from devcore.core import ReferenceCore
from tests.engine.conftest import ACME_SLACK, no_sleep
from tests.teams.tokens import APP_ID, SERVICE_URL, jwks

ACME_AAD = "5f3c1a2b-7d4e-4c1a-9b2e-0a11ce000001"
GLOBEX_AAD = "7a7a7a7a-1b1b-4c2c-8d3d-4e4e4e4e4e4e"  # served by nobody here
SARAH_AAD = "8f1c2d3e-0000-4000-8000-00000000a001"
STRANGER_AAD = "9e9e9e9e-0000-4000-8000-00000000ffff"  # no PERSON has this alias
OTHER_APP_ID = "22222222-3333-4444-8555-666666666666"
CODEC_KEY = b"teams tests: the action signing key"
TEAMS = TeamsSettings(app_type="single-tenant", app_id=APP_ID, app_tenant_id=ACME_AAD,
                      tenants=(TeamsTenant(aad_tenant_id=ACME_AAD, tenant="acme"),))

def activity(kind: str = "message", *, user: str | None = SARAH_AAD, tenant: str = ACME_AAD,
             service_url: str = SERVICE_URL, conversation_type: str = "personal",
             **extra: Any) -> dict[str, Any]:
    """An activity as Teams sends it to the bot (1:1 by default)."""
    sender: dict[str, Any] = {"id": f"29:{user or 'anon'}", "name": "Someone"}
    if user is not None:
        sender["aadObjectId"] = user
    return {"type": kind, "id": "f:1", "channelId": "msteams", "serviceUrl": service_url,
            "timestamp": "2026-07-06T09:00:00.123Z", "from": sender,
            "recipient": {"id": f"28:{APP_ID}", "name": "Clarify"},
            "conversation": {"id": f"a:{user or 'anon'}", "conversationType": conversation_type,
                             "tenantId": tenant},
            "channelData": {"tenant": {"id": tenant}}, **extra}


def action_data(codec: ActionCodec, clarification_id: str, *, candidate: int | None = 0,
                kind: ActionKind = ActionKind.ANSWER, **fields: Any) -> dict[str, Any]:
    ref = ActionRef(kind=kind, card_ref="card-1", clarification_id=clarification_id,
                    candidate=candidate, **fields)
    return codec.teams_data(ref)


def invoke(data: dict[str, Any], *, verb: str = "clarify.answer", **extra: Any
           ) -> dict[str, Any]:
    """An ``Action.Execute`` click on a card the bot sent (``replyToId``)."""
    return activity("invoke", name="adaptiveCard/action", replyToId="1:card",
                    value={"action": {"type": "Action.Execute", "verb": verb, "data": data}},
                    **extra)


@dataclass
class Tokens(AccessTokenProviderBase):
    """msal's stand-in: counts what the bot asked for (a real one would call Entra)."""

    asked: list[str] = field(default_factory=list)

    async def get_access_token(self, resource_url: str, scopes: list[str],
                               force_refresh: bool = False) -> str:
        self.asked.append(resource_url)
        return "bot-token-from-msal"

    @property
    def configuration(self) -> AgentAuthConfiguration:
        return TokenGate.build(TEAMS).config

    def get_token_credential(self) -> Any:
        raise NotImplementedError


# repr=False: on Python 3.12, asyncio's runner formats the task that made this fixture (its
# value included) as it restores the SIGINT handler; a generated repr walks every part (~30 ms)
@dataclass(repr=False)
class TeamsStack:
    core: ReferenceCore
    clock: ManualClock
    dev: DevCoreClient
    reader: CoreClient  # never switched off: what the core holds
    store: Store
    engine: Engine
    adapter: TeamsAdapter
    channel: Any  # a RecordingChannel, or the Teams channel on a fake connector
    consumers: OutboxConsumers
    sink: MemorySink
    tokens: Tokens
    codec: ActionCodec
    url: str
    http: aiohttp.ClientSession
    contract: str = "full"  # what the reference core serves the bot

    async def post(self, body: dict[str, Any] | bytes, token: str | None = None, *,
                   headers: dict[str, str] | None = None) -> aiohttp.ClientResponse:
        sent = {"Content-Type": "application/json", **(headers or {})}
        if token is not None:
            sent["Authorization"] = f"Bearer {token}"
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        response = await self.http.post(f"{self.url}/api/messages", data=raw, headers=sent)
        await response.read()
        return response

    async def responses(self, cid: str) -> list[tuple[str, int | None]]:
        c = await self.reader.get_clarification(clarification_id=cid)
        return [(r.responder, r.answer_index) for r in c.responses]

    async def settle(self) -> None:
        await self.adapter.drain()
        await self.consumers.run_burst()
        await self.engine.answers.followups.drain()
        await self.engine.interactions.declines.tasks.drain()  # a next turn on a held lease


@pytest.fixture
async def jwks_url() -> AsyncIterator[str]:
    """The local key's JWKS on 127.0.0.1, where the validator is pointed."""
    async def keys(_: web.Request) -> web.Response:
        return web.json_response(jwks())

    app = web.Application()
    app.router.add_get("/keys", keys)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    yield f"http://127.0.0.1:{runner.addresses[0][1]}/keys"
    await runner.cleanup()


def teams_engine(*, core: CoreClient, store: Store, channel: Any, sink: MemorySink,
                 clock: ManualClock, teams: TeamsSettings = TEAMS,
                 reach: ReachRecorder | None = None) -> Engine:
    return build_engine(EngineParts(
        core=core, store=store, channels={"teams": channel},
        clarify=ClarifySettings(channels=("teams",), hours={"enabled": False}),
        clock=clock, audit_sink=sink,
        slack=ACME_SLACK, teams=teams, sleep=no_sleep,
        worker=WorkerConfig(concurrency=4, heartbeat_seconds=3600), reach=reach))


def teams_adapter(engine: Engine, *, store: Store, clock: ManualClock, codec: ActionCodec,
                  jwks_url: str, tokens: Tokens, teams: TeamsSettings = TEAMS,
                  hosts: OutboundHostValidator | None = None) -> TeamsAdapter:
    gate = TokenGate.build(teams, keys=KeyDirectory(lambda _: jwks_url))

    def provider(_: AgentAuthConfiguration) -> AccessTokenProviderBase:
        return tokens

    connections = ConnectionManager(provider_factory=provider,
                                    connections_configurations={"SERVICE_CONNECTION": gate.config})
    invokes = Invokes(answers=engine.answers, interactions=engine.interactions, codec=codec,
                      clock=clock)
    return build_teams_adapter(
        gate=gate, connections=connections, invokes=invokes, interactions=engine.interactions,
        host_validator=hosts or OutboundHostValidator(enabled=not gate.anonymous),
        conversations=store, refusals=engine.refusals, audit=engine.audit, clock=clock)


@pytest.fixture
async def make_teams(core: ReferenceCore, clock: ManualClock, bot_client: CoreClient,
                     truth: CoreClient, contract: str, dev_client: DevCoreClient,
                     jwks_url: str):
    runners: list[web.AppRunner] = []
    sessions: list[aiohttp.ClientSession] = []

    async def make(*, core_client: CoreClient | None = None, teams: TeamsSettings = TEAMS,
                   store: Store | None = None, channel: Any = None,
                   hosts: OutboundHostValidator | None = None,
                   codec: ActionCodec | None = None,
                   reach: ReachRecorder | None = None) -> TeamsStack:
        """``channel``, ``store``, ``hosts``: the Teams channel on a fake connector, its store
        and a host validator allowing the fake (else a recording channel)."""
        store = store or MemoryStore(clock=clock)
        sink, tokens = MemorySink(), Tokens()
        channel = channel or RecordingChannel(platform="teams")
        codec = codec or ActionCodec(CODEC_KEY)
        engine = teams_engine(core=core_client or bot_client, store=store, channel=channel,
                              sink=sink, clock=clock, teams=teams, reach=reach)
        adapter = teams_adapter(engine, store=store, clock=clock, codec=codec,
                                jwks_url=jwks_url, tokens=tokens, teams=teams, hosts=hosts)
        app = web.Application()
        app.add_routes(adapter.routes())
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        runners.append(runner)
        http = aiohttp.ClientSession()
        sessions.append(http)
        return TeamsStack(core=core, clock=clock, dev=dev_client, reader=truth,
                          store=store, engine=engine,
                          adapter=adapter, channel=channel,
                          consumers=OutboxConsumers(engine.answers), sink=sink, tokens=tokens,
                          codec=codec, url=f"http://127.0.0.1:{runner.addresses[0][1]}",
                          http=http, contract=contract)

    yield make
    for http in sessions:
        await http.close()
    for runner in runners:
        await runner.cleanup()


@pytest.fixture
async def teams(make_teams: Any) -> TeamsStack:
    return await make_teams()


def now_utc() -> datetime:
    return datetime.now(UTC)
