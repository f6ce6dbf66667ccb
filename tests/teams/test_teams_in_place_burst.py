"""Answers in a burst, over real HTTP (docs/delivery.md, "Answers in a burst"): while
``answers.in_place_at_once`` clicks of the process wait for their outcome, one more is answered
"being recorded" at once, without waiting for the core; it goes through the outbox's consumers,
reaches the core once, and its card is updated with the outcome through the connector."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

from bot.answering.waiting import InPlace
from bot.core.client import CoreClient
from bot.metrics import REGISTRY
from devcore.client import DevCoreClient
from tests.teams.outbound import TINA, Kit
from tests.teams.test_teams_in_place import (
    CARD,
    FailingCore,
    _asked,
    _click,
    _stack,
    _text,
    _token,
    core,  # noqa: F401 - the fixture: acme plus Tina
    fake,  # noqa: F401 - the fixture: the fake Bot Connector
)


class HeldCore(FailingCore):
    """The bot's core client holding every answer until ``release`` is set."""

    def __init__(self, inner: CoreClient) -> None:
        super().__init__(inner)
        self.release = asyncio.Event()
        self.arrived = asyncio.Event()

    async def answer_clarification(self, **kwargs: Any) -> Any:
        self.arrived.set()
        await self.release.wait()
        return await self.inner.answer_clarification(**kwargs)


async def test_a_click_beyond_in_place_at_once_is_answered_being_recorded_and_painted_later(
        make_teams: Any, kit: Kit, dev_client: DevCoreClient, bot_client: CoreClient) -> None:
    held = HeldCore(bot_client)
    stack = await _stack(make_teams, kit, core_client=held)  # type: ignore[arg-type]
    stack.engine.answers.in_place = InPlace(limit=1)
    cid, sarahs, tinas = await _asked(stack, kit, dev_client)
    start = datetime.now(UTC)
    first = asyncio.create_task(stack.post(_click(kit, tinas, candidate=0, at=start, user=TINA),
                                           _token(kit)))
    await held.arrived.wait()  # Tina's click waits for the core, in place
    assert stack.engine.answers.in_place.waiting == 1
    bursts = REGISTRY.value("clarify_answers_in_burst_total")
    before = len(kit.fake.calls)
    response = await stack.post(_click(kit, sarahs, candidate=0,
                                       at=start + timedelta(seconds=1)), _token(kit))
    body = await response.json()
    assert response.status == 200 and body["type"] == CARD
    assert "being recorded" in _text(body["value"]), body
    assert REGISTRY.value("clarify_answers_in_burst_total") == bursts + 1
    assert [c for c in kit.fake.calls[before:] if sarahs.conversation_id in c.path] == []
    held.release.set()
    tinas_body = await (await first).json()
    assert "being recorded" not in _text(tinas_body["value"])  # Tina's outcome, in place
    stack.clock.advance(1)
    await stack.settle()
    responses = await stack.responses(cid)
    assert sorted(responses) == [("p-sarah", 0), ("p-tina", 0)]
    assert sarahs.versions, "Sarah's card is updated with the outcome"
    assert "being recorded" not in _text(sarahs.card)
    assert stack.engine.answers.in_place.waiting == 0
