"""The Slack App Home tab: the steward's attention queue.

On ``app_home_opened`` (the Home tab only) the listener acknowledges, then, in a task, asks
``Interactions.attention`` what the verified person may see and publishes it with
``views.publish``: the clarifications needing a steward in the workspaces they steward, titles
only where they may read the source; for anyone else, a short "nothing for you here". The
decisions are in ``bot.interactions``, the rendering in ``cards.attention``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import structlog

from adapters.slack import payloads
from bot.channel import ChannelError
from bot.interactions import ChatUser
from cards.attention import render_slack_home

if TYPE_CHECKING:
    from adapters.slack.app import SlackAdapter

log = structlog.get_logger("clarify.slack")
HOME_EVENT = "app_home_opened"


def register(adapter: SlackAdapter) -> None:
    """The App Home listener on the adapter's bolt app."""

    async def on_home_opened(ack: Any, body: dict[str, Any]) -> None:
        await ack()
        try:
            who = payloads.home_opener(body)
        except payloads.MalformedPayload as exc:
            log.info("slack.home_refused", field=exc.field)
            return
        if who is not None:
            adapter._spawn(publish(adapter, who))

    adapter.app.event(HOME_EVENT)(on_home_opened)


async def publish(adapter: SlackAdapter, who: payloads.Who) -> None:
    """The person's queue, rendered and published to their Home tab."""
    user = ChatUser(platform="slack", user_id=who.user_id, team_id=who.team_id,
                    enterprise_id=who.enterprise_id)
    view = await adapter.interactions.attention(user)
    try:
        await adapter.channel.publish_home(who.user_id, render_slack_home(view),
                                           workspace=who.enterprise_id or who.team_id)
    except ChannelError as exc:
        log.warning("slack.home_not_published", error=exc.reason)
