"""An Adaptive Card's frame for the Teams renderers (``cards.teams``, ``cards.attention``,
``cards.reach``): the card itself, a line of text, an ``Action.Execute``, and filling a card's
body while it stays under 28 KB with room kept for a closing line. Apart from ``cards.teams``
so that a renderer ``cards.teams`` dispatches to (``cards.reach``) can build on it too.
"""

from __future__ import annotations

from collections.abc import Iterable

from cards import dates
from cards import platform_limits as limits
from cards.teams_text import rich_block
from cards.untrusted import Runs
from cards.views import Viewer

SCHEMA = "http://adaptivecards.io/schemas/adaptive-card.json"
LINE_CHARS = 1000
# Room kept for the overflow footer when filling a card up to the size limit.
FOOTER_RESERVE_BYTES = 2048


def card(viewer: Viewer, body: list[dict], actions: list[dict] | None = None) -> dict:
    made: dict = {"type": "AdaptiveCard", "$schema": SCHEMA, "version": "1.5",
                  "lang": dates.card_language(viewer.locale), "body": body}
    if actions:
        made["actions"] = actions
    if dates.is_right_to_left(viewer.locale):
        made["rtl"] = True
    return made


def text(value: str | Runs, *, limit: int = LINE_CHARS, **style: object) -> dict:
    """A line of text (rich text: what people and the core wrote in it is never markdown)."""
    return rich_block(value, limit=limit, **style)


def execute(title: str, verb: str, data: dict) -> dict:
    return {"type": "Action.Execute", "title": limits.clip(title, 75), "verb": verb,
            "data": data}


def fits_with(made: dict, element: dict) -> bool:
    budget = limits.TEAMS_CARD_BYTES - FOOTER_RESERVE_BYTES
    return limits.card_bytes(made) + limits.card_bytes(element) + len(", ") <= budget


def append_while_fits(made: dict, entries: Iterable[dict]) -> int:
    """Appends ``entries`` to the card's body in order (each built only when its turn comes)
    until one would not fit with room kept for a closing line; returns how many went in."""
    shown = 0
    for entry in entries:
        if not fits_with(made, entry):
            break
        made["body"].append(entry)
        shown += 1
    return shown
