"""The local Slack stand-in keeps what each person sees, as Slack shows it: their time zone and
locale (``users.info``), the DM with the bot (threads and edits too), ephemeral messages shown to
them alone, what a click's response_url does, their stack of open modals and their App Home;
``seen_by`` hands it out as plain JSON."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.webhook.async_client import AsyncWebhookClient

from bot.clock import ManualClock
from devslack import BOT_TOKEN, LocalSlack

ANNA = "U0ANNA"
BEN = "U0BEN"
METADATA = {"event_type": "clarification_asked", "event_payload": {"delivery": "c-1|1"}}


def card(label: str = "Pick") -> list[dict]:
    return [{"type": "section", "block_id": "question",
             "text": {"type": "mrkdwn", "text": "Which date?"}},
            {"type": "actions", "block_id": "answers", "elements": [
                {"type": "button", "action_id": "clarify.answer.0", "value": "v0",
                 "text": {"type": "plain_text", "text": label}}]}]


def modal(title: str = "Which date?", **extra: object) -> dict:
    return {"type": "modal", "title": {"type": "plain_text", "text": title},
            "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": "pick one"}}],
            **extra}


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(datetime(2026, 1, 15, 9, 0, tzinfo=UTC))


@pytest.fixture
async def slack(clock: ManualClock) -> AsyncIterator[LocalSlack]:
    async with LocalSlack(clock=clock) as fake:
        fake.add_user(ANNA, name="Anna", tz="Europe/Berlin", locale="de-DE")
        fake.add_user(BEN, name="Ben")
        yield fake


@pytest.fixture
def client(slack: LocalSlack) -> AsyncWebClient:
    return AsyncWebClient(base_url=slack.url, token=BOT_TOKEN)


# ---------------------------------------------------------------- users.info


async def test_users_info_answers_the_zone_at_the_clock_and_the_locale_when_asked(
        client: AsyncWebClient, clock: ManualClock) -> None:
    """tz, its label and offset as at the stand-in's clock (summer time in July); the locale
    only with include_locale, as Slack answers."""
    winter = (await client.users_info(user=ANNA))["user"]
    assert (winter["tz"], winter["tz_label"], winter["tz_offset"]) == (
        "Europe/Berlin", "Central European Standard Time", 3600)
    assert "locale" not in winter
    clock.advance(timedelta(days=180))
    summer = (await client.users_info(user=ANNA, include_locale=True))["user"]
    assert (summer["tz_label"], summer["tz_offset"], summer["locale"]) == (
        "Central European Summer Time", 7200, "de-DE")
    ben = (await client.users_info(user=BEN, include_locale=True))["user"]
    assert (ben["tz"], ben["tz_offset"], ben["locale"]) == ("UTC", 0, "en-GB")


async def test_users_info_shows_the_status_until_it_expires(
        slack: LocalSlack, client: AsyncWebClient, clock: ManualClock) -> None:
    """The profile's status_text, status_emoji and status_expiration, as Slack shows them:
    empty when none is set, 0 for a status kept until cleared, and cleared once it expired."""
    quiet = (await client.users_info(user=ANNA))["user"]["profile"]
    assert (quiet["status_text"], quiet["status_emoji"], quiet["status_expiration"]) == (
        "", "", 0)
    back = clock.now() + timedelta(days=3)
    slack.set_status(ANNA, "Urlaub", ":palm_tree:", until=back)
    slack.set_status(BEN, "Out sick", ":face_with_thermometer:")
    anna = (await client.users_info(user=ANNA))["user"]["profile"]
    assert (anna["status_text"], anna["status_emoji"], anna["status_expiration"]) == (
        "Urlaub", ":palm_tree:", round(back.timestamp()))
    assert (await client.users_info(user=BEN))["user"]["profile"]["status_expiration"] == 0
    clock.advance(timedelta(days=3))
    expired = (await client.users_info(user=ANNA))["user"]["profile"]
    assert (expired["status_text"], expired["status_emoji"]) == ("", "")
    slack.clear_status(BEN)
    assert (await client.users_info(user=BEN))["user"]["profile"]["status_text"] == ""


async def test_dnd_info_answers_another_persons_do_not_disturb(
        slack: LocalSlack, client: AsyncWebClient, clock: ManualClock) -> None:
    """As another user (the bot) reads it: on, and its period, while it lasts; never the
    snooze_* fields Slack shows the person alone; off once it ended."""
    assert (await client.dnd_info(user=ANNA))["dnd_enabled"] is False
    start, end = clock.now() - timedelta(minutes=5), clock.now() + timedelta(hours=2)
    slack.set_dnd(ANNA, start, end)
    dnd = (await client.dnd_info(user=ANNA)).data
    assert (dnd["dnd_enabled"], dnd["next_dnd_start_ts"], dnd["next_dnd_end_ts"]) == (
        True, round(start.timestamp()), round(end.timestamp()))
    assert not any(k.startswith("snooze") for k in dnd)
    clock.advance(timedelta(hours=2))
    assert (await client.dnd_info(user=ANNA))["dnd_enabled"] is False
    slack.set_dnd(BEN, clock.now(), clock.now() + timedelta(hours=1))
    slack.clear_dnd(BEN)
    assert (await client.dnd_info(user=BEN))["dnd_enabled"] is False
    with pytest.raises(SlackApiError) as unknown:
        await client.dnd_info(user="U0NOBODY")
    assert unknown.value.response["error"] == "user_not_found"


async def test_dnd_info_needs_its_scope(slack: LocalSlack, client: AsyncWebClient) -> None:
    """An app installed without dnd:read: missing_scope, naming the scope it needs."""
    slack.scopes = slack.scopes - {"dnd:read"}
    with pytest.raises(SlackApiError) as refused:
        await client.dnd_info(user=ANNA)
    assert refused.value.response["error"] == "missing_scope"
    assert refused.value.response["needed"] == "dnd:read"
    assert [c.error for c in slack.calls_to("dnd.info")] == ["missing_scope"]


async def test_a_user_carries_their_workspace(slack: LocalSlack,
                                              client: AsyncWebClient) -> None:
    slack.add_user("U0CARL", team="T0ACME")
    assert (await client.users_info(user="U0CARL"))["user"]["team_id"] == "T0ACME"


# ---------------------------------------------------------------- messages


async def test_seen_by_shows_the_dm_with_threads_edits_and_ephemerals(
        slack: LocalSlack, client: AsyncWebClient) -> None:
    """The DM, oldest first: a card (edited twice), a reminder in its thread, an ephemeral
    message for the person alone; nothing of anyone else's DM; plain JSON."""
    posted = await client.chat_postMessage(channel=ANNA, text="Which date?", blocks=card(),
                                           metadata=METADATA)
    ts = posted["ts"]
    for label in ("Once", "Twice"):
        await client.chat_update(channel=posted["channel"], ts=ts, text="Which date?",
                                 blocks=card(label))
    reminder = await client.chat_postMessage(channel=ANNA, text="Still open", thread_ts=ts)
    await client.chat_postEphemeral(channel=posted["channel"], user=ANNA, text="Only you")
    await client.chat_postMessage(channel=BEN, text="For Ben")

    seen = slack.seen_by(ANNA)
    assert json.loads(json.dumps(seen)) == seen
    assert [(m["text"], m["thread_ts"], m["edits"], m["ephemeral"]) for m in seen["messages"]] == [
        ("Which date?", None, 2, False), ("Still open", ts, 0, False),
        ("Only you", None, 0, True)]
    first = seen["messages"][0]
    assert first["ts"] == ts and first["metadata"] == METADATA
    assert first["blocks"][1]["elements"][0]["text"]["text"] == "Twice"
    assert seen["messages"][1]["ts"] == reminder["ts"]
    assert (seen["modals"], seen["home"]) == ([], None)
    assert [m["text"] for m in slack.seen_by(BEN)["messages"]] == ["For Ben"]


async def test_a_response_url_is_applied_as_slack_shows_it(slack: LocalSlack,
                                                           client: AsyncWebClient) -> None:
    """Posted to a click's response_url: ephemeral by default (the clicker alone sees it),
    ``replace_original`` changes the message clicked, ``in_channel`` posts a new one,
    ``delete_original`` removes it."""
    posted = await client.chat_postMessage(channel=ANNA, text="Which date?", blocks=card())
    channel, ts = posted["channel"], posted["ts"]

    def hook() -> AsyncWebhookClient:
        return AsyncWebhookClient(slack.new_response_url(ANNA, channel, ts))

    assert (await hook().send(text="Only you", response_type="ephemeral",
                              replace_original=False)).status_code == 200
    await hook().send(text="Replaced", replace_original=True)
    await hook().send(text="For everyone", response_type="in_channel")
    seen = slack.seen_by(ANNA)["messages"]
    assert [(m["text"], m["edits"], m["ephemeral"]) for m in seen] == [
        ("Replaced", 1, False), ("Only you", 0, True), ("For everyone", 0, False)]
    assert seen[0]["blocks"] == []  # a replacement without blocks leaves none
    assert slack.seen_by(BEN)["messages"] == []
    assert [r["text"] for r in slack.responses] == ["Only you", "Replaced", "For everyone"]
    assert slack.ephemerals == []  # chat.postEphemeral's own record stays apart

    await hook().send(text="", delete_original=True)
    assert [m["text"] for m in slack.seen_by(ANNA)["messages"]] == ["Only you", "For everyone"]
    gone = await AsyncWebhookClient(f"{slack.base_url}/actions/unknown").send(text="x")
    assert gone.status_code == 404


# ---------------------------------------------------------------- modals and the App Home


async def test_modals_are_kept_per_person_as_a_stack(slack: LocalSlack,
                                                     client: AsyncWebClient) -> None:
    """views.open with a trigger issued for a person opens their modal; views.push stacks
    another (three at most); views.update replaces one in place with a new hash."""
    opened = (await client.views_open(trigger_id=slack.new_trigger_id(ANNA),
                                      view=modal()))["view"]
    pushed = (await client.views_push(trigger_id=slack.new_trigger_id(ANNA),
                                      view=modal("Sure?")))["view"]
    modals = slack.seen_by(ANNA)["modals"]
    assert [(m["id"], m["hash"], m["view"]["title"]["text"], m["errors"]) for m in modals] == [
        (opened["id"], opened["hash"], "Which date?", {}),
        (pushed["id"], pushed["hash"], "Sure?", {})]
    assert (pushed["previous_view_id"], pushed["root_view_id"]) == (opened["id"], opened["id"])
    assert slack.seen_by(BEN)["modals"] == []

    updated = (await client.views_update(view_id=opened["id"], view=modal("Thanks"),
                                         hash=opened["hash"]))["view"]
    modals = slack.seen_by(ANNA)["modals"]
    assert [m["view"]["title"]["text"] for m in modals] == ["Thanks", "Sure?"]
    assert modals[0]["hash"] == updated["hash"] != opened["hash"]

    await client.views_push(trigger_id=slack.new_trigger_id(ANNA), view=modal("Third"))
    with pytest.raises(SlackApiError) as refused:
        await client.views_push(trigger_id=slack.new_trigger_id(ANNA), view=modal("Fourth"))
    assert refused.value.response["error"] == "push_limit_reached"

    await client.views_open(trigger_id=slack.new_trigger_id(ANNA), view=modal("Again"))
    assert [m["view"]["title"]["text"] for m in slack.seen_by(ANNA)["modals"]] == ["Again"]


async def test_a_trigger_of_nobody_opens_a_modal_no_one_sees(slack: LocalSlack,
                                                             client: AsyncWebClient) -> None:
    opened = (await client.views_open(trigger_id=slack.new_trigger_id(), view=modal()))["view"]
    assert opened["id"] in slack.views
    assert slack.modals == {}


async def test_the_app_home_is_kept_per_person(slack: LocalSlack,
                                               client: AsyncWebClient) -> None:
    home = {"type": "home", "blocks": [{"type": "section", "block_id": "queue.intro",
                                        "text": {"type": "mrkdwn", "text": "Nothing"}}]}
    await client.views_publish(user_id=ANNA, view=home)
    shown = slack.seen_by(ANNA)["home"]
    assert shown["type"] == "home" and shown["blocks"] == home["blocks"] and shown["id"]
    assert slack.seen_by(BEN)["home"] is None
