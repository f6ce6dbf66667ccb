"""A click from a Slack user the directory does not tie to one verified person is refused, and
the person is told the real cause: the account is linked to more than one person (ALIAS_AMBIGUOUS),
or is not a verified identity (RESPONDER_NOT_AUTHORISED). Signed requests to the running adapter,
the reference core over HTTP on either contract, the fake Slack."""

from __future__ import annotations

import json

from bot.core.models import ReasonCode, SlackAlias
from devslack import Message
from tests.slack.conftest import Stack

SHARED = "linked to more than one person in the company directory"
UNVERIFIED = "not linked to a verified company identity"
SARAHS_USER = SlackAlias(user_id="U0SARAH", team_id="T0ACME", enterprise_id="E0ACME",
                         verified=True)


async def sarahs_card_then_shared(stack: Stack) -> tuple[str, Message]:
    """Sarah's card goes out; then Ahmed's Slack alias becomes her user: one chat user, two
    people of the tenant."""
    cid = await stack.create(authority={"authored_by": ["p-sarah"]})
    await stack.burst()
    card = stack.card("U0SARAH", cid)
    stack.core.directory.people[("acme", "p-ahmed")].aliases.slack[:] = [SARAHS_USER]
    return cid, card


def told(stack: Stack, user_id: str) -> list[str]:
    """What the user was told privately: ephemerals and in-place responses, as text."""
    shown = [x["text"] + json.dumps(x["blocks"], ensure_ascii=False)
             for x in stack.slack.ephemerals if x["user"] == user_id]
    return shown + [r["text"] for r in stack.slack.responses if r["user"] == user_id]


async def test_an_answer_from_a_shared_user_is_refused_naming_the_shared_link(
        stack: Stack) -> None:
    """Sarah's card went out; then Ahmed claims her Slack user too. Her click is refused with
    ALIAS_AMBIGUOUS (audit and core trail), nothing reaches the core's answers, and she is
    told the account is linked to more than one person, not that it is unverified."""
    cid, card = await sarahs_card_then_shared(stack)
    assert (await stack.click("U0SARAH", card, "clarify.answer.0")).status == 200
    await stack.settle()
    c = await stack.bot.get_clarification(clarification_id=cid)
    assert c.responses == []
    assert [ev.reason_code for ev in c.events if ev.type == "answer_refused"] == [
        ReasonCode.ALIAS_AMBIGUOUS]
    (refused,) = stack.sink.of("answer_refused")
    assert refused.reason_code is ReasonCode.ALIAS_AMBIGUOUS
    (note,) = told(stack, "U0SARAH")
    assert SHARED in note and UNVERIFIED not in note


async def test_a_decline_from_a_shared_user_is_refused_naming_the_shared_link(
        stack: Stack) -> None:
    """"Not the right person" pressed from a Slack user two people claim records no decline,
    audits ALIAS_AMBIGUOUS, and tells the presser the account is linked to more than one
    person (never that the question was not sent to them)."""
    cid, card = await sarahs_card_then_shared(stack)
    assert (await stack.click("U0SARAH", card, "clarify.decline")).status == 200
    await stack.settle()
    (note,) = told(stack, "U0SARAH")
    assert SHARED in note and "not sent to you" not in note
    assert [ev.reason_code for ev in stack.sink.of("decline_refused")] == [
        ReasonCode.ALIAS_AMBIGUOUS]
    c = await stack.bot.get_clarification(clarification_id=cid)
    assert [ev for ev in c.events if ev.reason_code is ReasonCode.CANDIDATE_DECLINED] == []
    assert "clarify.decline" in stack.text_of(card)


async def test_an_answer_from_an_unverified_user_still_says_unverified(stack: Stack) -> None:
    """Lee resolves to one person who is not a verified enterprise identity: his click is
    refused RESPONDER_NOT_AUTHORISED and he is told the account is not verified."""
    cid = await stack.create(authority={"authored_by": ["p-sarah"]})
    await stack.burst()

    def from_lee_dm(payload: dict) -> None:  # type: ignore[type-arg]
        payload["container"]["channel_id"] = payload["channel"]["id"] = "DU0LEE"

    await stack.click("U0LEE", stack.card("U0SARAH", cid), "clarify.answer.0",
                      payload_edit=from_lee_dm)
    await stack.settle()
    (note,) = told(stack, "U0LEE")
    assert UNVERIFIED in note and SHARED not in note
    assert [ev.reason_code for ev in stack.sink.of("answer_refused")] == [
        ReasonCode.RESPONDER_NOT_AUTHORISED]
