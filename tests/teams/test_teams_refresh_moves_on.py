"""A Teams card rebuilt for its reader (Universal Actions' ``adaptiveCard/action`` refresh,
through the adapter's own turn) says when the question moves on, and that it was reminded once
it was, as the card said when it was sent, while the question waits on them; once they
answered, the rebuilt card has no move-on line."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

from bot.clock import ManualClock
from cards.actions import ActionKind, ActionRef
from cards.views import QuestionView
from devcore.core import ReferenceCore
from tests.engine.conftest import new_clarification
from tests.teams.inbound import SARAH_AAD, TeamsStack
from tests.teams.outbound import TINA, core_with_tina
from tests.teams.test_teams_decline import asked, sent_to
from tests.teams.test_teams_handlers import CARD, flow, invoke_activity, invoke_answer

# the default 48 h window after the 60 s lease: 8 July 09:01 UTC (10:01 in London on the full
# contract, 09:01 on the baseline, which tells no zone)
MOVES_ON = "Moves on to the next person on 8 July at "
REMINDER = "Reminder: your answer is still needed."


@pytest.fixture
def core(clock: ManualClock) -> ReferenceCore:
    return core_with_tina(clock)


async def refreshed(teams: TeamsStack, cid: str, card_ref: str, *, user: str = SARAH_AAD
                    ) -> dict[str, Any]:
    """``user``'s client (Sarah's) refreshing the card: the card the invoke answers with."""
    data = teams.codec.teams_data(ActionRef(kind=ActionKind.REFRESH, card_ref=card_ref,
                                            clarification_id=cid))
    adapter, steps = flow(teams, user=user)
    await steps.send(invoke_activity(data, "clarify.refresh")).start_test()
    body = invoke_answer(adapter)
    assert body["statusCode"] == 200
    return body


async def test_a_refreshed_card_keeps_its_move_on_and_reminder_lines_while_it_waits(
        teams: TeamsStack) -> None:
    """Tina is next in the ranking: Sarah's card moves on to a person, not the steward."""
    cid = await new_clarification(teams.dev, authority={"authored_by": ["p-sarah"],
                                                        "owned_by": ["p-tina"]})
    card_ref = await asked(teams, cid)
    sent = sent_to(teams, "p-sarah", cid)[0].message
    assert isinstance(sent, QuestionView) and sent.moves_on_at is not None

    body = await refreshed(teams, cid, card_ref)
    shown = json.dumps(body["value"], ensure_ascii=False)
    assert body["type"] == CARD and MOVES_ON in shown and REMINDER not in shown
    # Tina may read the question, but the card is not hers: its turn is not hers either
    body = await refreshed(teams, cid, card_ref, user=TINA)
    assert body["type"] == CARD and "Moves on" not in json.dumps(body["value"])

    # her one reminder, at 75 % of the window (working hours are off in this stack)
    teams.clock.set(sent.moves_on_at - timedelta(hours=11, minutes=59))
    assert await teams.engine.reminders.flush() == 1
    shown = json.dumps((await refreshed(teams, cid, card_ref))["value"], ensure_ascii=False)
    assert MOVES_ON in shown and REMINDER in shown

    # she answers: the card no longer waits on her, and a refresh says nothing of moving on
    answer = teams.codec.teams_data(ActionRef(kind=ActionKind.ANSWER, card_ref=card_ref,
                                              clarification_id=cid, candidate=0))
    adapter, steps = flow(teams)
    await steps.send(invoke_activity(answer)).start_test()
    await teams.settle()
    assert await teams.responses(cid) == [("p-sarah", 0)]
    shown = json.dumps((await refreshed(teams, cid, card_ref))["value"], ensure_ascii=False)
    assert "Moves on" not in shown and REMINDER not in shown and "⏳" not in shown
