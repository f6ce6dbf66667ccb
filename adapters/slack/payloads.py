"""Slack interaction payloads → validated facts, or ``MalformedPayload`` (answered with HTTP 400).

Only identity and scope fields of a request whose signature was verified are read as facts, and
each is checked for Slack's id shape before anything uses it; every button value and modal
metadata is an opaque, signed reference decoded by the cards' codec. Which workspace a callback
comes from (``Who.team_id`` / ``Who.enterprise_id``) is read here, by the rules in docs/slack.md.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

from adapters.errors import AdapterError
from cards.actions import ActionCodec, ActionKind, ActionRef, InvalidActionPayload

ACTION_PREFIX = "clarify"
MODAL_CALLBACK = "clarify.custom"
OVERRIDE_CALLBACK = "clarify.override"  # the steward override's confirmation modal
# each modal's callback_id and the one reference kind its metadata may carry
_MODAL_KINDS = {MODAL_CALLBACK: ActionKind.CUSTOM_SUBMIT,
                OVERRIDE_CALLBACK: ActionKind.OVERRIDE_SUBMIT}
MAX_BODY = 64 * 1024
# Slack's action_ts: seconds since the epoch with up to microseconds, e.g. "1720000000.123456"
_ACTION_TS = re.compile(r"[0-9]{1,11}\.[0-9]{1,6}")

# Slack's id shapes: a kind letter, then capitals and digits (ids seen are 9 to 11 characters;
# Slack promises no length, so up to 32 is taken). W users and E teams come with Enterprise Grid.
USER_ID = re.compile(r"[UW][A-Z0-9]{2,31}")
TEAM_ID = re.compile(r"T[A-Z0-9]{2,31}")
ENTERPRISE_ID = re.compile(r"E[A-Z0-9]{2,31}")
USER_TEAM_ID = re.compile(r"[TE][A-Z0-9]{2,31}")  # an org id on org-wide installs
CHANNEL_ID = re.compile(r"[CDG][A-Z0-9]{2,31}")
MESSAGE_TS = re.compile(r"[0-9]{1,12}\.[0-9]{1,9}")
TRIGGER_ID = re.compile(r"[0-9]{1,24}\.[0-9]{1,24}\.[0-9A-Za-z]{1,64}")


class MalformedPayload(AdapterError, ValueError):
    """The request does not have the shape of a Slack interaction the bot handles.

    ``field`` names the offending field (never its value) when one field is to blame.
    """

    def __init__(self, reason: str, *, field: str | None = None) -> None:
        super().__init__(reason)
        self.field = field


class ScopeMismatch(MalformedPayload):
    """The payload's ids contradict each other about the Enterprise Grid org (HTTP 403)."""


@dataclass(frozen=True, slots=True)
class Who:
    """The verified actor: Slack user, the workspace the callback came from, its Grid org."""

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
    # where a reply shows to the clicker only, in place (an http(s) URL; the channel decides
    # whether it may be posted to)
    response_url: str | None = None

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
    locale: str | None = None  # the language the modal was drawn in, for its field errors


def obj(value: object) -> dict[str, Any]:
    """The value when it is a JSON object, else an empty one (Slack omits fields freely)."""
    return value if isinstance(value, dict) else {}


def _str(value: object, *, field: str, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value or len(value) > 255:
        raise MalformedPayload(f"{field} is missing or invalid", field=field)
    return value


def _id(value: object, shape: re.Pattern[str], *, field: str, optional: bool = False
        ) -> str | None:
    """An identity field, checked against its Slack shape (absent is allowed if ``optional``)."""
    if value is None and optional:
        return None
    if not isinstance(value, str) or not shape.fullmatch(value):
        raise MalformedPayload(f"{field} is not a Slack id of the expected shape", field=field)
    return value


def _nullable_object(payload: dict[str, Any], key: str) -> dict[str, Any] | None:
    value = payload.get(key)
    if value is not None and not isinstance(value, dict):
        raise MalformedPayload(f"{key} is not an object", field=key)
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
    """The actor and the workspace of a callback, from every published payload shape.

    The workspace is ``team.id``; when ``team`` is null (org-wide installs) it is ``user.team_id``
    if that is a team id, else ``view.team_id``. The org is whichever of ``enterprise.id``,
    ``team.enterprise_id`` and an org id in ``user.team_id`` are present: they must agree.
    """
    user = payload.get("user")
    if not isinstance(user, dict):
        raise MalformedPayload("no user", field="user")
    user_id = _id(user.get("id"), USER_ID, field="user.id")
    assert user_id is not None
    team = _nullable_object(payload, "team")
    enterprise = _nullable_object(payload, "enterprise")
    user_team = _id(user.get("team_id"), USER_TEAM_ID, field="user.team_id", optional=True)
    orgs = {_id(enterprise.get("id"), ENTERPRISE_ID, field="enterprise.id") if enterprise else None,
            _id(team.get("enterprise_id"), ENTERPRISE_ID, field="team.enterprise_id",
                optional=True) if team else None,
            user_team if user_team and user_team.startswith("E") else None} - {None}
    if len(orgs) > 1:
        raise ScopeMismatch("the payload names more than one Enterprise Grid org")
    if team is not None:
        team_id = _id(team.get("id"), TEAM_ID, field="team.id")
    elif user_team is not None and user_team.startswith("T"):
        team_id = user_team
    else:
        view = obj(payload.get("view"))
        team_id = _id(view.get("team_id"), TEAM_ID, field="view.team_id", optional=True)
    return Who(user_id=user_id, team_id=team_id, enterprise_id=next(iter(orgs), None))


def home_opener(body: dict[str, Any]) -> Who | None:
    """Who opened the App Home tab, from an ``app_home_opened`` event callback: the event's user,
    the callback's ``team_id`` and ``enterprise_id``. None for another tab (Messages, About);
    ``MalformedPayload`` for ids not of Slack's shapes."""
    event = obj(body.get("event"))
    if event.get("type") != "app_home_opened" or event.get("tab", "home") != "home":
        return None
    user_id = _id(event.get("user"), USER_ID, field="event.user")
    assert user_id is not None
    return Who(user_id=user_id,
               team_id=_id(body.get("team_id"), TEAM_ID, field="team_id", optional=True),
               enterprise_id=_id(body.get("enterprise_id"), ENTERPRISE_ID,
                                 field="enterprise_id", optional=True))


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
        channel_id=_id(container.get("channel_id") or channel.get("id"), CHANNEL_ID,
                       field="container.channel_id", optional=True),
        message_ts=_id(container.get("message_ts"), MESSAGE_TS, field="container.message_ts",
                       optional=True),
        trigger_id=_id(payload.get("trigger_id"), TRIGGER_ID, field="trigger_id", optional=True),
        action_ts=_action_ts(action.get("action_ts")),
        response_url=_response_url(payload.get("response_url")),
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
        raise MalformedPayload("action_ts is not a Slack timestamp", field="actions.action_ts")
    return value


def _response_url(value: object) -> str | None:
    """A click's response_url when it looks like one; anything else is ignored (the reply it
    serves is optional), never an error."""
    if isinstance(value, str) and len(value) <= 1000 and value.startswith(("https://", "http://")) \
            and value.isascii() and value.isprintable() and " " not in value:
        return value
    return None


def micros(stamp: str) -> int:
    """A Slack timestamp ("1720000000.123456", or whole seconds) in microseconds."""
    seconds, _, fraction = stamp.partition(".")
    return int(seconds) * 1_000_000 + int(fraction.ljust(6, "0")[:6] or 0)


def submission(payload: dict[str, Any], codec: ActionCodec) -> Submission:
    view = payload.get("view")
    callback_id = view.get("callback_id") if isinstance(view, dict) else None
    if not isinstance(callback_id, str) or callback_id not in _MODAL_KINDS:
        raise MalformedPayload("not a clarify modal")
    assert isinstance(view, dict)
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
    if ref.kind is not _MODAL_KINDS[callback_id]:
        raise MalformedPayload("the modal reference is not a submission")
    values = obj(obj(view.get("state")).get("values"))
    return Submission(who=who(payload), ref=ref, message_ref=_message_ref(meta.get("m")),
                      values=values, locale=_locale(meta.get("l")))


def _locale(value: object) -> str | None:
    """The modal's language as the bot wrote it (``de-DE``, ``fr``), or None for anything else:
    a view's metadata comes back from the client, so it is read, never trusted as more."""
    if isinstance(value, str) and LOCALE.fullmatch(value):
        return value
    return None


APP_ID = re.compile(r"A[A-Z0-9]{2,31}")


@dataclass(frozen=True, slots=True)
class Plain:
    """A button that carries no reference (the App Home's tabs, the reach report's detail):
    who clicked, which, and where (the DM it was in, the app's id for a link to its Home)."""

    who: Who
    action_id: str
    channel_id: str | None
    app_id: str | None


def plain(payload: dict[str, Any]) -> Plain:
    actions = payload.get("actions")
    if not isinstance(actions, list) or len(actions) != 1 or not isinstance(actions[0], dict):
        raise MalformedPayload("expected exactly one action")
    action_id = _str(actions[0].get("action_id"), field="action_id") or ""
    container = obj(payload.get("container"))
    channel = obj(payload.get("channel"))
    return Plain(who=who(payload), action_id=action_id,
                 channel_id=_id(container.get("channel_id") or channel.get("id"), CHANNEL_ID,
                                field="container.channel_id", optional=True),
                 app_id=_id(payload.get("api_app_id"), APP_ID, field="api_app_id",
                            optional=True))


LOCALE = re.compile(r"[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{1,8}){0,3}")


def _message_ref(value: object) -> str | None:
    """The card a modal was opened from, ``CHANNEL:TS`` as the bot wrote it, or None."""
    if not isinstance(value, str):
        return None
    channel, _, ts = value.partition(":")
    _id(channel, CHANNEL_ID, field="view.private_metadata")
    _id(ts, MESSAGE_TS, field="view.private_metadata")
    return value
