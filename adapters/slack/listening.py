"""What every bolt listener of the Slack adapter reads the same way: the callback the edge read
once (``handle_http``, or the Socket Mode middleware), the person as a platform-free
``ChatUser``, the signed request's timestamp and a modal's input values."""

from __future__ import annotations

from typing import Any

from slack_bolt.request.async_request import AsyncBoltRequest

from adapters.slack import payloads
from adapters.slack.edge import Read
from bot.chat import ChatUser

READ_KEY = "clarify_read"  # the bolt context's key for what the edge read, once
MODAL_DECISION_SECONDS = 2.0  # inside Slack's 3 s: wait this long for the core's verdict


def user(who: payloads.Who) -> ChatUser:
    return ChatUser(platform="slack", user_id=who.user_id, team_id=who.team_id,
                    enterprise_id=who.enterprise_id)


def read(context: Any) -> Read:
    """What the edge read of this callback (``handle_http``, or ``_edge`` in Socket Mode)."""
    found = context.get(READ_KEY)
    return found if isinstance(found, Read) else Read(None)


async def ack_only(ack: Any) -> None:
    await ack()


def signed_stamp(request: AsyncBoltRequest) -> str | None:
    """The request's X-Slack-Request-Timestamp (checked with the signature in HTTP mode); None
    in Socket Mode, whose envelopes carry none."""
    found = request.headers.get("x-slack-request-timestamp") or []
    stamp = found[0] if found else ""
    return stamp if stamp.isascii() and stamp.isdigit() and len(stamp) <= 12 else None


def input_value(values: dict[str, dict[str, Any]], block_id: str, field_name: str) -> object:
    """One input's value in a modal submission's ``state.values``."""
    block = values.get(block_id)
    if not isinstance(block, dict):
        return None
    element = block.get("value")
    return element.get(field_name) if isinstance(element, dict) else None
