"""Adaptive Cards for any view model (the view-to-function dispatch is ``cards/render.py``), and
a card wrapped as the attachment a Bot Framework activity carries."""

from __future__ import annotations

from typing import Any

from cards import teams as adaptive
from cards.actions import ActionCodec
from cards.render import render_with

CARD_CONTENT_TYPE = "application/vnd.microsoft.card.adaptive"


def render(view: object, *, codec: ActionCodec) -> dict[str, Any]:
    """An Adaptive Card (its JSON object) for any card view model."""
    return render_with(adaptive, view, codec=codec, platform="Teams")


def attachment(card: dict[str, Any]) -> dict[str, Any]:
    """The card as a message attachment (``Attachment`` on the wire)."""
    return {"contentType": CARD_CONTENT_TYPE, "content": card}
