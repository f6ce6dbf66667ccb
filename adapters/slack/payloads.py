"""Slack interaction payloads → validated facts, or ``MalformedPayload`` (answered with HTTP 400).

Only identity and scope fields of a request whose signature was verified are read as facts; every
button value and modal metadata is an opaque, signed reference decoded by the cards' codec.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

from cards.actions import ActionCodec, ActionKind, ActionRef, InvalidActionPayload

ACTION_PREFIX = "clarify"
MODAL_CALLBACK = "clarify.custom"
MAX_BODY = 64 * 1024
# Slack's action_ts: seconds since the epoch with up to microseconds, e.g. "1720000000.123456"
_ACTION_TS = re.compile(r"[0-9]{1,11}\.[0-9]{1,6}")


class MalformedPayload(ValueError):
    """The request does not have the shape of a Slack interaction the bot handles."""


@dataclass(frozen=True, slots=True)
class Who:
    """The verified actor: Slack user, their team and Enterprise Grid org."""

    user_id: str
    team_id: str | None
    enterprise_id: str | None


@dataclass(frozen=True, slots=True)
class Click:
    who: Who
    ref: ActionRef
    action_id: str
    channel_id: str | None
    message_ts: str | None
    trigger_id: str | None
    action_ts: str | None = None  # when the person clicked, by Slack's clock

    @property
    def message_ref(self) -> str | None:
        if self.channel_id and self.message_ts:
            return f"{self.channel_id}:{self.message_ts}"
        return None


@dataclass(frozen=True, slots=True)
class Submission:
    who: Who
    ref: ActionRef
    message_ref: str | None
    values: dict[str, dict[str, Any]]


def obj(value: object) -> dict[str, Any]:
    """The value when it is a JSON object, else an empty one (Slack omits fields freely)."""
    return value if isinstance(value, dict) else {}


def _str(value: object, *, field: str, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value or len(value) > 255:
        raise MalformedPayload(f"{field} is missing or invalid")
    return value


def interaction(body: bytes | str) -> dict[str, Any]:
    """The JSON object inside a form-encoded ``payload=`` body."""
    raw = body.decode("utf-8", "strict") if isinstance(body, bytes) else body
    if len(raw) > MAX_BODY:
        raise MalformedPayload("the body is too large")
    form = parse_qs(raw, keep_blank_values=True, strict_parsing=False)
    values = form.get("payload")
    if not values or len(values) != 1:
        raise MalformedPayload("no payload")
    try:
        payload = json.loads(values[0])
    except (ValueError, RecursionError):  # RecursionError: nesting too deep to decode
        raise MalformedPayload("the payload is not JSON") from None
    if not isinstance(payload, dict):
        raise MalformedPayload("the payload is not an object")
    return payload


def who(payload: dict[str, Any]) -> Who:
    user = payload.get("user")
    if not isinstance(user, dict):
        raise MalformedPayload("no user")
    team = obj(payload.get("team"))
    enterprise = obj(payload.get("enterprise"))
    team_id = _str(user.get("team_id") or team.get("id"), field="team", optional=True)
    enterprise_id = _str(enterprise.get("id") or team.get("enterprise_id"), field="enterprise",
                         optional=True)
    return Who(user_id=_str(user.get("id"), field="user.id") or "", team_id=team_id,
               enterprise_id=enterprise_id)


def click(payload: dict[str, Any], codec: ActionCodec) -> Click:
    actions = payload.get("actions")
    if not isinstance(actions, list) or len(actions) != 1 or not isinstance(actions[0], dict):
        raise MalformedPayload("expected exactly one action")
    action = actions[0]
    action_id = _str(action.get("action_id"), field="action_id") or ""
    if not action_id.startswith(ACTION_PREFIX):
        raise MalformedPayload("not a clarify action")
    container = obj(payload.get("container"))
    channel = obj(payload.get("channel"))
    try:
        value = action.get("value")
        ref = _decoded(codec, value) if isinstance(value, str) else codec.decode(value)
    except InvalidActionPayload as exc:
        raise MalformedPayload("the action value is not a valid reference") from exc
    return Click(
        who=who(payload), ref=ref, action_id=action_id,
        channel_id=_str(container.get("channel_id") or channel.get("id"), field="channel",
                        optional=True),
        message_ts=_str(container.get("message_ts"), field="message_ts", optional=True),
        trigger_id=_str(payload.get("trigger_id"), field="trigger_id", optional=True),
        action_ts=_action_ts(action.get("action_ts")),
    )


@functools.lru_cache(maxsize=1024)
def _decoded(codec: ActionCodec, value: str) -> ActionRef:
    """A button value's reference: a click is read before bolt dispatches it and again by its
    listener, and the signed token is checked once (only valid tokens are remembered)."""
    return codec.decode(value)


def _action_ts(value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not _ACTION_TS.fullmatch(value):
        raise MalformedPayload("action_ts is not a Slack timestamp")
    return value


def micros(stamp: str) -> int:
    """A Slack timestamp ("1720000000.123456", or whole seconds) in microseconds."""
    seconds, _, fraction = stamp.partition(".")
    return int(seconds) * 1_000_000 + int(fraction.ljust(6, "0")[:6] or 0)


def submission(payload: dict[str, Any], codec: ActionCodec) -> Submission:
    view = payload.get("view")
    if not isinstance(view, dict) or view.get("callback_id") != MODAL_CALLBACK:
        raise MalformedPayload("not a clarify modal")
    raw_meta = view.get("private_metadata")
    try:
        meta = json.loads(raw_meta if isinstance(raw_meta, str) else "")
    except ValueError:
        raise MalformedPayload("modal metadata is not JSON") from None
    if not isinstance(meta, dict):
        raise MalformedPayload("modal metadata is not an object")
    try:
        ref = codec.decode(meta.get("t"))
    except InvalidActionPayload as exc:
        raise MalformedPayload("the modal reference is not valid") from exc
    if ref.kind is not ActionKind.CUSTOM_SUBMIT:
        raise MalformedPayload("the modal reference is not a submission")
    values = obj(obj(view.get("state")).get("values"))
    message_ref = meta.get("m") if isinstance(meta.get("m"), str) else None
    return Submission(who=who(payload), ref=ref, message_ref=message_ref, values=values)
