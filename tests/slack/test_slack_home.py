"""The steward's attention queue on the Slack App Home tab, through the Slack fake: an
``app_home_opened`` event signed as Slack signs it, the home view published with views.publish."""

from __future__ import annotations

import json
from typing import Any

from cards import limits
from tests.engine.conftest import new_clarification
from tests.slack.conftest import Stack


def home_event(user_id: str, *, team_id: str = "T0ACME", enterprise_id: str | None = "E0ACME",
               tab: str = "home") -> dict[str, Any]:
    """An Events API callback as Slack sends it when a person opens the app's Home tab."""
    body: dict[str, Any] = {
        "token": "unused", "team_id": team_id, "api_app_id": "A0CLARIFY",
        "type": "event_callback", "event_id": "Ev0HOME", "event_time": 1783328400,
        "event": {"type": "app_home_opened", "user": user_id, "channel": "D0HOME", "tab": tab,
                  "event_ts": "1783328400.000100"}}
    if enterprise_id:
        body["enterprise_id"] = enterprise_id
    return body


async def open_home(stack: Stack, user_id: str, **kwargs: Any) -> dict[str, Any] | None:
    response = await stack.post_signed(json.dumps(home_event(user_id, **kwargs)).encode(),
                                       content_type="application/json")
    assert response.status == 200
    await stack.adapter.drain()
    return stack.slack.homes.get(user_id)


async def created(stack: Stack, **kwargs: Any) -> str:
    """An open critical clarification: in the attention queue from the start."""
    cid = await new_clarification(stack.dev, authority={"named": ["p-sarah"]},
                                  severity="critical", **kwargs)
    return cid


def shown(home: dict[str, Any]) -> str:
    return json.dumps(home["blocks"], ensure_ascii=False)


async def test_slack_home_lists_the_stewards_queue(stack: Stack) -> None:
    """Maria stewards acme-legal: she sees its urgent clarifications, titles where she may read
    the source and a neutral reference where she may not; nothing of acme-finance."""
    readable = await created(stack)
    hidden = await created(stack, read_roles=["editor"])  # stewards may not read this one
    finance = await created(stack, workspace="acme-finance")
    title = (await stack.bot.get_clarification(clarification_id=readable)).document.title
    home = await open_home(stack, "U0MARIA")
    assert home is not None and home["type"] == "home"
    text = shown(home)
    assert readable in text and hidden in text and finance not in text
    assert text.count(title) == 1  # only the readable item carries the title
    assert "a document in the" in text  # the neutral reference for the withheld one
    assert not limits.slack_modal_problems(home)
    assert len(home["blocks"]) <= limits.SLACK_MODAL_BLOCKS


async def test_slack_home_empty_for_a_non_steward(stack: Stack) -> None:
    """Sarah (an editor) gets the short "nothing for you here" home, no clarification named."""
    cid = await created(stack)
    home = await open_home(stack, "U0SARAH")
    assert home is not None
    assert cid not in shown(home) and "Nothing for you here" in shown(home)


async def test_slack_home_shows_nothing_of_another_tenant(stack: Stack) -> None:
    """Gina stewards globex: an acme clarification never reaches her home (her workspace is not
    served here: the empty home)."""
    cid = await created(stack)
    stack.slack.add_user("U0GINA")
    home = await open_home(stack, "U0GINA", team_id="T0GLOBEX", enterprise_id=None)
    assert home is not None and cid not in shown(home)


async def test_slack_home_other_tabs_publish_nothing(stack: Stack) -> None:
    await created(stack)
    assert await open_home(stack, "U0MARIA", tab="messages") is None


async def test_slack_home_pages_a_long_queue(stack: Stack, monkeypatch: Any) -> None:
    """More than a home view holds: within 100 blocks, with "…and N more"."""
    from bot import interactions

    monkeypatch.setattr(interactions, "QUEUE_MAX", 3)
    for _ in range(5):
        await created(stack)
    home = await open_home(stack, "U0MARIA")
    assert home is not None
    assert "and 2 more" in shown(home)
    assert sum(1 for b in home["blocks"] if b["block_id"].startswith("queue.")
               and b["block_id"][6:].isdigit()) == 3
