"""A question card's one reminder through the real Slack channel and the fake Slack Web API:
the card is updated in place (chat.update notifies nobody) and a short reply is threaded under
it and broadcast to the DM (which notifies the person); after a crash between the post and its
record, the reply is found in the DM's history by its metadata and never posted twice."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from typing import Any

import pytest

from bot.engine.reminders import REMINDER_KIND
from devslack import LocalSlack
from tests.engine.conftest import with_hours
from tests.slack.conftest import Stack


@pytest.fixture(autouse=True)
def _full_contract(contract: str) -> None:
    if contract == "baseline":
        pytest.skip("the baseline contract has no time zones: the case is timed in London")


async def test_reminder_updates_the_card_and_threads_a_broadcast_reply(
        make_stack: Any, fake_slack: LocalSlack) -> None:
    """Sarah's Slack says London, as the core does: her card and its reminder are timed there."""
    fake_slack.users["U0SARAH"].tz = "Europe/London"
    stack: Stack = await make_stack(clarify=with_hours(escalation_window_hours=8))
    await stack.create(authority={"authored_by": ["p-sarah", "p-ahmed"]}, severity="high")
    await stack.burst()
    [card] = stack.slack.dm_of("U0SARAH")
    assert "Moves on to the next person on 6 July at 18:01." in json.dumps(card.blocks)
    assert card.edited_ts is None

    await stack.later(timedelta(hours=6, minutes=1))  # 75 %: 16:01 in London
    card_now, reply = stack.slack.dm_of("U0SARAH")
    assert card_now is card and card.edited_ts is not None  # updated in place
    shown = json.dumps(card.blocks, ensure_ascii=False)
    assert "Reminder: your answer is still needed." in shown
    assert "clarify.answer" in shown  # still answerable
    assert reply.thread_ts == card.ts and reply.broadcast
    assert reply.text.startswith("Reminder: a question about a date in")
    assert (reply.metadata or {})["event_payload"]["delivery"].endswith(f"|{REMINDER_KIND}")

    for _ in range(4):
        await stack.later(timedelta(minutes=30))
    assert len(stack.slack.dm_of("U0SARAH")) == 2
    assert stack.slack.dm_of("U0AHMED") == []


async def test_reminder_posted_before_a_crash_is_found_not_posted_again(
        make_stack: Any) -> None:
    stack: Stack = await make_stack(clarify=with_hours(escalation_window_hours=8))
    await stack.create(authority={"authored_by": ["p-sarah", "p-ahmed"]}, severity="high")
    await stack.burst()
    channel = stack.engine.deliverer.channels["slack"]
    send = channel.send
    died: list[bool] = []

    async def post_then_die(address: Any, message: Any, *, key: Any) -> str:
        ref = await send(address, message, key=key)
        if key.kind == REMINDER_KIND and not died:
            died.append(True)
            raise asyncio.CancelledError  # killed after Slack took it, before the record
        return ref

    channel.send = post_then_die  # type: ignore[method-assign]
    stack.clock.advance(timedelta(hours=6, minutes=1))
    with pytest.raises(asyncio.CancelledError):
        await stack.engine.reminders.flush()
    assert len(stack.slack.dm_of("U0SARAH")) == 2
    await stack.later(timedelta(minutes=6))  # the claim's lease ran out: another pass
    await stack.later(timedelta(minutes=6))
    assert len(stack.slack.dm_of("U0SARAH")) == 2  # found by its metadata, not posted again
