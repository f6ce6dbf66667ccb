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
from cards import reach as reach_cards
from cards.attention import HOME_QUEUE_ACTION, HOME_REACH_ACTION, render_slack_home
from cards.reach_views import ReachDetailView
from cards.views import AttentionView

log = structlog.get_logger("clarify.slack")
HOME_EVENT = "app_home_opened"
REGISTRY.preset("clarify_slack_home_total", outcome=("published", "not_served",
                                                     "not_published"))
QUEUE, REACH = "queue", "reach"
TABS_KEPT = 10_000  # people whose chosen tab this process remembers (the oldest forgotten)


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
        if tabs.get(_tab_key(user)) == REACH:
            return  # the person is on the Reach tab: the queue shows when they choose it
        await show(kit, user, view)

    async def on_tab(ack: Any, context: Any) -> None:
        """A tab button on the Home (Queue, Reach), or the weekly report's detail button:
        the chosen tab is published (and, for the report's button, the person is told where
        it is, with a link to the Home)."""
        await ack()
        found = listening.read(context).plain
        if found is None or kit.tenant(found.who) is None:
            return
        user = listening.user(found.who)
        tab = QUEUE if found.action_id == HOME_QUEUE_ACTION else REACH
        _choose(tabs, user, tab)
        kit.spawn(publish(kit, user, tab=tab))
        if found.action_id == reach_cards.REACH_OPEN_ACTION and found.channel_id is not None:
            kit.spawn(_pointed(kit, found))

    tabs = kit.home_tabs
    kit.app.event(HOME_EVENT)(on_home_opened)
    for action in (HOME_QUEUE_ACTION, HOME_REACH_ACTION,
                   reach_cards.REACH_OPEN_ACTION):
        kit.app.action(action)(on_tab)
    kit.app.action(reach_cards.REACH_HOME_LINK_ACTION)(listening.ack_only)  # a link: Slack opens it
    kit.interactions.board.publish_with("slack", republish)


def _tab_key(user: ChatUser) -> tuple[str | None, str | None, str]:
    return (user.enterprise_id, user.team_id, user.user_id)


def _choose(tabs: dict[tuple[str | None, str | None, str], str], user: ChatUser,
            tab: str) -> None:
    tabs.pop(_tab_key(user), None)
    tabs[_tab_key(user)] = tab  # dicts keep insertion order: the oldest choice is first
    while len(tabs) > TABS_KEPT:
        del tabs[next(iter(tabs))]


async def _pointed(kit: Kit, found: payloads.Plain) -> None:
    """Tell the person (only them, next to the report) that the detail is on the Home's Reach
    tab, with a link that opens it where the click says which app and workspace it is."""
    assert found.channel_id is not None
    detail = await kit.interactions.reach_detail(listening.user(found.who))
    link = (f"slack://app?team={found.who.team_id}&id={found.app_id}&tab=home"
            if found.who.team_id and found.app_id else None)
    try:
        await kit.channel.ephemeral(found.channel_id, found.who.user_id,
                                    reach_cards.render_slack_reach_note(detail, link),
                                    workspace=SlackReach(team_id=found.who.team_id,
                                                         enterprise_id=found.who.enterprise_id))
    except ChannelError as exc:
        log.warning("slack.reach_note_not_sent", error=exc.reason)


async def _seen(kit: Kit, user: ChatUser) -> None:
    """The person opened the bot's App Home: the bot can reach them on Slack, so a remembered
    block of Slack for them ends (``bot.engine.lasting``)."""
    try:
        await kit.refusals.clear("slack", user.user_id)
    except StoreError as exc:
        log.warning("slack.block_not_cleared", error=type(exc).__name__)


async def publish(kit: Kit, user: ChatUser, *, tab: str | None = None) -> None:
    """The person's chosen tab (``tab``, else the one they chose last in this process, else
    the queue), rendered and published to their Home. Only a steward has the Reach tab."""
    tab = tab or kit.home_tabs.get(_tab_key(user), QUEUE)
    kept = kit.interactions.reach_kept
    view = await kit.interactions.attention(user)
    detail = await kit.interactions.reach_detail(user) \
        if tab == REACH and view.steward and kept else None
    await show(kit, user, view, reach=detail)


async def show(kit: Kit, user: ChatUser, view: AttentionView, *,
               reach: ReachDetailView | None = None) -> None:
    try:
        await kit.channel.publish_home(user.user_id, render_slack_home(
            view, reach=reach, tabs=kit.interactions.reach_kept),
                                       workspace=SlackReach(team_id=user.team_id,
                                                            enterprise_id=user.enterprise_id))
    except ChannelError as exc:
        log.warning("slack.home_not_published", error=exc.reason)
        REGISTRY.inc("clarify_slack_home_total", outcome="not_published")
        return
    REGISTRY.inc("clarify_slack_home_total", outcome="published")
