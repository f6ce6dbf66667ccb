""""Not the right person" end to end: reference core + worker + Slack adapter + fake Slack,
people pressing signed buttons."""

from __future__ import annotations

import copy
from datetime import timedelta
from typing import Any

import pytest

from bot.channel import ChannelError
from bot.core.client import CoreClient
from bot.core.models import Clarification, ClarificationEvent, ClarificationState, ReasonCode
from bot.engine import views
from tests.slack.conftest import Stack, Switchable

SPAN_TEXT = "The renewed term is effective next quarter."
PASSED_ON = "Thanks, this question has been passed on to someone else."
WHY_AUTHOR = "You were asked because you wrote or signed this document."
WHY_NAMED = "You were asked because you are named in this document."
NOT_YOURS = "This question was not sent to you, so it cannot be passed on from here."
TRY_AGAIN = "The question could not be passed on right now. Please try again in a moment."
LEASE = timedelta(seconds=61)  # past the worker's lease (60 s), far inside the 48 h window


def declined_events(c: Clarification) -> list[ClarificationEvent]:
    return [ev for ev in c.events
            if ev.type == "skipped" and ev.reason_code is ReasonCode.CANDIDATE_DECLINED]


@pytest.mark.full_contract  # the expedite extension (without it: the tests at the end)
async def test_decline_passes_the_question_on_at_once(stack: Stack) -> None:
    """Ahmed says he is not the right person: a CANDIDATE_DECLINED skip on the core's trail
    and the audit, his card says it was passed on, and Sarah gets a card without the clock
    reaching the escalation window."""
    cid = await stack.create(authority={"authored_by": ["p-ahmed"], "named": ["p-sarah"]})
    await stack.burst()
    ahmed = stack.card("U0AHMED", cid)
    assert WHY_AUTHOR in stack.text_of(ahmed) and SPAN_TEXT in stack.text_of(ahmed)
    await stack.later(LEASE)  # the lease ran out: the job now waits out the window
    assert not stack.cards_of("U0SARAH", cid)

    response = await stack.click("U0AHMED", ahmed, "clarify.decline")
    assert response.status == 200
    await stack.settle()
    shown = stack.text_of(ahmed)
    assert PASSED_ON in shown and "clarify.answer" not in shown and "clarify.decline" not in shown

    c = await stack.bot.get_clarification(clarification_id=cid)
    assert [(ev.person_id, ev.attempt) for ev in declined_events(c)] == [("p-ahmed", 0)]
    audited = [ev for ev in stack.sink.of("skipped")
               if ev.reason_code is ReasonCode.CANDIDATE_DECLINED]
    assert [(ev.person_id, ev.job_id) for ev in audited] == [("p-ahmed", c.job_id)]

    await stack.burst()  # no clock movement at all: the job is visible now
    sarah = stack.card("U0SARAH", cid)
    assert WHY_NAMED in stack.text_of(sarah)
    assert stack.clock.now() - c.created_at < timedelta(hours=1)
    await stack.click("U0SARAH", sarah, "clarify.answer.0")
    await stack.settle()
    c = await stack.bot.get_clarification(clarification_id=cid)
    assert c.state is ClarificationState.ANSWERED
    assert PASSED_ON in stack.text_of(ahmed)  # the settled state does not repaint his card


async def test_decline_while_the_job_is_still_leased(stack: Stack) -> None:
    """A decline right after the card arrived (the job still leased): the lease's end brings
    the next turn with no backoff."""
    cid = await stack.create(authority={"authored_by": ["p-ahmed"], "named": ["p-sarah"]})
    await stack.burst()
    await stack.click("U0AHMED", stack.card("U0AHMED", cid), "clarify.decline")
    await stack.settle()
    await stack.later(LEASE)
    assert stack.cards_of("U0SARAH", cid)


async def test_decline_twice_is_one_skip(stack: Stack) -> None:
    """A second press (Slack retry, a double tap on the card still shown) records nothing."""
    cid = await stack.create(authority={"authored_by": ["p-ahmed"], "named": ["p-sarah"]})
    await stack.burst()
    ahmed = stack.card("U0AHMED", cid)
    seen = copy.deepcopy(ahmed)
    await stack.click("U0AHMED", ahmed, "clarify.decline")
    await stack.settle()
    await stack.click("U0AHMED", ahmed, "clarify.decline", seen=seen)
    await stack.settle()
    c = await stack.bot.get_clarification(clarification_id=cid)
    assert len(declined_events(c)) == 1
    assert len([ev for ev in stack.sink.of("skipped")
                if ev.reason_code is ReasonCode.CANDIDATE_DECLINED]) == 1
    assert PASSED_ON in stack.text_of(ahmed)
    await stack.later(LEASE)
    assert len(stack.cards_of("U0SARAH", cid)) == 1


async def test_decline_by_someone_else_is_refused(stack: Stack) -> None:
    """Sarah pressing the button of Ahmed's card (a forwarded payload) is refused like an
    answer from a stranger: audited, nothing recorded, nobody else asked, his card as it was."""
    cid = await stack.create(authority={"authored_by": ["p-ahmed"], "named": ["p-sarah"]})
    await stack.burst()
    ahmed = stack.card("U0AHMED", cid)
    response = await stack.click("U0SARAH", ahmed, "clarify.decline")
    assert response.status == 200
    await stack.settle()
    # she is told why, in place, through the click's response_url (Slack refuses an
    # ephemeral in a DM she is not part of)
    assert stack.slack.ephemerals == []
    assert [(r["user"], r["text"], r["response_type"], r["replace_original"])
            for r in stack.slack.responses] == [("U0SARAH", NOT_YOURS, "ephemeral", False)]
    c = await stack.bot.get_clarification(clarification_id=cid)
    assert declined_events(c) == []
    refused = stack.sink.of("decline_refused")
    assert [ev.reason_code for ev in refused] == [ReasonCode.RESPONDER_NOT_AUTHORISED]
    assert "clarify.decline" in stack.text_of(ahmed)
    await stack.later(LEASE)
    assert not stack.cards_of("U0SARAH", cid)


@pytest.mark.full_contract  # the expedite extension
async def test_last_candidate_declining_escalates_to_the_steward(stack: Stack) -> None:
    """Nobody is left after Ahmed: the redacted steward escalation goes out at once."""
    cid = await stack.create(authority={"authored_by": ["p-ahmed"]})
    await stack.burst()
    await stack.later(LEASE)
    assert not stack.cards_of("U0MARIA")
    await stack.click("U0AHMED", stack.card("U0AHMED", cid), "clarify.decline")
    await stack.settle()
    await stack.burst()
    escalation = stack.cards_of("U0MARIA")
    assert escalation, "the steward was not told"
    shown = stack.text_of(escalation[-1])
    assert SPAN_TEXT not in shown
    c = await stack.bot.get_clarification(clarification_id=cid)
    assert stack.clock.now() - c.created_at < timedelta(hours=1)


async def test_question_card_shows_the_excerpt_only_to_a_reader(stack: Stack) -> None:
    """The view builder fills the excerpt only for someone who passes the RBAC gate: Tom
    (finance only) would get no span text even if a card were built for him."""
    cid = await stack.create(authority={"authored_by": ["p-ahmed"]})
    c = await stack.bot.get_clarification(clarification_id=cid)
    now = stack.clock.now()
    ahmed = await stack.bot.get_person(person_id="p-ahmed", tenant_id=c.tenant_id)
    tom = await stack.bot.get_person(person_id="p-tom", tenant_id=c.tenant_id)
    shown = views.question_view(c, card_ref="d.x", person=ahmed, zone="UTC", now=now)
    assert shown.excerpt == SPAN_TEXT
    hidden = views.question_view(c, card_ref="d.x", person=tom, zone="UTC", now=now)
    assert hidden.excerpt == "" and hidden.relation is None


async def test_decline_refused_for_a_card_no_longer_known_says_why(make_stack: Any) -> None:
    """Ahmed presses "Not the right person" on a card the bot no longer has on record (its
    store was replaced): nothing is recorded, and he is told why in place, in plain words."""
    stack: Stack = await make_stack()
    cid = await stack.create(authority={"authored_by": ["p-ahmed"], "named": ["p-sarah"]})
    await stack.burst()
    card = stack.card("U0AHMED", cid)
    fresh: Stack = await make_stack()  # the same core and Slack, a bot with an empty store
    response = await fresh.click("U0AHMED", card, "clarify.decline")
    assert response.status == 200
    await fresh.settle()
    assert [(r["user"], r["text"]) for r in stack.slack.responses] == [("U0AHMED", NOT_YOURS)]
    c = await stack.bot.get_clarification(clarification_id=cid)
    assert declined_events(c) == []
    assert "clarify.decline" in stack.text_of(card)


async def test_decline_with_the_core_away_says_to_try_again(
        make_stack: Any, switchable_client: CoreClient, transport: Switchable) -> None:
    """The core cannot be reached: nothing is shown as done, and the person reads why."""
    stack: Stack = await make_stack(core_client=switchable_client)
    cid = await stack.create(authority={"authored_by": ["p-ahmed"], "named": ["p-sarah"]})
    await stack.burst()
    card = stack.card("U0AHMED", cid)
    transport.down = True
    response = await stack.click("U0AHMED", card, "clarify.decline")
    assert response.status == 200
    await stack.settle()
    assert [(r["user"], r["text"]) for r in stack.slack.responses] == [("U0AHMED", TRY_AGAIN)]
    assert "clarify.decline" in stack.text_of(card)


async def test_decline_response_url_off_slack_is_never_posted_to(stack: Stack) -> None:
    """Only Slack's hooks host, or the Web API's origin (here the fake's), is posted to: any
    other response_url is refused before a request is made."""
    channel = stack.adapter.kit.channel
    for url in ("https://attacker.invalid/hook", "http://127.0.0.1:1/actions/x",
                "https://hooks.slack.com.attacker.invalid/x"):
        with pytest.raises(ChannelError) as refused:
            await channel.respond(url, "words")
        assert refused.value.reason == "response_url_not_slack"
    ours = stack.slack.new_response_url("U0AHMED", "D0AHMED")
    await channel.respond(ours, "words")
    assert [r["text"] for r in stack.slack.responses] == ["words"]


async def test_decline_of_a_dead_lettered_question_passes_nothing_on(stack: Stack) -> None:
    """A question whose job was dead-lettered has no next turn: no skip is recorded, nobody
    else is asked, and the card says it has moved on (not "passed on")."""
    cid = await stack.create(authority={"authored_by": ["p-ahmed"], "named": ["p-sarah"]})
    await stack.burst()
    ahmed = stack.card("U0AHMED", cid)
    record = stack.core.records[cid].model
    stack.core.records[cid].model = record.model_copy(
        update={"state": ClarificationState.DEAD_LETTERED})
    await stack.click("U0AHMED", ahmed, "clarify.decline")
    await stack.settle()
    shown = stack.text_of(ahmed)
    assert "has moved on" in shown and PASSED_ON not in shown
    c = await stack.bot.get_clarification(clarification_id=cid)
    assert declined_events(c) == []
    assert not stack.cards_of("U0SARAH", cid)


LATER = ("Thanks, this question will be passed on to someone else when your turn with it ends. "
         "You do not need to do anything more.")
WINDOW = timedelta(hours=48)


@pytest.mark.baseline_contract
async def test_on_a_baseline_core_a_decline_after_the_lease_waits_out_the_turn_and_says_so(
        stack: Stack) -> None:
    """A core without the expedite extension cannot start the next turn early: Ahmed declines
    after the lease ran out, his card says the question will be passed on when his turn ends
    (never that it already was), the skip is on the core's trail, and Sarah is asked when the
    window has run out, not before."""
    cid = await stack.create(authority={"authored_by": ["p-ahmed"], "named": ["p-sarah"]})
    await stack.burst()
    ahmed = stack.card("U0AHMED", cid)
    await stack.later(LEASE)
    assert (await stack.click("U0AHMED", ahmed, "clarify.decline")).status == 200
    await stack.settle()
    shown = stack.text_of(stack.card("U0AHMED", cid))
    assert LATER in shown and "has been passed on" not in shown
    c = await stack.bot.get_clarification(clarification_id=cid)
    assert [ev.person_id for ev in declined_events(c)] == ["p-ahmed"]
    await stack.later(WINDOW - timedelta(minutes=5))
    assert not stack.cards_of("U0SARAH", cid)
    await stack.later(timedelta(minutes=10))
    assert len(stack.cards_of("U0SARAH", cid)) == 1


@pytest.mark.baseline_contract
async def test_on_a_baseline_core_a_decline_while_the_lease_is_held_asks_the_next_at_once(
        stack: Stack) -> None:
    """Ahmed declines while the worker still holds the job's lease: the lease is extended, the
    job advanced past him, and Sarah is asked at once; his card says it was passed on."""
    cid = await stack.create(authority={"authored_by": ["p-ahmed"], "named": ["p-sarah"]})
    await stack.burst()
    ahmed = stack.card("U0AHMED", cid)
    assert (await stack.click("U0AHMED", ahmed, "clarify.decline")).status == 200
    await stack.settle()
    assert PASSED_ON in stack.text_of(stack.card("U0AHMED", cid))
    assert len(stack.cards_of("U0SARAH", cid)) == 1
    c = await stack.bot.get_clarification(clarification_id=cid)
    assert [ev.person_id for ev in declined_events(c)] == ["p-ahmed"]
    job = stack.core.jobs.jobs[c.job_id or ""]
    assert job.attempts == 1  # Sarah's turn; her window runs from now


@pytest.mark.baseline_contract
async def test_on_a_baseline_core_the_last_candidate_declining_in_the_lease_tells_the_steward(
        stack: Stack) -> None:
    """Nobody is left after Ahmed, who declines while the lease is held: the redacted steward
    escalation goes out at once."""
    cid = await stack.create(authority={"authored_by": ["p-ahmed"]})
    await stack.burst()
    await stack.click("U0AHMED", stack.card("U0AHMED", cid), "clarify.decline")
    await stack.settle()
    escalation = stack.cards_of("U0MARIA")
    assert escalation, "the steward was not told"
    assert SPAN_TEXT not in stack.text_of(escalation[-1])
