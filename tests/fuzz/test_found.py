"""What the fuzz tests found, each as a plain example (docs/reliability.md, "Fuzzing")."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from adapters.teams.app import _activity
from bot.core.client import CoreClient, RetryPolicy
from bot.core.errors import CoreError, ServerError, UnexpectedResponse
from bot.core.http import MockTransport, WireRequest, WireResponse
from bot.logs import configure_logging
from bot.settings import SettingsError, load_settings
from cards.actions import ActionCodec, ActionKind, ActionRef
from tests.core.conftest import respond
from tests.slack.conftest import CODEC_KEY, Stack
from tests.slack.test_slack_security import form, post_raw, sign
from tests.teams.inbound import SARAH_AAD, TeamsStack, activity
from tests.teams.tokens import claims
from tests.teams.tokens import sign as sign_token

DEEP = b"[" * 5000 + b"]" * 5000


def _core_answering(status: int, body: bytes) -> CoreClient:
    def core(_: WireRequest) -> WireResponse:
        return respond(status, content=body, headers={"Content-Type": "application/json"})

    return CoreClient(base_url="http://core.test", token="tok-1",
                      transport=MockTransport(core), retry=RetryPolicy(max_attempts=1))


async def test_a_success_body_nested_too_deep_is_an_unexpected_response() -> None:
    """Found: json's RecursionError escaped the client (not a ValueError)."""
    async with _core_answering(200, DEEP) as client:
        with pytest.raises(UnexpectedResponse):
            await client.get_job(job_id="job-1")


async def test_an_error_body_nested_too_deep_is_a_server_error() -> None:
    async with _core_answering(500, DEEP) as client:
        with pytest.raises(ServerError) as caught:
            await client.get_job(job_id="job-1")
    assert isinstance(caught.value, CoreError)
    assert "without an error body" in str(caught.value)


def test_a_settings_file_that_is_not_utf8_is_a_settings_error(tmp_path: Path) -> None:
    """Found: UnicodeDecodeError (a ValueError, not an OSError) escaped as a traceback."""
    config = tmp_path / "clarify-bot.toml"
    config.write_bytes(b'[core]\nurl = "\xff"\n')
    with pytest.raises(SettingsError, match="not UTF-8 text"):
        load_settings(config, {})


@pytest.mark.parametrize("nested", ["x = " + "[" * 3000 + "]" * 3000,
                                    "x = " + "{a = " * 3000 + "1" + "}" * 3000])
def test_a_settings_file_nested_too_deep_is_a_settings_error(tmp_path: Path,
                                                             nested: str) -> None:
    """Found: tomllib's RecursionError escaped as a traceback."""
    config = tmp_path / "clarify-bot.toml"
    config.write_text(nested)
    with pytest.raises(SettingsError, match="nested too deeply"):
        load_settings(config, {})


# ---------------------------------------------------------------- Slack


def _signed(stack: Stack, body: bytes) -> dict[str, str]:
    stamp = str(int(time.time()))
    return {"X-Slack-Request-Timestamp": stamp,
            "X-Slack-Signature": sign(body, secret=stack.signing_secret, stamp=stamp)}


SLACK_WHO = {"user": {"id": "U0SARAH", "team_id": "T0ACME"},
             "team": {"id": "T0ACME", "enterprise_id": "E0ACME"}, "enterprise": {"id": "E0ACME"}}
BOLT_500 = {
    # bolt reads body["view"]["type"] of every view_submission without looking
    "view_submission_without_type": {"type": "view_submission", **SLACK_WHO, "view": {
        "id": "V1", "callback_id": "clarify.custom", "private_metadata": json.dumps({
            "t": ActionCodec(CODEC_KEY).encode(ActionRef(
                kind=ActionKind.CUSTOM_SUBMIT, card_ref="card-1", clarification_id="clr-1"))}),
        "state": {"values": {}}}},
    "view_closed_view_not_an_object": {"type": "view_closed", **SLACK_WHO,
                                       "view": "callback_id"},
    # and body["event"]["type"] of anything whose "event" merely contains "type"
    "event_not_an_object": {"type": "event_callback", "team_id": "T0ACME", "event": "type"},
    "event_message_not_an_object": {"type": "event_callback", "team_id": "T0ACME", "event": {
        "type": "message", "channel_type": "im", "message": "thread_ts"}},
}


@pytest.mark.parametrize("name", sorted(BOLT_500))
async def test_a_signed_callback_bolt_cannot_read_is_a_400(stack: Stack, name: str) -> None:
    """Found: a signed view_submission without ``view.type`` (and kin) passed the edge and bolt
    answered 500 (Slack retries a 5xx); the edge now refuses what bolt would index blindly."""
    for body in (form(BOLT_500[name]), json.dumps(BOLT_500[name]).encode()):
        content_type = "application/json" if body.startswith(b"{") else \
            "application/x-www-form-urlencoded"
        response = await post_raw(stack, body, headers=_signed(stack, body),
                                  content_type=content_type)
        assert response.status == 400, name


# ---------------------------------------------------------------- Teams


PRODUCT_CONFLICT = {"channelId": "msteams:one", "entities": [{"type": "ProductInfo",
                                                              "id": "other"}]}


def test_an_activity_the_sdk_refuses_with_a_bare_exception_is_not_an_activity() -> None:
    """Found: ``Activity.model_validate`` raises a plain Exception (not a ValidationError) when
    the channelId's sub-channel contradicts the ProductInfo entity; it escaped ``_activity``."""
    with pytest.raises(ValueError, match="not an activity"):
        _activity(json.dumps(activity("message", **PRODUCT_CONFLICT)).encode())


def _without(key: str) -> dict[str, Any]:
    body = activity("invoke")
    del body[key]
    return body


TEAMS_500 = {"product_info_conflict": activity("message", **PRODUCT_CONFLICT),
             "no_channel_id": _without("channelId"), "no_sender": _without("from"),
             "no_recipient": _without("recipient"),
             "sender_without_id": {**activity("message"), "from": {"aadObjectId": SARAH_AAD}}}


@pytest.mark.parametrize("name", sorted(TEAMS_500))
async def test_an_activity_the_sdk_cannot_take_is_a_400(teams: TeamsStack, name: str) -> None:
    """Found: an activity without channelId, sender or recipient passed the edge, and the SDK's
    turn raised (``missing channel_id``, ``from_property`` None, a reply's reference without
    ``bot``; the invoke's answer was recorded first): a 500, which Teams retries."""
    response = await teams.post(TEAMS_500[name], sign_token(claims()))
    assert response.status == 400, name


# ---------------------------------------------------------------- logs


@pytest.fixture
def json_logs(capsys: pytest.CaptureFixture[str]) -> Callable[[], str]:
    configure_logging(level="debug", fmt="json")
    return lambda: capsys.readouterr().err


def test_the_sdks_activity_validation_line_repeats_nothing_of_the_activity(
        json_logs: Callable[[], str]) -> None:
    """Found: the Agents SDK logs a body it cannot validate with pydantic's error text, which
    quotes the input (here a note typed into a card)."""
    with pytest.raises(ValueError):
        _activity(json.dumps({**activity("message"), "type": {"secret note": "SPAN-1"}}).encode())
    out = json_logs()
    assert "teams.activity_invalid" in out and "ValidationError" in out
    assert "SPAN-1" not in out and "secret note" not in out


def test_the_sdks_no_route_and_handler_failure_lines_repeat_nothing(
        json_logs: Callable[[], str]) -> None:
    """Found: "No route found for activity type: typing with text: <the message's words>"; and a
    handler's failure is logged with the exception's text."""
    sdk = logging.getLogger("microsoft_agents.hosting.core.app.agent_application")
    sdk.warning("No route found for activity type: typing with text: SPAN-2")
    try:
        raise KeyError("SPAN-3")
    except KeyError as exc:
        sdk.error(f"An error occurred in the AgentApplication: {exc}", exc_info=True)
    out = json_logs()
    assert "teams.activity_unrouted" in out and "teams.handler_failed" in out
    assert "KeyError" in out and "SPAN-2" not in out and "SPAN-3" not in out
