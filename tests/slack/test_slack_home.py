"""The steward's attention queue on the Slack App Home tab, through the Slack fake: an
``app_home_opened`` event signed as Slack signs it, the home view published with views.publish."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from typing import Any

from structlog.testing import capture_logs

from bot.chat import ChatUser
from bot.metrics import REGISTRY
from cards import platform_limits as limits
from tests.engine.conftest import new_clarification
from tests.slack.conftest import Stack
from tests.slack.test_slack_override import conflicted, note_input, open_override


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
    if stack.contract == "baseline":
        title = "the source document"  # a baseline core gives no title
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
    """Gina stewards globex: an acme clarification never reaches her home."""
    cid = await created(stack)
    stack.slack.add_user("U0GINA")
    home = await open_home(stack, "U0GINA", team_id="T0GLOBEX", enterprise_id=None)
    assert home is not None and cid not in shown(home)


async def test_slack_home_from_an_unmapped_workspace_publishes_nothing(stack: Stack) -> None:
    """A workspace mapped to no tenant: the event is acknowledged (200, as Slack needs) and
    nothing is published, not even an empty home; the skip is counted and logged without
    values."""
    await created(stack)
    stack.slack.add_user("U0STRAY")
    before = REGISTRY.value("clarify_slack_home_total", outcome="not_served")
    with capture_logs() as logs:
        home = await open_home(stack, "U0STRAY", team_id="T0NOWHERE", enterprise_id=None)
    assert home is None and not stack.slack.calls_to("views.publish")
    assert REGISTRY.value("clarify_slack_home_total", outcome="not_served") == before + 1
    skipped = [line for line in logs if line["event"] == "slack.home_skipped"]
    assert skipped == [{"event": "slack.home_skipped", "reason": "workspace_not_served",
                        "log_level": "info"}]


async def test_slack_home_other_tabs_publish_nothing(stack: Stack) -> None:
    await created(stack)
    assert await open_home(stack, "U0MARIA", tab="messages") is None


async def test_slack_home_pages_a_long_queue(stack: Stack, monkeypatch: Any) -> None:
    """More than a home view holds: within 100 blocks, with "…and N more"."""
    from bot.interaction import attention

    monkeypatch.setattr(attention, "QUEUE_MAX", 3)
    for _ in range(5):
        await created(stack)
    home = await open_home(stack, "U0MARIA")
    assert home is not None
    assert "and 2 more" in shown(home)
    assert sum(1 for b in home["blocks"] if b["block_id"].startswith("queue.")
               and b["block_id"][6:].isdigit()) == 3


async def test_slack_home_counts_every_item_of_a_core_that_pages_by_one(stack: Stack) -> None:
    """A core serving its lists one item a page: 25 clarifications need Maria, and her home
    says 25 and lists each, with no "…and more" (the walk follows the cursors to the end)."""
    made = [await created(stack) for _ in range(25)]
    stack.core.largest_page = 1
    home = await open_home(stack, "U0MARIA")
    assert home is not None
    text = shown(home)
    assert "25 clarifications in the workspaces you steward need attention" in text
    assert all(cid in text for cid in made)
    assert "more" not in text and not limits.slack_modal_problems(home)


async def test_slack_home_counts_only_the_stewards_own_beyond_the_shown(
        stack: Stack, monkeypatch: Any) -> None:
    """Maria's queue interleaved with acme-finance's, the tab showing two: the "…and N more"
    counts only her workspace's (the entries of a baseline list do not say whose they are, so
    those past the shown ones are read to count them), never the other workspace's."""
    from bot.interaction import attention

    monkeypatch.setattr(attention, "QUEUE_MAX", 2)
    mine = []
    for n in range(3):
        mine.append(await created(stack))
        if n < 2:
            await created(stack, workspace="acme-finance")
    stack.core.largest_page = 2
    home = await open_home(stack, "U0MARIA")
    assert home is not None
    text = shown(home)
    assert "3 clarifications in the workspaces you steward need attention" in text
    assert "and one more. `clarify-bot clarify queue` lists it" in text
    assert "maybe" not in text and "At least" not in text


async def test_slack_home_says_when_the_cores_list_goes_on(stack: Stack, monkeypatch: Any
                                                          ) -> None:
    """The attention list goes on past what one build reads (three pages of one here): the
    home says "at least 3", lists one (the cap), and ends with "…and 2 more, and maybe
    others" pointing to the CLI; never a bare count; the cut is counted."""
    from bot.core.paging import Bound
    from bot.interaction import attention

    monkeypatch.setattr(attention, "QUEUE_BOUND", Bound(pages=3, items=100, seconds=60))
    monkeypatch.setattr(attention, "QUEUE_MAX", 1)
    for _ in range(5):
        await created(stack)
    stack.core.largest_page = 1
    cut = REGISTRY.value("clarify_lists_cut_total", list="attention")
    home = await open_home(stack, "U0MARIA")
    assert home is not None
    text = shown(home)
    assert "At least 3 clarifications in the workspaces you steward need attention" in text
    assert home["blocks"][-1]["block_id"] == "queue.more"
    assert "and 2 more, and maybe others" in text and "clarify-bot clarify queue" in text
    assert REGISTRY.value("clarify_lists_cut_total", list="attention") == cut + 1
    assert not limits.slack_modal_problems(home)


# ---------------------------------------------------------------- remembered and re-published


def count_calls(monkeypatch: Any, client: Any, *names: str) -> dict[str, int]:
    """How often the bot's core client is asked each of ``names`` from now on."""
    calls = dict.fromkeys(names, 0)
    for name in names:
        real = getattr(client, name)

        async def counted(*args: Any, _name: str = name, _real: Any = real, **kwargs: Any
                          ) -> Any:
            calls[_name] += 1
            return await _real(*args, **kwargs)
        monkeypatch.setattr(client, name, counted)
    return calls


async def test_slack_home_is_remembered_per_steward(stack: Stack, monkeypatch: Any) -> None:
    """A second open inside the TTL reads no attention page and no clarification (one resolve);
    past the TTL (the injected clock) it is built again; opens at once share one build."""
    cid = await created(stack)
    calls = count_calls(monkeypatch, stack.engine.core, "attention_queue", "get_clarification",
                        "resolve_person")
    assert cid in shown(await open_home(stack, "U0MARIA") or {"blocks": []})
    built = dict(calls)
    assert built["attention_queue"] == 1 and built["get_clarification"] == 1
    await open_home(stack, "U0MARIA")
    assert calls["attention_queue"] == 1 and calls["get_clarification"] == 1
    assert calls["resolve_person"] == built["resolve_person"] + 1

    stack.clock.advance(timedelta(seconds=31))  # past the default 30 s
    await open_home(stack, "U0MARIA")
    assert calls["attention_queue"] == 2

    stack.clock.advance(timedelta(seconds=31))
    board = stack.engine.interactions.board
    maria = ChatUser(platform="slack", user_id="U0MARIA", team_id="T0ACME",
                     enterprise_id="E0ACME")
    views = await asyncio.gather(*(board.for_user(maria) for _ in range(5)))
    assert calls["attention_queue"] == 3 and len({v.items for v in views}) == 1


async def test_slack_home_cache_ttl_is_configurable(stack: Stack, monkeypatch: Any) -> None:
    """``answers.queue_cache_seconds`` = 0: every open is built from the core."""
    await created(stack)
    stack.engine.interactions.board.ttl_seconds = 0
    calls = count_calls(monkeypatch, stack.engine.core, "attention_queue")
    await open_home(stack, "U0MARIA")
    await open_home(stack, "U0MARIA")
    assert calls["attention_queue"] == 2


async def test_slack_home_republished_when_the_queue_changes(stack: Stack) -> None:
    """Maria's App Home follows her queue without her opening it again: the conflict notice
    sent to her re-publishes it (the remembered one is forgotten), and so does her override,
    after which the clarification is gone from it."""
    home = await open_home(stack, "U0MARIA")  # remembered from her first open
    assert home is not None and "Nothing needs a steward" in shown(home)
    published = len(stack.slack.calls_to("views.publish"))

    cid, notice = await conflicted(stack)
    assert len(stack.slack.calls_to("views.publish")) > published
    assert cid in shown(stack.slack.homes["U0MARIA"])
    published = len(stack.slack.calls_to("views.publish"))

    modal = await open_override(stack, "U0MARIA", notice, 1)
    await stack.submit("U0MARIA", modal, {"override.note": note_input("Letter of 2 July")})
    await stack.settle()
    assert len(stack.slack.calls_to("views.publish")) > published
    assert cid not in shown(stack.slack.homes["U0MARIA"])
    # each re-publish is the steward's own home (views.publish, paced in the interactive lane)
    assert all(call.args["user_id"] == "U0MARIA"
               for call in stack.slack.calls_to("views.publish"))


async def test_slack_home_republished_after_the_batched_high_severity_notice(
        stack: Stack) -> None:
    """A window's high-severity notices reach Maria in one message; her App Home, remembered
    from before, is published anew with the question in it."""
    home = await open_home(stack, "U0MARIA")
    assert home is not None and "Nothing needs a steward" in shown(home)
    cid = await new_clarification(stack.dev, authority={"authored_by": ["p-ahmed"]},
                                  severity="high")
    await stack.burst()
    published = len(stack.slack.calls_to("views.publish"))
    await stack.later(timedelta(seconds=60))  # the notice window ends
    await stack.settle()
    assert stack.slack.dm_of("U0MARIA")
    assert len(stack.slack.calls_to("views.publish")) == published + 1
    assert cid in shown(stack.slack.homes["U0MARIA"])


async def test_opening_the_app_home_ends_a_remembered_block_of_slack(stack: Stack) -> None:
    """Slack refused a DM to Sarah (channel_not_found) and that was remembered: opening the
    bot's App Home (a signed app_home_opened event) shows she is reachable again, and Slack is
    tried in its place for her from then on; another person's block stays."""
    from bot.channel import Address
    from bot.engine.lasting import LastingRefusals

    blocks = LastingRefusals(stack.store)
    sarah = Address(platform="slack", person_id="p-sarah", user_id="U0SARAH")
    ahmed = Address(platform="slack", person_id="p-ahmed", user_id="U0AHMED")
    for who in (sarah, ahmed):
        await blocks.remember(who, "channel_not_found")
    await open_home(stack, "U0SARAH")
    assert await blocks.blocked(sarah) is None
    assert await blocks.blocked(ahmed) == "channel_not_found"
