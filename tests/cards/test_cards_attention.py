"""The attention queue's renderers stay inside their platform's limits, whatever the queue."""

from __future__ import annotations

import json

from bot.core.models import ClarificationState, Severity
from cards import limits
from cards.attention import render_slack_home, render_teams_queue, summary_text
from cards.views import AttentionItem, AttentionView, DocumentView, Viewer


def queue(count: int, *, more: int = 0) -> AttentionView:
    """``count`` items with the longest titles and links, every other one withheld."""
    items = tuple(AttentionItem(
        clarification_id=f"clr-{n:05d}",
        document=DocumentView(title="Ä" * 400, url="https://docs.example/" + "x" * 2000)
        if n % 2 else DocumentView.neutral(workspace="W" * 200, reference=f"clr-{n:05d}"),
        severity=Severity.CRITICAL, state=ClarificationState.CONFLICTED)
        for n in range(count))
    return AttentionView(viewer=Viewer(), steward=True, items=items, more=more)


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
    assert f"and {150 - listed + 7} more" in card["body"][-1]["text"]


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
