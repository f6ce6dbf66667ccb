"""The steward's attention queue in chat: the Slack App Home view and the Teams card.

Pure like every renderer: an ``AttentionView`` in, a Block Kit ``home`` view or an Adaptive Card
out. Both stay inside their platform's limits (100 blocks for a home view, 28 KB for a Teams
card): items past the budget become one "…and N more" line that names the CLI, which lists all.
"""

from __future__ import annotations

from cards import limits, text
from cards import slack_blocks as sl
from cards import teams as tm
from cards.views import AttentionItem, AttentionView, Viewer

HOME_TYPE = "home"


def summary_text(view: AttentionView) -> str:
    """The sentence that stands for the whole queue (or for its absence)."""
    cat = text.catalog_of(view.viewer)
    if view.unavailable:
        return cat.text("queue.unavailable")
    if not view.steward:
        return cat.text("queue.not_steward")
    count = len(view.items) + view.more
    return cat.plural("queue.intro", count) if count else cat.text("queue.empty")


def _state(item: AttentionItem, view: AttentionView) -> str:
    return text.catalog_of(view.viewer).text(f"state.{item.state.value}")


# ---------------------------------------------------------------- Slack App Home


def render_slack_home(view: AttentionView) -> dict:
    """The App Home tab (``views.publish``): a header, the summary, one section per item (its
    document as the steward may see it, severity, state and the clarification id)."""
    cat = text.catalog_of(view.viewer)
    blocks = [{"type": "header", "block_id": "queue.title",
               "text": sl.plain_text(cat.text("queue.title"), limits.SLACK_HEADER_TEXT)},
              sl.section("queue.intro", sl.escape(summary_text(view)))]
    # one block per item, one left for the overflow line
    budget = limits.SLACK_MODAL_BLOCKS - len(blocks) - 1
    shown = view.items[:budget]
    for n, item in enumerate(shown):
        heading = cat.text("queue.item", document=sl.link(item.document, view.viewer),
                           severity=sl.escape(text.severity_text(item.severity, view.viewer)),
                           state=sl.escape(_state(item, view)))
        reference = cat.text("queue.reference", reference=f"`{sl.escape(item.clarification_id)}`")
        blocks.append(sl.section(f"queue.{n}", f"*{heading}*\n{reference}"))
    hidden = len(view.items) - len(shown) + view.more
    if hidden:
        blocks.append(sl.context("queue.more", cat.plural("queue.more", hidden)))
    return {"type": HOME_TYPE, "blocks": blocks}


# ---------------------------------------------------------------- Teams card


def render_teams_queue(view: AttentionView) -> dict:
    """The answer to a Teams ``queue`` message: as many items as fit under 28 KB (with room
    kept for the "…and N more" line), then that line."""
    cat = text.catalog_of(view.viewer)
    body = [tm._text(cat.text("queue.title"), weight="Bolder", size="Medium"),
            tm._text(summary_text(view))]
    card = tm._card(view.viewer, body)

    def entry(item: AttentionItem) -> dict:
        heading = cat.text("queue.item", document=tm.md_link(item.document, view.viewer),
                           severity=text.severity_text(item.severity, view.viewer),
                           state=_state(item, view))
        return {"type": "Container", "separator": True, "spacing": "Medium",
                "items": [tm._text(heading, weight="Bolder"),
                          tm._text(cat.text("queue.reference",
                                            reference=item.clarification_id),
                                   isSubtle=True, size="Small")]}

    shown = tm._append_while_fits(card, map(entry, view.items))
    hidden = len(view.items) - shown + view.more
    if hidden:
        body.append(tm._text(cat.plural("queue.more", hidden), isSubtle=True))
    return card


def help_text(viewer: Viewer) -> str:
    """What the Teams personal chat says to anything but ``queue``."""
    return text.catalog_of(viewer).text("queue.help")
