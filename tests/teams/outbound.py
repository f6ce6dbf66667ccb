"""The Teams channel against a fake Bot Connector over real HTTP on 127.0.0.1 (its fixtures are
imported by the conftest).

The channel is built as production builds it (one shared aiohttp session, a token provider, the
store's shared rate buckets), with the fake's origin as the one local connector host allowed.
Time comes from a manual clock; every wait the channel takes is recorded and moves that clock.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import pytest

from adapters.teams.channel import TeamsChannel
from adapters.teams.connector import Connector, ConnectorHosts, Limits
from bot.channel import Address, TeamsReach
from bot.clock import ManualClock
from bot.settings import TeamsSettings, TeamsTenant
from bot.store.base import DeliveryKey, Store
from bot.store.memory import MemoryStore
from cards.actions import ActionCodec
from devcore.core import ReferenceCore, load_scenario
from devcore.scenario import read_scenario
from tests.teams.fakeconnector import TOKEN, FakeConnector

APP_ID = "0c5e8a1d-7b7e-4f3a-9d3c-2b9a1f000001"
ORG = "5f3c1a2b-7d4e-4c1a-9b2e-0a11ce000001"  # acme's Entra tenant
TINA = "8f1c2d3e-0000-4000-8000-00000000a0e1"  # a Teams-only editor of acme-legal


def core_with_tina(clock: ManualClock) -> ReferenceCore:
    """The acme directory (no clarifications) plus Tina, an editor of acme-legal known to the
    core by her Teams identity only."""
    data = read_scenario("acme")
    data["clarifications"] = []
    data["people"].append({
        "id": "p-tina", "tenant": "acme", "display_name": "Tina Novak",
        "email": "tina.novak@acme.example",
        "memberships": [{"workspace": "acme-legal", "role": "editor"}],
        "teams": [{"aad_object_id": TINA, "tenant_id": ORG}]})
    reference = ReferenceCore(clock=clock)
    load_scenario(reference, data)
    return reference
SARAH = "8f1c2d3e-0000-4000-8000-00000000a001"  # Sarah's AAD object id (reference core)
CODEC = ActionCodec(b"teams channel tests signing key, 32+ bytes")
KEY = DeliveryKey("clr-1", "p-sarah", 0, "question")
SETTINGS = TeamsSettings(app_id=APP_ID, app_tenant_id=ORG,
                         tenants=(TeamsTenant(aad_tenant_id=ORG, tenant="acme"),))


@dataclass
class Tokens:
    """A token provider: the fake's token, or an error; counts what it was asked."""

    token: str = TOKEN
    fail: bool = False
    asked: list[bool] = field(default_factory=list)  # force_refresh of each request

    async def get_access_token(self, resource_url: str, scopes: list[str],
                               force_refresh: bool = False) -> str:
        self.asked.append(force_refresh)
        if self.fail:
            raise ValueError("invalid_client")
        return self.token


@dataclass
class Sleeps:
    """The channel's waits: recorded, and the manual clock moved by each."""

    clock: ManualClock
    taken: list[float] = field(default_factory=list)

    async def __call__(self, seconds: float) -> None:
        self.taken.append(seconds)
        self.clock.advance(seconds)


@dataclass
class Kit:
    fake: FakeConnector
    clock: ManualClock
    store: Store
    tokens: Tokens
    sleeps: Sleeps
    session: aiohttp.ClientSession

    def channel(self, *, store: Store | None = None, limits: Limits | None = None,
                settings: TeamsSettings = SETTINGS, hosts: ConnectorHosts | None = None,
                jitter: Callable[[], float] = lambda: 0.0) -> TeamsChannel:
        connector = Connector(session=self.session, tokens=self.tokens,
                              store=store or self.store, clock=self.clock,
                              hosts=hosts or ConnectorHosts(local=(self.fake.origin,)),
                              limits=limits or Limits(), sleep=self.sleeps, random=jitter)
        return TeamsChannel(connector=connector, codec=CODEC, store=store or self.store,
                            clock=self.clock, settings=settings, service_url=self.fake.url)


def address(user: str = SARAH, *, org: str = ORG, **reach: Any) -> Address:
    return Address(platform="teams", person_id="p-sarah", user_id=user,
                   reach=TeamsReach(aad_tenant_id=org, **reach), verified=True)


@pytest.fixture
async def fake() -> AsyncIterator[FakeConnector]:
    async with FakeConnector(bot_id=f"28:{APP_ID}") as connector:
        yield connector


@pytest.fixture
async def kit(fake: FakeConnector, clock: ManualClock) -> AsyncIterator[Kit]:
    async with aiohttp.ClientSession() as session:
        yield Kit(fake=fake, clock=clock, store=MemoryStore(clock=clock), tokens=Tokens(),
                  sleeps=Sleeps(clock), session=session)


async def stored_reference(kit: Kit, *, service_url: str | None = None) -> str:
    """Sarah installed the app and wrote: her conversation exists and its reference is kept."""
    cid = kit.fake.open(ORG, SARAH)
    reference = {"conversation": {"id": cid, "tenantId": ORG},
                 "serviceUrl": service_url or kit.fake.url, "channelId": "msteams"}
    await kit.store.conversation_put("acme", SARAH, json.dumps(reference), now=kit.clock.now())
    return cid
