"""The receiving edge of the Slack adapter: one signature check, the shape of what was sent,
and the ids a callback's log lines carry (the body itself is read by
``adapters.bodies.read_body``). No decisions beyond refusing.

``signed`` asks slack_sdk's ``SignatureVerifier`` once, after refusing anything it would raise
on; ``read_callback`` validates what the listeners will read, once (``adapters.slack.payloads``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import structlog
from aiohttp import web
from multidict import CIMultiDictProxy
from slack_sdk.signature import Clock as SignatureClock
from slack_sdk.signature import SignatureVerifier

from adapters.bodies import read_body
from adapters.slack import payloads
from bot.abuse_limits import Limit, count_refusal
from bot.clock import Clock
from cards import slack as blocks
from cards.actions import ActionCodec, InvalidActionPayload
from cards.attention import HOME_QUEUE_ACTION, HOME_REACH_ACTION
from cards.reach import REACH_HOME_LINK_ACTION, REACH_OPEN_ACTION

log = structlog.get_logger("clarify.slack")
TIMESTAMP_HEADER = "X-Slack-Request-Timestamp"
SIGNATURE_HEADER = "X-Slack-Signature"
# slack_sdk's verifier raises on other shapes (int() of junk, a non-ASCII signature); none of
# them could ever be valid, so they are refused before it is asked
_STAMP = re.compile(r"[0-9]{1,12}")
_SIGNATURE = re.compile(r"v0=[0-9a-f]{64}")


class EpochClock(SignatureClock):
    """The signature check's clock: seconds since the epoch from an injectable clock."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock

    def now(self) -> float:
        return self._clock.now().timestamp()


@dataclass(frozen=True, slots=True)
class Refusal:
    """A callback refused at the edge: its HTTP status (the equivalent one in Socket Mode), a
    reason word and the offending field's name (never its value)."""

    status: int
    reason: str
    field: str | None = None


def signed(verifier: SignatureVerifier, body: str, headers: CIMultiDictProxy[str]) -> bool:
    """Slack's v0 check by slack_sdk, once; a missing, doubled or malformed header is False."""
    stamps = headers.getall(TIMESTAMP_HEADER, [])
    signatures = headers.getall(SIGNATURE_HEADER, [])
    if len(stamps) != 1 or len(signatures) != 1:  # which one was signed? neither is trusted
        return False
    stamp, signature = stamps[0], signatures[0]
    if not _STAMP.fullmatch(stamp) or not _SIGNATURE.fullmatch(signature):
        return False
    return verifier.is_valid(body=body, timestamp=stamp, signature=signature)


async def signed_text(request: web.Request, verifier: SignatureVerifier, *, seconds: float
                      ) -> str | web.Response:
    """The body as text, whole (``read_body``) and signed, else the refusal."""
    try:
        raw = await read_body(request, limit=payloads.MAX_BODY, seconds=seconds)
    except TimeoutError:
        return refusal_response(408, "body_incomplete")
    if raw is None:
        count_refusal(Limit.BODY, "slack")
        return refusal_response(413, "too_large")
    try:  # Slack signs UTF-8 text; slack_sdk cannot even check anything else
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return refusal_response(400, "not_utf8")
    if not signed(verifier, text, request.headers):
        return refusal_response(401, "invalid_signature")
    return text


def user_key(who: payloads.Who) -> str:
    """The verified person, for their abuse-limit bucket (``bot.abuse_limits``)."""
    return f"{who.enterprise_id or who.team_id or '-'}|{who.user_id}"


def refusal_response(status: int, error: str, *, field_name: str | None = None) -> web.Response:
    # status and reason only: never a header, an id or a byte of the body
    log.info("slack.request_refused", status=status, reason=error, field=field_name)
    return web.json_response({"ok": False, "error": error}, status=status)


def form_or_json(text: str, content_type: str) -> dict[str, Any]:
    if content_type == "application/json":
        try:
            body = json.loads(text)
        except (ValueError, RecursionError):
            raise payloads.MalformedPayload("not JSON") from None
        if not isinstance(body, dict):
            raise payloads.MalformedPayload("not an object")
        return body
    return payloads.interaction(text)


# buttons that carry no reference: the click is decided from the verified person alone
PLAIN_ACTIONS = frozenset({HOME_QUEUE_ACTION, HOME_REACH_ACTION, REACH_OPEN_ACTION,
                           REACH_HOME_LINK_ACTION})


@dataclass(frozen=True, slots=True)
class Read:
    """What the edge read of a verified callback, once: its actor (None for one that acts in no
    tenant: a closed view, url_verification, an event) and, for a button or a form, the whole
    click or submission (the listeners take it from bolt's context, never parsing again)."""

    who: payloads.Who | None
    click: payloads.Click | None = None
    submission: payloads.Submission | None = None
    plain: payloads.Plain | None = None  # a button without a reference (``PLAIN_ACTIONS``)


def read_callback(body: dict[str, Any], codec: ActionCodec) -> Read:
    """Validates what the listeners will read, once; raises ``MalformedPayload``."""
    kind = body.get("type")
    if kind == "block_actions":
        actions = body.get("actions")
        action_id = actions[0].get("action_id") if isinstance(actions, list) and actions \
            and isinstance(actions[0], dict) else None
        if not isinstance(action_id, str):  # a list or an object is no id (and unhashable)
            action_id = None
        if action_id == blocks.OPEN_DOCUMENT_ACTION:
            return Read(payloads.who(body))
        if action_id in PLAIN_ACTIONS:
            found = payloads.plain(body)
            return Read(found.who, plain=found)
        click = payloads.click(body, codec)
        return Read(click.who, click)
    if kind == "view_submission":
        _envelope(body, "view", "type", "callback_id", required=True)
        submission = payloads.submission(body, codec)
        return Read(submission.who, submission=submission)
    if kind == "view_closed":
        _envelope(body, "view", "callback_id")
    if kind == "event_callback":
        event = _envelope(body, "event", "type")
        for inner in ("message", "previous_message"):
            _envelope(event, inner)
    if kind in ("view_closed", "url_verification", "event_callback"):
        return Read(None)
    raise payloads.MalformedPayload("not an interaction the bot handles", field="type")


def _envelope(body: dict[str, Any], key: str, *strings: str, required: bool = False
              ) -> dict[str, Any]:
    """The object at ``key`` (absent: an empty one, unless ``required``), its ``strings``
    strings where given: what bolt indexes without looking (it answers 500 to a view_submission
    without a view type, or an event that is not an object), checked before bolt sees it."""
    found = body.get(key)
    if found is None and not required:
        return {}
    if not isinstance(found, dict) or not all(
            isinstance(found.get(k), str) or (not required and k not in found) for k in strings):
        raise payloads.MalformedPayload(f"not a Slack {key}", field=key)
    return found


def log_ids(body: dict[str, Any], codec: ActionCodec) -> dict[str, str]:
    """Ids (never values) to bind to a callback's log lines: its type, user, clarification."""
    ids = {"callback": str(body.get("type"))[:40]}
    user = payloads.obj(body.get("user")).get("id")
    if isinstance(user, str) and payloads.USER_ID.fullmatch(user):
        ids["slack_user"] = user
    actions = body.get("actions")
    value = actions[0].get("value") if isinstance(actions, list) and actions \
        and isinstance(actions[0], dict) else None
    try:
        ids["clarification_id"] = codec.decode(value).clarification_id or "-"
    except InvalidActionPayload:
        pass
    return ids


def click_log_ids(click: payloads.Click) -> dict[str, str]:
    """``log_ids`` of a click already read."""
    return {"callback": "block_actions", "slack_user": click.who.user_id,
            "clarification_id": click.ref.clarification_id or "-"}
