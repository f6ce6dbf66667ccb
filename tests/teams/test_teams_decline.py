""""Not the right person" on Teams: the ``Action.Execute`` invoke through the adapter's own
turn (TestFlow) and over real HTTP, answered with the "passed on" card."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

from bot.channels.recording import SentMessage
from bot.clock import ManualClock
from bot.core.models import AuthorityRelation, ReasonCode
from cards.actions import ActionKind, ActionRef
from cards.views import QuestionView
from devcore.core import ReferenceCore
from tests.engine.conftest import new_clarification
from tests.teams.inbound import SARAH_AAD, STRANGER_AAD, TeamsStack, invoke
from tests.teams.outbound import TINA, core_with_tina
from tests.teams.test_teams_handlers import CARD, flow, invoke_activity, invoke_answer
from tests.teams.tokens import claims, sign

MESSAGE = "application/vnd.microsoft.activity.message"
PASSED_ON = "Thanks, this question has been passed on to someone else."
LEASE = timedelta(seconds=61)  # past the worker's lease, far inside the 48 h window


@pytest.fixture
def core(clock: ManualClock) -> ReferenceCore:
    """The acme directory plus Tina, reachable on Teams, so a second candidate exists there."""
    return core_with_tina(clock)


async def asked(teams: TeamsStack, cid: str) -> str:
    """Sarah's card for ``cid`` delivered by the worker; Tina is next in the ranking."""
    await teams.engine.worker.run_burst()
    return sent_to(teams, "p-sarah", cid)[0].message.card_ref  # type: ignore[union-attr]


def sent_to(teams: TeamsStack, person_id: str, cid: str) -> list[SentMessage]:
    return [s for s in teams.channel.sent
            if s.key.person_id == person_id and s.key.clarification_id == cid]


def decline_data(teams: TeamsStack, cid: str, card_ref: str) -> dict[str, Any]:
    return teams.codec.teams_data(ActionRef(kind=ActionKind.DECLINE, card_ref=card_ref,
                                            clarification_id=cid))


async def declined(teams: TeamsStack, cid: str) -> list[tuple[str | None, int | None]]:
    c = await teams.reader.get_clarification(clarification_id=cid)
    return [(ev.person_id, ev.attempt) for ev in c.events
            if ev.type == "skipped" and ev.reason_code is ReasonCode.CANDIDATE_DECLINED]


def attempt(teams: TeamsStack, n: int) -> int | None:
    """The attempt an event names: a baseline core's events name none."""
    return n if teams.contract == "full" else None


async def test_a_decline_invoke_answers_with_the_passed_on_card(teams: TeamsStack) -> None:
    """Sarah declines: the invoke's card says passed on, the skip is on the core's trail and
    the audit, and Tina's card follows without the window running out."""
    cid = await new_clarification(teams.dev, authority={"authored_by": ["p-sarah"],
                                                        "owned_by": ["p-tina"]})
    card_ref = await asked(teams, cid)
    sarah_card = sent_to(teams, "p-sarah", cid)[0].message
    assert isinstance(sarah_card, QuestionView)
    # why she is asked is additive (a baseline core does not say)
    relation = AuthorityRelation.AUTHORED_BY if teams.contract == "full" else None
    assert sarah_card.relation is relation and sarah_card.excerpt
    adapter, steps = flow(teams)
    await steps.send(invoke_activity(decline_data(teams, cid, card_ref),
                                     "clarify.decline")).start_test()
    body = invoke_answer(adapter)
    assert body["statusCode"] == 200 and body["type"] == CARD
    assert PASSED_ON in json.dumps(body["value"], ensure_ascii=False)
    assert "Action.Execute" not in json.dumps(body["value"])
    assert await declined(teams, cid) == [("p-sarah", attempt(teams, 0))]
    assert [ev.person_id for ev in teams.sink.of("skipped")
            if ev.reason_code is ReasonCode.CANDIDATE_DECLINED] == ["p-sarah"]

    refresh = teams.codec.teams_data(ActionRef(kind=ActionKind.REFRESH, card_ref=card_ref,
                                               clarification_id=cid))
    adapter, steps = flow(teams)
    await steps.send(invoke_activity(refresh, "clarify.refresh")).start_test()
    assert invoke_answer(adapter)["type"] == MESSAGE  # the passed-on card is left as it is

    teams.clock.advance(LEASE)
    await teams.engine.worker.run_burst()
    tina = sent_to(teams, "p-tina", cid)
    assert len(tina) == 1 and isinstance(tina[0].message, QuestionView)
    owner = AuthorityRelation.OWNED_BY if teams.contract == "full" else None
    assert tina[0].message.relation is owner


async def test_a_decline_from_someone_else_is_refused(teams: TeamsStack) -> None:
    """Tina (verified, but not the card's person) and a stranger pressing Sarah's card: a
    short message naming each one's cause (not sent to you; an account linked to nobody),
    nothing recorded, nobody else asked."""
    cid = await new_clarification(teams.dev, authority={"authored_by": ["p-sarah"],
                                                        "owned_by": ["p-tina"]})
    card_ref = await asked(teams, cid)
    for user, cause in ((TINA, "not sent to you"),
                        (STRANGER_AAD, "not linked to anyone in the company directory")):
        adapter, steps = flow(teams, user=user)
        await steps.send(invoke_activity(decline_data(teams, cid, card_ref),
                                         "clarify.decline")).start_test()
        body = invoke_answer(adapter)
        assert body["type"] == MESSAGE and cause in str(body["value"])
    assert await declined(teams, cid) == []
    teams.clock.advance(LEASE)
    await teams.engine.worker.run_burst()
    assert sent_to(teams, "p-tina", cid) == []


async def test_the_same_decline_three_times_over_http_is_one_skip(teams: TeamsStack) -> None:
    """One decline delivered three times (Teams retrying the invoke) is one skip; every
    answer is the passed-on card."""
    cid = await new_clarification(teams.dev, authority={"authored_by": ["p-sarah"]})
    card_ref = await asked(teams, cid)
    click = invoke(decline_data(teams, cid, card_ref), verb="clarify.decline")
    answers = []
    for _ in range(3):
        response = await teams.post(click, sign(claims()))
        assert response.status == 200
        answers.append(json.loads(await response.text()))
    await teams.settle()
    assert all(a["type"] == CARD and PASSED_ON in json.dumps(a, ensure_ascii=False)
               for a in answers)
    assert await declined(teams, cid) == [("p-sarah", attempt(teams, 0))]
    # Sarah was the only candidate: the steward's turn comes at once (the acme steward has no
    # Teams account, so on this Teams-only bot it is recorded as a failed escalation; the
    # Slack test sees the card itself)
    teams.clock.advance(LEASE)
    await teams.engine.worker.run_burst()
    c = await teams.reader.get_clarification(clarification_id=cid)
    assert ("escalation_failed", attempt(teams, 1)) in [(ev.type, ev.attempt) for ev in c.events]


def test_sarah_is_the_default_actor() -> None:
    """The HTTP helper's invoke comes from Sarah, whose card the decline names."""
    assert invoke({})["from"]["aadObjectId"] == SARAH_AAD
