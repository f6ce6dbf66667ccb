"""The steward's reach report on Slack, through the local Slack stand-in's signed callbacks: the
weekly message in the steward's DM, its button (the Home's Reach tab published, a note only the
steward sees with a link to the App Home), the Home's Queue and Reach tabs; a non-steward and a
person of another tenant are told there is nothing for them and see nobody's name."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from bot.clock import ManualClock
from bot.metrics import REGISTRY
from bot.reach.log import MemoryReachLog
from bot.reach.recording import ReachRecorder
from cards import platform_limits as limits
from cards.attention import HOME_QUEUE_ACTION, HOME_REACH_ACTION
from cards.reach import REACH_HOME_LINK_ACTION, REACH_OPEN_ACTION, REACH_OPEN_VALUE
from devslack import APP_ID
from tests.engine.conftest import new_clarification
from tests.slack.conftest import Stack, from_workspace
from tests.slack.test_slack_home import open_home, shown

WEEK = timedelta(days=7)


async def reach_stack(make_stack: Any, clock: ManualClock) -> tuple[Stack, ReachRecorder]:
    reach = ReachRecorder(MemoryReachLog(), clock=clock, retention=timedelta(days=90))
    return await make_stack(reach=reach), reach


async def asked(stack: Stack, reach: ReachRecorder) -> list[str]:
    """Two acme-legal questions: Tom may not read the document, Olga has no Slack alias,
    Sarah is asked; the record written."""
    made = [await new_clarification(stack.dev, authority={"authored_by": [
        "p-tom", "p-olga", "p-sarah"]}) for _ in range(2)]
    await stack.burst()
    await reach.flush()
    return made


async def forged_tab(stack: Stack, user_id: str, *, team_id: str = "T0ACME",
                     enterprise_id: str | None = "E0ACME") -> None:
    """``user_id`` presses the Home's Reach tab, whatever their own Home shows: the payload of
    Maria's button, signed for them (a forged click is signed like any other)."""
    await open_home(stack, "U0MARIA")
    payload = stack.slack.home_actions("U0MARIA", action_id=HOME_REACH_ACTION, value="reach")
    from_workspace(payload, team_id, enterprise_id)
    payload["user"]["id"] = user_id
    reply = await stack.slack.post_interaction(payload)
    assert reply.status == 200
    await stack.adapter.drain()


def report_message(stack: Stack, user_id: str) -> Any:
    found = [m for m in stack.slack.dm_of(user_id)
             if any(b.get("block_id", "").startswith("reach") for b in m.blocks)]
    assert len(found) == 1, [m.text for m in stack.slack.dm_of(user_id)]
    return found[0]


async def test_the_weekly_report_and_its_button_open_the_reach_tab(
        make_stack: Any, clock: ManualClock) -> None:
    stack, reach = await reach_stack(make_stack, clock)
    made = await asked(stack, reach)
    await stack.later(WEEK)
    message = report_message(stack, "U0MARIA")
    text = json.dumps(message.blocks, ensure_ascii=False)
    # counts and causes only: nobody's name, no question, no title
    for secret in ("Olga", "Tom", "Sarah", *made):
        assert secret not in text
    assert not limits.slack_message_problems({"blocks": message.blocks, "text": message.text})
    reply = await stack.slack.click("U0MARIA", channel=message.channel, ts=message.ts,
                                    action_id=REACH_OPEN_ACTION, value=REACH_OPEN_VALUE)
    assert reply.status == 200
    await stack.adapter.drain()
    home = stack.slack.homes["U0MARIA"]
    detail = shown(home)
    assert "Olga Ivanova" in detail and "Tom Becker" in detail  # who, by cause
    assert not any(cid in detail for cid in made)
    assert len(home["blocks"]) <= limits.SLACK_MODAL_BLOCKS
    (note,) = [e for e in stack.slack.seen_by("U0MARIA")["messages"] if e.get("ephemeral")]
    link = json.dumps(note, ensure_ascii=False)
    assert f"slack://app?team=T0ACME&id={APP_ID}&tab=home" in link
    # the note's link button is acknowledged, nothing else
    reply = await stack.slack.click("U0MARIA", channel=message.channel, ts=note["ts"],
                                    action_id=REACH_HOME_LINK_ACTION)
    assert reply.status == 200


async def test_the_home_tabs_switch_between_queue_and_reach(
        make_stack: Any, clock: ManualClock) -> None:
    stack, reach = await reach_stack(make_stack, clock)
    await asked(stack, reach)
    home = await open_home(stack, "U0MARIA")
    assert home is not None
    tabs = [e["action_id"] for b in home["blocks"] if b["type"] == "actions"
            for e in b["elements"]]
    assert tabs[:2] == [HOME_QUEUE_ACTION, HOME_REACH_ACTION]
    assert "Olga Ivanova" not in shown(home)  # the queue first
    before = REGISTRY.value("clarify_reach_details_total", outcome="shown")
    await stack.slack.click_home("U0MARIA", action_id=HOME_REACH_ACTION, value="reach")
    await stack.adapter.drain()
    reach_tab = stack.slack.homes["U0MARIA"]
    assert "Olga Ivanova" in shown(reach_tab)
    assert REGISTRY.value("clarify_reach_details_total", outcome="shown") == before + 1
    # opening the Home again keeps the tab the person chose
    again = await open_home(stack, "U0MARIA")
    assert again is not None and "Olga Ivanova" in shown(again)
    await stack.slack.click_home("U0MARIA", action_id=HOME_QUEUE_ACTION, value="queue")
    await stack.adapter.drain()
    assert "Olga Ivanova" not in shown(stack.slack.homes["U0MARIA"])


async def test_a_non_steward_is_refused_the_reach_detail(
        make_stack: Any, clock: ManualClock) -> None:
    """Sarah (an editor) forges the Reach tab's and the report's clicks: her Home says there is
    nothing for her, and names nobody; the note says the same."""
    stack, reach = await reach_stack(make_stack, clock)
    await asked(stack, reach)
    before = REGISTRY.value("clarify_reach_details_total", outcome="not_steward")
    await forged_tab(stack, "U0SARAH")
    home = stack.slack.homes["U0SARAH"]
    assert "Nothing for you here" in shown(home)
    assert "Olga" not in shown(home) and "Tom" not in shown(home)
    sarah_card = stack.slack.dm_of("U0SARAH")[0]
    button = next(e for b in sarah_card.blocks if b["type"] == "actions"
                  for e in b["elements"] if e["type"] == "button")
    payload = stack.slack.block_actions("U0SARAH", channel=sarah_card.channel,
                                        ts=sarah_card.ts, action_id=button["action_id"],
                                        value=button.get("value"))
    payload["actions"][0].update(action_id=REACH_OPEN_ACTION, value=REACH_OPEN_VALUE)
    reply = await stack.slack.post_interaction(payload)
    assert reply.status == 200
    await stack.adapter.drain()
    notes = [e for e in stack.slack.seen_by("U0SARAH")["messages"] if e.get("ephemeral")]
    assert notes and all("Olga" not in json.dumps(n) for n in notes)
    assert "slack://app" not in json.dumps(notes)
    assert REGISTRY.value("clarify_reach_details_total", outcome="not_steward") == before + 1


async def test_the_steward_of_another_tenant_sees_none_of_acme(
        make_stack: Any, clock: ManualClock) -> None:
    """Gina stewards globex-legal: her Reach tab lists none of acme's people."""
    stack, reach = await reach_stack(make_stack, clock)
    stack.slack.add_user("U0GINA", name="gina", team="T0GLOBEX")
    await asked(stack, reach)
    await forged_tab(stack, "U0GINA", team_id="T0GLOBEX", enterprise_id=None)
    home = stack.slack.homes.get("U0GINA")
    assert home is not None
    assert "Olga" not in shown(home) and "Tom" not in shown(home)


async def test_a_malformed_tab_click_is_a_400(make_stack: Any, clock: ManualClock) -> None:
    stack, reach = await reach_stack(make_stack, clock)
    await open_home(stack, "U0MARIA")
    payload = stack.slack.home_actions("U0MARIA", action_id=HOME_REACH_ACTION, value="reach")
    payload["user"]["id"] = "not a user"
    reply = await stack.slack.post_interaction(payload)
    assert reply.status == 400
    assert "not a user" not in json.dumps(reply.body)


async def test_without_a_reach_record_the_home_offers_no_reach_tab(stack: Stack) -> None:
    """A bot that keeps no reach record (no database, a shared store) has no Reach tab to
    offer: a steward's Home is the queue alone, and a forged tab click shows the queue."""
    await new_clarification(stack.dev, authority={"authored_by": ["p-sarah"]})
    await stack.burst()
    home = await open_home(stack, "U0MARIA")
    assert home is not None and "home.tabs" not in shown(home)
    card = stack.slack.dm_of("U0SARAH")[0]
    button = next(e for b in card.blocks if b["type"] == "actions"
                  for e in b["elements"] if e["type"] == "button")
    payload = stack.slack.block_actions("U0SARAH", channel=card.channel, ts=card.ts,
                                        action_id=button["action_id"], value=button.get("value"))
    payload["actions"][0].update(action_id=HOME_REACH_ACTION, value="reach")
    payload["user"]["id"] = "U0MARIA"
    assert (await stack.slack.post_interaction(payload)).status == 200
    await stack.adapter.drain()
    after = shown(stack.slack.homes["U0MARIA"])
    assert "home.tabs" not in after and "queue.title" in after
