"""The interaction payloads Slack sends an app, built as Slack documents them, and Slack's v0
request signature: what the local Slack stand-in posts to the bot when a person clicks, submits
or closes something (``devslack.interactions``). Pure functions of what they are given.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

from devslack.model import APP_ID, VERIFICATION_TOKEN, Json

# the element types whose state a submission reports, and under which field
_STATE_FIELDS = {
    "datepicker": "selected_date", "timepicker": "selected_time",
    "datetimepicker": "selected_date_time",
    "static_select": "selected_option", "external_select": "selected_option",
    "radio_buttons": "selected_option",
    "checkboxes": "selected_options", "multi_static_select": "selected_options",
    "multi_external_select": "selected_options",
    "users_select": "selected_user", "multi_users_select": "selected_users",
    "conversations_select": "selected_conversation",
    "multi_conversations_select": "selected_conversations",
    "channels_select": "selected_channel", "multi_channels_select": "selected_channels",
}
_INITIAL = {"selected_date": "initial_date", "selected_time": "initial_time",
            "selected_date_time": "initial_date_time", "selected_option": "initial_option",
            "selected_options": "initial_options", "selected_user": "initial_user",
            "selected_users": "initial_users",
            "selected_conversation": "initial_conversation",
            "selected_conversations": "initial_conversations",
            "selected_channel": "initial_channel", "selected_channels": "initial_channels",
            "value": "initial_value"}


def signature(secret: str, timestamp: str, body: bytes) -> str:
    """Slack's v0 signature of a request: ``v0=`` and the HMAC-SHA256 of ``v0:{ts}:{body}``."""
    base = b"v0:" + timestamp.encode() + b":" + body
    return "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()


def form_body(payload: Json) -> bytes:
    """An interaction as Slack posts it: form-encoded, the JSON in ``payload``."""
    return urlencode({"payload": json.dumps(payload)}).encode()


# ---------------------------------------------------------------- elements


def elements(blocks: list[Json]) -> Iterator[tuple[str | None, Json]]:
    """Every interactive element of some blocks, with its block's id."""
    for block in blocks:
        block_id = block.get("block_id")
        found = list(block.get("elements", [])) if block.get("type") == "actions" else []
        for key in ("accessory", "element"):
            if isinstance(block.get(key), dict):
                found.append(block[key])
        for element in found:
            if isinstance(element, dict) and element.get("action_id"):
                yield block_id, element


def find_element(blocks: list[Json], action_id: str, block_id: str | None = None
                 ) -> tuple[str | None, Json] | None:
    """The element ``action_id`` (in block ``block_id`` if given) and its block's id."""
    for found_block, element in elements(blocks):
        if element["action_id"] == action_id and block_id in (None, found_block):
            return found_block, element
    return None


def option(element: Json, chosen: str | Json) -> Json:
    """An option of a select (or overflow, radio buttons) as a payload carries it: the one
    whose value is ``chosen``, or ``chosen`` itself when it is an option object."""
    if isinstance(chosen, dict):
        return chosen
    options = list(element.get("options", []))
    for group in element.get("option_groups", []):
        options += group.get("options", [])
    for candidate in options:
        if candidate.get("value") == chosen:
            return dict(candidate)
    return {"text": {"type": "plain_text", "text": chosen}, "value": chosen}


def action(element: Json, block_id: str | None, *, action_ts: str, value: str | None = None,
           selected_date: str | None = None, selected_option: str | Json | None = None) -> Json:
    """One entry of a block_actions payload's ``actions``: the element's type and ids, and
    what the person did with it (a button's value, a date, an option)."""
    kind = element.get("type", "button")
    shown: Json = {"type": kind, "action_id": element["action_id"], "block_id": block_id,
                   "action_ts": action_ts}
    if kind == "button":
        shown["text"] = element.get("text")
        if value is not None or "value" in element:
            shown["value"] = value if value is not None else element.get("value")
        if element.get("style"):
            shown["style"] = element["style"]
    elif kind == "datepicker":
        shown["selected_date"] = selected_date
        if element.get("initial_date"):
            shown["initial_date"] = element["initial_date"]
    elif selected_option is not None:
        shown["selected_option"] = option(element, selected_option)
    elif value is not None:
        shown["value"] = value
    return shown


# ---------------------------------------------------------------- submissions


def state_values(view: Json, entered: dict[str, Any]) -> Json:
    """A view's ``state.values`` as a submission carries them: every input block, with what
    the person ``entered`` (block id → a text, a date, an option's value, a list of them) or
    else the input's initial value, or null."""
    values: Json = {}
    unknown = set(entered)
    for number, block in enumerate(view.get("blocks", [])):
        element = block.get("element")
        if block.get("type") != "input" or not isinstance(element, dict):
            continue
        block_id = block.get("block_id") or f"input.{number}"
        unknown.discard(block_id)
        kind = element.get("type", "plain_text_input")
        field = _STATE_FIELDS.get(kind, "value")
        given = entered.get(block_id, element.get(_INITIAL[field]))
        if field == "selected_option" and given is not None:
            given = option(element, given)
        elif field == "selected_options" and given is not None:
            given = [option(element, one) for one in given]
        values[block_id] = {element.get("action_id", "value"): {"type": kind, field: given}}
    if unknown:
        raise ValueError(f"no input block {sorted(unknown)} in the view")
    return values


def identity(user: Json, team: Json | None, enterprise: Json | None, *,
             enterprise_install: bool) -> Json:
    """The fields that say who acted, and from which workspace and org."""
    return {"user": user, "team": team, "enterprise": enterprise,
            "is_enterprise_install": enterprise_install, "api_app_id": APP_ID,
            "token": VERIFICATION_TOKEN}


def view_submission(who: Json, view: Json, values: Json, *, trigger_id: str) -> Json:
    """A ``view_submission``: the view as it is open, with ``values`` as its state."""
    submitted = {**view, "state": {"values": values}}
    return {"type": "view_submission", **who, "trigger_id": trigger_id, "view": submitted,
            "response_urls": []}


def view_closed(who: Json, view: Json, *, cleared: bool = False) -> Json:
    """A ``view_closed`` (sent only for a view with ``notify_on_close``)."""
    return {"type": "view_closed", **who, "view": {**view, "state": {"values": {}}},
            "is_cleared": cleared}
