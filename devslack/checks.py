"""The local Slack stand-in's checks of what the bot sends, answered with Slack's own errors:
Block Kit and modal limits (``cards.platform_limits``, with slack_sdk's models as an independent
second opinion), the text and metadata of a message, required arguments; and how a Web API
request's arguments are read (query, form or JSON; a bearer token)."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

from aiohttp import web
from slack_sdk.errors import SlackObjectFormationError
from slack_sdk.models.blocks import Block
from slack_sdk.models.views import View

from cards import platform_limits as limits
from devslack.errors import SlackError
from devslack.model import MAX_TEXT, Json

JSON_FIELDS = ("blocks", "metadata", "view")


def flag(value: object) -> bool:
    """A boolean argument as Slack reads it from a form or JSON body."""
    return value in (True, 1, "1", "true", "True")


def decode_json_fields(args: Json) -> None:
    """Form bodies carry blocks/metadata/view as JSON strings; undecodable ones stay strings."""
    for name in JSON_FIELDS:
        if isinstance(args.get(name), str):
            try:
                args[name] = json.loads(args[name])
            except ValueError:
                pass


def sdk_problems(parse: Callable[[], object]) -> list[str]:
    """What slack_sdk's own models say about a payload (an independent second opinion)."""
    try:
        parsed = parse()
    except (SlackObjectFormationError, TypeError, KeyError, AttributeError) as exc:
        return [str(exc)]
    if parsed is None or (isinstance(parsed, list) and None in parsed):
        return ["unknown block type"]
    return []


def block_problems(blocks: list[Json]) -> list[str]:
    """What Slack would refuse in a message's blocks (``invalid_blocks``)."""
    def parse() -> list[object]:
        parsed = [Block.parse(b) for b in blocks]
        return [p.to_dict() if p else None for p in parsed]

    return limits.slack_message_problems({"blocks": blocks}) + sdk_problems(parse)


def view_problems(view: object, *, kind: str = "modal") -> list[str]:
    """What Slack would refuse in a modal (or, ``kind="home"``, an App Home) view."""
    if not isinstance(view, dict) or view.get("type") != kind:
        return [f"view must be a {kind} object"]
    blocks = view.get("blocks")
    if not isinstance(blocks, list) or not all(isinstance(b, dict) for b in blocks):
        return ["view.blocks must be a list of objects"]
    return limits.slack_modal_problems(view) + sdk_problems(lambda: View(**view).to_dict())


def content(args: Json, *, required: bool = True) -> tuple[str | None, list[Json] | None]:
    """The message text and blocks, checked; raises Slack's error for a bad pair."""
    text, blocks = args.get("text"), args.get("blocks")
    if blocks is not None:
        if not isinstance(blocks, list) or not all(isinstance(b, dict) for b in blocks):
            raise SlackError("invalid_blocks_format")
        if problems := block_problems(blocks):
            raise SlackError("invalid_blocks", messages=problems)
    if required and not text and not blocks:
        raise SlackError("no_text")
    if isinstance(text, str) and len(text) > MAX_TEXT:
        raise SlackError("msg_too_long")
    return text, blocks


def metadata_of(args: Json) -> Json | None:
    """A message's metadata, checked for Slack's shape (``event_type``, ``event_payload``)."""
    metadata = args.get("metadata")
    if metadata is None:
        return None
    if (not isinstance(metadata, dict) or not isinstance(metadata.get("event_type"), str)
            or not isinstance(metadata.get("event_payload"), dict)):
        raise SlackError("invalid_metadata_format")
    return metadata


def cursor_of(offset: int) -> str:
    """An opaque paging cursor, as Slack's look (base64 of where the next page starts)."""
    return base64.b64encode(f"member:{offset}".encode()).decode()


def cursor_offset(cursor: object, size: int) -> int:
    """Where the page of ``cursor`` starts; ``invalid_cursor`` for one this stand-in never
    gave."""
    try:
        word, _, number = base64.b64decode(str(cursor), validate=True).decode().partition(":")
        offset = int(number)
    except (ValueError, UnicodeDecodeError):
        raise SlackError("invalid_cursor") from None
    if word != "member" or not 0 <= offset <= size:
        raise SlackError("invalid_cursor")
    return offset


def page_limit(value: object) -> int:
    """A page's ``limit``: at most 1,000 (Slack's cap); none, 0 or not a number: no limit."""
    try:
        return min(1000, max(0, int(str(value)))) if value not in (None, "") else 0
    except ValueError:
        return 0


def required(args: Json, name: str) -> Any:
    if args.get(name) in (None, ""):
        raise SlackError("invalid_arguments", messages=[f"missing required field: {name}"])
    return args[name]


async def read_args(request: web.Request) -> Json:
    """A Web API request's arguments: its query, then its form or JSON body."""
    args: Json = dict(request.query)
    if request.can_read_body:
        if request.content_type == "application/json":
            body = await request.json()
            args.update(body if isinstance(body, dict) else {})
        else:
            args.update((await request.post()).items())
    decode_json_fields(args)
    return args


def bearer(header: str | None) -> str | None:
    if header and header.startswith("Bearer "):
        return header.removeprefix("Bearer ").strip() or None
    return None
