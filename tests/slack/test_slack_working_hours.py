"""A person's zone from Slack itself: ``users.info`` ``tz`` (and the locale, with
``include_locale``), asked once a day, decides when their card goes out. The fake Slack over
HTTP, the reference core, the engine as production wires it."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from adapters.slack.channel import SlackChannel
from bot.channel import Address, ChannelError, Profile, SlackReach
from bot.clock import ManualClock
from devslack import LocalSlack
from tests.engine.conftest import clarify_settings

TUESDAY_1AM = datetime(2026, 12, 1, 1, 0, tzinfo=UTC)  # 02:00 in Berlin, 20:00 in New York


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(TUESDAY_1AM)


def dm_count(slack: LocalSlack, user_id: str) -> int:
    return len(slack.messages_in(slack.dm_channel(user_id)))


async def test_slack_profile_gives_the_zone_and_the_locale(make_stack: Any,
                                                           fake_slack: LocalSlack) -> None:
    fake_slack.users["U0AHMED"].tz = "Europe/Berlin"
    fake_slack.users["U0AHMED"].locale = "de-DE"
    stack = await make_stack()
    channel = stack.engine.deliverer.channels["slack"]
    assert isinstance(channel, SlackChannel)
    address = Address("slack", "p-ahmed", "U0AHMED",
                      reach=SlackReach(team_id="T0ACME", enterprise_id="E0ACME"))
    assert await channel.profile(address) == Profile("Europe/Berlin", "de-DE")
    assert await channel.profile(Address("slack", "p-x", "U0NOBODY")) == Profile()


@pytest.mark.full_contract
async def test_a_card_waits_for_8am_in_the_zone_slack_gives(make_stack: Any,
                                                            fake_slack: LocalSlack,
                                                            clock: ManualClock) -> None:
    # the core names Berlin for Ahmed; Slack says New York: Slack's word counts
    fake_slack.users["U0AHMED"].tz = "America/New_York"
    stack = await make_stack(clarify=clarify_settings(hours={"enabled": True}))
    await stack.create(authority={"authored_by": ["p-ahmed"]})
    await stack.burst()
    new_york_8am = datetime(2026, 12, 1, 13, 0, tzinfo=UTC)
    while clock.now() < new_york_8am:
        assert dm_count(fake_slack, "U0AHMED") == 0
        clock.advance(timedelta(minutes=20))
        await stack.burst()
    assert dm_count(fake_slack, "U0AHMED") == 1
    infos = [c for c in fake_slack.calls if c.method == "users.info"]
    assert len(infos) == 1  # kept a day in the store, not asked on every look


@pytest.mark.full_contract
async def test_a_slack_zone_that_is_no_zone_leaves_the_cores_for_the_hold_and_the_card(
        make_stack: Any, fake_slack: LocalSlack, clock: ManualClock) -> None:
    """``users.info`` says ``Mars/Olympus`` for Ahmed; the core's record says Berlin, the
    tenant's default New York: he is asked at 08:00 Berlin time, and his card says it goes to
    the steward on Thursday at 08:01, Berlin time (a baseline core names no zone: the tenant's
    default would decide, as test_zones_read.py shows)."""
    fake_slack.users["U0AHMED"].tz = "Mars/Olympus"
    stack = await make_stack(clarify=clarify_settings(hours={
        "enabled": True, "tenants": [{"tenant": "acme", "time_zone": "America/New_York"}]}))
    await stack.create(authority={"authored_by": ["p-ahmed"]})
    berlin_8am = datetime(2026, 12, 1, 7, 0, tzinfo=UTC)
    await stack.burst()
    while dm_count(fake_slack, "U0AHMED") == 0:
        assert clock.now() < berlin_8am
        clock.advance(timedelta(minutes=20))
        await stack.burst()
    assert clock.now() == berlin_8am
    [card] = fake_slack.dm_of("U0AHMED")
    shown = json.dumps(card.blocks, ensure_ascii=False)
    assert "Goes to the workspace steward on 3 December at 08:01." in shown


async def test_a_profile_lookup_never_queues_behind_a_burst_and_leaves_clicks_their_reserve(
        make_stack: Any, fake_slack: LocalSlack, clock: ManualClock) -> None:
    """users.info is paced at Slack's Tier 4 (100 a minute, bursts of 20): a burst of people the
    bot has not seen today spends the bucket, and the next lookup gives up at once (the card
    goes in the core's locale, bot.engine.zones) instead of waiting its turn; a click's card
    update still finds the bucket's reserve."""
    stack = await make_stack()
    channel = stack.engine.deliverer.channels["slack"]
    assert isinstance(channel, SlackChannel) and channel.rates.paced
    ahmed = Address("slack", "p-ahmed", "U0AHMED",
                    reach=SlackReach(team_id="T0ACME", enterprise_id="E0ACME"))
    burst = channel.rates.tier4_per_minute // 5
    reserve = channel.rates.interactive_reserve
    for _ in range(burst - reserve):
        channel._users.clear()  # each a new read (one of the last minute is answered kept)
        await channel.profile(ahmed)
    start, asked = clock.now(), len(fake_slack.calls)
    channel._users.clear()
    with pytest.raises(ChannelError) as refused:
        await channel.profile(ahmed)
    assert refused.value.reason == "paced" and refused.value.certain
    assert clock.now() == start and len(fake_slack.calls) == asked  # no wait, nothing sent
    # the reserve is the clicks': an update in place reads the reader's locale at once
    await channel._user_locale("U0AHMED", "T0ACME")
    assert len([c for c in fake_slack.calls if c.method == "users.info"]) == burst - reserve + 1
    assert clock.now() == start
    clock.advance(timedelta(seconds=30))  # the bucket refills at 100 a minute
    assert (await channel.profile(ahmed)).time_zone is not None
