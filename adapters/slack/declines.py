""""Not the right person" on Slack: acknowledged first, then ``Interactions.decline`` decides,
records and repaints the card (``bot.interaction.declines``); a refusal, or a core that cannot be
reached,
is told to the person in plain words, only to them (``tell``)."""

from __future__ import annotations

from typing import Any

import structlog

from adapters.slack import listening, payloads
from adapters.slack.kit import Kit
from bot.channel import ChannelError
from bot.interaction.declines import DeclineStatus
from cards import slack as blocks
from cards import text as card_text
from cards.actions import ActionKind
from cards.views import Viewer

log = structlog.get_logger("clarify.slack")
TOLD = {DeclineStatus.NOT_ALLOWED: "decline.not_available",
        DeclineStatus.UNAVAILABLE: "decline.unavailable"}


def register(kit: Kit) -> None:
    async def on_decline(ack: Any, context: Any) -> None:
        await ack()
        click = listening.read(context).click
        if click is not None and click.ref.kind is ActionKind.DECLINE \
                and click.ref.clarification_id is not None:
            kit.spawn(_decline(kit, click))

    kit.app.action(blocks.DECLINE_ACTION)(on_decline)


async def _decline(kit: Kit, click: payloads.Click) -> None:
    assert click.ref.clarification_id is not None
    declined = await kit.interactions.decline(
        listening.user(click.who), clarification_id=click.ref.clarification_id,
        card_ref=click.ref.card_ref, paint=True)
    key = declined.told or TOLD.get(declined.status)
    if key is not None:
        await tell(kit, click, key=key)


async def tell(kit: Kit, click: payloads.Click, *, key: str) -> None:
    """A short note only the clicker sees, in plain words: in place, through the click's
    response_url (as a Teams invoke's answer is), else next to the card. Someone pressing a
    card in a DM not theirs is reached only the first way (Slack refuses the second)."""
    if click.response_url is not None:
        words = card_text.catalog_of(Viewer()).text(key)
        try:
            await kit.channel.respond(click.response_url, words)
            return
        except ChannelError as exc:
            log.warning("slack.response_not_shown", error=exc.reason)
    try:
        await kit.ephemeral(click.channel_id, click.who, key=key)
    except ChannelError as exc:
        log.warning("slack.note_not_shown", error=exc.reason)
