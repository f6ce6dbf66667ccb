"""The steward override on Teams (TestFlow through the adapter's turn, and once over HTTP): the
conflict card's action returns the confirmation card with a required Input.Text; a submit
without a note is the form again, nothing recorded; the core reads the person's rights when the
override arrives, so a non-steward is refused (told in the invoke's answer, nothing recorded)
and a steward's override is recorded with ``stewardOverride`` and the note."""

from __future__ import annotations

from bot.core.models import (
    AnswerRequest,
    BindingStatus,
    ClarificationState,
    Role,
)
from bot.core.models import (
    Channel as ContractChannel,
)
from cards.actions import OVERRIDE_NOTE_ID, ActionKind
from cards.overrides import OVERRIDE_SUBMIT_VERB, OVERRIDE_VERB
from tests.engine.conftest import new_clarification
from tests.teams.inbound import TeamsStack, action_data, invoke
from tests.teams.test_teams_handlers import CARD, flow, invoke_activity, invoke_answer
from tests.teams.tokens import claims, sign


async def conflicted(teams: TeamsStack) -> str:
    cid = await new_clarification(teams.dev, authority={"authored_by": ["p-sarah"],
                                                        "named": ["p-ahmed"]},
                                  severity="critical")
    for person, index in (("p-sarah", 0), ("p-ahmed", 1)):
        await teams.reader.answer_clarification(clarification_id=cid, request=AnswerRequest(
            answer_index=index, responder=person, rights=Role.EDITOR,
            channel=ContractChannel.TEAMS))
    c = await teams.reader.get_clarification(clarification_id=cid)
    assert c.state is ClarificationState.CONFLICTED
    return cid


def make_steward(teams: TeamsStack, person_id: str) -> None:
    """The workspace role changes in the core; the bot reads it at answer time."""
    key = next(k for k in teams.core.directory.people if k[1] == person_id)
    person = teams.core.directory.people[key]
    teams.core.directory.people[key] = person.model_copy(update={"memberships": [
        ms.model_copy(update={"role": Role.STEWARD}) for ms in person.memberships]})


def submit(teams: TeamsStack, cid: str, candidate: int, note: str | None) -> dict[str, object]:
    data = action_data(teams.codec, cid, candidate=candidate, kind=ActionKind.OVERRIDE_SUBMIT)
    return {**data, **({OVERRIDE_NOTE_ID: note} if note is not None else {})}


async def test_steward_override_form_requires_a_note(teams: TeamsStack) -> None:
    cid = await conflicted(teams)
    adapter, steps = flow(teams)
    opened = action_data(teams.codec, cid, candidate=1, kind=ActionKind.OVERRIDE_OPEN)
    await steps.send(invoke_activity(opened, OVERRIDE_VERB)).start_test()
    body = invoke_answer(adapter)
    assert body["type"] == CARD
    (note,) = [b for b in body["value"]["body"] if b["type"] == "Input.Text"]
    assert (note["id"], note["isRequired"]) == (OVERRIDE_NOTE_ID, True)
    assert body["value"]["actions"][0]["verb"] == OVERRIDE_SUBMIT_VERB

    adapter, steps = flow(teams)
    await steps.send(invoke_activity(submit(teams, cid, 1, "  "), OVERRIDE_SUBMIT_VERB)
                     ).start_test()
    body = invoke_answer(adapter)
    assert body["type"] == CARD
    assert "A note is required" in str(body["value"])
    await teams.settle()
    assert await teams.responses(cid) == [("p-sarah", 0), ("p-ahmed", 1)]


async def test_steward_override_refused_for_a_non_steward(teams: TeamsStack) -> None:
    """Sarah is an editor: her override is refused by the core, she is told, nothing recorded."""
    cid = await conflicted(teams)
    adapter, steps = flow(teams)
    await steps.send(invoke_activity(submit(teams, cid, 1, "I know best"),
                                     OVERRIDE_SUBMIT_VERB)).start_test()
    body = invoke_answer(adapter)
    assert "Only the workspace steward can record an override" in str(body["value"])
    await teams.settle()
    assert await teams.responses(cid) == [("p-sarah", 0), ("p-ahmed", 1)]
    assert "STEWARD_OVERRIDE_FORBIDDEN" in teams.sink.of("answer_refused")[-1].message


async def test_steward_override_recorded_with_its_note_over_http(teams: TeamsStack) -> None:
    """Sarah is made the steward after the conflict: her override, sent over HTTP as Teams
    sends it, is recorded as a steward override with the note, and the clarification binds."""
    cid = await conflicted(teams)
    make_steward(teams, "p-sarah")
    response = await teams.post(invoke(submit(teams, cid, 1, "Signed addendum"),
                                       verb=OVERRIDE_SUBMIT_VERB), sign(claims()))
    assert response.status == 200
    await teams.settle()
    c = await teams.reader.get_clarification(clarification_id=cid)
    assert c.state is ClarificationState.ANSWERED
    last = c.responses[-1]
    note = "Signed addendum" if teams.contract == "full" else None  # baseline: no note kept
    assert (last.responder, last.answer_index, last.note) == ("p-sarah", 1, note)
    assert last.binding_status is BindingStatus.STEWARD_OVERRIDE
    assert last.channel == "teams"
