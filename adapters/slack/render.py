"""Block Kit for any view model; the view-to-function dispatch is ``cards/render.py``."""

from __future__ import annotations

from typing import Any

from cards import slack as blocks
from cards.actions import ActionCodec
from cards.render import render_with


def render(view: object, *, codec: ActionCodec) -> dict[str, Any]:
    """A ``{text, blocks}`` message for any card view model."""
    return render_with(blocks, view, codec=codec, platform="Slack")
