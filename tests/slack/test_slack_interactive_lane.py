"""Clicks are not queued behind bulk delivery: while hundreds of cards wait for the
workspace's posting rate, a click's card update and a digest's next page go out at once."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest

from bot.channel import Address, SlackReach
from bot.clock import ManualClock
from bot.store.base import DeliveryKey
from cards.fixtures import QUESTION
from tests.engine.conftest import clarify_settings
from tests.slack.conftest import Stack
from tests.slack.test_slack_e2e import shown
from tests.support.processes import wait_until

BULK = 300


class StoppedTime:
    """The channel's sleep: time moves only when the test moves it, so bulk delivery waits for
    its tokens exactly as long as the test says (no real sleeping)."""

    def __init__(self, clock: ManualClock) -> None:
        self.clock = clock
        self.moved = asyncio.Condition()
        self.sleeping = 0

    async def sleep(self, seconds: float) -> None:
        until = self.clock.now() + timedelta(seconds=seconds)
        self.sleeping += 1
        try:
            async with self.moved:
                await self.moved.wait_for(lambda: self.clock.now() >= until)
        finally:
            self.sleeping -= 1

    async def advance(self, seconds: float) -> None:
        self.clock.advance(timedelta(seconds=seconds))
        async with self.moved:
            self.moved.notify_all()


async def _until(condition: Any) -> None:
    """Until the bulk has gone as far as it can without time passing (a guard, not a pace)."""
    await wait_until(condition, f"the bulk delivery to get there: {condition.__doc__}", 30,
                     every=0.01)


@pytest.mark.slow
async def test_a_click_and_a_digest_page_are_shown_before_a_large_delivery_ends(
        make_stack: Any) -> None:
    stack: Stack = await make_stack(clarify=clarify_settings(digest_threshold=1))
    ids = [await stack.create(authority={"authored_by": ["p-sarah"]}) for _ in range(13)]
    await stack.burst()
    await stack.later(timedelta(minutes=31))
    card, digest = stack.slack.dm_of("U0SARAH")
    assert "Show the next questions" in shown(stack, digest)
    time = StoppedTime(stack.clock)
    channel = stack.adapter.kit.channel
    channel.sleep = time.sleep  # type: ignore[method-assign]
    before = len(stack.slack.calls_to("chat.postMessage"))

    # a large delivery: every card waits for the workspace's chat.postMessage bucket
    people = [f"U0BULK{n:04d}" for n in range(BULK)]
    for user in people:
        stack.slack.add_user(user)
    bulk = [asyncio.create_task(channel.send(
        Address(platform="slack", person_id=f"p-bulk-{n}", user_id=user,
                reach=SlackReach(team_id="T0ACME", enterprise_id="E0ACME")),
        QUESTION, key=DeliveryKey(f"clr-bulk-{n}", f"p-bulk-{n}", 0, "question")))
        for n, user in enumerate(people)]
    # what the bucket holds, less the reserve kept for clicks, goes out; every other card waits
    def there() -> bool:
        posted = len(stack.slack.calls_to("chat.postMessage")) - before
        there.__doc__ = f"{time.sleeping} sleeping, {posted} posted"
        return posted > 0 and time.sleeping + posted == BULK

    await _until(there)
    burst = len(stack.slack.calls_to("chat.postMessage")) - before
    assert burst <= channel.rates.post_burst - channel.rates.interactive_reserve

    # Sarah answers her card and asks for the digest's next page, while no time passes
    await stack.click("U0SARAH", card, "clarify.answer.0")
    await stack.click("U0SARAH", digest, "clarify.digest.next")
    # a guard, not a pace: an interactive call queued behind the bulk would wait here for ever
    await asyncio.wait_for(stack.settle(), timeout=60)
    updates = [c for c in stack.slack.calls_to("chat.update") if c.args["channel"] ==
               card.channel]
    assert {c.args["ts"] for c in updates} >= {card.ts, digest.ts}  # both shown in place
    assert "2 questions need a quick answer" in shown(stack, digest)
    c = await stack.bot.get_clarification(clarification_id=ids[0])
    assert [r.responder for r in c.responses] == ["p-sarah"]
    # the interactive results arrived with the bulk still waiting: not one more card went out
    assert len(stack.slack.calls_to("chat.postMessage")) - before == burst
    assert not any(task.done() for task in bulk[burst:])

    # then time passes and the delivery finishes, every card once
    while not all(task.done() for task in bulk):
        await time.advance(1.0)
        await asyncio.sleep(0)
        await asyncio.wait(bulk, timeout=0.01)
    refs = [task.result() for task in bulk]
    assert len(set(refs)) == BULK
    assert len(stack.slack.calls_to("chat.postMessage")) - before == BULK
