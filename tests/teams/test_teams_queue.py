"""The steward's attention queue in the Teams personal chat (TestFlow through the adapter's own
turn): "queue" answers with the card, a non-steward with a short message, anything else with
the help text."""

from __future__ import annotations

import json
from typing import Any

from microsoft_agents.testing import TestAdapter

from cards import limits
from tests.engine.conftest import new_clarification
from tests.teams.inbound import STRANGER_AAD, TeamsStack
from tests.teams.test_teams_handlers import CARD, flow
from tests.teams.test_teams_override import make_steward


def replies(adapter: TestAdapter) -> list[Any]:
    return [a for a in adapter.activity_queue if a.type == "message"]


async def created(teams: TeamsStack, **kwargs: Any) -> str:
    """An open critical clarification: in the attention queue from the start."""
    return await new_clarification(teams.dev, authority={"named": ["p-ahmed"]},
                                   severity="critical", **kwargs)


async def say(teams: TeamsStack, words: str, **kwargs: Any) -> list[Any]:
    adapter, steps = flow(teams, **kwargs)
    await steps.send(words).start_test()
    return replies(adapter)


async def test_teams_queue_answers_a_steward_with_the_card(teams: TeamsStack) -> None:
    """Sarah, made steward of acme-legal, sends "  Queue ": the card lists that workspace's
    queue (the title only where she may read the source), nothing of acme-finance, < 28 KB."""
    readable = await created(teams)
    hidden = await created(teams, read_roles=["editor"])
    finance = await created(teams, workspace="acme-finance")
    title = (await teams.reader.get_clarification(clarification_id=readable)).document.title
    if teams.contract == "baseline":  # a baseline core gives no title: the link names it
        title = "[the source document](https://docs.acme.example/legal/harbor-lease-renewal)"
    make_steward(teams, "p-sarah")
    (reply,) = await say(teams, "  Queue ")
    (attachment,) = reply.attachments
    assert attachment.content_type == CARD
    card = attachment.content
    text = json.dumps(card, ensure_ascii=False)
    assert readable in text and hidden in text and finance not in text
    assert text.count(title) == 1 and "a document in the" in text
    assert limits.card_bytes(card) <= limits.TEAMS_CARD_BYTES
    assert not limits.teams_card_problems(card)


async def test_teams_queue_empty_for_a_non_steward(teams: TeamsStack) -> None:
    """Sarah the editor gets the short "nothing for you here" message, no card, no id."""
    cid = await created(teams)
    (reply,) = await say(teams, "queue")
    assert not reply.attachments
    assert "Nothing for you here" in reply.text and cid not in reply.text


async def test_teams_queue_unknown_person_sees_nothing(teams: TeamsStack) -> None:
    cid = await created(teams)
    (reply,) = await say(teams, "queue", user=STRANGER_AAD)
    assert not reply.attachments and cid not in reply.text


async def test_teams_anything_else_gets_the_help(teams: TeamsStack) -> None:
    (reply,) = await say(teams, "hello")
    assert not reply.attachments and '"queue"' in reply.text


async def test_teams_queue_not_answered_in_a_group_chat(teams: TeamsStack) -> None:
    make_steward(teams, "p-sarah")
    assert await say(teams, "queue", kind="groupChat") == []
