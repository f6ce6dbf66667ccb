"""Platform limits (Slack's Block Kit and Teams' published ones) and checks that a rendered
payload keeps them.

Lengths are counted in UTF-16 code units, the stricter of the counts the vendors use, so an
emoji never pushes a clipped text over a limit.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from cards import untrusted

SLACK_MESSAGE_BLOCKS = 50
SLACK_MODAL_BLOCKS = 100
SLACK_SECTION_TEXT = 3000
SLACK_CONTEXT_TEXT = 3000
SLACK_CONTEXT_ELEMENTS = 10
SLACK_HEADER_TEXT = 150
SLACK_BUTTON_TEXT = 75
SLACK_BUTTON_VALUE = 2000
SLACK_BUTTON_URL = 3000
SLACK_ID = 255
SLACK_ACTIONS_ELEMENTS = 25
SLACK_MODAL_TITLE = 24
SLACK_PRIVATE_METADATA = 3000
SLACK_INPUT_LABEL = 2000
SLACK_PLACEHOLDER = 150
SLACK_FALLBACK_TEXT = 3000  # our own cap for the notification text

TEAMS_CARD_BYTES = 28 * 1024
TEAMS_REFRESH_USERS = 60
TEAMS_ACTIONS_PER_SET = 5  # the renderer's default maxActions; Teams allows 6


def text_length(text: str) -> int:
    """Length in UTF-16 code units."""
    return untrusted.text_length(text)


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` UTF-16 units, ending in "…" when cut, never inside a character
    a person sees (a surrogate pair, a combining sequence, an emoji sequence or a flag)."""
    return untrusted.clip(text, limit)


def card_bytes(card: object) -> int:
    """The size of a card as the Agents SDK puts it on the wire.

    The SDK's connector client posts activities with aiohttp's ``json=``, that is
    ``json.dumps`` with its defaults: every non-ASCII character escaped (an emoji grows from 4
    UTF-8 bytes to 12, an Arabic letter from 2 to 6) and a space after each separator. Counting
    compact UTF-8 instead let right-to-left and emoji-heavy cards pass at 23 KB that go out at
    50 KB.
    """
    return len(json.dumps(card).encode("ascii"))


# ---------------------------------------------------------------- Slack checks


def _too_long(where: str, text: object, limit: int) -> list[str]:
    if isinstance(text, str) and text_length(text) > limit:
        return [f"{where}: {text_length(text)} > {limit}"]
    return []


def _text_of(obj: object) -> object:
    return obj.get("text") if isinstance(obj, dict) else None


def _button_problems(where: str, element: dict) -> list[str]:
    return (_too_long(f"{where} text", _text_of(element.get("text")), SLACK_BUTTON_TEXT)
            + _too_long(f"{where} value", element.get("value"), SLACK_BUTTON_VALUE)
            + _too_long(f"{where} url", element.get("url"), SLACK_BUTTON_URL)
            + _too_long(f"{where} action_id", element.get("action_id"), SLACK_ID))


def _block_problems(where: str, block: dict) -> list[str]:
    kind = block.get("type")
    found = _too_long(f"{where} block_id", block.get("block_id"), SLACK_ID)
    if kind == "section":
        found += _too_long(f"{where} text", _text_of(block.get("text")), SLACK_SECTION_TEXT)
        if isinstance(block.get("accessory"), dict):
            found += _button_problems(f"{where} accessory", block["accessory"])
    elif kind == "header":
        found += _too_long(f"{where} header", _text_of(block.get("text")), SLACK_HEADER_TEXT)
    elif kind == "context":
        elements = block.get("elements", [])
        if len(elements) > SLACK_CONTEXT_ELEMENTS:
            found.append(f"{where}: {len(elements)} context elements")
        for element in elements:
            found += _too_long(f"{where} context", element.get("text"), SLACK_CONTEXT_TEXT)
    elif kind == "actions":
        found += _actions_problems(where, block.get("elements", []))
    elif kind == "rich_text":
        # our own cap, a section's: Slack states none for rich text in a message
        words = "".join(e.get("text", "") for s in block.get("elements", [])
                        for e in s.get("elements", []))
        found += _too_long(f"{where} rich text", words, SLACK_SECTION_TEXT)
    elif kind == "input":
        found += _too_long(f"{where} label", _text_of(block.get("label")), SLACK_INPUT_LABEL)
        element = block.get("element", {})
        found += _too_long(f"{where} placeholder", _text_of(element.get("placeholder")),
                           SLACK_PLACEHOLDER)
        found += _too_long(f"{where} action_id", element.get("action_id"), SLACK_ID)
    return found


def _actions_problems(where: str, elements: list[dict]) -> list[str]:
    found = [] if len(elements) <= SLACK_ACTIONS_ELEMENTS else [f"{where}: too many elements"]
    action_ids = [e.get("action_id") for e in elements if e.get("action_id")]
    if len(action_ids) != len(set(action_ids)):
        found.append(f"{where}: duplicate action_id")
    for n, element in enumerate(elements):
        found += _button_problems(f"{where} element {n}", element)
    return found


def _blocks_problems(blocks: list[dict], limit: int) -> list[str]:
    found = [] if len(blocks) <= limit else [f"{len(blocks)} blocks > {limit}"]
    block_ids = [b["block_id"] for b in blocks if "block_id" in b]
    if len(block_ids) != len(set(block_ids)):
        found.append("duplicate block_id")
    for n, block in enumerate(blocks):
        found += _block_problems(f"block {n}", block)
    return found


def slack_message_problems(message: dict) -> list[str]:
    """Every Slack message limit that ``message`` ({text, blocks}) breaks; empty when fine."""
    return (_too_long("text", message.get("text"), SLACK_FALLBACK_TEXT)
            + _blocks_problems(message.get("blocks", []), SLACK_MESSAGE_BLOCKS))


def slack_modal_problems(view: dict) -> list[str]:
    """Every Slack modal limit that ``view`` breaks; empty when fine."""
    found: list[str] = []
    for part in ("title", "submit", "close"):
        found += _too_long(f"modal {part}", _text_of(view.get(part)), SLACK_MODAL_TITLE)
    found += _too_long("private_metadata", view.get("private_metadata"), SLACK_PRIVATE_METADATA)
    found += _too_long("callback_id", view.get("callback_id"), SLACK_ID)
    return found + _blocks_problems(view.get("blocks", []), SLACK_MODAL_BLOCKS)


# ---------------------------------------------------------------- Teams checks


def walk(node: object) -> Iterable[dict]:
    """Every object in a JSON payload, depth first (the payload itself first)."""
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from walk(value)
    elif isinstance(node, list):
        for item in node:
            yield from walk(item)


def teams_card_problems(card: dict) -> list[str]:
    """Every Adaptive Card rule of ours that ``card`` breaks: size, version, Universal Actions."""
    found: list[str] = []
    if card.get("type") != "AdaptiveCard" or card.get("version") != "1.5":
        found.append("not an Adaptive Card 1.5")
    if card_bytes(card) > TEAMS_CARD_BYTES:
        found.append(f"card is {card_bytes(card)} bytes > {TEAMS_CARD_BYTES}")
    refresh = card.get("refresh")
    if isinstance(refresh, dict) and len(refresh.get("userIds", [])) > TEAMS_REFRESH_USERS:
        found.append("refresh.userIds has more than 60 entries")
    for node in walk(card):
        if node.get("type") == "Action.Submit":
            found.append("Action.Submit used; Universal Actions need Action.Execute")
        if node.get("type") == "Action.Execute" and not node.get("verb"):
            found.append("Action.Execute without a verb")
        if node.get("type") == "ActionSet" and len(node.get("actions", [])) > 5:
            found.append("ActionSet with more than 5 actions")
    return found
