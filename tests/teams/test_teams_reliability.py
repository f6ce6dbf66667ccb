"""Reliability of Teams clicks over real HTTP: the core down or slow while people click, the
same invoke delivered three times."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from bot.core.client import CoreClient, RetryPolicy
from cards.views import OutcomeKind, OutcomeView
from tests.conftest import CLARIFY_TOKEN, extensions_for
from tests.engine.conftest import new_clarification
from tests.slack.conftest import Switchable
from tests.teams.inbound import ACME_AAD, SARAH_AAD, TeamsStack, action_data, invoke
from tests.teams.tokens import SERVICE_URL, claims, sign

CARD = "application/vnd.microsoft.card.adaptive"


@pytest.fixture
async def switchable(core_url: str, contract: str
                     ) -> AsyncIterator[tuple[Switchable, CoreClient]]:
    transport = Switchable()
    async with CoreClient(base_url=core_url, token=CLARIFY_TOKEN, transport=transport,
                          retry=RetryPolicy(max_attempts=1),
                          extensions=extensions_for(contract)) as client:
        yield transport, client


async def _click(teams: TeamsStack, body: dict[str, Any]) -> dict[str, Any]:
    response = await teams.post(body, sign(claims()))
    assert response.status == 200
    return json.loads(await response.text())


async def test_clicks_while_the_core_is_down_are_forwarded_once_when_it_returns(
        make_teams: Any, switchable: tuple[Switchable, CoreClient]) -> None:
    """With the core away the invoke answers "being recorded" at once; the answer waits in the
    outbox and reaches the core exactly once when it is back, and the card is updated."""
    transport, client = switchable
    teams: TeamsStack = await make_teams(core_client=client)
    cid = await new_clarification(teams.dev, authority={"named": ["p-sarah"]})
    transport.down = True
    body = await _click(teams, invoke(action_data(teams.codec, cid)))
    assert body["type"] == CARD
    assert "being recorded" in json.dumps(body["value"])
    assert "cannot be reached" in json.dumps(body["value"])  # the forward met a failing core
    await teams.adapter.drain()
    await teams.settle()
    assert transport.answers_taken == 0
    assert teams.channel.notes == []  # the invoke's card said it; no second message says it again
    transport.down = False
    teams.clock.advance(600)
    await teams.settle()
    await teams.consumers.run_burst()
    assert await teams.responses(cid) == [("p-sarah", 0)]
    assert transport.answers_taken == 1
    assert await teams.store.outbox_size() == 0


@pytest.mark.slow
async def test_a_slow_core_leaves_the_being_recorded_card(
        make_teams: Any, switchable: tuple[Switchable, CoreClient]) -> None:
    """A core slower than the invoke's budget: the invoke is answered with "being recorded"
    inside the budget, never "cannot be reached" (slow is not failing); the answer still lands
    once, and the card it left is updated with the outcome through the channel."""
    transport, client = switchable
    teams: TeamsStack = await make_teams(core_client=client)
    teams.adapter.invokes.invoke_seconds = 0.2
    cid = await new_clarification(teams.dev, authority={"named": ["p-sarah"]})
    transport.delay = 0.3
    body = await _click(teams, invoke(action_data(teams.codec, cid)))
    assert "being recorded" in json.dumps(body["value"])
    assert "cannot be reached" not in json.dumps(body["value"])
    await teams.settle()
    assert await teams.responses(cid) == [("p-sarah", 0)]
    assert teams.channel.notes == []  # the clicked card itself shows the outcome
    (update,) = teams.channel.updates
    assert update.ref == f"a:{SARAH_AAD} 1:card {ACME_AAD} {SERVICE_URL}"
    assert isinstance(update.view, OutcomeView)
    assert update.view.kind not in (OutcomeKind.PENDING, OutcomeKind.RECORDING)


async def test_the_same_invoke_three_times_is_one_answer(teams: TeamsStack) -> None:
    """One click delivered three times (a retry of the same activity) records one response;
    the repeats leave the card as the first answer painted it."""
    cid = await new_clarification(teams.dev, authority={"named": ["p-sarah"]})
    click = invoke(action_data(teams.codec, cid))
    first = await _click(teams, click)
    repeats = [await _click(teams, click) for _ in range(2)]
    await teams.settle()
    assert first["type"] == CARD
    assert all(r["type"] == "application/vnd.microsoft.activity.message" for r in repeats)
    assert await teams.responses(cid) == [("p-sarah", 0)]
