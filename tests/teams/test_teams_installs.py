"""The Teams app installed through Microsoft Graph for a person with no conversation: the Teams
channel built as production builds it (``open_teams_channel``, client credentials at the fake
Graph's token endpoint) against the fake Bot Connector and the fake Graph, both over real HTTP
on 127.0.0.1. The connector opens no chat with a person until the fake Graph's install marks the
app installed for them. Time is the manual clock; every wait is recorded and moves it.

docs/teams.md, "Installing the app for people", describes each outcome tested here.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import timedelta
from email.utils import format_datetime
from typing import Any

import aiohttp
import pytest
from structlog.testing import capture_logs

from adapters.teams.channel import TeamsChannel, open_teams_channel
from adapters.teams.graph import ClientCredentials
from adapters.teams.installs import CLAIM, GIVE_UP, HOLD, LATER, NAMESPACE, PERMISSION, WINDOW
from bot.channel import NotReachable, NotYet
from bot.clock import ManualClock
from bot.metrics import REGISTRY
from bot.reach.causes import (
    APP_BLOCKED_BY_POLICY,
    INSTALL_NOT_OWN_APP,
    INSTALL_PERMISSION_MISSING,
    INSTALL_REFUSED,
    NO_TEAMS_LICENCE,
)
from bot.settings import TeamsSettings, TeamsTenant
from bot.store.base import DeliveryKey, Store
from bot.store.memory import MemoryStore
from cards.fixtures import QUESTION
from tests.teams.fakeconnector import FakeConnector
from tests.teams.fakegraph import BOTH, SECRET, FakeGraph
from tests.teams.outbound import APP_ID, CODEC, KEY, ORG, SARAH, Sleeps, Tokens, address

CATALOG = "3e0d5a7c-1b2f-4c3d-8e9f-0a1b2c3d4e5f"  # the app's id in acme's app catalog
AHMED = "8f1c2d3e-0000-4000-8000-00000000a002"


def settings(graph: FakeGraph, **changes: Any) -> TeamsSettings:
    return TeamsSettings(**{  # type: ignore[arg-type]
        "app_id": APP_ID, "app_tenant_id": ORG, "graph_url": graph.graph_url,
        "login_url": graph.login_url, "read_away": False, "catalog_app_id": CATALOG,
        "tenants": (TeamsTenant(aad_tenant_id=ORG, tenant="acme"),), **changes})


@dataclass
class Rig:
    connector: FakeConnector
    graph: FakeGraph
    clock: ManualClock
    sleeps: Sleeps
    store: Store
    session: aiohttp.ClientSession
    channel: TeamsChannel

    def another(self, store: Store | None = None) -> TeamsChannel:
        """Another worker's channel (its own installer and token cache), on ``store``."""
        return build(self, store or self.store)

    async def send(self, user: str = SARAH, *, channel: TeamsChannel | None = None,
                   key: DeliveryKey = KEY) -> str:
        return await (channel or self.channel).send(
            address(user), QUESTION, key=key)

    def installs(self, user: str | None = None) -> list[int]:
        return [c.status for c in self.graph.of("install", user)]


def build(rig: Any, store: Store, **changes: Any) -> TeamsChannel:
    credentials = ClientCredentials(session=rig.session, login_url=rig.graph.login_url,
                                    app_id=APP_ID, secret=SECRET, clock=rig.clock)
    channel = open_teams_channel(
        settings(rig.graph, **changes), session=rig.session, tokens=Tokens(), store=store,
        clock=rig.clock, codec=CODEC, sleep=rig.sleeps, graph_tokens=credentials,
        local_connectors=(rig.connector.origin,))
    channel.service_url = rig.connector.url
    return channel


@pytest.fixture
async def rig(fake: FakeConnector, clock: ManualClock) -> AsyncIterator[Rig]:
    async with FakeGraph(app_id=APP_ID) as graph, aiohttp.ClientSession() as session:
        graph.on_install = fake.install  # the install reaches Teams at once
        store = MemoryStore(clock=clock)
        made = Rig(fake, graph, clock, Sleeps(clock), store, session, None)  # type: ignore[arg-type]
        made.channel = build(made, store)
        yield made


def counted(outcome: str) -> float:
    return REGISTRY.value("clarify_teams_installs_total", outcome=outcome)


async def test_201_installs_the_app_and_sends_the_card_once(rig: Rig) -> None:
    before = counted("installed")
    ref = await rig.send()
    assert rig.installs(SARAH) == [201]
    [body] = rig.graph.bodies
    assert body == {"teamsApp@odata.bind":
                    f"{rig.graph.graph_url}/appCatalogs/teamsApps/{CATALOG}"}
    [card] = rig.connector.to(SARAH)
    assert card.activity_id in ref
    assert [c.status for c in rig.connector.of("create")] == [403, 201]
    assert counted("installed") == before + 1
    # the conversation is kept: the next card needs neither an install nor a new chat
    await rig.send(key=DeliveryKey("clr-2", "p-sarah", 0, "question"))
    assert rig.installs() == [201] and len(rig.connector.to(SARAH)) == 2


@pytest.mark.parametrize("status", [200, 202, 204])
async def test_any_other_2xx_counts_as_installed(rig: Rig, status: int) -> None:
    rig.graph.installed_status = status
    await rig.send()
    assert rig.installs(SARAH) == [status]
    assert len(rig.connector.to(SARAH)) == 1
    await rig.send(key=DeliveryKey("clr-2", "p-sarah", 0, "question"))
    assert rig.installs() == [status]


async def test_a_401_after_a_fresh_token_holds_the_tenant_not_the_person(rig: Rig) -> None:
    """Graph refuses even a fresh token (consent withdrawn): the tenant is held an hour, nobody
    is kept as refused, and the install is asked again after the hold."""
    rig.graph.fail("install", 401, times=2, code="InvalidAuthenticationToken")
    with pytest.raises(NotReachable) as refused:
        await rig.send()
    assert refused.value.cause == "app_not_installed"
    assert rig.installs() == [401, 401]
    rig.clock.advance(timedelta(hours=1))
    await rig.send()
    assert rig.installs() == [401, 401, 201] and len(rig.connector.to(SARAH)) == 1


async def test_409_already_installed_counts_as_installed(rig: Rig) -> None:
    rig.graph.installed.add(SARAH)  # installed, but not yet known to the connector
    rig.graph.on_install = lambda tenant, user: None
    rig.connector.fail("create", 403)  # the first ask: not installed
    rig.connector.install(ORG, SARAH)
    before = counted("already_installed")
    await rig.send()
    assert rig.installs(SARAH) == [409]
    assert len(rig.connector.to(SARAH)) == 1
    assert counted("already_installed") == before + 1


async def test_a_token_without_the_permission_asks_no_install(rig: Rig) -> None:
    """The role is missing from the token: no POST; the person is NO_DELIVERY_ALIAS with a
    hint naming the permission, said once as a warning and in readiness."""
    rig.graph.grant(ORG, *BOTH)
    with capture_logs() as logs:
        for user in (SARAH, AHMED):
            with pytest.raises(NotReachable) as refused:
                await rig.send(user)
            assert refused.value.cause == INSTALL_PERMISSION_MISSING
            assert PERMISSION in refused.value.reason and refused.value.lasting
    assert rig.installs() == [] and rig.connector.posted == []
    said = [e for e in logs if e["event"] == "teams.install_permission_missing"]
    assert [(e["log_level"], e["permission"], e["tenant"]) for e in said] == [
        ("warning", PERMISSION, "acme")]
    assert rig.channel.installer is not None
    assert rig.channel.installer.status() == {"teams_install": {"acme": f"missing: {PERMISSION}"}}


async def test_the_startup_check_says_the_missing_permission(rig: Rig) -> None:
    rig.graph.grant(ORG, *BOTH)
    installer = rig.channel.installer
    assert installer is not None and installer.status() == {
        "teams_install": {"acme": "unchecked"}}
    await installer.check()
    assert installer.status() == {"teams_install": {"acme": f"missing: {PERMISSION}"}}
    rig.graph.grant(ORG, *BOTH, PERMISSION)
    other = rig.another().installer
    assert other is not None
    await other.check()
    assert other.status() == {"teams_install": {"acme": "ok"}}


async def test_a_403_while_the_token_holds_the_role_is_a_policy_kept_for_the_tenant(
        rig: Rig) -> None:
    rig.graph.blocking.add(ORG)
    with pytest.raises(NotReachable) as refused:
        await rig.send(SARAH)
    assert refused.value.cause == APP_BLOCKED_BY_POLICY
    # the tenant is remembered, by every worker: nobody else is installed meanwhile
    with pytest.raises(NotReachable) as again:
        await rig.send(AHMED, channel=rig.another())
    assert again.value.cause == APP_BLOCKED_BY_POLICY
    assert rig.installs() == [403]
    assert rig.channel.installer is not None
    assert rig.channel.installer.status()["teams_install"] == {"acme": "blocked_by_policy"}


async def test_a_403_not_allowed_to_manage_the_app_is_a_wrong_catalog_id_held_for_the_tenant(
        rig: Rig) -> None:
    """Graph's words when the catalog id names another app than the bot's own (or the package's
    webApplicationInfo differs): said once, shown in /readyz, nobody of the tenant installed for
    an hour by any worker, and nobody kept as refused."""
    rig.graph.fail("install", 403, code="Forbidden", body={"error": {
        "code": "Forbidden", "message": f"AAD App Id '{APP_ID}' is not allowed to manage the "
                                        "Teams App ''."}})
    before = counted("not_own_app")
    with capture_logs() as logs:
        with pytest.raises(NotReachable) as refused:
            await rig.send(SARAH)
    assert refused.value.cause == INSTALL_NOT_OWN_APP and refused.value.lasting
    [line] = [e for e in logs if e["event"] == "teams.install_not_own_app"]
    assert line["tenant"] == "acme" and line["setting"] == "teams.catalog_app_id"
    assert APP_ID not in json.dumps(logs, default=str)
    with pytest.raises(NotReachable) as again:
        await rig.send(AHMED, channel=rig.another())
    assert again.value.cause == INSTALL_NOT_OWN_APP
    assert rig.installs() == [403] and counted("not_own_app") == before + 1
    assert rig.channel.installer is not None
    assert rig.channel.installer.status()["teams_install"] == {"acme": "not_own_app"}
    assert await rig.store.kv_get(NAMESPACE, f"{ORG}|{SARAH}".lower()) is None
    rig.clock.advance(HOLD)  # the setting fixed meanwhile: both are installed then
    await rig.send(SARAH)
    await rig.send(AHMED)
    assert rig.installs() == [403, 201, 201]


async def test_a_404_for_a_person_teams_knows_is_the_catalog_id_of_another_app(
        rig: Rig) -> None:
    """The catalog holds no app of that id: Graph's 404 alone reads like a person without
    Teams, but Teams answers for Sarah (her installations of the app read), so the tenant is
    held as set to install another app and nobody is kept as without a licence."""
    rig.graph.catalog = "0a0a0a0a-0000-4000-8000-000000000000"
    with pytest.raises(NotReachable) as refused:
        await rig.send(SARAH)
    assert refused.value.cause == INSTALL_NOT_OWN_APP
    assert [c.status for c in rig.graph.of("installed_apps", SARAH)] == [200]
    with pytest.raises(NotReachable):
        await rig.send(AHMED, channel=rig.another())
    assert rig.installs() == [404]
    assert await rig.store.kv_get(NAMESPACE, f"{ORG}|{SARAH}".lower()) is None
    rig.graph.catalog = CATALOG  # the setting put right
    rig.clock.advance(HOLD)
    await rig.send(SARAH)
    assert rig.installs() == [404, 201]


async def test_a_404_that_cannot_be_weighed_now_keeps_the_turn(rig: Rig) -> None:
    rig.graph.catalog = "0a0a0a0a-0000-4000-8000-000000000000"
    rig.graph.fail("installed_apps", 503, times=3)
    with pytest.raises(NotYet):
        await rig.send()
    assert await rig.store.kv_get(NAMESPACE, f"{ORG}|{SARAH}".lower()) is None
    rig.graph.catalog = None
    rig.clock.advance(LATER)
    await rig.send()
    assert rig.installs() == [404, 201] and len(rig.connector.to(SARAH)) == 1


@pytest.mark.parametrize("status", [302, 408, 501, 507])
async def test_an_answer_that_says_nothing_of_the_person_keeps_the_turn(
        rig: Rig, status: int) -> None:
    """A redirect, a request timeout, a 5xx outside the usual three: no news about the person,
    so no refusal is kept; the turn waits and the install is asked again later."""
    rig.graph.fail("install", status, times=1 if status == 302 else 3)  # a redirect: no retry
    with pytest.raises(NotYet):
        await rig.send()
    assert rig.installs() and set(rig.installs()) == {status}
    rig.clock.advance(LATER)
    await rig.send()
    assert rig.installs()[-1] == 201 and len(rig.connector.to(SARAH)) == 1


@pytest.mark.parametrize("status", [302, 408, 503])
async def test_a_token_endpoint_that_says_nothing_of_consent_keeps_the_turn(
        rig: Rig, status: int) -> None:
    """The identity platform (or a proxy before it) answering a redirect, a timeout or a 5xx:
    no news about the tenant's consent, so the tenant is not held for an hour."""
    rig.graph.fail("token", status)
    with pytest.raises(NotYet):
        await rig.send()
    assert rig.installs() == []
    rig.clock.advance(LATER)
    await rig.send()
    assert rig.installs() == [201]


async def test_a_retry_after_given_as_a_date_is_waited_out(rig: Rig) -> None:
    rig.graph.fail("install", 429, retry_after=format_datetime(
        rig.clock.now() + timedelta(seconds=3), usegmt=True))
    await rig.send()
    assert rig.installs(SARAH) == [429, 201]
    assert 3.0 in rig.sleeps.taken


@pytest.mark.parametrize("refusal", ["404", "403 licence"])
async def test_a_person_without_teams_is_kept_as_such(rig: Rig, refusal: str) -> None:
    if refusal == "404":
        rig.graph.no_teams.add(SARAH)
    else:
        rig.graph.fail("install", 403, code="Forbidden", body={"error": {
            "code": "Forbidden", "message": "User does not have a valid Teams license."}})
    for _ in range(2):
        with pytest.raises(NotReachable) as refused:
            await rig.send()
        assert refused.value.cause == NO_TEAMS_LICENCE and refused.value.lasting
    assert len(rig.installs(SARAH)) == 1  # the second time asks nothing
    # a 404 is weighed: Teams does not answer for Sarah either
    assert [c.status for c in rig.graph.of("installed_apps")] == \
        ([404] if refusal == "404" else [])
    await rig.send(AHMED)  # another person of the tenant is installed as usual
    assert rig.installs(AHMED) == [201]


async def test_429_is_waited_out_then_installed(rig: Rig) -> None:
    rig.graph.fail("install", 429, retry_after="3")
    await rig.send()
    assert rig.installs(SARAH) == [429, 201]
    assert 3.0 in rig.sleeps.taken
    assert len(rig.connector.to(SARAH)) == 1


async def test_a_long_retry_after_or_5xx_keeps_the_turn_for_later(rig: Rig) -> None:
    """Graph throttles past the retry budget, then fails with 503s: NotYet (never a skip),
    at the Retry-After's end; the claim is given back, so the person is installed then."""
    rig.graph.fail("install", 429, retry_after="120")
    with pytest.raises(NotYet) as later:
        await rig.send()
    assert later.value.at == rig.clock.now() + timedelta(seconds=120)
    with pytest.raises(NotYet):  # still throttled: not asked again before then
        await rig.send()
    assert rig.installs() == [429]
    rig.clock.advance(121)
    rig.graph.fail("install", 503, times=3)
    with pytest.raises(NotYet) as unavailable:
        await rig.send()
    assert unavailable.value.at >= rig.clock.now() + LATER - timedelta(seconds=30)
    await rig.send()
    assert rig.installs() == [429, 503, 503, 503, 201]
    assert len(rig.connector.to(SARAH)) == 1


@pytest.mark.parametrize("body", [
    "<html><body>Bad Gateway, said a proxy</body></html>",
    {"error": {"code": "BadRequest", "message": "nope " * 50,
               "innerError": {"details": [{"deeper": {"still": [1, None, {"x": "y"}]}}]}},
     "unknown": {"nested": [True]}},
    {"error": "just a string"},
])
async def test_an_unknown_4xx_is_a_generic_value_free_refusal(rig: Rig, body: Any) -> None:
    rig.graph.fail("install", 400, body=body)
    with capture_logs() as logs:
        with pytest.raises(NotReachable) as refused:
            await rig.send()
    assert refused.value.cause == INSTALL_REFUSED and not refused.value.lasting
    [line] = [e for e in logs if e["event"] == "teams.install_refused"]
    assert line["status"] == 400
    text = json.dumps(logs, default=str)
    assert "proxy" not in text and "nope" not in text and "string" not in text
    # within the window the person is not installed again; after it, they are
    with pytest.raises(NotReachable):
        await rig.send()
    assert rig.installs() == [400]
    rig.clock.advance(WINDOW)
    await rig.send()
    assert rig.installs() == [400, 201]


async def test_an_install_slow_to_reach_teams_is_asked_once_in_the_window(rig: Rig) -> None:
    """Graph installs, but the connector opens no chat within the waits: NotYet; the next
    attempt asks Graph nothing, and sends once the install's own installationUpdate stored the
    conversation."""
    rig.graph.on_install = lambda tenant, user: None
    with pytest.raises(NotYet):
        await rig.send()
    assert rig.installs() == [201] and rig.connector.posted == []
    assert sum(rig.sleeps.taken) >= 15
    # the install's conversationUpdate arrives: the inbound side keeps the reference
    cid = rig.connector.open(ORG, SARAH)
    await rig.store.conversation_put("acme", SARAH, json.dumps({
        "conversation": {"id": cid, "tenantId": ORG}, "serviceUrl": rig.connector.url,
        "channelId": "msteams"}), now=rig.clock.now())
    await rig.send(channel=rig.another())
    assert rig.installs() == [201]
    assert len(rig.connector.to(SARAH)) == 1


@pytest.mark.parametrize("backend", ["memory", "redis"])
async def test_two_workers_racing_on_one_person_install_once(
        rig: Rig, backend: str, redis_store: Callable[[], Store]) -> None:
    store = rig.store if backend == "memory" else redis_store()
    one, two = rig.another(store), rig.another(store if backend == "memory" else redis_store())
    keys = [DeliveryKey(f"clr-{n}", "p-sarah", 0, "question") for n in (1, 2)]
    await asyncio.gather(rig.send(channel=one, key=keys[0]), rig.send(channel=two, key=keys[1]))
    assert rig.installs(SARAH) == [201]
    assert len(rig.connector.to(SARAH)) == 2


async def test_installs_off_leave_the_person_not_installed(rig: Rig) -> None:
    for changes in ({"install_app": False}, {"catalog_app_id": None}):
        channel = build(rig, rig.store, **changes)
        assert channel.installer is None
        with pytest.raises(NotReachable) as refused:
            await rig.send(channel=channel)
        assert refused.value.cause == "app_not_installed"
    assert rig.installs() == []


async def test_a_claim_left_by_a_killed_worker_holds_the_person_back_only_briefly(
        rig: Rig) -> None:
    """A worker took the claim and died before Graph answered: the next attempt waits for the
    install (NotYet) without asking Graph; once the claim has lapsed it installs, once."""
    await rig.store.kv_claim(NAMESPACE, f"{ORG.lower()}|{SARAH.lower()}", "pending",
                             ttl_seconds=int(CLAIM.total_seconds()))
    with pytest.raises(NotYet):
        await rig.send()
    assert rig.installs() == [] and rig.connector.posted == []
    rig.clock.advance(CLAIM)
    await rig.send()
    assert rig.installs() == [201]
    assert len(rig.connector.to(SARAH)) == 1


async def test_an_install_whose_chat_never_opens_gives_the_turn_up(rig: Rig) -> None:
    """Graph said installed, but no chat opens: the turn is kept (NotYet) while the install may
    still reach Teams, then the person is not reachable (app_not_installed), Graph asked once."""
    rig.graph.on_install = lambda tenant, user: None
    with pytest.raises(NotYet):
        await rig.send()
    rig.clock.advance(GIVE_UP / 2)
    with pytest.raises(NotYet):
        await rig.send()
    rig.clock.advance(GIVE_UP / 2)
    with pytest.raises(NotReachable) as refused:
        await rig.send()
    assert refused.value.cause == "app_not_installed" and not refused.value.lasting
    assert rig.installs() == [201] and rig.connector.posted == []
