"""The Slack channel remembers each person's DM channel id (kept from the post, for the rare
look-up after an unclear outcome), but only the most recently used ``DM_IDS_KEPT``: a workspace
of many people does not grow the process without bound, and a forgotten id costs one
conversations.open when it is next needed."""

from __future__ import annotations

import pytest

from adapters.slack import channel as slack_channel
from bot.channel import Address, SlackReach
from bot.store.base import DeliveryKey
from cards.fixtures import QUESTION
from tests.slack.conftest import Stack


def _address(user: str) -> Address:
    return Address(platform="slack", person_id=f"p-{user}", user_id=user,
                   reach=SlackReach(team_id="T0ACME", enterprise_id="E0ACME"))


async def test_dm_ids_are_kept_for_the_most_recently_used_people_only(
        stack: Stack, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(slack_channel, "DM_IDS_KEPT", 3)
    channel = stack.adapter.kit.channel
    users = [f"U0DM{n}" for n in range(5)]
    for n, user in enumerate(users):
        stack.slack.add_user(user)
        await channel.send(_address(user), QUESTION,
                           key=DeliveryKey(f"clr-dm-{n}", f"p-{user}", 0, "question"))
    assert len(stack.slack.calls_to("conversations.open")) == 0  # posted to the user id
    await channel.dm(_address(users[2]))  # remembered from its post: no call, and now recent
    assert len(stack.slack.calls_to("conversations.open")) == 0
    await channel.dm(_address(users[0]))  # forgotten (only three kept): opened again
    assert len(stack.slack.calls_to("conversations.open")) == 1
    # kept now, least recent first: users[4], users[2], users[0] (users[3] made way)
    await channel.dm(_address(users[4]))
    await channel.dm(_address(users[2]))
    assert len(stack.slack.calls_to("conversations.open")) == 1
    await channel.dm(_address(users[3]))
    assert len(stack.slack.calls_to("conversations.open")) == 2
