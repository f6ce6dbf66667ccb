"""Reliability of the Slack path: the core down or slow, Slack rate-limiting or failing, retries.

The core client's transport can be switched off (connection refused) or slowed down; Slack faults
come from the fake's injection; the channel's sleep records what it was asked to wait.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from datetime import timedelta
from typing import Any
from urllib.parse import urlencode

import pytest

from bot.answering.outbox import OutboxConsumers
from bot.clock import ManualClock
from bot.core.client import CoreClient
from bot.core.models import ClarificationState
from bot.store.base import OutboxEntry
from bot.store.errors import StoreUnavailable
from devslack import LocalSlack, Message, SlackError
from tests.slack.conftest import Stack, Switchable, payload_of, responders

RECORDING_WORDS = "is being recorded"


@pytest.fixture
async def flaky(make_stack: Any, switchable_client: CoreClient) -> Stack:
    return await make_stack(core_client=switchable_client)


class RecordingSleep:
    """The channel's sleep: remembers every wait and moves the manual clock by it."""

    def __init__(self, clock: ManualClock) -> None:
        self.clock = clock
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.clock.advance(timedelta(seconds=seconds))


def recording_sleep(stack: Stack) -> RecordingSleep:
    sleep = RecordingSleep(stack.clock)
    stack.adapter.kit.channel.sleep = sleep  # the one channel the worker, answers and adapter share
    return sleep


def posted(slack: LocalSlack) -> Counter[str]:
    """Successful chat.postMessage calls per delivery token."""
    return Counter(
        call.args["metadata"]["event_payload"]["delivery"]
        for call in slack.calls_to("chat.postMessage")
        if call.status == 200 and isinstance(call.args.get("metadata"), dict))


# ---------------------------------------------------------------- the core down or slow


async def test_answers_wait_in_the_outbox_while_the_core_is_down(
        flaky: Stack, transport: Switchable, bot_client: CoreClient, truth: CoreClient) -> None:
    """Answers given while the core is down are told privately that they are being recorded,
    and are recorded exactly once, and shown on the cards, when the core is back."""
    cid = await flaky.create(authority={"authored_by": ["p-ahmed", "p-sarah"]},
                             severity="critical")
    await flaky.burst()
    cards = {user: flaky.card(user, cid) for user in ("U0AHMED", "U0SARAH")}
    transport.down = True
    for user, card in cards.items():
        assert (await flaky.click(user, card, "clarify.answer.0")).status == 200
    await flaky.settle()
    told = {note["user"]: note["text"] for note in flaky.slack.ephemerals}
    assert set(told) == {"U0AHMED", "U0SARAH"}
    assert all(RECORDING_WORDS in text for text in told.values())
    assert await responders(truth, cid) == []
    assert await flaky.store.outbox_size() == 2
    assert await flaky.consumers.run_burst() == 0  # waiting for their retry time
    flaky.clock.advance(timedelta(seconds=2))
    assert await flaky.consumers.run_burst() == 2  # still down: nothing lost, nothing settled
    assert await flaky.store.outbox_size() == 2
    transport.down = False
    flaky.clock.advance(timedelta(minutes=6))
    assert await flaky.consumers.run_burst() == 2
    await flaky.answers.followups.drain()
    assert await flaky.consumers.run_burst() == 0
    assert sorted(await responders(truth, cid)) == [("p-ahmed", 0), ("p-sarah", 0)]
    assert transport.answers_taken == 2
    assert await flaky.store.outbox_size() == 0
    c = await truth.get_clarification(clarification_id=cid)
    assert c.state is ClarificationState.ANSWERED
    for card in cards.values():
        assert "Recorded as binding evidence" in flaky.text_of(card)
    assert len(flaky.slack.ephemerals) == 2  # told once each, not at every retry


@pytest.mark.slow
async def test_ack_is_fast_while_the_core_is_slow(
        flaky: Stack, transport: Switchable, bot_client: CoreClient, truth: CoreClient) -> None:
    """A click is acknowledged well under a second while the core takes 1.5 s to answer."""
    cid = await flaky.create(authority={"authored_by": ["p-ahmed"]})
    await flaky.burst()
    card = flaky.card("U0AHMED", cid)
    transport.delay = 1.5
    transport.slow = lambda request: request.method == "POST"
    started = time.monotonic()
    response = await flaky.click("U0AHMED", card, "clarify.answer.0")
    acked = time.monotonic() - started
    assert response.status == 200
    assert acked < 0.75, f"the ack took {acked:.2f} s"
    await flaky.settle()
    assert await responders(truth, cid) == [("p-ahmed", 0)]


async def test_a_second_consumer_during_a_slow_answer_does_not_forward_it_again(
        flaky: Stack, transport: Switchable, bot_client: CoreClient, truth: CoreClient) -> None:
    """Another consumer (another replica) looking at the outbox while an answer is on its way
    to the core does not send it a second time."""
    cid = await flaky.create(authority={"authored_by": ["p-ahmed", "p-sarah"]},
                             severity="critical")  # a second answer would be recorded
    await flaky.burst()
    card = flaky.card("U0AHMED", cid)
    transport.delay = 0.5
    transport.slow = lambda request: request.url.path.endswith("/answer")
    assert (await flaky.click("U0AHMED", card, "clarify.answer.0")).status == 200
    first = asyncio.create_task(flaky.consumers.run_burst())
    await asyncio.wait_for(transport.answering.wait(), 5)  # the answer is on its way to the core
    assert await OutboxConsumers(flaky.answers).run_burst() == 0
    assert await first == 1
    await flaky.settle()
    assert await responders(truth, cid) == [("p-ahmed", 0)]
    assert transport.answers_taken == 1
    assert await flaky.store.outbox_size() == 0


async def test_core_lost_right_after_taking_an_answer_does_not_duplicate_it(
        flaky: Stack, transport: Switchable, bot_client: CoreClient, truth: CoreClient) -> None:
    """If the core goes away just after recording answer A, a later answer B stays the latest."""
    cid = await flaky.create(authority={"authored_by": ["p-ahmed", "p-sarah"]},
                             severity="critical")  # unbound after one answer: B supersedes A
    await flaky.burst()
    card = flaky.card("U0AHMED", cid)
    shown = Message(**{**vars(card), "blocks": list(card.blocks)})  # the card before it changes
    transport.fail_after = lambda request: request.url.path.endswith("/answer")
    assert (await flaky.click("U0AHMED", card, "clarify.answer.0")).status == 200
    await flaky.settle()
    transport.down = False
    transport.fail_after = lambda _: False
    assert (await flaky.click("U0AHMED", card, "clarify.answer.1", seen=shown)).status == 200
    await flaky.settle()
    flaky.clock.advance(timedelta(minutes=6))
    await flaky.settle()
    assert await responders(truth, cid) == [("p-ahmed", 0), ("p-ahmed", 1)]
    assert transport.answers_taken == 2
    assert await flaky.store.outbox_size() == 0


# ---------------------------------------------------------------- Slack failing


async def test_rate_limited_burst_delivers_each_card_once(stack: Stack) -> None:
    """Slack's 429s on a burst are waited out for Retry-After and every card arrives once."""
    sleep = recording_sleep(stack)
    people = {"p-ahmed": "U0AHMED", "p-sarah": "U0SARAH", "p-maria": "U0MARIA"}
    cids = [await stack.create(authority={"authored_by": [person]}) for person in people]
    stack.slack.fail_next("chat.postMessage", status=429, retry_after=7, times=2)
    await stack.burst()
    limited = [c for c in stack.slack.calls_to("chat.postMessage") if c.status == 429]
    assert len(limited) == 2
    for cid, user in zip(cids, people.values(), strict=True):
        assert len(stack.cards_of(user, cid)) == 1
    counts = posted(stack.slack)
    assert len(counts) == 3 and set(counts.values()) == {1}
    for call in limited:  # the refused deliveries were posted afterwards, once each
        assert counts[call.args["metadata"]["event_payload"]["delivery"]] == 1
    assert len([w for w in sleep.waits if w >= 7]) >= 2


async def test_slack_5xx_once_is_retried_into_one_card(stack: Stack) -> None:
    """A 500 on chat.postMessage is looked up, then retried: one card."""
    recording_sleep(stack)
    cid = await stack.create(authority={"authored_by": ["p-ahmed"]})
    stack.slack.fail_next("chat.postMessage", status=500)
    await stack.burst()
    assert len(stack.cards_of("U0AHMED", cid)) == 1
    assert [c.status for c in stack.slack.calls_to("chat.postMessage")] == [500, 200]
    assert stack.slack.counts["conversations.history"] >= 1
    assert (await stack.click("U0AHMED", stack.card("U0AHMED", cid),
                              "clarify.answer.0")).status == 200
    await stack.settle()
    assert await responders(stack.bot, cid) == [("p-ahmed", 0)]


async def test_post_that_landed_despite_a_500_is_found_not_reposted(stack: Stack) -> None:
    """A post Slack stored but answered with 500 is found by its metadata and not posted again."""
    recording_sleep(stack)
    slack = stack.slack
    original = slack._post_message
    failed: list[str] = []

    def landed_then_500(args: dict[str, Any]) -> dict[str, Any]:
        answer = original(args)
        if not failed:
            failed.append(answer["ts"])
            raise SlackError("fatal_error", status=500, html=True)
        return answer

    slack._post_message = landed_then_500  # type: ignore[method-assign]
    cid = await stack.create(authority={"authored_by": ["p-ahmed"]})
    await stack.burst()
    assert failed
    assert [c.status for c in slack.calls_to("chat.postMessage")] == [500]
    cards = stack.cards_of("U0AHMED", cid)
    assert [c.ts for c in cards] == failed
    assert (await stack.click("U0AHMED", cards[0], "clarify.answer.0")).status == 200
    await stack.settle()
    assert await responders(stack.bot, cid) == [("p-ahmed", 0)]
    assert "Recorded as evidence" in stack.text_of(cards[0])


# ---------------------------------------------------------------- clicks repeated


async def test_same_click_three_times_is_one_response(stack: Stack) -> None:
    """One signed click delivered three times (Slack retries 1 and 2) records one response."""
    cid = await stack.create(authority={"authored_by": ["p-ahmed"]})
    await stack.burst()
    card = stack.card("U0AHMED", cid)
    body = json.dumps(await payload_of(stack, "U0AHMED", card, "clarify.answer.0"))
    raw = urlencode({"payload": body}).encode()
    stamp = time.time()
    retries = ({}, {"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"},
               {"X-Slack-Retry-Num": "2", "X-Slack-Retry-Reason": "http_timeout"})
    for headers in retries:
        response = await stack.post_signed(raw, timestamp=stamp, headers=headers)
        assert response.status == 200
    await stack.settle()
    assert await responders(stack.bot, cid) == [("p-ahmed", 0)]
    updates = [c for c in stack.slack.calls_to("chat.update") if c.args.get("ts") == card.ts]
    assert len(updates) == 1
    assert "Recorded as evidence" in stack.text_of(card)
    assert await stack.store.outbox_size() == 0


async def test_two_different_buttons_quickly_leave_the_later_answer_active(
        stack: Stack, contract: str) -> None:
    """Answer A then B tapped quickly by one person, both waiting in the outbox: both reach the
    core in that order, A sent as superseded (recorded, never counted, shown to no one), B the
    active one."""
    cid = await stack.create(authority={"authored_by": ["p-ahmed", "p-sarah"]},
                             severity="critical")
    await stack.burst()
    card = stack.card("U0AHMED", cid)
    first = await payload_of(stack, "U0AHMED", card, "clarify.answer.0")
    second = await payload_of(stack, "U0AHMED", card, "clarify.answer.1")
    assert first["actions"][0]["value"] != second["actions"][0]["value"]
    for payload in (first, second):
        assert (await stack.post_payload(payload)).status == 200
    await stack.settle()
    assert await responders(stack.bot, cid) == [("p-ahmed", 0), ("p-ahmed", 1)]
    c = await stack.bot.get_clarification(clarification_id=cid)
    assert c.responses[1].supersedes == c.responses[0].response_id
    if contract == "full":
        assert c.responses[0].superseded_by == c.responses[1].response_id
    assert stack.sink.of("answer_stale") == []
    assert stack.slack.ephemerals == []


async def test_an_answer_resent_after_a_crash_never_supersedes_a_newer_one(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The process dies after the core took answer A, before the outbox forgot it; B follows
    and waits for A (the first in Ahmed's order) until A's lease ends; A is resent (the core
    answers it with its first outcome: nothing new recorded), then B: the core keeps B
    active."""
    cid = await stack.create(authority={"authored_by": ["p-ahmed", "p-sarah"]},
                             severity="critical")
    await stack.burst()
    card = stack.card("U0AHMED", cid)
    forget = stack.store.outbox_done

    async def crash_before_forgetting(entry: OutboxEntry, **_: object) -> None:
        raise StoreUnavailable()  # the process is gone: A stays held until its lease ends

    monkeypatch.setattr(stack.store, "outbox_done", crash_before_forgetting)
    answer_a = await payload_of(stack, "U0AHMED", card, "clarify.answer.0")
    answer_b = await payload_of(stack, "U0AHMED", card, "clarify.answer.1")  # the card as seen
    await stack.post_payload(answer_a)
    await stack.settle()
    assert await responders(stack.bot, cid) == [("p-ahmed", 0)]
    assert await stack.store.outbox_size() == 1  # A is still there, as after a crash
    monkeypatch.setattr(stack.store, "outbox_done", forget)  # the restarted process
    await stack.post_payload(answer_b)
    await stack.settle()
    assert await responders(stack.bot, cid) == [("p-ahmed", 0)]  # B waits for A's key
    stack.clock.advance(timedelta(seconds=61))
    await stack.settle()
    assert await stack.store.outbox_size() == 0
    assert await responders(stack.bot, cid) == [("p-ahmed", 0), ("p-ahmed", 1)]
    c = await stack.bot.get_clarification(clarification_id=cid)
    assert c.quorum.confirmed_by == ["p-ahmed"] and c.responses[-1].answer_index == 1
    assert stack.sink.of("answer_stale") == []
