"""The steward's attention queue in chat: the Slack App Home view and the Teams card.

Pure like every renderer: an ``AttentionView`` in, a Block Kit ``home`` view or an Adaptive Card
out. Both stay inside their platform's limits (100 blocks for a home view, 28 KB for a Teams
card): items past the budget become one "…and N more" line that names the CLI, which lists all.
A steward's Home has two tabs, "Queue" and "Reach" (buttons ``HOME_QUEUE_ACTION`` and
``HOME_REACH_ACTION``): the queue, or the reach report's detail (``cards.reach``).
"""

from __future__ import annotations

from cards import platform_limits as limits
from cards import reach as reach_cards
from cards import slack_blocks as sl
from cards import teams as tm
from cards import text
from cards.reach_views import ReachDetailView
from cards.teams_text import block
from cards.untrusted import Code, line
from cards.views import AttentionItem, AttentionView, Viewer

HOME_TYPE = "home"
# the steward's Home tabs: buttons that publish the queue or the reach report's detail
HOME_QUEUE_ACTION = "home.queue"
HOME_REACH_ACTION = "home.reach"


def summary_text(view: AttentionView) -> str:
    """The sentence that stands for the whole queue (or for its absence)."""
    cat = text.catalog_of(view.viewer)
    if view.unavailable:
        return cat.text("queue.unavailable")
    if not view.steward:
        return cat.text("queue.not_steward")
    count = len(view.items) + view.more
    if not view.whole:  # the core's list went on: what was read is a lower bound
        return cat.plural("queue.intro_unread", count) if count else cat.text(
            "queue.empty_unread")
    return cat.plural("queue.intro", count) if count else cat.text("queue.empty")


def more_text(view: AttentionView, hidden: int) -> str | None:
    """The closing line: how many more than shown, and whether the list went on past what was
    read (None: the view is the whole queue)."""
    cat = text.catalog_of(view.viewer)
    if view.whole:
        return cat.plural("queue.more", hidden) if hidden else None
    return cat.plural("queue.more_unread", hidden) if hidden else cat.text("queue.unread")


def _state(item: AttentionItem, view: AttentionView) -> str:
    return text.catalog_of(view.viewer).text(f"state.{item.state.value}")


def _reference(item: AttentionItem) -> Code:
    """The clarification id, fixed-width where the platform has it (it is what the CLI takes)."""
    return Code(limits.clip(line(item.clarification_id), text.PERSON_CHARS))


# ---------------------------------------------------------------- Slack App Home


def home_tabs(viewer: Viewer, *, reach_shown: bool) -> dict:
    """The steward's two tabs, "Queue" and "Reach": the one shown is the primary button."""
    cat = text.catalog_of(viewer)
    tabs = []
    for key, action_id, shown in (("home.tab_queue", HOME_QUEUE_ACTION, not reach_shown),
                                  ("home.tab_reach", HOME_REACH_ACTION, reach_shown)):
        tab = sl.button(cat.text(key), action_id=action_id)
        tabs.append({**tab, "style": "primary"} if shown else tab)
    return {"type": "actions", "block_id": "home.tabs", "elements": tabs}


def render_slack_home(view: AttentionView, *, reach: ReachDetailView | None = None,
                      tabs: bool = True) -> dict:
    """The App Home tab (``views.publish``). A steward's starts with the two tabs (``tabs``
    False: the bot keeps no reach record, so there is no Reach tab to offer); then, with
    ``reach``, the reach report's detail (``cards.reach``), else the queue: a header, the
    summary, one section per item (its document as the steward may see it, severity, state and
    the clarification id). Anyone else's is the queue's "nothing for you here", without tabs."""
    if view.steward and reach is not None and tabs:
        return {"type": HOME_TYPE, "blocks": [home_tabs(view.viewer, reach_shown=True),
                                              *_reach_blocks(reach)]}
    cat = text.catalog_of(view.viewer)
    blocks = [*([home_tabs(view.viewer, reach_shown=False)] if view.steward and tabs else []),
              {"type": "header", "block_id": "queue.title",
               "text": sl.plain_text(cat.text("queue.title"), limits.SLACK_HEADER_TEXT)},
              sl.section("queue.intro", summary_text(view))]
    # one block per item, one left for the overflow line
    budget = limits.SLACK_MODAL_BLOCKS - len(blocks) - 1
    shown = view.items[:budget]
    for n, item in enumerate(shown):
        heading = cat.runs("queue.item", document=text.document_run(item.document, view.viewer),
                           severity=text.severity_text(item.severity, view.viewer),
                           state=_state(item, view))
        reference = cat.runs("queue.reference", reference=_reference(item))
        blocks.append(sl.rich(f"queue.{n}", sl.rich_elements(heading, bold=True),
                              sl.rich_elements(reference)))
    more = more_text(view, len(view.items) - len(shown) + view.more)
    if more:
        blocks.append(sl.context("queue.more", more))
    return {"type": HOME_TYPE, "blocks": blocks}


def _reach_blocks(view: ReachDetailView) -> list[dict]:
    """The Reach tab's blocks, with room left for the tabs."""
    return reach_cards.render_slack_reach_detail_blocks(view, room=limits.SLACK_MODAL_BLOCKS - 1)


# ---------------------------------------------------------------- Teams card


def render_teams_queue(view: AttentionView) -> dict:
    """The answer to a Teams ``queue`` message: as many items as fit under 28 KB (with room
    kept for the "…and N more" line), then that line."""
    cat = text.catalog_of(view.viewer)
    body = [tm._text(cat.text("queue.title"), weight="Bolder", size="Medium"),
            tm._text(summary_text(view))]
    card = tm._card(view.viewer, body)

    def entry(item: AttentionItem) -> dict:
        heading = cat.runs("queue.item", document=text.document_run(item.document, view.viewer),
                           severity=text.severity_text(item.severity, view.viewer),
                           state=_state(item, view))
        return {"type": "Container", "separator": True, "spacing": "Medium",
                "items": [block(heading, weight="Bolder"),
                          tm._text(cat.runs("queue.reference", reference=_reference(item)),
                                   isSubtle=True, size="Small")]}

    shown = tm._append_while_fits(card, map(entry, view.items))
    more = more_text(view, len(view.items) - shown + view.more)
    if more:
        body.append(tm._text(more, isSubtle=True))
    return card


def help_text(viewer: Viewer) -> str:
    """What the Teams personal chat says to anything but ``queue``."""
    return text.catalog_of(viewer).text("queue.help")
