"""The steward's reach detail on Teams (TestFlow through the adapter's own turn): the weekly
report's button (an ``adaptiveCard/action`` invoke with verb ``reach``) and the personal chat's
"reach" message answer a steward with the detail card; anyone else with the card that says there
is nothing for them, naming nobody."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from bot.clock import ManualClock
from bot.reach.log import MemoryReachLog
from bot.reach.recording import ReachRecorder
from cards import platform_limits as limits
from cards.reach import REACH_VERB
from tests.engine.conftest import new_clarification
from tests.teams.inbound import STRANGER_AAD, TeamsStack
from tests.teams.test_teams_handlers import CARD, flow, invoke_activity, invoke_answer
from tests.teams.test_teams_override import make_steward
from tests.teams.test_teams_queue import say


async def reach_teams(make_teams: Any, clock: ManualClock) -> tuple[TeamsStack, list[str]]:
    """Two acme-legal questions: Tom may not read it, Olga has no Teams alias, Sarah is
    asked; the record written."""
    reach = ReachRecorder(MemoryReachLog(), clock=clock, retention=timedelta(days=90))
    teams = await make_teams(reach=reach)
    made = [await new_clarification(teams.dev, authority={"authored_by": [
        "p-tom", "p-olga", "p-sarah"]}) for _ in range(2)]
    await teams.engine.worker.run_burst()
    await reach.flush()
    return teams, made


async def tapped(teams: TeamsStack, *, user: str | None = None) -> dict[str, Any]:
    adapter, steps = flow(teams, **({"user": user} if user else {}))
    await steps.send(invoke_activity({}, REACH_VERB)).start_test()
    return invoke_answer(adapter)


async def test_the_reach_button_answers_a_steward_with_the_detail(
        make_teams: Any, clock: ManualClock) -> None:
    teams, made = await reach_teams(make_teams, clock)
    make_steward(teams, "p-sarah")
    body = await tapped(teams)
    assert body["statusCode"] == 200 and body["type"] == CARD
    card = body["value"]
    text = json.dumps(card, ensure_ascii=False)
    assert "Olga Ivanova" in text and "Tom Becker" in text
    assert not any(cid in text for cid in made)
    assert limits.card_bytes(card) <= limits.TEAMS_CARD_BYTES
    assert not limits.teams_card_problems(card)


async def test_the_reach_message_answers_a_steward_with_the_detail(
        make_teams: Any, clock: ManualClock) -> None:
    teams, _ = await reach_teams(make_teams, clock)
    make_steward(teams, "p-sarah")
    (reply,) = await say(teams, "  Reach ")
    (attachment,) = reply.attachments
    assert attachment.content_type == CARD
    assert "Olga Ivanova" in json.dumps(attachment.content, ensure_ascii=False)


async def test_a_non_steward_is_refused_the_reach_detail(
        make_teams: Any, clock: ManualClock) -> None:
    """Sarah the editor, and a stranger no person has the alias of: nothing for them, nobody
    named."""
    teams, _ = await reach_teams(make_teams, clock)
    for who in (None, STRANGER_AAD):
        body = await tapped(teams, user=who)
        text = json.dumps(body, ensure_ascii=False)
        assert body["statusCode"] == 200
        assert "Nothing for you here" in text
        assert "Olga" not in text and "Tom" not in text
    (reply,) = await say(teams, "reach")
    assert "Olga" not in json.dumps(reply.attachments[0].content, ensure_ascii=False)


async def test_without_a_reach_record_reach_is_not_a_command(teams: TeamsStack) -> None:
    """A bot that keeps no reach record answers "reach" with the help text, as any other
    word, rather than promise a detail it cannot give."""
    make_steward(teams, "p-sarah")
    (reply,) = await say(teams, "reach")
    assert not reply.attachments
    (help_reply,) = await say(teams, "hello")
    assert reply.text == help_reply.text
