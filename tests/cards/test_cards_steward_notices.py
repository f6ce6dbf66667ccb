"""A window's high-severity notices for one steward, in one message: each named, each redacted
as a single notice is, inside Block Kit's and the Adaptive Card's limits however many."""

from __future__ import annotations

import json
from dataclasses import replace

from cards import fixtures, slack, teams
from cards import platform_limits as limits
from cards.views import STEWARD_NOTICES_MAX, DocumentView, StewardNoticesView
from tests.support.card_text import slack_literal, slack_markup, teams_block_text

WITHHELD = DocumentView.neutral(workspace="Legal", reference="clr_0")


def notices(count: int, **changes: object) -> StewardNoticesView:
    return StewardNoticesView(viewer=fixtures.STEWARD, notices=tuple(
        replace(fixtures.HIGH_NOTICE, clarification_id=f"clr_{n}", **changes)
        for n in range(count)))


def both(view: StewardNoticesView) -> tuple[dict, dict]:
    return slack.render_steward_notices(view), teams.render_steward_notices(view)


def test_each_notice_of_the_window_is_named_once(slack_validator) -> None:
    message, card = both(notices(3))
    slack_validator(message)
    assert message["text"] == "3 questions went out directly."
    for rendered in (json.dumps(message, ensure_ascii=False),
                     json.dumps(card, ensure_ascii=False)):
        assert "3 high-severity date questions went out directly" in rendered
        for n in range(3):
            assert f"Clarification clr_{n}" in rendered
        assert rendered.count("sent to Sarah Chen") == 3
        assert "There is nothing to do yet." in rendered
        assert "…and" not in rendered
    assert teams_block_text(teams.render_steward_notices(notices(1))["body"][1]).startswith(
        "One high-severity date question")


def test_notices_stay_redacted() -> None:
    """Like a single notice: no question, span, candidates or dates; a document the steward
    may not read is a neutral reference without its title, link or "Open document"."""
    view = StewardNoticesView(viewer=fixtures.STEWARD, notices=(
        replace(fixtures.HIGH_NOTICE, clarification_id="clr_0", document=WITHHELD),
        replace(fixtures.HIGH_NOTICE, clarification_id="clr_1", document=fixtures.LEASE)))
    for rendered in map(lambda r: json.dumps(r, ensure_ascii=False), both(view)):
        assert fixtures.MSA.title not in rendered and fixtures.MSA.url not in rendered
        assert "a document in the Legal workspace (clarification clr_0)" in rendered
        assert fixtures.LEASE.title in rendered
        assert "Open document" not in rendered
        for withheld in (fixtures.QUESTION.question, fixtures.CRITICAL.question,
                         "31 December", "signature"):
            assert withheld not in rendered


def test_names_and_titles_are_escaped() -> None:
    view = notices(1, asked=("<!here>", "Ana & Bo"),
                   document=DocumentView(title="<@U1> & co", url="https://x.example/a"))
    message = slack.render_steward_notices(view)
    assert not any("<!here>" in t or "<@U1>" in t for t in slack_markup(message))
    literal = " ".join(slack_literal(message))
    assert "<!here> and Ana & Bo" in literal and "<@U1> & co" in literal


def test_many_long_notices_keep_the_limits_and_count_the_rest(slack_validator) -> None:
    """60 notices with the longest titles, links and lists of names: both formats keep every
    limit (50 blocks and 3,000 characters a section; 28 KB a card), and what is not shown is
    counted in one "…and N more" line."""
    long_doc = DocumentView(title="Ω" * 400, url="https://docs.example.com/" + "é" * 1400)
    view = notices(60, document=long_doc, asked=tuple(f"Person {'ü' * 60} {n}"
                                                      for n in range(40)))
    message, card = both(view)
    slack_validator(message)
    assert limits.slack_message_problems(message) == []
    assert limits.teams_card_problems(card) == []
    assert limits.card_bytes(card) <= limits.TEAMS_CARD_BYTES
    shown = sum(1 for b in message["blocks"] if b["block_id"].startswith("notices.")
                and b["block_id"].split(".")[1].isdigit())
    assert shown == STEWARD_NOTICES_MAX
    assert f"…and {60 - shown} more" in message["blocks"][-1]["elements"][0]["text"]
    containers = [e for e in card["body"] if e.get("type") == "Container"]
    assert 0 < len(containers) <= STEWARD_NOTICES_MAX
    assert teams_block_text(card["body"][-1]).startswith(f"…and {60 - len(containers)} more")
