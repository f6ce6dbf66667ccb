"""The Slack App Home tab: the steward's attention queue.

On ``app_home_opened`` (the Home tab only) the listener acknowledges (Slack wants its 200
whatever follows), then, in a task, asks ``Interactions.attention`` what the verified person may
see and publishes it with ``views.publish``: the clarifications needing a steward in the
workspaces they steward, titles only where they may read the source; for anyone else, a short
"nothing for you here". A workspace mapped to no tenant gets nothing published (a value-free log
line, ``clarify_slack_home_total{outcome="not_served"}``). When a steward's queue changes (a
notice or escalation sent to them, their override recorded) ``bot.interaction.attention`` hands it
here
anew and it is published again, through the channel's interactive lane like every
``views.publish``. The decisions are in ``bot.interaction.interactions`` and
``bot.interaction.attention``, the
rendering in ``cards.attention``.
"""

from __future__ import annotations

from typing import Any

import structlog

from adapters.slack import listening, payloads
from adapters.slack.kit import Kit
from bot.channel import ChannelError, SlackReach
from bot.chat import ChatUser
from bot.metrics import REGISTRY
from bot.store.errors import StoreError
from cards.attention import render_slack_home
from cards.views import AttentionView

log = structlog.get_logger("clarify.slack")
HOME_EVENT = "app_home_opened"
REGISTRY.preset("clarify_slack_home_total", outcome=("published", "not_served",
                                                     "not_published"))


def register(kit: Kit) -> None:
    """The App Home listener on the kit's bolt app, and the re-publish of a changed queue."""

    async def on_home_opened(ack: Any, body: dict[str, Any]) -> None:
        await ack()
        try:
            who = payloads.home_opener(body)
        except payloads.MalformedPayload as exc:
            log.info("slack.home_refused", field=exc.field)
            return
        if who is None:
            return
        if kit.tenant(who) is None:  # no tenant: nothing of any tenant, not even "empty"
            log.info("slack.home_skipped", reason="workspace_not_served")
            REGISTRY.inc("clarify_slack_home_total", outcome="not_served")
            return
        user = listening.user(who)
        kit.spawn(_seen(kit, user))
        kit.spawn(publish(kit, user))

    async def republish(user: ChatUser, view: AttentionView) -> None:
        await show(kit, user, view)

    kit.app.event(HOME_EVENT)(on_home_opened)
    kit.interactions.board.publish_with("slack", republish)


async def _seen(kit: Kit, user: ChatUser) -> None:
    """The person opened the bot's App Home: the bot can reach them on Slack, so a remembered
    block of Slack for them ends (``bot.engine.lasting``)."""
    try:
        await kit.refusals.clear("slack", user.user_id)
    except StoreError as exc:
        log.warning("slack.block_not_cleared", error=type(exc).__name__)


async def publish(kit: Kit, user: ChatUser) -> None:
    """The person's queue, rendered and published to their Home tab."""
    await show(kit, user, await kit.interactions.attention(user))


async def show(kit: Kit, user: ChatUser, view: AttentionView) -> None:
    try:
        await kit.channel.publish_home(user.user_id, render_slack_home(view),
                                       workspace=SlackReach(team_id=user.team_id,
                                                            enterprise_id=user.enterprise_id))
    except ChannelError as exc:
        log.warning("slack.home_not_published", error=exc.reason)
        REGISTRY.inc("clarify_slack_home_total", outcome="not_published")
        return
    REGISTRY.inc("clarify_slack_home_total", outcome="published")
