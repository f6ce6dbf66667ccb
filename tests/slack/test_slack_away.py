"""Whether a Slack user is away (``adapters.slack.away``), through the local Slack stand-in over
HTTP: their status (its words by ``[clarify.away]``, until its expiry) and Do Not Disturb (its
period), value-free; one users.info serves the profile too; without ``dnd:read`` DND is not read,
said once."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest
import structlog
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.away import away_reading, dnd_away, status_away
from adapters.slack.channel import SlackChannel
from bot.channel import Absences, Address, Away, ChannelError, SlackReach
from bot.clock import ManualClock
from bot.engine.away import StatusWords
from bot.settings import AwaySettings
from bot.store.memory import MemoryStore
from cards.actions import ActionCodec
from devslack import BOT_TOKEN, LocalSlack

NOW = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
SARAH = Address(platform="slack", person_id="p-sarah", user_id="U0SARAH",
                reach=SlackReach(team_id="T0ACME", enterprise_id="E0ACME"))
WORDS = StatusWords.of(AwaySettings())


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(NOW)


@pytest.fixture
async def slack(fake_slack: LocalSlack, clock: ManualClock) -> LocalSlack:
    fake_slack.clock = clock
    return fake_slack


@pytest.fixture
async def channel(slack: LocalSlack, clock: ManualClock) -> AsyncIterator[SlackChannel]:
    client = AsyncWebClient(token=BOT_TOKEN, base_url=slack.url)
    yield SlackChannel(client=client, codec=ActionCodec(b"k" * 32),
                       store=MemoryStore(clock=clock), clock=clock,
                       **away_reading(AwaySettings()))
    if client.session is not None:
        await client.session.close()


@pytest.mark.parametrize(("emoji", "text", "away"), [
    (":palm_tree:", "", True),
    ("🌴", "", True),
    (":face_with_thermometer::skin-tone-2:", "", True),
    ("", "Out of Office until Monday", True),
    ("", "OOO", True),
    ("", "Urlaub bis 14.12.", True),
    ("", "krank", True),
    ("", "En congé", True),
    ("", "Elternzeit", True),
    ("", "Urlaubsvertretung für Ahmed", False),  # covering for someone away: here
    ("", "cooool", False),
    (":airplane:", "Travelling", False),  # travelling is not away by default
    (":house_with_garden:", "Working remotely", False),
    ("", "", False),
])
def test_the_words_of_a_status(emoji: str, text: str, away: bool) -> None:
    assert WORDS.away(emoji, text) is away


def test_the_words_are_the_settings() -> None:
    words = StatusWords.of(AwaySettings(status_emoji=(":airplane:",), status_text=()))
    assert words.away(":airplane:", "") and not words.away(":palm_tree:", "Out of office")


def test_a_status_until_its_expiry_and_dnd_while_it_lasts() -> None:
    later = NOW + timedelta(days=3)
    user = {"profile": {"status_emoji": ":palm_tree:", "status_text": "",
                        "status_expiration": round(later.timestamp())}}
    assert status_away(user, WORDS, NOW) == Away(later, "slack_status")
    assert status_away(user, WORDS, later) is None  # expired, not cleared yet
    forever = {"profile": {"status_text": "Out sick", "status_expiration": 0}}
    assert status_away(forever, WORDS, NOW) == Away(None, "slack_status")
    assert status_away({"profile": {"status_text": "Lunch"}}, WORDS, NOW) is None
    end = NOW + timedelta(hours=1)
    dnd = {"dnd_enabled": True, "next_dnd_start_ts": round(NOW.timestamp()) - 60,
           "next_dnd_end_ts": round(end.timestamp())}
    assert dnd_away(dnd, NOW) == Away(end, "slack_dnd")
    assert dnd_away({**dnd, "next_dnd_start_ts": round(end.timestamp()) - 1}, NOW) is None
    assert dnd_away({"snooze_enabled": True, "snooze_endtime": round(end.timestamp())},
                    NOW) == Away(end, "slack_dnd")
    assert dnd_away({"dnd_enabled": False}, NOW) is None


async def test_the_channel_reads_a_status_with_and_without_expiry(
        slack: LocalSlack, channel: SlackChannel) -> None:
    assert isinstance(channel, Absences)
    back = NOW + timedelta(days=14)
    slack.set_status("U0SARAH", "Urlaub", ":palm_tree:", until=back)
    assert await channel.away(SARAH) == Away(back, "slack_status")
    channel._users.clear()
    slack.set_status("U0SARAH", "Out of office")
    assert await channel.away(SARAH) == Away(None, "slack_status")


async def test_the_channel_reads_do_not_disturb(slack: LocalSlack, channel: SlackChannel,
                                                clock: ManualClock) -> None:
    end = NOW + timedelta(hours=3)
    slack.set_dnd("U0SARAH", NOW - timedelta(hours=1), end)
    assert await channel.away(SARAH) == Away(end, "slack_dnd")
    clock.advance(timedelta(hours=3))
    channel._users.clear()
    assert await channel.away(SARAH) is None


async def test_one_users_info_serves_the_profile_and_the_away_lookup(
        slack: LocalSlack, channel: SlackChannel, clock: ManualClock) -> None:
    """Within a minute, one call; after it, the away lookup reads the status afresh."""
    assert (await channel.profile(SARAH)) is not None
    assert await channel.away(SARAH) is None
    assert len(slack.calls_to("users.info")) == 1
    slack.set_status("U0SARAH", "OOO")
    clock.advance(timedelta(seconds=61))
    assert await channel.away(SARAH) == Away(None, "slack_status")
    assert len(slack.calls_to("users.info")) == 2


async def test_without_dnd_read_dnd_is_not_read_and_said_once(
        slack: LocalSlack, channel: SlackChannel) -> None:
    slack.scopes = slack.scopes - {"dnd:read"}
    with structlog.testing.capture_logs() as logs:
        assert await channel.away(SARAH) is None
        channel._users.clear()
        assert await channel.away(SARAH) is None
    assert len(slack.calls_to("dnd.info")) == 1
    assert [e["event"] for e in logs].count("slack.dnd_unreadable") == 1


async def test_a_user_slack_does_not_know_is_not_away(channel: SlackChannel) -> None:
    nobody = Address(platform="slack", person_id="p-x", user_id="U0NOBODY",
                     reach=SlackReach(team_id="T0ACME"))
    assert await channel.away(nobody) is None


async def test_nothing_of_the_status_is_logged(slack: LocalSlack,
                                               channel: SlackChannel) -> None:
    slack.set_status("U0SARAH", "Urlaub zqstatus", ":palm_tree:")
    slack.fail_next("dnd.info", status=200, error="internal_error")
    with structlog.testing.capture_logs() as logs:
        await channel.away(SARAH)
        slack.clear_status("U0SARAH")
        channel._users.clear()
        with pytest.raises(ChannelError):  # refused: unknown, taken as not away
            await channel.away(SARAH)
    assert "zqstatus" not in json.dumps(logs, default=str)
    assert "Urlaub" not in json.dumps(logs, default=str)
