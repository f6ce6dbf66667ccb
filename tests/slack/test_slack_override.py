"""End to end through the Slack fake: the steward decides a conflict from the conflict card. The
override goes the answer path (outbox first) with ``stewardOverride`` and the required note; a
non-steward holding the card is refused by the core, told privately, and nothing is recorded; a
missing note is refused at the form."""

from __future__ import annotations

from typing import Any

from bot.core.models import BindingStatus, ClarificationState, Role
from bot.core.models import Channel as ContractChannel
from devslack import Message
from tests.slack.conftest import Stack
from tests.slack.test_slack_e2e import QUESTION, SECOND, SPAN_TEXT, shown


def note_input(value: str | None) -> dict[str, Any]:
    return {"value": {"type": "plain_text_input", "value": value}}


async def conflicted(stack: Stack, *, read_roles: list[str] | None = None
                     ) -> tuple[str, Message]:
    """Two editors disagree on a critical question; the steward's conflict card."""
    cid = await stack.create(authority={"authored_by": ["p-sarah"], "named": ["p-ahmed"]},
                             severity="critical", read_roles=read_roles)
    await stack.burst()
    await stack.click("U0SARAH", stack.card("U0SARAH", cid), "clarify.answer.0")
    await stack.settle()
    await stack.click("U0AHMED", stack.card("U0AHMED", cid), "clarify.answer.1")
    await stack.settle()
    (notice,) = stack.slack.dm_of("U0MARIA")
    return cid, notice


async def open_override(stack: Stack, user_id: str, notice: Message, index: int
                        ) -> dict[str, Any]:
    before = len(stack.slack.calls_to("views.open"))
    response = await stack.click(user_id, notice, f"clarify.override.{index}")
    await stack.settle()
    assert response.status == 200
    assert len(stack.slack.calls_to("views.open")) == before + 1
    # the modal just opened: an App Home published meanwhile is kept among the views too
    return [v for v in stack.slack.views.values() if v.get("type") == "modal"][-1]


async def test_steward_override_from_the_conflict_card(stack: Stack) -> None:
    """The conflict card offers each candidate; the steward picks one, writes the required note
    and the core records it as a steward override with the note; every card shows it."""
    cid, notice = await conflicted(stack)
    text = shown(stack, notice)
    assert "clarify.override.0" in text and "clarify.override.1" in text
    assert SPAN_TEXT not in text and QUESTION not in text

    modal = await open_override(stack, "U0MARIA", notice, 1)
    assert modal["callback_id"] == "clarify.override"
    (note,) = [b for b in modal["blocks"] if b["type"] == "input"]
    assert note["block_id"] == "override.note" and note["optional"] is False
    assert SECOND in modal["blocks"][0]["text"]["text"]

    response = await stack.submit("U0MARIA", modal, {"override.note": note_input(
        "Countersigned letter of 2 July")})
    assert response.status == 200
    await stack.settle()
    c = await stack.bot.get_clarification(clarification_id=cid)
    assert c.state is ClarificationState.ANSWERED
    last = c.responses[-1]
    assert (last.responder, last.answer_index, last.channel) == ("p-maria", 1,
                                                                  ContractChannel.SLACK)
    assert last.rights_at_answer_time is Role.STEWARD
    assert last.binding_status is BindingStatus.STEWARD_OVERRIDE
    # a baseline core keeps no note with an answer (the answer-note extension)
    assert last.note == ("Countersigned letter of 2 July" if stack.contract == "full" else None)
    assert c.bound_interval is not None
    sarah = shown(stack, stack.card("U0SARAH", cid))
    assert "clarify.answer.0" not in sarah  # the askees' cards no longer ask


async def test_steward_override_refused_for_a_non_steward(stack: Stack) -> None:
    """Maria got the card as the steward and is no longer one when she submits: the rights are
    read at answer time, the core refuses the override, nothing is recorded, and only Maria is
    told, privately, next to the card."""
    cid, notice = await conflicted(stack)
    before = await stack.bot.get_clarification(clarification_id=cid)
    key = next(k for k in stack.core.directory.people if k[1] == "p-maria")
    maria = stack.core.directory.people[key]
    stack.core.directory.people[key] = maria.model_copy(update={"memberships": [
        ms.model_copy(update={"role": Role.EDITOR}) for ms in maria.memberships]})
    modal = await open_override(stack, "U0MARIA", notice, 0)
    response = await stack.submit("U0MARIA", modal, {"override.note": note_input("Mine")})
    assert response.status == 200
    await stack.settle()
    c = await stack.bot.get_clarification(clarification_id=cid)
    assert c.state is ClarificationState.CONFLICTED
    assert c.responses == before.responses
    (told,) = stack.slack.calls_to("chat.postEphemeral")
    assert (told.args["user"], told.error) == ("U0MARIA", None)
    refused = stack.sink.of("answer_refused")
    assert refused and "STEWARD_OVERRIDE_FORBIDDEN" in refused[-1].message


async def test_steward_override_without_a_note_is_refused_at_the_form(stack: Stack) -> None:
    cid, notice = await conflicted(stack)
    modal = await open_override(stack, "U0MARIA", notice, 0)
    for value in (None, "   "):
        response = await stack.submit("U0MARIA", modal, {"override.note": note_input(value)})
        assert await response.json() == {"response_action": "errors", "errors": {
            "override.note": "A note is required for a steward override."}}
    await stack.settle()
    c = await stack.bot.get_clarification(clarification_id=cid)
    assert c.state is ClarificationState.CONFLICTED
    assert not any(r.note for r in c.responses)


async def test_steward_who_may_not_read_is_offered_no_decision(stack: Stack) -> None:
    """A steward who may not read the document gets the neutral conflict card without "Decide"
    buttons (an answer is only taken from someone who may read the source): no question, no
    title, no dates, nothing to tap."""
    cid, notice = await conflicted(stack, read_roles=["viewer", "editor"])
    text = shown(stack, notice)
    assert "clarify.override" not in text
    assert QUESTION not in text and SPAN_TEXT not in text
    assert "Harbor Street" not in text and "harbor-lease" not in text
    assert f"clarification {cid}" in text.lower()
    c = await stack.bot.get_clarification(clarification_id=cid)
    assert c.state is ClarificationState.CONFLICTED
