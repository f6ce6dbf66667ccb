"""The attention queue's renderers stay inside their platform's limits, whatever the queue."""

from __future__ import annotations

import json

from bot.core.models import ClarificationState, Severity
from cards import platform_limits as limits
from cards.attention import render_slack_home, render_teams_queue, summary_text
from cards.views import AttentionItem, AttentionView, DocumentView, Viewer
from tests.support.card_text import teams_block_text


def queue(count: int, *, more: int = 0, whole: bool = True) -> AttentionView:
    """``count`` items with the longest titles and links, every other one withheld."""
    items = tuple(AttentionItem(
        clarification_id=f"clr-{n:05d}",
        document=DocumentView(title="Ä" * 400, url="https://docs.example/" + "x" * 2000)
        if n % 2 else DocumentView.neutral(workspace="W" * 200, reference=f"clr-{n:05d}"),
        severity=Severity.CRITICAL, state=ClarificationState.CONFLICTED)
        for n in range(count))
    return AttentionView(viewer=Viewer(), steward=True, items=items, more=more, whole=whole)


def test_slack_home_within_block_kit_limits_with_a_count() -> None:
    home = render_slack_home(queue(150, more=7))
    assert home["type"] == "home"
    assert len(home["blocks"]) == limits.SLACK_MODAL_BLOCKS
    assert not limits.slack_modal_problems(home)
    listed = sum(1 for b in home["blocks"] if b["block_id"][len("queue."):].isdigit())
    assert f"and {150 - listed + 7} more" in json.dumps(home["blocks"])


def test_teams_queue_card_under_28_kb_with_a_count() -> None:
    card = render_teams_queue(queue(150, more=7))
    assert limits.card_bytes(card) <= limits.TEAMS_CARD_BYTES
    assert not limits.teams_card_problems(card)
    listed = sum(1 for b in card["body"] if b["type"] == "Container")
    assert 0 < listed < 150
    assert f"and {150 - listed + 7} more" in teams_block_text(card["body"][-1])


def test_withheld_items_carry_no_title_or_link() -> None:
    view = queue(2)
    for rendered in (render_slack_home(view), render_teams_queue(view)):
        text = json.dumps(rendered, ensure_ascii=False)
        assert text.count("Ä" * 50) >= 1 and "a document in the" in text
        assert "clr-00000" in text


def test_empty_and_non_steward_views_say_so() -> None:
    assert "Nothing needs a steward" in summary_text(AttentionView(viewer=Viewer(), steward=True))
    assert "Nothing for you here" in summary_text(AttentionView(viewer=Viewer(), steward=False))
    home = render_slack_home(AttentionView(viewer=Viewer(), steward=False))
    assert len(home["blocks"]) == 2


def test_a_queue_read_in_part_gives_no_bare_count_on_either_platform() -> None:
    """The core's list went on past what was read: the summary says "at least", the closing
    line counts what was left out for room and says there may be others, within 100 blocks,
    3000 characters a block and 28 KB."""
    view = queue(150, more=7, whole=False)
    home, card = render_slack_home(view), render_teams_queue(view)
    assert summary_text(view) == ("At least 157 clarifications in the workspaces you steward "
                                  "need attention.")
    assert len(home["blocks"]) == limits.SLACK_MODAL_BLOCKS
    assert not limits.slack_modal_problems(home)
    listed = sum(1 for b in home["blocks"] if b["block_id"][len("queue."):].isdigit())
    assert f"and {150 - listed + 7} more, and maybe others" in json.dumps(home["blocks"][-1])
    assert limits.card_bytes(card) <= limits.TEAMS_CARD_BYTES
    assert not limits.teams_card_problems(card)
    shown = sum(1 for b in card["body"] if b["type"] == "Container")
    assert f"and {150 - shown + 7} more, and maybe others" in teams_block_text(card["body"][-1])


def test_a_queue_read_in_part_with_everything_shown_still_says_it_may_go_on() -> None:
    """Every item read is shown, but the list went on: "…and maybe more" closes the view;
    with nothing read for this steward, the summary says the list goes on, not "nothing"."""
    view = queue(2, whole=False)
    for rendered in (json.dumps(render_slack_home(view)), json.dumps(render_teams_queue(view))):
        assert "At least 2 clarifications" in rendered and "and maybe more" in rendered
    empty = AttentionView(viewer=Viewer(), steward=True, whole=False)
    assert "Nothing needs a steward" not in summary_text(empty)
    assert "the list is longer than one view reads" in summary_text(empty)
    assert "and maybe more" in json.dumps(render_slack_home(empty))


def test_a_whole_queue_shown_whole_has_no_closing_line() -> None:
    """A whole queue that fits: no "…and more" line on either platform."""
    view = queue(3)
    assert render_slack_home(view)["blocks"][-1]["block_id"] == "queue.2"
    assert "more" not in teams_block_text(render_teams_queue(view)["body"][-1]["items"][0])
