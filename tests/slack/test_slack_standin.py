"""End to end through the local Slack stand-in's own interactions: a person's click and their
modal's submission, sent by the stand-in (``LocalSlack.click``, ``submit``) to the running Slack
adapter, reach the reference core; what the person then sees is read with ``seen_by``."""

from __future__ import annotations

from bot.core.models import ClarificationState
from tests.slack.conftest import Stack


async def test_a_click_sent_by_the_stand_in_is_recorded_by_the_core(stack: Stack) -> None:
    cid = await stack.create(authority={"authored_by": ["p-ahmed"]})
    await stack.burst()
    card = stack.card("U0AHMED", cid)
    reply = await stack.slack.click("U0AHMED", channel=card.channel, ts=card.ts,
                                    action_id="clarify.answer.0")
    assert reply.status == 200
    await stack.settle()
    c = await stack.bot.get_clarification(clarification_id=cid)
    assert c.state is ClarificationState.ANSWERED
    assert [(r.responder, r.answer_index) for r in c.responses] == [("p-ahmed", 0)]
    (seen,) = [m for m in stack.slack.seen_by("U0AHMED")["messages"] if m["ts"] == card.ts]
    assert seen["edits"] >= 1 and "Recorded as evidence" in str(seen["blocks"])


async def test_the_something_else_form_through_the_stand_in(stack: Stack) -> None:
    """The button opens the form as Ahmed's modal; an end before the start comes back as an
    error under the field, with the form still open; a valid range closes it and binds."""
    cid = await stack.create(authority={"authored_by": ["p-ahmed"]})
    await stack.burst()
    card = stack.card("U0AHMED", cid)
    await stack.slack.click("U0AHMED", channel=card.channel, ts=card.ts,
                            action_id="clarify.custom")
    await stack.settle()
    (modal,) = stack.slack.seen_by("U0AHMED")["modals"]
    assert modal["view"]["callback_id"] == "clarify.custom"

    refused = await stack.slack.submit("U0AHMED", view_id=modal["id"], values={
        "custom.0.from": "2026-09-30", "custom.0.to": "2026-08-15"})
    assert refused.status == 200 and refused.body is not None
    assert refused.body["response_action"] == "errors"
    (still,) = stack.slack.seen_by("U0AHMED")["modals"]
    assert still["errors"] == {"custom.0.to": "The end date must be on or after the start date."}

    taken = await stack.slack.submit("U0AHMED", view_id=modal["id"], values={
        "custom.0.from": "2026-08-15", "custom.0.to": "2026-09-30",
        "custom.0.note": "Letter, page 2"})
    assert (taken.status, taken.body) == (200, None)
    assert stack.slack.seen_by("U0AHMED")["modals"] == []
    await stack.settle()
    c = await stack.bot.get_clarification(clarification_id=cid)
    assert c.state is ClarificationState.ANSWERED
    (record,) = c.responses
    assert record.answer_custom is not None
    assert (record.answer_custom.valid_from, record.answer_custom.source_text) == (
        "2026-08-15", "Letter, page 2")
