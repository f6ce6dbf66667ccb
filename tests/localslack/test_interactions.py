"""The local Slack stand-in sends people's interactions as Slack sends them: signed with the v0
scheme at its clock (checked here by slack_sdk's own ``SignatureVerifier``), form-encoded
payloads of Slack's documented shape for clicks, submissions and closed views, a JSON event for
an opened App Home; the bot's answer to a submission is applied to the person's open views.

The bot here is a tiny aiohttp app that verifies each request, keeps its payload and answers
what the test queued.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qs

import pytest
from aiohttp import web
from slack_sdk.signature import SignatureVerifier
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.webhook.async_client import AsyncWebhookClient

from bot.clock import ManualClock
from devslack import APP_ID, BOT_TOKEN, LocalSlack, Reply

SECRET = "a-signing-secret-of-the-bot"
ANNA = "U0ANNA"
START = datetime(2026, 7, 4, 9, 0, 0, 250_000, tzinfo=UTC)


class Stamp:
    """The verifier's clock: the stand-in's, in epoch seconds."""

    def __init__(self, clock: ManualClock) -> None:
        self.clock = clock

    def now(self) -> float:
        return self.clock.now().timestamp()


@dataclass
class Bot:
    """Requests that passed the signature check, and the answers to give, in order."""

    verifier: SignatureVerifier
    url: str = ""
    got: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    answers: list[dict[str, Any] | None] = field(default_factory=list)

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.text()
        if not self.verifier.is_valid_request(body, dict(request.headers)):
            return web.Response(status=401)
        self.headers.append(dict(request.headers))
        if request.content_type == "application/json":
            self.got.append(json.loads(body))
        else:
            self.got.append(json.loads(parse_qs(body)["payload"][0]))
        answer = self.answers.pop(0) if self.answers else None
        return web.json_response(answer) if answer is not None else web.Response()


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


@pytest.fixture
async def bot(clock: ManualClock) -> AsyncIterator[Bot]:
    made = Bot(SignatureVerifier(SECRET, clock=Stamp(clock)))
    app = web.Application()
    app.router.add_post("/slack/events", made.handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    made.url = f"http://127.0.0.1:{runner.addresses[0][1]}/slack/events"
    yield made
    await runner.cleanup()


@pytest.fixture
async def slack(clock: ManualClock, bot: Bot) -> AsyncIterator[LocalSlack]:
    async with LocalSlack(clock=clock, request_url=bot.url, signing_secret=SECRET) as fake:
        fake.add_workspace("T0ACME", enterprise_id="E0ACME", name="Acme Legal")
        fake.add_workspace(None, enterprise_id="E0ACME", name="Acme Grid", org_wide=True)
        fake.add_user(ANNA, name="anna", team="T0ACME")
        yield fake


@pytest.fixture
def client(slack: LocalSlack) -> AsyncWebClient:
    return AsyncWebClient(base_url=slack.url, token=BOT_TOKEN)


def text(words: str) -> dict[str, Any]:
    return {"type": "plain_text", "text": words}


OPTIONS = [{"text": text("Q3"), "value": "q3"}, {"text": text("Q4"), "value": "q4"}]
CARD = [
    {"type": "section", "block_id": "question", "text": {"type": "mrkdwn", "text": "When?"},
     "accessory": {"type": "static_select", "action_id": "clarify.pick",
                   "placeholder": text("Pick"), "options": OPTIONS}},
    {"type": "actions", "block_id": "answers", "elements": [
        {"type": "button", "action_id": "clarify.answer.0", "value": "v0", "text": text("Q3")},
        {"type": "datepicker", "action_id": "clarify.date", "initial_date": "2026-07-01"}]},
]
METADATA = {"event_type": "clarification_asked", "event_payload": {"delivery": "c-1|1"}}


def form(callback: str = "clarify.custom", **extra: Any) -> dict[str, Any]:
    return {"type": "modal", "callback_id": callback, "private_metadata": "meta",
            "title": text("Something else"), "submit": text("Send"),
            "blocks": [
                {"type": "input", "block_id": "from", "label": text("From"),
                 "element": {"type": "datepicker", "action_id": "value",
                             "initial_date": "2026-07-01"}},
                {"type": "input", "block_id": "note", "label": text("Note"), "optional": True,
                 "element": {"type": "plain_text_input", "action_id": "value"}},
                {"type": "input", "block_id": "which", "label": text("Which"),
                 "element": {"type": "static_select", "action_id": "value",
                             "options": OPTIONS}}],
            **extra}


async def open_form(slack: LocalSlack, client: AsyncWebClient, **extra: Any) -> str:
    opened = await client.views_open(trigger_id=slack.new_trigger_id(ANNA), view=form(**extra))
    return str(opened["view"]["id"])


# ---------------------------------------------------------------- clicks


async def test_a_click_is_a_signed_block_actions_payload_of_slacks_shape(
        slack: LocalSlack, client: AsyncWebClient, bot: Bot) -> None:
    posted = await client.chat_postMessage(channel=ANNA, text="When?", blocks=CARD,
                                           metadata=METADATA)
    reply = await slack.click(ANNA, channel=posted["channel"], ts=posted["ts"],
                              action_id="clarify.answer.0")
    assert reply == Reply(200, None)
    (payload,) = bot.got
    assert bot.headers[0]["X-Slack-Request-Timestamp"] == str(int(START.timestamp()))
    assert bot.headers[0]["Content-Type"] == "application/x-www-form-urlencoded"
    assert payload["type"] == "block_actions"
    assert payload["user"] == {"id": ANNA, "username": "anna", "name": "anna",
                               "team_id": "T0ACME"}
    assert payload["team"] == {"id": "T0ACME", "domain": "acmelegal", "enterprise_id": "E0ACME",
                               "enterprise_name": "Acme Grid"}
    assert payload["enterprise"] == {"id": "E0ACME", "name": "Acme Grid"}
    assert payload["is_enterprise_install"] is False
    assert (payload["api_app_id"], payload["token"]) == (APP_ID, "legacy-verification-token")
    assert payload["container"] == {"type": "message", "message_ts": posted["ts"],
                                    "channel_id": posted["channel"], "is_ephemeral": False}
    assert payload["channel"] == {"id": posted["channel"], "name": "directmessage"}
    assert payload["state"] == {"values": {}}
    message = payload["message"]
    assert (message["ts"], message["text"], message["blocks"], message["metadata"]) == (
        posted["ts"], "When?", CARD, METADATA)
    assert payload["actions"] == [{
        "type": "button", "action_id": "clarify.answer.0", "block_id": "answers",
        "text": text("Q3"), "value": "v0", "action_ts": f"{START.timestamp():.6f}"}]

    # the trigger is Anna's: the modal it opens is hers
    await client.views_open(trigger_id=payload["trigger_id"], view=form())
    assert len(slack.seen_by(ANNA)["modals"]) == 1
    # the response_url shows her alone what is posted there
    await AsyncWebhookClient(payload["response_url"]).send(text="Only you")
    assert [m["text"] for m in slack.seen_by(ANNA)["messages"] if m["ephemeral"]] == [
        "Only you"]


async def test_a_date_or_an_option_picked_in_a_message(slack: LocalSlack,
                                                       client: AsyncWebClient, bot: Bot) -> None:
    posted = await client.chat_postMessage(channel=ANNA, text="When?", blocks=CARD)
    await slack.click(ANNA, channel=ANNA, ts=posted["ts"], action_id="clarify.date",
                      selected_date="2026-08-15")
    await slack.click(ANNA, channel=posted["channel"], ts=posted["ts"],
                      action_id="clarify.pick", selected_option="q4")
    date, pick = (payload["actions"][0] for payload in bot.got)
    assert (date["type"], date["block_id"], date["selected_date"], date["initial_date"]) == (
        "datepicker", "answers", "2026-08-15", "2026-07-01")
    assert (pick["type"], pick["block_id"], pick["selected_option"]) == (
        "static_select", "question", OPTIONS[1])


async def test_a_click_on_an_ephemeral_message(slack: LocalSlack, client: AsyncWebClient,
                                               bot: Bot) -> None:
    """Slack marks it ephemeral and sends no copy of it; replace_original changes it for the
    person who sees it."""
    channel = slack.dm_channel(ANNA)
    shown = await client.chat_postEphemeral(channel=channel, user=ANNA, text="Only you",
                                            blocks=CARD)
    await slack.click(ANNA, channel=channel, ts=shown["message_ts"],
                      action_id="clarify.answer.0")
    (payload,) = bot.got
    assert payload["container"]["is_ephemeral"] is True and "message" not in payload
    await AsyncWebhookClient(payload["response_url"]).send(text="Done", replace_original=True)
    (entry,) = slack.seen_by(ANNA)["messages"]
    assert (entry["text"], entry["edits"], entry["ephemeral"]) == ("Done", 1, True)


async def test_what_cannot_be_clicked_is_refused(slack: LocalSlack, client: AsyncWebClient,
                                                 bot: Bot) -> None:
    posted = await client.chat_postMessage(channel=ANNA, text="When?", blocks=CARD)
    with pytest.raises(LookupError):
        await slack.click(ANNA, channel=posted["channel"], ts=posted["ts"], action_id="nope")
    with pytest.raises(LookupError):
        await slack.click(ANNA, channel=posted["channel"], ts="1.2", action_id="clarify.date")
    with pytest.raises(LookupError):
        await slack.click_home(ANNA, action_id="clarify.date")
    with pytest.raises(LookupError):
        await slack.submit(ANNA, view_id="V404", values={})
    assert bot.got == []


async def test_a_wrong_secret_is_refused_by_the_bot(slack: LocalSlack, client: AsyncWebClient,
                                                    bot: Bot) -> None:
    posted = await client.chat_postMessage(channel=ANNA, text="When?", blocks=CARD)
    slack.connect(bot.url, "not-the-secret")
    refused = await slack.click(ANNA, channel=ANNA, ts=posted["ts"],
                                action_id="clarify.answer.0")
    assert refused.status == 401 and bot.got == []


async def test_an_org_wide_install_is_said(slack: LocalSlack, bot: Bot) -> None:
    """With the app installed on the org (and not on the workspace itself), payloads say
    ``is_enterprise_install``, and so do the authorizations of an event."""
    client = AsyncWebClient(base_url=slack.url)
    await client.oauth_v2_access(client_id=slack.client_id, client_secret=slack.client_secret,
                                 code=slack.grant_code("E0ACME"))
    assert slack.who(ANNA)["is_enterprise_install"] is True
    await slack.open_home(ANNA)
    (event,) = bot.got
    assert event["authorizations"][0]["is_enterprise_install"] is True


# ---------------------------------------------------------------- the App Home


async def test_the_app_home_opened_and_clicked(slack: LocalSlack, client: AsyncWebClient,
                                               bot: Bot) -> None:
    """Opening the tab is an ``app_home_opened`` event (JSON); a button on it is a
    block_actions payload from a view container."""
    assert (await slack.open_home(ANNA)).status == 200
    home = {"type": "home", "blocks": [{"type": "actions", "block_id": "queue", "elements": [
        {"type": "button", "action_id": "clarify.refresh", "text": text("Refresh")}]}]}
    published = (await client.views_publish(user_id=ANNA, view=home))["view"]
    await slack.click_home(ANNA, action_id="clarify.refresh")
    event, click = bot.got
    assert bot.headers[0]["Content-Type"] == "application/json"
    assert (event["type"], event["team_id"], event["enterprise_id"], event["api_app_id"]) == (
        "event_callback", "T0ACME", "E0ACME", APP_ID)
    assert {k: event["event"][k] for k in ("type", "user", "tab", "channel")} == {
        "type": "app_home_opened", "user": ANNA, "tab": "home", "channel": "DU0ANNA"}
    assert click["container"] == {"type": "view", "view_id": published["id"]}
    assert click["view"]["id"] == published["id"] and click["view"]["hash"]
    assert click["actions"][0]["action_id"] == "clarify.refresh"
    assert "response_url" not in click and "message" not in click


# ---------------------------------------------------------------- modals


async def test_a_submission_carries_the_inputs_as_slack_keeps_them(
        slack: LocalSlack, client: AsyncWebClient, bot: Bot) -> None:
    """Every input: what the person entered, else its initial value, else null; an empty
    answer closes the view."""
    view_id = await open_form(slack, client)
    reply = await slack.submit(ANNA, view_id=view_id, values={"which": "q3"})
    assert reply == Reply(200, None)
    (payload,) = bot.got
    assert payload["type"] == "view_submission" and payload["user"]["id"] == ANNA
    view = payload["view"]
    assert (view["id"], view["callback_id"], view["private_metadata"]) == (
        view_id, "clarify.custom", "meta")
    assert view["hash"] == slack.views[view_id]["hash"]
    assert view["state"]["values"] == {
        "from": {"value": {"type": "datepicker", "selected_date": "2026-07-01"}},
        "note": {"value": {"type": "plain_text_input", "value": None}},
        "which": {"value": {"type": "static_select", "selected_option": OPTIONS[0]}}}
    assert slack.seen_by(ANNA)["modals"] == []
    with pytest.raises(ValueError):
        await slack.submit(ANNA, view_id=await open_form(slack, client),
                           values={"no-such-block": "x"})


async def test_the_bots_answer_to_a_submission_is_applied(slack: LocalSlack,
                                                          client: AsyncWebClient,
                                                          bot: Bot) -> None:
    """``errors`` keeps the view open with its errors shown, ``update`` replaces it, ``push``
    opens another on top, ``clear`` closes them all."""
    view_id = await open_form(slack, client)
    bot.answers += [{"response_action": "errors", "errors": {"from": "Choose a start date."}},
                    {"response_action": "update", "view": form(title=text("Again"))},
                    {"response_action": "push", "view": form("clarify.sure")},
                    {"response_action": "clear"}]
    errors = await slack.submit(ANNA, view_id=view_id, values={"note": "Q3 2026"})
    assert errors.body == {"response_action": "errors", "errors": {"from": "Choose a start date."}}
    (modal,) = slack.seen_by(ANNA)["modals"]
    assert modal["errors"] == {"from": "Choose a start date."}
    before = modal["hash"]

    await slack.submit(ANNA, view_id=view_id, values={"from": "2026-08-15"})
    (modal,) = slack.seen_by(ANNA)["modals"]
    assert (modal["id"], modal["view"]["title"]["text"], modal["errors"]) == (view_id, "Again", {})
    assert modal["hash"] != before

    await slack.submit(ANNA, view_id=view_id, values={})
    bottom, top = slack.seen_by(ANNA)["modals"]
    assert (bottom["id"], top["view"]["callback_id"]) == (view_id, "clarify.sure")
    assert top["view"]["previous_view_id"] == view_id

    await slack.submit(ANNA, view_id=top["id"], values={})
    assert slack.seen_by(ANNA)["modals"] == []


async def test_a_closed_view_is_told_only_when_it_asked(slack: LocalSlack,
                                                        client: AsyncWebClient,
                                                        bot: Bot) -> None:
    quiet = await open_form(slack, client)
    assert await slack.close(ANNA, view_id=quiet) is None
    assert slack.seen_by(ANNA)["modals"] == [] and bot.got == []

    told = await open_form(slack, client, notify_on_close=True)
    reply = await slack.close(ANNA, view_id=told)
    assert reply is not None and reply.status == 200
    (payload,) = bot.got
    assert (payload["type"], payload["view"]["id"], payload["is_cleared"]) == (
        "view_closed", told, False)
    assert payload["team"]["id"] == "T0ACME"
    assert slack.seen_by(ANNA)["modals"] == []
