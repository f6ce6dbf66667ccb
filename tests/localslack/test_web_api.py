"""The local Slack stand-in's Web API answers the real slack_sdk client the way Slack does."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator

import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler
from slack_sdk.web.async_client import AsyncWebClient

from devslack import BOT_TOKEN, LocalSlack

ALICE = "U0ALICE"
BOB = "U0BOB"
METADATA = {"event_type": "clarification_asked", "event_payload": {"clarification_id": "c-1"}}


class Ticker:
    """A hand-moved monotonic clock in seconds."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def section(text: str) -> dict:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


def button_block(label: str, *, value: str = "v") -> dict:
    return {"type": "actions", "elements": [
        {"type": "button", "action_id": "clarify.answer", "value": value,
         "text": {"type": "plain_text", "text": label}}]}


def modal(title: str = "Which date?", **extra: object) -> dict:
    return {"type": "modal", "title": {"type": "plain_text", "text": title},
            "blocks": [section("pick one")], **extra}


@pytest.fixture
def ticker() -> Ticker:
    return Ticker()


@pytest.fixture
async def slack(ticker: Ticker) -> AsyncIterator[LocalSlack]:
    async with LocalSlack(timer=ticker) as fake:
        fake.add_user(ALICE, name="Alice", email="alice@example.com")
        fake.add_user(BOB, name="Bob")
        yield fake


@pytest.fixture
def client(slack: LocalSlack) -> AsyncWebClient:
    return AsyncWebClient(base_url=slack.url, token=BOT_TOKEN)


async def open_dm(client: AsyncWebClient, user: str = ALICE) -> str:
    return (await client.conversations_open(users=user))["channel"]["id"]


async def slack_error(call: object) -> SlackApiError:
    with pytest.raises(SlackApiError) as caught:
        await call  # type: ignore[misc]
    return caught.value


# ---------------------------------------------------------------- messages


async def test_posted_message_reads_back_with_metadata(client: AsyncWebClient) -> None:
    """A posted message comes back from conversations.history with its metadata when asked."""
    channel = await open_dm(client)
    posted = await client.chat_postMessage(channel=channel, text="Which date?",
                                           blocks=[section("Which date?")], metadata=METADATA)
    history = await client.conversations_history(channel=channel, include_all_metadata=True)
    [message] = history["messages"]
    assert message["ts"] == posted["ts"] and posted["channel"] == channel
    assert message["metadata"] == METADATA
    assert message["blocks"] == [section("Which date?")]
    plain = await client.conversations_history(channel=channel)
    assert "metadata" not in plain["messages"][0]


async def test_ts_unique_increasing_and_history_newest_first(client: AsyncWebClient) -> None:
    """Each post gets a later ts, and history lists newest first."""
    channel = await open_dm(client)
    stamps = [(await client.chat_postMessage(channel=channel, text=f"m{n}"))["ts"]
              for n in range(3)]
    assert stamps[0] == "1720000000.000100"
    assert sorted(stamps, key=float) == stamps and len(set(stamps)) == 3
    history = await client.conversations_history(channel=channel)
    assert [m["ts"] for m in history["messages"]] == stamps[::-1]


async def test_history_limit_window_and_cursor(client: AsyncWebClient) -> None:
    """limit pages with a cursor, and oldest/latest bound the window exclusively."""
    channel = await open_dm(client)
    stamps = [(await client.chat_postMessage(channel=channel, text=f"m{n}"))["ts"]
              for n in range(4)]
    first = await client.conversations_history(channel=channel, limit=3)
    assert first["has_more"] and len(first["messages"]) == 3
    cursor = first["response_metadata"]["next_cursor"]
    rest = await client.conversations_history(channel=channel, limit=3, cursor=cursor)
    assert [m["ts"] for m in rest["messages"]] == [stamps[0]] and not rest["has_more"]
    window = await client.conversations_history(channel=channel, oldest=stamps[0],
                                                latest=stamps[3])
    assert [m["ts"] for m in window["messages"]] == [stamps[2], stamps[1]]


async def test_update_replaces_blocks_and_text(client: AsyncWebClient, slack: LocalSlack) -> None:
    """chat.update changes the stored message in place and marks it edited."""
    channel = await open_dm(client)
    posted = await client.chat_postMessage(channel=channel, text="old", blocks=[section("old")])
    await client.chat_update(channel=channel, ts=posted["ts"], text="new",
                             blocks=[section("answered")])
    [message] = (await client.conversations_history(channel=channel))["messages"]
    assert (message["text"], message["blocks"]) == ("new", [section("answered")])
    assert "edited" in message
    assert [m.text for m in slack.dm_of(ALICE)] == ["new"]


async def test_update_of_unknown_message_fails(client: AsyncWebClient) -> None:
    """chat.update on a ts that was never posted answers message_not_found."""
    channel = await open_dm(client)
    error = await slack_error(client.chat_update(channel=channel, ts="1.000001", text="x"))
    assert error.response["error"] == "message_not_found"


async def test_form_encoded_blocks_are_read(client: AsyncWebClient, slack: LocalSlack) -> None:
    """A form-encoded body with blocks as a JSON string is decoded like a JSON body."""
    channel = await open_dm(client)
    await client.api_call("chat.postMessage", data={
        "channel": channel, "text": "t", "blocks": json.dumps([section("form")])})
    assert slack.messages_in(channel)[0].blocks == [section("form")]
    bad = await slack_error(client.api_call("chat.postMessage", data={
        "channel": channel, "blocks": "[not json"}))
    assert bad.response["error"] == "invalid_blocks_format"


async def test_posting_to_a_user_id_lands_in_their_dm(client: AsyncWebClient,
                                                      slack: LocalSlack) -> None:
    """chat.postMessage with a user id as channel posts into that user's DM, as Slack does."""
    posted = await client.chat_postMessage(channel=BOB, text="hi")
    assert posted["channel"] == "D" + BOB and len(slack.dm_of(BOB)) == 1


async def test_ephemeral_is_not_in_history(client: AsyncWebClient, slack: LocalSlack) -> None:
    """chat.postEphemeral is recorded apart and never shows in conversations.history."""
    channel = await open_dm(client)
    answer = await client.chat_postEphemeral(channel=channel, user=ALICE, text="only you")
    assert answer["message_ts"] and slack.ephemerals[0]["user"] == ALICE
    assert (await client.conversations_history(channel=channel))["messages"] == []
    wrong = await slack_error(client.chat_postEphemeral(channel=channel, user=BOB, text="x"))
    assert wrong.response["error"] == "user_not_in_channel"


# ---------------------------------------------------------------- argument errors


async def test_conversations_open_is_stable_and_checked(client: AsyncWebClient) -> None:
    """A DM id is "D" + user id every time; no users or an unknown user gets Slack's error."""
    assert await open_dm(client) == "D" + ALICE
    again = await client.conversations_open(users=ALICE)
    assert again["channel"]["id"] == "D" + ALICE and again["already_open"] is True
    missing = await slack_error(client.api_call("conversations.open"))
    assert missing.response["error"] == "users_list_not_supplied"
    unknown = await slack_error(client.conversations_open(users="U0NOBODY"))
    assert unknown.response["error"] == "user_not_found"


@pytest.mark.parametrize(("kwargs", "error"), [
    ({"text": "x"}, "channel_not_found"),
    ({"channel": "C0NOWHERE", "text": "x"}, "channel_not_found"),
    ({"channel": "D" + ALICE}, "no_text"),
    ({"channel": "D" + ALICE, "text": "x", "metadata": {"event_type": "e"}},
     "invalid_metadata_format"),
])
async def test_post_message_argument_errors(client: AsyncWebClient, kwargs: dict,
                                            error: str) -> None:
    """chat.postMessage without a known channel, text or well-formed metadata fails as Slack."""
    sent = client.api_call("chat.postMessage", json=kwargs)
    assert (await slack_error(sent)).response["error"] == error


async def test_update_without_ts_is_invalid_arguments(client: AsyncWebClient) -> None:
    """chat.update with no ts answers invalid_arguments naming the field."""
    channel = await open_dm(client)
    error = await slack_error(client.api_call("chat.update", json={"channel": channel,
                                                                   "text": "x"}))
    assert error.response["error"] == "invalid_arguments"
    assert "ts" in error.response["response_metadata"]["messages"][0]


async def test_fifty_blocks_pass_fifty_one_fail(client: AsyncWebClient) -> None:
    """A message may carry 50 blocks; 51 answers invalid_blocks and stores nothing."""
    channel = await open_dm(client)
    await client.chat_postMessage(channel=channel, text="t", blocks=[section("b")] * 50)
    error = await slack_error(client.chat_postMessage(channel=channel, text="t",
                                                      blocks=[section("b")] * 51))
    assert error.response["error"] == "invalid_blocks"
    assert len((await client.conversations_history(channel=channel))["messages"]) == 1


@pytest.mark.parametrize("block", [
    button_block("x" * 76),
    button_block("ok", value="v" * 2001),
    section("x" * 3001),
    {"type": "no_such_block"},
    {**section("ok"), "block_id": "b" * 256},
])
async def test_block_limits_give_invalid_blocks(client: AsyncWebClient, block: dict) -> None:
    """A button text over 75, value over 2000, long section, unknown type or id is refused."""
    channel = await open_dm(client)
    error = await slack_error(client.chat_postMessage(channel=channel, text="t", blocks=[block]))
    assert error.response["error"] == "invalid_blocks"


async def test_button_text_of_75_passes(client: AsyncWebClient) -> None:
    """A button label of exactly 75 characters is within the limit."""
    channel = await open_dm(client)
    posted = await client.chat_postMessage(channel=channel, text="t",
                                           blocks=[button_block("x" * 75)])
    assert posted["ok"]


# ---------------------------------------------------------------- auth and methods


async def test_wrong_or_missing_token(slack: LocalSlack) -> None:
    """A wrong bot token answers invalid_auth, none at all not_authed."""
    wrong = AsyncWebClient(base_url=slack.url, token="xoxb-wrong")
    assert (await slack_error(wrong.auth_test())).response["error"] == "invalid_auth"
    anonymous = AsyncWebClient(base_url=slack.url)
    assert (await slack_error(anonymous.auth_test())).response["error"] == "not_authed"
    assert slack.calls[0].args == {}


async def test_auth_test_and_unknown_method(client: AsyncWebClient) -> None:
    """auth.test names the bot; a method the fake does not serve answers unknown_method."""
    assert (await client.auth_test())["user_id"].startswith("U")
    unknown = await slack_error(client.api_call("chat.scheduleMessage"))
    assert unknown.response["error"] == "unknown_method"


async def test_users_info_and_lookup(client: AsyncWebClient) -> None:
    """users.info and users.lookupByEmail find registered people and refuse others."""
    assert (await client.users_info(user=ALICE))["user"]["profile"]["email"] == "alice@example.com"
    assert (await client.users_lookupByEmail(email="ALICE@example.com"))["user"]["id"] == ALICE
    assert (await slack_error(client.users_info(user="U0NOBODY"))).response["error"] == \
        "user_not_found"


async def test_calls_are_recorded_without_token(client: AsyncWebClient, slack: LocalSlack) -> None:
    """Every call is kept with decoded arguments and no token, and counted per method."""
    channel = await open_dm(client)
    await client.chat_postMessage(channel=channel, text="t", metadata=METADATA)
    [call] = slack.calls_to("chat.postMessage")
    assert call.args["metadata"] == METADATA and "token" not in call.args
    assert slack.counts == {"conversations.open": 1, "chat.postMessage": 1}


# ---------------------------------------------------------------- modals


async def test_views_open_spends_a_trigger_once(client: AsyncWebClient, slack: LocalSlack,
                                                ticker: Ticker) -> None:
    """A trigger opens one modal; reused, unknown or older than 3 s it is refused."""
    trigger = slack.new_trigger_id()
    opened = await client.views_open(trigger_id=trigger, view=modal())
    assert opened["view"]["id"] in slack.views
    reused = await slack_error(client.views_open(trigger_id=trigger, view=modal()))
    assert reused.response["error"] == "exchanged_trigger_id"
    unknown = await slack_error(client.views_open(trigger_id="1.2.3", view=modal()))
    assert unknown.response["error"] == "invalid_trigger_id"
    late = slack.new_trigger_id()
    ticker.now += 3.5
    expired = await slack_error(client.views_open(trigger_id=late, view=modal()))
    assert expired.response["error"] == "expired_trigger_id"


@pytest.mark.parametrize("view", [
    modal("t" * 25),
    modal(private_metadata="x" * 3001),
    modal(submit={"type": "plain_text", "text": "s" * 25}),
    {**modal(), "blocks": [section("b")] * 101},
])
async def test_modal_limits(client: AsyncWebClient, slack: LocalSlack, view: dict) -> None:
    """An over-long title, submit or private_metadata, or 101 blocks, is refused."""
    error = await slack_error(client.views_open(trigger_id=slack.new_trigger_id(), view=view))
    assert error.response["error"] == "invalid_arguments"


async def test_views_update_by_external_id_and_hash(client: AsyncWebClient,
                                                    slack: LocalSlack) -> None:
    """views.update finds a modal by external_id, replaces it and refuses a stale hash."""
    opened = await client.views_open(trigger_id=slack.new_trigger_id(),
                                     view=modal(external_id="ext-1"))
    updated = await client.views_update(external_id="ext-1", view=modal("Thanks"),
                                        hash=opened["view"]["hash"])
    assert updated["view"]["title"]["text"] == "Thanks"
    assert slack.views[opened["view"]["id"]]["title"]["text"] == "Thanks"
    stale = await slack_error(client.views_update(view_id=opened["view"]["id"], view=modal(),
                                                  hash=opened["view"]["hash"]))
    assert stale.response["error"] == "hash_conflict"
    missing = await slack_error(client.views_update(external_id="nope", view=modal()))
    assert missing.response["error"] == "not_found"


# ---------------------------------------------------------------- faults


async def test_429_reaches_slack_sdk_with_retry_after(client: AsyncWebClient,
                                                      slack: LocalSlack) -> None:
    """An injected 429 surfaces as SlackApiError with status 429 and the Retry-After header."""
    slack.fail_next("chat.postMessage", retry_after=7)
    error = await slack_error(client.chat_postMessage(channel=BOB, text="t"))
    assert error.response.status_code == 429 and error.response["error"] == "ratelimited"
    assert error.response.headers["Retry-After"] == "7"
    assert (await client.chat_postMessage(channel=BOB, text="t"))["ok"]
    assert slack.calls_to("chat.postMessage")[0].retry_after == 7


async def test_rate_limit_handler_waits_retry_after(slack: LocalSlack) -> None:
    """With slack_sdk's rate-limit retry handler the retry comes after Retry-After seconds."""
    slack.timer = time.monotonic  # real time: slack_sdk really sleeps
    client = AsyncWebClient(base_url=slack.url, token=BOT_TOKEN,
                            retry_handlers=[AsyncRateLimitErrorRetryHandler(max_retry_count=1)])
    slack.fail_next("chat.postMessage", retry_after=1)
    posted = await client.chat_postMessage(channel=BOB, text="t")
    assert posted["ok"] and slack.counts["chat.postMessage"] == 2
    [gap] = slack.retry_gaps("chat.postMessage")
    assert gap.retry_after == 1 and gap.honoured


async def test_retry_gap_catches_an_impatient_client(client: AsyncWebClient, slack: LocalSlack,
                                                     ticker: Ticker) -> None:
    """A call sooner than Retry-After after a 429 is reported as not honoured."""
    slack.fail_next("chat.update", retry_after=2)
    await slack_error(client.chat_update(channel=BOB, ts="1.1", text="t"))
    ticker.now += 0.5
    await slack_error(client.chat_update(channel=BOB, ts="1.1", text="t"))
    assert [g.honoured for g in slack.retry_gaps("chat.update")] == [False]


@pytest.mark.parametrize("status", [500, 502, 503])
async def test_server_errors_come_through(client: AsyncWebClient, slack: LocalSlack,
                                          status: int) -> None:
    """An injected 5xx reaches the client as SlackApiError with that status, then clears."""
    slack.fail_next("chat.postMessage", status=status)
    error = await slack_error(client.chat_postMessage(channel=BOB, text="t"))
    assert error.response.status_code == status
    assert (await client.chat_postMessage(channel=BOB, text="t"))["ok"]
    assert len(slack.dm_of(BOB)) == 1


async def test_named_error_repeats_times(client: AsyncWebClient, slack: LocalSlack) -> None:
    """fail_next with an error name answers it with status 200 for `times` calls."""
    slack.fail_next("conversations.open", status=200, error="account_inactive", times=2)
    for _ in range(2):
        error = await slack_error(client.conversations_open(users=ALICE))
        assert error.response.status_code == 200
        assert error.response["error"] == "account_inactive"
    assert await open_dm(client) == "D" + ALICE


async def test_a_fault_for_one_channel_lets_the_others_by(client: AsyncWebClient,
                                                          slack: LocalSlack) -> None:
    """fail_next with a channel fails only the calls to it (a person's id: the DM with them)."""
    slack.fail_next("chat.postMessage", status=200, error="cannot_dm_bot", channel=ALICE)
    assert (await client.chat_postMessage(channel=BOB, text="t"))["ok"]
    error = await slack_error(client.chat_postMessage(channel="D" + ALICE, text="t"))
    assert error.response["error"] == "cannot_dm_bot"
    assert (await client.chat_postMessage(channel=ALICE, text="t"))["ok"]
    assert len(slack.dm_of(BOB)) == 1 and len(slack.dm_of(ALICE)) == 1


async def test_rate_limit_bucket_per_channel(client: AsyncWebClient, slack: LocalSlack,
                                             ticker: Ticker) -> None:
    """Beyond the burst a channel gets 429 with Retry-After; another channel and time refill."""
    slack.rate_limit("chat.postMessage", per_second=1, burst=2, per_channel=True)
    for _ in range(2):
        await client.chat_postMessage(channel=ALICE, text="t")
    error = await slack_error(client.chat_postMessage(channel=ALICE, text="t"))
    assert error.response.status_code == 429 and error.response.headers["Retry-After"] == "1"
    assert (await client.chat_postMessage(channel=BOB, text="t"))["ok"]
    ticker.now += 1.0
    assert (await client.chat_postMessage(channel=ALICE, text="t"))["ok"]
    assert len(slack.dm_of(ALICE)) == 3
