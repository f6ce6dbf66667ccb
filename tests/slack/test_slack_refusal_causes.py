"""Slack's refusals of a person carry the reach report's cause group (``ChannelError.cause``):
the Web API's error codes are classified where the adapter meets them, through the local
Slack stand-in over HTTP, so the report groups them by code, not by their words."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.channel import SlackChannel
from adapters.slack.webapi import LASTING_ERRORS, REFUSAL_CAUSES
from bot.channel import Address, ChannelError, CredentialsRejected, SlackReach
from bot.clock import ManualClock
from bot.reach.causes import FIXES, cause_of
from bot.store.base import DeliveryKey
from bot.store.memory import MemoryStore
from cards.actions import ActionCodec
from cards.fixtures import QUESTION
from devslack import BOT_TOKEN, LocalSlack

SARAH = Address(platform="slack", person_id="p-sarah", user_id="U0SARAH",
                reach=SlackReach(team_id="T0ACME", enterprise_id="E0ACME"))
KEY = DeliveryKey("clr-1", "p-sarah", 0, "question")


@pytest.fixture
async def channel(fake_slack: LocalSlack) -> AsyncIterator[SlackChannel]:
    client = AsyncWebClient(token=BOT_TOKEN, base_url=fake_slack.url)
    clock = ManualClock()
    yield SlackChannel(client=client, codec=ActionCodec(b"k" * 32),
                       store=MemoryStore(clock=clock), clock=clock)
    if client.session is not None:
        await client.session.close()


@pytest.mark.parametrize(("error", "group"), [
    ("cannot_dm_bot", "blocked_or_uninstalled"),
    ("channel_not_found", "blocked_or_uninstalled"),
    ("user_disabled", "deactivated"),
    ("user_not_found", "deactivated"),
    ("not_in_channel", None),  # lasting, but no group: the report says delivery_failed
    ("msg_too_long", None),
])
async def test_a_refused_card_names_its_cause_group(
        fake_slack: LocalSlack, channel: SlackChannel, error: str, group: str | None) -> None:
    fake_slack.fail_next("chat.postMessage", status=200, error=error)
    with pytest.raises(ChannelError) as raised:
        await channel.send(SARAH, QUESTION, key=KEY)
    assert (raised.value.reason, raised.value.cause) == (error, group)
    assert raised.value.lasting is error.startswith(LASTING_ERRORS)
    assert cause_of("DELIVERY_FAILED", raised.value.reason, raised.value.cause) == (
        group or "delivery_failed")


async def test_the_bots_own_account_is_no_persons_cause(
        fake_slack: LocalSlack, channel: SlackChannel) -> None:
    """``account_inactive`` is the bot token's account: delivery pauses, nobody is skipped
    for it, so it names no cause group."""
    fake_slack.fail_next("chat.postMessage", status=200, error="account_inactive")
    with pytest.raises(CredentialsRejected) as raised:
        await channel.send(SARAH, QUESTION, key=KEY)
    assert raised.value.cause is None


def test_every_named_group_is_one_of_the_reports() -> None:
    assert set(REFUSAL_CAUSES.values()) <= set(FIXES)
    with pytest.raises(ValueError):
        ChannelError("x", certain=True, retryable=False, cause="blocked")
