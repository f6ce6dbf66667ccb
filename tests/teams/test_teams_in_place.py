"""A card click answered in place, over real HTTP: the Teams adapter on an aiohttp server, tokens
signed by the local key, the engine sending through the real Teams channel to the fake Bot
Connector (``tests/teams/fakeconnector.py``), the reference core behind it.

The invoke's response is the clicked card's update (Universal Actions): no connector call is
made for the clicker's own card, whatever the buckets hold; other people's cards are updated
afterwards, in the background, through the paced connector; the SDK sends no typing activity;
"cannot be reached" is said only while the core is in fact failing."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from microsoft_agents.hosting.core import OutboundHostValidator

from bot.clock import ManualClock
from bot.core import errors as e
from bot.core.client import CoreClient
from devcore.client import DevCoreClient
from devcore.core import ReferenceCore
from tests.engine.conftest import new_clarification
from tests.teams.fakeconnector import FakeConnector, Posted
from tests.teams.inbound import TEAMS, TeamsStack, activity
from tests.teams.outbound import CODEC, ORG, SARAH, TINA, Kit, core_with_tina
from tests.teams.tokens import APP_ID, claims, sign

CARD = "application/vnd.microsoft.card.adaptive"
UNREACHABLE = "cannot be reached"


@pytest.fixture
def core(clock: ManualClock) -> ReferenceCore:
    """acme plus Tina, an editor known to the core by her Teams identity only."""
    return core_with_tina(clock)


@pytest.fixture
async def fake() -> AsyncIterator[FakeConnector]:
    async with FakeConnector(bot_id=f"28:{APP_ID}") as connector:
        yield connector


class LocalHosts(OutboundHostValidator):
    """Microsoft's connector hosts, and the fake connector's origin (as bench/soak_serve.py)."""

    def __init__(self, origin: str) -> None:
        super().__init__(enabled=True)
        self.origin = origin

    def is_allowed(self, url: str) -> bool:  # type: ignore[override]
        return url.startswith(self.origin) or bool(super().is_allowed(url))


async def _stack(make_teams: Any, kit: Kit, *, core_client: CoreClient | None = None
                 ) -> TeamsStack:
    kit.fake.install(ORG, SARAH)
    kit.fake.install(ORG, TINA)
    channel = kit.channel(settings=TEAMS)
    stack: TeamsStack = await make_teams(store=kit.store, channel=channel, codec=CODEC,
                                         hosts=LocalHosts(kit.fake.origin),
                                         core_client=core_client)
    return stack


def _actions(card: Any) -> Iterator[dict[str, Any]]:
    if isinstance(card, dict):
        if card.get("type") == "Action.Execute":
            yield card
        for value in card.values():
            yield from _actions(value)
    elif isinstance(card, list):
        for value in card:
            yield from _actions(value)


def _click(kit: Kit, posted: Posted, *, candidate: int, at: datetime, user: str = SARAH
           ) -> dict[str, Any]:
    """Sarah (or ``user``) presses a date on the card the bot sent her, as Teams sends the
    invoke."""
    sent = (posted.versions or [posted.activity])[0]  # the card as the bot first sent it
    answers = [a for a in _actions(sent.get("attachments"))
               if a.get("verb") == "clarify.answer"]
    data = answers[candidate]["data"]
    body = activity("invoke", user=user, service_url=kit.fake.url, name="adaptiveCard/action",
                    replyToId=posted.activity_id,
                    value={"action": {"type": "Action.Execute", "verb": "clarify.answer",
                                      "data": data}})
    body["conversation"]["id"] = posted.conversation_id
    body["timestamp"] = at.isoformat().replace("+00:00", "Z")
    return body


async def _asked(stack: TeamsStack, kit: Kit, dev: DevCoreClient) -> tuple[str, Posted, Posted]:
    """A critical question (two confirmations) asked of Sarah and Tina, each a card in Teams."""
    cid = await new_clarification(dev, authority={"authored_by": ["p-sarah", "p-tina"]},
                                  severity="critical")
    await stack.engine.worker.run_burst()
    (sarahs,), (tinas,) = kit.fake.to(SARAH), kit.fake.to(TINA)
    return cid, sarahs, tinas


def _token(kit: Kit) -> str:
    return sign(claims(serviceurl=kit.fake.url))


def _text(card: Any) -> str:
    return json.dumps(card, ensure_ascii=False)


async def test_an_invoke_is_answered_with_the_refreshed_card_and_no_connector_call(
        make_teams: Any, kit: Kit, dev_client: DevCoreClient) -> None:
    """Sarah presses a date: the invoke's response is her card with the outcome (200, the
    Adaptive Card content type); while it is answered the connector hears nothing (no update,
    no typing activity), and her card is never updated through the connector afterwards."""
    stack = await _stack(make_teams, kit)
    cid, sarahs, _ = await _asked(stack, kit, dev_client)
    before = len(kit.fake.calls)
    response = await stack.post(_click(kit, sarahs, candidate=0, at=datetime.now(UTC)),
                                _token(kit))
    assert response.status == 200
    body = await response.json()
    assert body["statusCode"] == 200 and body["type"] == CARD
    card = body["value"]
    assert card["type"] == "AdaptiveCard"
    assert "clarify.answer" not in _text(card)  # the outcome, not the question again
    assert "First confirmation recorded" in _text(card)
    calls_during = kit.fake.calls[before:]
    assert [c for c in calls_during if sarahs.conversation_id in c.path] == []
    await stack.settle()
    assert sarahs.versions == []  # never updated through the connector
    assert not [c for c in kit.fake.calls if c.route == "send"
                and sarahs.conversation_id in c.path and c.body.get("type") == "typing"]
    assert await stack.responses(cid) == [("p-sarah", 0)]


async def test_ten_answers_in_a_row_are_each_answered_in_place(
        make_teams: Any, kit: Kit, dev_client: DevCoreClient, truth: CoreClient) -> None:
    """Ten answers in a row from one person (the conversation's bucket would let 7 through,
    then one every 2 s): each invoke is answered with her card, none says the records service
    cannot be reached while the core is up, all ten reach the core once each, and her card is
    never updated through the connector. Tina's card shows the new state afterwards."""
    stack = await _stack(make_teams, kit)
    cid, sarahs, tinas = await _asked(stack, kit, dev_client)
    start = datetime.now(UTC)
    for n in range(10):
        click = _click(kit, sarahs, candidate=n % 2, at=start + timedelta(seconds=n))
        response = await stack.post(click, _token(kit))
        assert response.status == 200, n
        body = await response.json()
        assert body["type"] == CARD, (n, body)
        assert UNREACHABLE not in _text(body["value"]), n
    await stack.settle()
    c = await truth.get_clarification(clarification_id=cid)
    mine = [r for r in c.responses if r.responder == "p-sarah"]
    assert len(mine) == 10
    assert len({r.response_id for r in mine}) == 10
    assert sarahs.versions == []
    assert tinas.versions, "Tina's card is updated afterwards"
    assert "p-sarah" not in _text(tinas.card) and "Sarah" in _text(tinas.card)


async def test_other_peoples_cards_are_updated_afterwards(
        make_teams: Any, kit: Kit, dev_client: DevCoreClient) -> None:
    """Sarah's click is answered before Tina's card is touched: Tina's update goes through the
    paced connector in the background, and names Sarah's confirmation."""
    stack = await _stack(make_teams, kit)
    _, sarahs, tinas = await _asked(stack, kit, dev_client)
    response = await stack.post(_click(kit, sarahs, candidate=0, at=datetime.now(UTC)),
                                _token(kit))
    assert (await response.json())["type"] == CARD
    await stack.settle()
    updates = [c for c in kit.fake.of("update") if tinas.activity_id in c.path]
    assert len(updates) >= 1 and all(c.status == 200 for c in updates)
    assert "Sarah" in _text(tinas.card)


async def test_other_peoples_cards_are_updated_in_their_teams_locale(
        make_teams: Any, kit: Kit, dev_client: DevCoreClient) -> None:
    """Tina's latest activity said ``de-DE`` (kept with her conversation reference): her card,
    updated afterwards through the connector with Sarah's confirmation, is German, as the card
    she was sent was; Sarah's own (answered in place) follows her invoke's ``en-US``."""
    stack = await _stack(make_teams, kit)
    cid = kit.fake.open(ORG, TINA)
    reference = {"conversation": {"id": cid, "tenantId": ORG}, "serviceUrl": kit.fake.url,
                 "channelId": "msteams", "locale": "de-DE"}
    await kit.store.conversation_put("acme", TINA, json.dumps(reference), now=stack.clock.now())
    _, sarahs, tinas = await _asked(stack, kit, dev_client)
    assert "Ich bin nicht die richtige Person" in _text(tinas.card)  # as sent
    click = _click(kit, sarahs, candidate=0, at=datetime.now(UTC))
    click["locale"] = "en-US"
    response = await stack.post(click, _token(kit))
    assert "First confirmation recorded: July 1 – September 30" in _text(
        (await response.json())["value"])
    await stack.settle()
    assert tinas.versions, "Tina's card is updated afterwards"
    updated = _text(tinas.card)  # the spec's words, German dates
    assert "First confirmation recorded: 1. Juli – 30. September (Sarah Chen)" in updated
    assert "Ich bin nicht die richtige Person" in updated, updated
    assert "Not the right person" not in updated


class FailingCore:
    """The bot's core client with answers failing as a core that is down does (transport)."""

    def __init__(self, inner: CoreClient) -> None:
        self.inner = inner
        self.down = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def answer_clarification(self, **kwargs: Any) -> Any:
        if self.down:
            raise e.CoreConnectError("connection refused")
        return await self.inner.answer_clarification(**kwargs)


async def test_cannot_be_reached_only_while_the_core_is_failing(
        make_teams: Any, kit: Kit, dev_client: DevCoreClient, bot_client: CoreClient) -> None:
    """The core refuses connections: the click is answered "being recorded ... cannot be
    reached" in place; once it answers again the answer that waited reaches the core once and
    her card (which said "being recorded") is updated through the connector with the outcome;
    the next click is answered in place with no "cannot be reached"."""
    failing = FailingCore(bot_client)
    stack = await _stack(make_teams, kit, core_client=failing)  # type: ignore[arg-type]
    cid, sarahs, _ = await _asked(stack, kit, dev_client)
    failing.down = True
    start = datetime.now(UTC)
    body = await (await stack.post(_click(kit, sarahs, candidate=0, at=start),
                                   _token(kit))).json()
    assert body["type"] == CARD
    assert "being recorded" in _text(body["value"]) and UNREACHABLE in _text(body["value"])
    failing.down = False
    stack.clock.advance(60)
    await stack.settle()
    assert await stack.responses(cid) == [("p-sarah", 0)]
    assert sarahs.versions and UNREACHABLE not in _text(sarahs.card)
    updates = len(sarahs.versions)
    body = await (await stack.post(_click(kit, sarahs, candidate=1,
                                          at=start + timedelta(seconds=1)),
                                   _token(kit))).json()
    assert body["type"] == CARD and UNREACHABLE not in _text(body["value"])
    assert "being recorded" not in _text(body["value"])
    await stack.settle()
    assert await stack.responses(cid) == [("p-sarah", 0), ("p-sarah", 1)]
    assert len(sarahs.versions) == updates  # the second one shown in place only


class SlowCore(FailingCore):
    """The bot's core client answering each answer after ``delay`` seconds."""

    delay = 0.0

    async def answer_clarification(self, **kwargs: Any) -> Any:
        await asyncio.sleep(self.delay)
        return await self.inner.answer_clarification(**kwargs)


async def test_no_typing_activity_while_an_invoke_waits(
        make_teams: Any, kit: Kit, dev_client: DevCoreClient, bot_client: CoreClient) -> None:
    """The SDK starts a typing indicator half a second into a turn unless told not to: an
    invoke waiting 0.8 s for the core sends none (a typing activity would be a connector call
    per click), and is still answered with the card."""
    slow = SlowCore(bot_client)
    stack = await _stack(make_teams, kit, core_client=slow)  # type: ignore[arg-type]
    _, sarahs, _ = await _asked(stack, kit, dev_client)
    slow.delay = 0.8
    before = len(kit.fake.calls)
    body = await (await stack.post(_click(kit, sarahs, candidate=0, at=datetime.now(UTC)),
                                   _token(kit))).json()
    assert body["type"] == CARD and "First confirmation recorded" in _text(body["value"])
    await stack.settle()
    typing = [c for c in kit.fake.calls[before:]
              if isinstance(c.body, dict) and c.body.get("type") == "typing"]
    assert typing == []
    assert [c for c in kit.fake.calls[before:] if sarahs.conversation_id in c.path] == []
