"""End to end: reference core + worker + Slack adapter + fake Slack, people clicking signed."""

from __future__ import annotations

from bot.core import models as m
from tests.slack.conftest import Stack


async def test_normal_question_answered_in_one_tap(stack: Stack) -> None:
    """A DM card with candidate buttons; one tap binds; the card says what the answer did."""
    cid = await stack.create(authority={"authored_by": ["p-ahmed"]})
    await stack.burst()
    card = stack.card("U0AHMED", cid)
    assert "When does the Harbor Street lease renewal take effect?" in stack.text_of(card)
    response = await stack.click("U0AHMED", card, "clarify.answer.0")
    assert response.status == 200
    await stack.settle()
    c = await stack.bot.get_clarification(clarification_id=cid)
    assert c.state is m.ClarificationState.ANSWERED
    assert [(r.responder, r.channel) for r in c.responses] == [("p-ahmed", m.Channel.SLACK)]
    shown = stack.text_of(card)
    assert "Recorded as evidence" in shown and "Ahmed Karimi" in shown
    assert "clarify.answer.0" not in shown  # no buttons left to press
