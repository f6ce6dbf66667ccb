"""Slack's people in bulk (``adapters.slack.people``), through the local Slack stand-in over
HTTP: each workspace listed with ``users.list`` page by page into the store's directory, its
Do Not Disturb with ``dnd.teamInfo``; a person found there costs no ``users.info`` or
``dnd.info``, one not found falls back to them; a bad member, a 429 or a broken page never loses
the rest; workspaces apart; a later listing sees what changed."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack import people
from adapters.slack.away import away_reading
from adapters.slack.channel import SlackChannel
from adapters.slack.render import render
from bot.channel import Address, Away, SlackReach
from bot.clock import ManualClock
from bot.settings import AwaySettings
from bot.store.base import DeliveryKey
from bot.store.memory import MemoryStore
from cards.actions import ActionCodec
from cards.fixtures import QUESTION
from cards.views import with_locale
from devslack import BOT_TOKEN, LocalSlack

NOW = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
ACME = SlackReach(team_id="T0ACME", enterprise_id=None)
OTHER = SlackReach(team_id="T0OTHER", enterprise_id=None)


def at(user_id: str, where: SlackReach = ACME) -> Address:
    return Address(platform="slack", person_id=f"p-{user_id}", user_id=user_id, reach=where)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(NOW)


@pytest.fixture
def slack(fake_slack: LocalSlack, clock: ManualClock) -> LocalSlack:
    fake_slack.clock = clock
    for n in range(450):
        fake_slack.add_user(f"U{n:05d}", tz=("Asia/Tokyo", "America/New_York")[n % 2],
                            locale="de-DE")
    fake_slack.add_user("UBOT", is_bot=True)
    fake_slack.add_user("UGONE", deleted=True)
    return fake_slack


@pytest.fixture
async def channel(slack: LocalSlack, clock: ManualClock) -> AsyncIterator[SlackChannel]:
    client = AsyncWebClient(token=BOT_TOKEN, base_url=slack.url)
    waits: list[float] = []

    async def sleep(seconds: float) -> None:  # time passes on the clock only
        waits.append(seconds)
        clock.advance(timedelta(seconds=seconds))

    store = MemoryStore(clock=clock)
    made = SlackChannel(client=client, codec=ActionCodec(b"k" * 32), store=store, clock=clock,
                        sleep=sleep, random=lambda: 1.0, people=store,
                        **away_reading(AwaySettings()))
    made.waits = waits  # type: ignore[attr-defined]
    yield made
    await made.listings_ended()
    if client.session is not None:
        await client.session.close()


async def test_a_workspace_listed_page_by_page_costs_no_users_info(
        channel: SlackChannel, slack: LocalSlack) -> None:
    await channel.list_workspace(ACME)
    lists = slack.calls_to("users.list")
    assert len(lists) == 3  # the fake's 461 members, 200 a page
    assert [c.args.get("limit") for c in lists] == ["200"] * 3
    assert "cursor" not in lists[0].args and all(c.args.get("cursor") for c in lists[1:])
    assert all(c.args.get("include_locale") == "true" for c in lists)
    asked = [c.args["users"].split(",") for c in slack.calls_to("dnd.teamInfo")]
    assert max(map(len, asked)) == 50 and sum(map(len, asked)) == len(slack.users) - 2
    for user in ("U00000", "U00449"):
        profile = await channel.profile(at(user))
        assert profile is not None and profile.locale == "de-DE"
        assert await channel.away(at(user)) is None
    assert (await channel.profile(at("U00001"))).time_zone == "America/New_York"  # type: ignore[union-attr]
    assert slack.calls_to("users.info") == [] and slack.calls_to("dnd.info") == []
    # bots and deleted users are not kept: a lookup of one falls back to users.info
    assert await channel.member("UBOT", ACME) is None
    assert await channel.member("UGONE", ACME) is None


async def test_a_bad_member_ahead_of_good_ones_is_skipped_alone(
        channel: SlackChannel, slack: LocalSlack) -> None:
    slack.listed_first = [
        "not a member", {"id": 7}, {"name": "no id"},
        {"id": "UODD", "tz": 42, "locale": ["x"], "profile": "nope", "deleted": "maybe",
         "new_field": {"deep": [1, 2]}},
    ]
    await channel.list_workspace(ACME)
    odd = await channel.profile(at("UODD"))
    assert odd is not None and odd.time_zone is None and odd.locale is None
    assert (await channel.profile(at("U00448"))).time_zone == "Asia/Tokyo"  # type: ignore[union-attr]
    assert slack.calls_to("users.info") == []


async def test_a_429_in_the_middle_of_a_listing_is_waited_out(
        channel: SlackChannel, slack: LocalSlack) -> None:
    slack.fail_next("users.list", status=429, retry_after=7, after=1)
    await channel.list_workspace(ACME)
    assert len(slack.calls_to("users.list")) == 4  # the second page asked again
    assert max(channel.waits) >= 7  # type: ignore[attr-defined]
    assert slack.calls_to("users.list")[2].args.get("cursor") == \
        slack.calls_to("users.list")[1].args.get("cursor")
    assert await channel.member("U00449", ACME) is not None


async def test_a_page_that_fails_keeps_what_was_read_and_resumes_from_its_cursor(
        channel: SlackChannel, slack: LocalSlack, clock: ManualClock) -> None:
    slack.fail_next("users.list", status=503, times=10, after=1)
    await channel.list_workspace(ACME)
    assert await channel.member("U00000", ACME) is not None  # the first page kept
    assert await channel.member("U00449", ACME) is None  # not listed yet
    broke_at = slack.calls_to("users.list")[1].args.get("cursor")
    slack.clear_faults()
    clock.advance(timedelta(seconds=people.LEASE_SECONDS))
    await channel.keep_house()  # the housekeeping pass of the next window resumes it
    await channel.listings_ended()
    resumed = [c for c in slack.calls_to("users.list") if c.status == 200][1]
    assert resumed.args.get("cursor") == broke_at  # not from the start
    assert await channel.member("U00449", ACME) is not None


async def test_a_person_not_listed_falls_back_to_users_info_kept_for_every_replica(
        channel: SlackChannel, slack: LocalSlack, clock: ManualClock) -> None:
    await channel.list_workspace(ACME)
    slack.add_user("UNEW", tz="Europe/Paris", locale="fr-FR")  # joined since
    profile = await channel.profile(at("UNEW"))
    assert profile is not None and profile.time_zone == "Europe/Paris"
    assert len(slack.calls_to("users.info")) == 1
    other = SlackChannel(client=channel.client, codec=channel.codec, store=channel.store,
                         clock=clock, people=channel.people, **away_reading(AwaySettings()))
    assert (await other.profile(at("UNEW"))).locale == "fr-FR"  # type: ignore[union-attr]
    assert len(slack.calls_to("users.info")) == 1


async def test_the_first_lookup_of_a_workspace_starts_its_listing(
        channel: SlackChannel, slack: LocalSlack) -> None:
    await channel.profile(at("U00003"))  # not listed yet: users.info, and the listing starts
    await channel.listings_ended()
    assert len(slack.calls_to("users.list")) == 3
    await channel.profile(at("U00004"))
    assert len(slack.calls_to("users.info")) == 1


async def test_two_workspaces_are_kept_apart(channel: SlackChannel, slack: LocalSlack) -> None:
    await channel.list_workspace(ACME)
    assert channel.directory_of(ACME) != channel.directory_of(OTHER)
    assert await channel.member("U00001", ACME) is not None
    assert await channel.member("U00001", OTHER) is None  # ACME's listing is not OTHER's
    assert channel.people is not None
    assert await channel.people.directory_get(channel.directory_of(OTHER), "U00001") is None


async def test_a_later_listing_sees_a_changed_zone_status_and_dnd(
        channel: SlackChannel, slack: LocalSlack, clock: ManualClock) -> None:
    await channel.list_workspace(ACME)
    assert await channel.away(at("U00002")) is None
    slack.users["U00002"].tz = "Europe/Berlin"
    back = NOW + timedelta(days=5)
    slack.set_status("U00002", "Urlaub", ":palm_tree:", until=back)
    slack.set_dnd("U00003", NOW, NOW + timedelta(days=2))
    clock.advance(timedelta(seconds=people.REFRESH_SECONDS + 1))
    await channel.keep_house()
    await channel.listings_ended()
    assert len(slack.calls_to("users.list")) == 6
    assert (await channel.profile(at("U00002"))).time_zone == "Europe/Berlin"  # type: ignore[union-attr]
    away = await channel.away(at("U00002"))
    assert away == Away(until=back.replace(microsecond=0), source="slack_status")
    dnd = await channel.away(at("U00003"))
    assert dnd is not None and dnd.source == "slack_dnd"
    assert slack.calls_to("users.info") == [] and slack.calls_to("dnd.info") == []
    # nothing of the status is kept: only whether it says away, and until when
    assert channel.people is not None
    kept = await channel.people.directory_get(channel.directory_of(ACME), "U00002")
    assert kept is not None and "Urlaub" not in kept and "palm" not in kept


async def test_a_dnd_period_ended_since_the_listing_is_asked_of_dnd_info(
        channel: SlackChannel, slack: LocalSlack, clock: ManualClock) -> None:
    slack.set_dnd("U00005", NOW, NOW + timedelta(minutes=30))
    await channel.list_workspace(ACME)
    assert (await channel.away(at("U00005"))) is not None
    clock.advance(timedelta(hours=1))
    slack.set_dnd("U00005", NOW + timedelta(minutes=50), NOW + timedelta(hours=2))
    found = await channel.away(at("U00005"))
    assert found is not None and found.source == "slack_dnd"
    assert len(slack.calls_to("dnd.info")) == 1


async def test_a_served_workspace_is_listed_at_the_first_housekeeping_pass(
        channel: SlackChannel, slack: LocalSlack) -> None:
    channel.serves(ACME)
    assert slack.calls_to("users.list") == []
    await channel.keep_house()
    await channel.listings_ended()
    assert len(slack.calls_to("users.list")) == 3
    await channel.keep_house()  # listed lately: not again
    await channel.listings_ended()
    assert len(slack.calls_to("users.list")) == 3
    assert slack.calls_to("users.info") == []


async def test_a_card_updated_after_a_click_finds_its_reader_in_the_directory(
        channel: SlackChannel, slack: LocalSlack, clock: ManualClock) -> None:
    """A card's update knows its DM and installation, not the reader's workspace: the reader is
    found in the directories the process lists (another worker's: it serves the workspace), so
    a burst of answers costs no ``users.info`` each, and the card is drawn in their locale."""
    await channel.list_workspace(ACME)
    ref = await channel.send(at("U00001"), QUESTION, key=DeliveryKey("clr-1", "p-U00001", 0,
                                                                    "question"))
    other = SlackChannel(client=channel.client, codec=channel.codec, store=channel.store,
                         clock=clock, people=channel.people, **away_reading(AwaySettings()))
    other.serves(ACME)  # a configured workspace, as the worker's start-up says
    await other.update(ref, QUESTION)
    assert slack.calls_to("users.info") == []
    [update] = slack.calls_to("chat.update")
    drawn = update.args["blocks"]
    drawn = json.loads(drawn) if isinstance(drawn, str) else drawn
    german = render(with_locale(QUESTION, "de-DE"), codec=channel.codec)["blocks"]
    assert drawn == german != render(QUESTION, codec=channel.codec)["blocks"]
