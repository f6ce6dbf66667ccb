"""The digest's "next questions" button on Slack: acknowledged first, then, in a task,
``Interactions.digest_page`` says what the next page holds and it replaces the page clicked, in
place: one interactive ``chat.update``, never a new post queued behind bulk delivery.
No page left is told to the clicker only."""

from __future__ import annotations

from typing import Any

from adapters.slack import listening, payloads
from adapters.slack.kit import Kit, reach
from adapters.slack.render import render
from cards import slack as blocks


def register(kit: Kit) -> None:
    """The next-page listener on the kit's bolt app."""

    async def on_digest_next(ack: Any, context: Any) -> None:
        await ack()
        click = listening.read(context).click
        if click is not None and click.ref.offset is not None and click.channel_id is not None \
                and click.message_ts is not None:
            kit.spawn(next_page(kit, click))

    kit.app.action(blocks.DIGEST_NEXT_ACTION)(on_digest_next)


async def next_page(kit: Kit, click: payloads.Click) -> None:
    assert click.ref.offset is not None and click.channel_id is not None
    assert click.message_ts is not None
    page = await kit.interactions.digest_page(listening.user(click.who),
                                              digest_ref=click.ref.card_ref,
                                              offset=click.ref.offset)
    if page is None:
        await kit.ephemeral(click.channel_id, click.who, key="digest.no_more")
        return
    await kit.channel.replace(click.channel_id, click.message_ts,
                              render(page, codec=kit.codec), workspace=reach(click.who))
