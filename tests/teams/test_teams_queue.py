"""The steward's attention queue in the Teams personal chat (TestFlow through the adapter's own
turn): "queue" answers with the card, a non-steward with a short message, anything else with
the help text."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from microsoft_agents.testing import TestAdapter

from cards import platform_limits as limits
from tests.engine.conftest import new_clarification
from tests.support.card_text import teams_block_text
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


def card_text(reply: Any) -> str:
    (attachment,) = reply.attachments
    return json.dumps(attachment.content, ensure_ascii=False)


async def test_teams_queue_counts_every_item_of_a_core_that_pages_by_one(
        teams: TeamsStack) -> None:
    """A core serving its lists one item a page gives the same card as one serving them
    whole: the same count and the same items, with no "…and more" (the walk follows the
    cursors to the end)."""
    made = [await created(teams) for _ in range(7)]
    make_steward(teams, "p-sarah")
    (whole,) = await say(teams, "queue")
    teams.clock.advance(timedelta(seconds=31))  # past the remembered queue
    teams.core.largest_page = 1
    (paged,) = await say(teams, "queue")
    assert paged.attachments[0].content == whole.attachments[0].content
    text = card_text(paged)
    assert all(cid in text for cid in made) and "more" not in text
    assert "At least" not in text and "clarifications in the workspaces" in text


async def test_teams_queue_says_when_the_cores_list_goes_on(teams: TeamsStack,
                                                           monkeypatch: Any) -> None:
    """The attention list goes on past what one build reads (two pages of one): the card says
    "at least 2" and ends with "…and maybe more" pointing to the CLI, under 28 KB."""
    from bot.core.paging import Bound
    from bot.interaction import attention

    monkeypatch.setattr(attention, "QUEUE_BOUND", Bound(pages=2, items=100, seconds=60))
    for _ in range(4):
        await created(teams)
    make_steward(teams, "p-sarah")
    teams.core.largest_page = 1
    (reply,) = await say(teams, "queue")
    card = reply.attachments[0].content
    assert "At least 2 clarifications" in card_text(reply)
    last = teams_block_text(card["body"][-1])
    assert "and maybe more" in last and "clarify-bot clarify queue" in last
    assert limits.card_bytes(card) <= limits.TEAMS_CARD_BYTES
    assert not limits.teams_card_problems(card)
