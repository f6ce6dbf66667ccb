"""The answer path through real HTTP: durable before the ack, in the order people acted, one
failing entry never holding up the others, and outcomes only on the clicker's own cards."""

from __future__ import annotations

import asyncio
import copy
from datetime import timedelta
from typing import Any

import pytest
import structlog

from bot.answering.outbox import ConsumerConfig, OutboxConsumers
from bot.metrics import REGISTRY
from bot.store.errors import StoreUnavailable
from bot.store.memory import MemoryStore
from tests.slack.conftest import Stack, Switchable, payload_of, responders

OLDER, NEWER = "1783330000.000100", "1783330000.000200"  # two action times, 100 µs apart


def acted(stamp: str) -> Any:
    def edit(payload: dict[str, Any]) -> None:
        payload["actions"][0]["action_ts"] = stamp

    return edit


async def two_editors(stack: Stack) -> tuple[str, Any]:
    """A critical question (nothing binds on one answer) and Ahmed's card of it."""
    cid = await stack.create(authority={"authored_by": ["p-ahmed", "p-sarah"]},
                             severity="critical")
    await stack.burst()
    return cid, stack.card("U0AHMED", cid)


# ---------------------------------------------------------------- order


async def test_an_older_click_resent_after_a_newer_one_never_supersedes_it(stack: Stack) -> None:
    """Ahmed taps A, then B; A's request is sent again afterwards (a retry or a replay inside
    the signing window, freshly signed): it is a duplicate of an answer the core has, so the
    core keeps A then B, B active, and nobody is shown anything for the replay."""
    cid, card = await two_editors(stack)
    older = await payload_of(stack, "U0AHMED", card, "clarify.answer.0", payload_edit=acted(OLDER))
    newer = await payload_of(stack, "U0AHMED", card, "clarify.answer.1", payload_edit=acted(NEWER))
    for payload in (older, newer):
        assert (await stack.post_payload(payload)).status == 200
        await stack.settle()
    shown = stack.text_of(card)
    updates = len(stack.slack.calls_to("chat.update"))
    assert (await stack.post_payload(older)).status == 200
    await stack.settle()
    assert await responders(stack.bot, cid) == [("p-ahmed", 0), ("p-ahmed", 1)]
    c = await stack.bot.get_clarification(clarification_id=cid)
    assert c.responses[-1].answer_index == 1
    assert stack.sink.of("answer_stale") == []
    assert await stack.store.outbox_size() == 0
    assert stack.text_of(card) == shown
    assert len(stack.slack.calls_to("chat.update")) == updates
    assert stack.slack.ephemerals == []


async def test_a_delayed_older_click_arriving_after_a_newer_one_reaches_the_core_as_earlier(
        stack: Stack, contract: str) -> None:
    """The newer click arrives first, the older one later (delayed delivery): both reach the
    core. A core with answer-order records the older one as superseded by the newer (by
    Slack's action_ts, not arrival): the newer stays Ahmed's active answer. A baseline core
    orders by arrival (docs/delivery.md says what that costs)."""
    cid, card = await two_editors(stack)
    older = await payload_of(stack, "U0AHMED", card, "clarify.answer.0", payload_edit=acted(OLDER))
    newer = await payload_of(stack, "U0AHMED", card, "clarify.answer.1", payload_edit=acted(NEWER))
    assert (await stack.post_payload(newer)).status == 200
    await stack.settle()
    assert (await stack.post_payload(older)).status == 200
    await stack.settle()
    assert await responders(stack.bot, cid) == [("p-ahmed", 1), ("p-ahmed", 0)]
    assert stack.sink.of("answer_stale") == []
    assert await stack.store.outbox_size() == 0
    if contract == "full":
        c = await stack.bot.get_clarification(clarification_id=cid)
        newest, late = c.responses
        assert late.superseded_by == newest.response_id and newest.superseded_by is None
        assert late.responded_at is not None and newest.responded_at is not None
        assert late.responded_at < newest.responded_at
        (forwarded,) = [e for e in stack.sink.of("answer_forwarded") if e.extra]
        assert forwarded.extra == {"superseded": "true"}


@pytest.mark.full_contract
async def test_a_late_older_click_never_unbinds_or_conflicts_with_the_bound_newer_one(
        stack: Stack) -> None:
    """Normal severity: Ahmed's newer click binds; his older click arrives afterwards. It is
    recorded as superseded: the clarification stays answered with the newer date, no conflict
    and no steward review."""
    cid = await stack.create(authority={"authored_by": ["p-ahmed"]})
    await stack.burst()
    card = stack.card("U0AHMED", cid)
    older = await payload_of(stack, "U0AHMED", card, "clarify.answer.0", payload_edit=acted(OLDER))
    newer = await payload_of(stack, "U0AHMED", card, "clarify.answer.1", payload_edit=acted(NEWER))
    assert (await stack.post_payload(newer)).status == 200
    await stack.settle()
    bound = await stack.bot.get_clarification(clarification_id=cid)
    assert bound.state.value == "answered"
    assert (await stack.post_payload(older)).status == 200
    await stack.settle()
    c = await stack.bot.get_clarification(clarification_id=cid)
    assert c.state.value == "answered" and c.bound_interval == bound.bound_interval
    assert [r.binding_status.value for r in c.responses] == ["bound", "binding_candidate"]
    assert c.responses[1].superseded_by == c.responses[0].response_id
    assert not any(ev.type in ("post_binding_conflict", "conflict_entered") for ev in c.events)


async def test_a_malformed_action_time_is_a_bad_request(stack: Stack) -> None:
    """An action_ts that is not a Slack timestamp is a 400 and nothing is queued."""
    cid, card = await two_editors(stack)
    for stamp in ("soon", "1783330000", "1e9.5", "1783330000.1234567", 1783330000.5):
        response = await stack.click("U0AHMED", card, "clarify.answer.0",
                                     payload_edit=acted(stamp))  # type: ignore[arg-type]
        assert response.status == 400, stamp
    assert await stack.store.outbox_size() == 0


# ---------------------------------------------------------------- durable before the ack


async def test_a_click_that_cannot_be_made_durable_is_not_acknowledged(
        stack: Stack, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the store unavailable the click is answered with a server error, not "ok", so Slack
    tells the person it failed instead of the answer vanishing."""
    _, card = await two_editors(stack)

    async def unavailable(*args: Any, **kwargs: Any) -> Any:
        raise StoreUnavailable()

    monkeypatch.setattr(stack.store, "outbox_accept", unavailable)
    response = await stack.click("U0AHMED", card, "clarify.answer.0")
    assert response.status >= 500


async def test_a_store_that_hangs_is_a_503_inside_slacks_deadline_and_the_retry_lands_once(
        stack: Stack, monkeypatch: pytest.MonkeyPatch) -> None:
    """A store that does not answer is treated as down after ``accept_seconds``: 503, logged
    by reason; Slack's retry, once the store answers again, is forwarded exactly once."""
    cid, card = await two_editors(stack)
    seen = copy.deepcopy(card)
    accept = stack.store.outbox_accept

    async def hangs(*args: Any, **kwargs: Any) -> Any:
        await asyncio.Event().wait()

    stack.adapter.kit.accept_seconds = 0.2
    monkeypatch.setattr(stack.store, "outbox_accept", hangs)
    response = await stack.click("U0AHMED", card, "clarify.answer.0")
    assert response.status == 503
    assert (await response.json())["error"] == "answer_not_durable"
    monkeypatch.setattr(stack.store, "outbox_accept", accept)
    assert (await stack.click("U0AHMED", card, "clarify.answer.0", seen=seen)).status == 200
    assert (await stack.click("U0AHMED", card, "clarify.answer.0", seen=seen)).status == 200
    await stack.settle()
    assert await responders(stack.bot, cid) == [("p-ahmed", 0)]


async def test_a_full_outbox_refuses_the_click_with_a_503_and_retry_after_then_takes_it_once(
        stack: Stack) -> None:
    """A full outbox stores nothing and acknowledges nothing: 503, value-free, with Retry-After,
    counted; once there is room, Slack's retry of the same click is forwarded exactly once."""
    cid, card = await two_editors(stack)
    seen = copy.deepcopy(card)
    assert isinstance(stack.store, MemoryStore)
    room = stack.store._outbox_max
    stack.store._outbox_max = 0  # full: no room for one more answer
    before = REGISTRY.value("clarify_outbox_full_total")
    response = await stack.click("U0AHMED", card, "clarify.answer.0")
    assert response.status == 503 and response.headers["Retry-After"] == "30"
    assert await response.json() == {"ok": False, "error": "outbox_full"}
    assert REGISTRY.value("clarify_outbox_full_total") == before + 1
    assert await stack.store.outbox_size() == 0
    stack.store._outbox_max = room
    assert (await stack.click("U0AHMED", card, "clarify.answer.0", seen=seen)).status == 200
    await stack.settle()
    assert await responders(stack.bot, cid) == [("p-ahmed", 0)]


async def test_the_answer_is_in_the_outbox_when_the_ack_arrives(stack: Stack) -> None:
    """When the 200 arrives the answer is already in the outbox, before any consumer ran."""
    cid, card = await two_editors(stack)
    assert (await stack.click("U0AHMED", card, "clarify.answer.0")).status == 200
    assert await stack.store.outbox_size() == 1
    assert await responders(stack.bot, cid) == []
    await stack.settle()
    assert await responders(stack.bot, cid) == [("p-ahmed", 0)]


# ---------------------------------------------------------------- isolation


async def test_a_poison_entry_ahead_of_good_ones_is_parked_and_holds_nothing_up(
        make_stack: Any, switchable_client: Any, transport: Switchable) -> None:
    """An entry that cannot even be read waits ahead of two good answers while the core is down;
    it is retried with backoff and parked after max_failures, the good ones reach the core
    exactly once when it is back, and the parking is audited and counted."""
    stack: Stack = await make_stack(core_client=switchable_client)
    cid = await stack.create(authority={"authored_by": ["p-ahmed", "p-sarah"]},
                             severity="critical")
    await stack.burst()
    cards = {user: stack.card(user, cid) for user in ("U0AHMED", "U0SARAH")}
    await stack.store.outbox_accept("poison", "{}", order_key="clr-x|slack|acme|U0X",
                                    acted_at=1, now=stack.clock.now() - timedelta(seconds=1))
    transport.down = True
    for user, card in cards.items():
        assert (await stack.click(user, card, "clarify.answer.0")).status == 200
    parked_before = REGISTRY.value("clarify_outbox_parked_total")
    policy = stack.answers.policy
    for attempt in range(policy.max_failures):
        if attempt == 2:
            transport.down = False  # the core comes back while the poison is still retried
        await stack.settle()
        stack.clock.advance(policy.backoff(attempt + 1))
    await stack.settle()
    assert sorted(await responders(stack.bot, cid)) == [("p-ahmed", 0), ("p-sarah", 0)]
    assert transport.answers_taken == 2
    assert (await stack.store.outbox_size(), await stack.store.outbox_parked()) == (0, 1)
    (parked,) = stack.sink.of("answer_parked")
    assert parked.extra["error"] == "KeyError" and "{}" not in parked.message
    assert REGISTRY.value("clarify_outbox_parked_total") == parked_before + 1


async def _waits_while_the_core_is_away(stack: Stack, transport: Switchable,
                                        monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Ahmed and Sarah answer at once while the core is away: the seconds each entry is put
    back for (``Store.outbox_retry``'s due time, from now)."""
    cid, card = await two_editors(stack)
    waits: list[float] = []
    retry = stack.store.outbox_retry

    async def recorded(entry: Any, *, at: Any, failed: bool) -> None:
        waits.append((at - stack.clock.now()).total_seconds())
        await retry(entry, at=at, failed=failed)

    monkeypatch.setattr(stack.store, "outbox_retry", recorded)
    transport.down = True
    await stack.click("U0AHMED", card, "clarify.answer.0")
    await stack.click("U0SARAH", stack.card("U0SARAH", cid), "clarify.answer.0")
    await stack.settle()
    assert await stack.store.outbox_size() == 2
    return waits


async def test_entries_failing_together_are_retried_apart(
        make_stack: Any, switchable_client: Any, transport: Switchable,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The outbox's waits are jittered (``OutboxPolicy.retry``): with the real random source
    two answers the core turned away at the same moment come back at different times, each
    within [half, all] of the first ceiling (2 s)."""
    stack: Stack = await make_stack(core_client=switchable_client)
    waits = await _waits_while_the_core_is_away(stack, transport, monkeypatch)
    ceiling = stack.answers.policy.backoff(1).total_seconds()
    assert len(waits) == 2 and waits[0] != waits[1]
    assert all(ceiling / 2 <= w <= ceiling for w in waits)


async def test_with_a_draw_of_one_the_outbox_waits_its_ceilings(
        make_stack: Any, switchable_client: Any, transport: Switchable,
        monkeypatch: pytest.MonkeyPatch) -> None:
    stack: Stack = await make_stack(core_client=switchable_client)
    monkeypatch.setattr(stack.answers, "random", lambda: 1.0)
    waits = await _waits_while_the_core_is_away(stack, transport, monkeypatch)
    assert waits == [2.0, 2.0] == [stack.answers.policy.backoff(1).total_seconds()] * 2


async def test_a_failing_entry_is_retried_with_backoff_before_it_is_parked(
        stack: Stack, monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug that hits one answer is retried later, each time later than before, and the entry
    is parked only after max_failures; another person's answer is forwarded meanwhile."""
    cid, card = await two_editors(stack)
    forward = stack.answers._forward

    async def buggy(entry: Any, cb: Any) -> Any:
        if cb.user_id == "U0AHMED":
            raise RuntimeError("a bug")
        return await forward(entry, cb)

    monkeypatch.setattr(stack.answers, "_forward", buggy)
    monkeypatch.setattr(stack.answers, "random", lambda: 1.0)  # each wait: its ceiling
    await stack.click("U0AHMED", card, "clarify.answer.0")
    await stack.click("U0SARAH", stack.card("U0SARAH", cid), "clarify.answer.0")
    await stack.settle()
    assert await responders(stack.bot, cid) == [("p-sarah", 0)]
    taken = 0
    for failures in range(1, stack.answers.policy.max_failures):
        wait = stack.answers.policy.backoff(failures)
        stack.clock.advance(wait - timedelta(milliseconds=1))
        assert await stack.consumers.run_burst() == 0  # not before its time
        stack.clock.advance(timedelta(milliseconds=1))
        taken += await stack.consumers.run_burst()
    assert taken == stack.answers.policy.max_failures - 1
    assert await stack.store.outbox_parked() == 1
    assert [e.extra["error"] for e in stack.sink.of("answer_parked")] == ["RuntimeError"]


# ---------------------------------------------------------------- whose card shows it


async def test_the_outcome_shows_on_the_clickers_own_card_not_the_named_message(
        stack: Stack) -> None:
    """Ahmed's click whose container names Sarah's message (of another question) leaves that
    message untouched; Ahmed's own card shows what his answer did."""
    sarahs_cid = await stack.create(authority={"authored_by": ["p-sarah"]})
    ahmeds_cid = await stack.create(authority={"authored_by": ["p-ahmed"]})
    await stack.burst()
    sarahs, ahmeds = stack.card("U0SARAH", sarahs_cid), stack.card("U0AHMED", ahmeds_cid)
    before = stack.text_of(sarahs)

    def naming_sarahs_message(payload: dict[str, Any]) -> None:
        payload["container"].update(channel_id=sarahs.channel, message_ts=sarahs.ts)
        payload["channel"]["id"] = sarahs.channel

    response = await stack.click("U0AHMED", ahmeds, "clarify.answer.0",
                                 payload_edit=naming_sarahs_message)
    assert response.status == 200
    await stack.settle()
    assert await responders(stack.bot, ahmeds_cid) == [("p-ahmed", 0)]
    assert stack.text_of(sarahs) == before
    assert not [c for c in stack.slack.calls_to("chat.update") if c.args.get("ts") == sarahs.ts]
    assert "Recorded as evidence" in stack.text_of(ahmeds)
    assert stack.slack.ephemerals == []


# ---------------------------------------------------------------- bounded, continuous draining


async def test_consumers_forward_a_burst_with_bounded_concurrency(stack: Stack) -> None:
    """Forty answers queued at once are forwarded by at most three consumers at a time, each
    taking the next one as soon as it is free; all reach the core once."""
    ids = [await stack.create(authority={"authored_by": ["p-ahmed"]}) for _ in range(40)]
    for cid in ids:
        await stack.answers.take(stack_callback(stack, cid, "U0AHMED"), respond_within=5.0)
    consumers = OutboxConsumers(stack.answers, ConsumerConfig(consumers=3))
    assert await consumers.run_burst() == 40
    assert consumers.peak == 3
    for cid in ids:
        assert await responders(stack.bot, cid) == [("p-ahmed", 0)]
    assert await stack.store.outbox_size() == 0


async def test_a_running_consumer_wakes_on_a_new_answer_without_waiting_to_poll(
        stack: Stack) -> None:
    """With a poll interval of an hour, an answer queued in this process is forwarded at once:
    the consumers wake on it."""
    cid, card = await two_editors(stack)
    consumers = OutboxConsumers(stack.answers, ConsumerConfig(consumers=2, poll_seconds=3600))
    running = asyncio.create_task(consumers.run())
    try:
        await asyncio.sleep(0)  # let it claim (nothing yet) and go to sleep
        assert (await stack.click("U0AHMED", card, "clarify.answer.0")).status == 200
        for _ in range(500):  # bounded wait for the forward, not a timing assertion
            if await stack.store.outbox_size() == 0 and not consumers.in_flight():
                break
            await asyncio.sleep(0.01)
        assert await responders(stack.bot, cid) == [("p-ahmed", 0)]
    finally:
        consumers.stop()
        await asyncio.wait_for(running, 10)


def stack_callback(stack: Stack, cid: str, user_id: str) -> Any:
    from bot.chat import Callback

    return Callback(platform="slack", tenant_id="acme", user_id=user_id, team_id="T0ACME",
                    enterprise_id="E0ACME", aad_tenant_id=None, clarification_id=cid,
                    card_ref="d.bench", message_ref=None, answer_index=0,
                    received_at=stack.clock.now())


async def test_work_after_an_ack_that_fails_unexpectedly_is_logged_not_lost(
        stack: Stack, monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug in work started after an acknowledgement (opening the form) is logged by its type;
    no task is left with an exception nobody retrieved (the suite fails on those)."""
    _, card = await two_editors(stack)

    async def broken(click: Any) -> Any:
        raise RuntimeError("a bug")

    from adapters.slack import forms

    monkeypatch.setattr(forms, "_modal", lambda adapter, click: broken(click))
    with structlog.testing.capture_logs() as logs:
        assert (await stack.click("U0AHMED", card, "clarify.custom")).status == 200
        if stack.adapter.kit.tasks:  # finished, but awaited by no one: only the adapter sees it
            await asyncio.wait(set(stack.adapter.kit.tasks))
        await asyncio.sleep(0)
    assert {"event": "slack.task_failed", "error": "RuntimeError",
            "log_level": "error"} in logs


async def test_log_lines_name_people_by_pseudonym_only(stack: Stack, capsys: Any) -> None:
    """A click through the real endpoint, forwarded to the core and shown on the card, with the
    JSON log on at debug: no line holds Ahmed's Slack user id or person id in clear text; the
    lines that name him carry his pseudonym (a keyed hash, the same on every line), so they can
    still be followed (docs/operations.md, "Erasure")."""
    import json

    from bot import pseudonym
    from bot.logs import configure_logging

    configure_logging(level="debug")
    capsys.readouterr()
    cid, card = await two_editors(stack)
    assert (await stack.click("U0AHMED", card, "clarify.answer.0")).status == 200
    await stack.settle()
    assert await responders(stack.bot, cid) == [("p-ahmed", 0)]
    with structlog.contextvars.bound_contextvars(slack_user="U0AHMED"):  # as the adapter binds
        structlog.get_logger("clarify.test").info("slack.something", person_id="p-ahmed",
                                                  teams_user=None)
    err = capsys.readouterr().err
    assert err.strip()
    assert "U0AHMED" not in err and "p-ahmed" not in err
    [line] = [json.loads(x) for x in err.splitlines() if "slack.something" in x]
    assert line["slack_user"] == pseudonym.pseudonym("U0AHMED")
    assert line["person_id"] == pseudonym.pseudonym("p-ahmed") != line["slack_user"]
    assert pseudonym.is_pseudonym(line["slack_user"]) and line["teams_user"] is None
