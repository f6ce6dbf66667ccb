"""A person's zone on Teams is the ``localTimezone`` their client states (docs/delivery.md, "A
person's zone"): the card the engine sends through the real Teams channel says when the question
moves on in it, and a refresh of that card (Universal Actions, over HTTP) says the same local
time as the first card, even after their client states another zone. A stated name that is no
IANA zone (a Windows zone name) is no zone: the one known before stays."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest
from microsoft_agents.activity import Activity

from bot.channel import Profile
from bot.clock import ManualClock
from bot.store.keys import PROFILES, profile_key
from cards.actions import ActionKind
from devcore.client import DevCoreClient
from devcore.core import ReferenceCore
from tests.engine.conftest import new_clarification
from tests.teams.inbound import SARAH_AAD, TeamsStack, activity
from tests.teams.outbound import CODEC, ORG, SARAH, TINA, Kit, address, core_with_tina
from tests.teams.test_teams_handlers import flow
from tests.teams.test_teams_in_place import _actions, _stack, _token

# the 48 h window after the 60 s lease from 6 July 09:00 UTC: 8 July 09:01 UTC, 14:31 in
# Kolkata (her client's zone; the core says London, where it is 10:01)
KOLKATA_LINE = "Moves on to the next person on 8 July at 14:31."


@pytest.fixture
def core(clock: ManualClock) -> ReferenceCore:
    """acme plus Tina, next in the ranking after Sarah."""
    return core_with_tina(clock)


async def says(stack: TeamsStack, kit: Kit, zone: str) -> None:
    """Sarah's client, in ``zone``, tells the bot of her 1:1 chat (an activity the bot keeps her
    conversation reference from, and answers with nothing)."""
    update = activity("conversationUpdate", user=SARAH, service_url=kit.fake.url,
                      localTimezone=zone, locale="en-GB")
    update["conversation"]["id"] = kit.fake.open(ORG, SARAH)
    response = await stack.post(update, _token(kit))
    assert response.status in (200, 201, 202)


def text(card: Any) -> str:
    return json.dumps(card, ensure_ascii=False)


async def test_a_teams_card_and_its_refresh_read_in_the_clients_zone(
        make_teams: Any, kit: Kit, dev_client: DevCoreClient) -> None:
    """Sarah's client says Kolkata: her card reads 14:31 on 8 July, and so does its refresh
    after her client says Tokyo (a new card would read Tokyo time; this one was sent in
    Kolkata time)."""
    stack = await _stack(make_teams, kit)
    await says(stack, kit, "Asia/Kolkata")
    cid = await new_clarification(dev_client, authority={"authored_by": ["p-sarah"],
                                                         "owned_by": ["p-tina"]})
    await stack.engine.worker.run_burst()
    [card] = kit.fake.to(SARAH)
    assert card.card is not None and KOLKATA_LINE in text(card.card)
    assert kit.fake.to(TINA) == []

    await says(stack, kit, "Asia/Tokyo")  # she travels; what the bot knew of her is stale
    await stack.store.kv_delete(PROFILES, profile_key("teams", SARAH))
    stack.engine.zones.forget()
    # her client refreshing the card, with the reference its buttons carry
    answer_ref = CODEC.decode_teams_data(next(
        a["data"] for a in _actions(card.card) if a.get("verb") == "clarify.answer"))
    data = CODEC.teams_data(replace(answer_ref, kind=ActionKind.REFRESH, candidate=None))
    body = activity("invoke", user=SARAH, service_url=kit.fake.url, name="adaptiveCard/action",
                    replyToId=card.activity_id,
                    value={"action": {"type": "Action.Execute", "verb": "clarify.refresh",
                                      "data": data}})
    body["conversation"]["id"] = card.conversation_id
    response = await stack.post(body, _token(kit))
    assert response.status == 200
    answer = await response.json()
    assert answer["statusCode"] == 200 and "clarify.answer" in text(answer["value"])
    assert KOLKATA_LINE in text(answer["value"]) and answer_ref.clarification_id == cid


async def test_a_stated_zone_that_is_no_zone_keeps_the_one_known_before(
        teams: TeamsStack, kit: Kit) -> None:
    """A client that states a Windows zone name (``W. Europe Standard Time``) or ``Mars/Olympus``
    states no zone: the person's zone stays the one their client stated before, with the
    locale it states now."""
    channel = kit.channel(store=teams.store)
    _, steps = flow(teams)
    await steps.send(Activity(type="message", text="hi", local_timezone="Asia/Kolkata",
                              locale="en-GB")).start_test()
    for stated in ("W. Europe Standard Time", "Mars/Olympus"):
        _, steps = flow(teams)
        await steps.send(Activity(type="message", text="again", local_timezone=stated,
                                  locale="de-DE")).start_test()
        assert await channel.profile(address(SARAH_AAD, org=ORG)) == Profile("Asia/Kolkata",
                                                                              "de-DE")


@pytest.mark.parametrize("stated", ["localTimezone", "locale", "localTimestamp"])
async def test_a_click_stating_an_empty_zone_or_locale_is_an_answer_like_any_other(
        make_teams: Any, kit: Kit, dev_client: DevCoreClient, stated: str) -> None:
    """A client that states an empty ``localTimezone``, ``locale`` or ``localTimestamp`` on a
    click states none (as an empty Slack zone does): the invoke is answered (200, never the 400
    of a malformed activity), the answer reaches the core, and the zone known before stays."""
    from tests.teams.test_teams_in_place import _click

    stack = await _stack(make_teams, kit)
    await says(stack, kit, "Asia/Kolkata")
    cid = await new_clarification(dev_client, authority={"authored_by": ["p-sarah"]})
    await stack.engine.worker.run_burst()
    [card] = kit.fake.to(SARAH)
    body = _click(kit, card, candidate=0, at=datetime.now(UTC))
    body[stated] = ""
    response = await stack.post(body, _token(kit))
    assert response.status == 200
    assert (await response.json())["statusCode"] == 200
    await stack.settle()
    assert await stack.responses(cid) == [("p-sarah", 0)]
    profile = await kit.channel(store=stack.store).profile(address(SARAH_AAD, org=ORG))
    assert profile is not None and profile.time_zone == "Asia/Kolkata"
