"""Steward cards: the unreachable-quorum notice says whom the question was
asked and how many confirmations are missing; a steward who may not read the document gets a
neutral reference, never its title or link."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from bot.core.models import ReasonCode
from cards import fixtures, slack, steward_text, teams, untrusted
from cards.views import DocumentView, SkippedCandidate
from tests.support.card_text import slack_literal, slack_markup

WITHHELD = DocumentView.neutral(workspace="Legal", reference="clr-00042")


def _both(render_slack, render_teams, view) -> tuple[str, str]:
    return (json.dumps(render_slack(view), ensure_ascii=False),
            json.dumps(render_teams(view), ensure_ascii=False))


def test_quorum_notice_names_who_was_asked_and_what_is_missing() -> None:
    """The notice says the policy's count, names the people asked, counts the missing
    confirmations and lists each skip reason, in both formats; no question, no dates."""
    for rendered in _both(slack.render_steward_quorum, teams.render_steward_quorum,
                          fixtures.QUORUM):
        assert "needs two confirmations" in rendered
        assert "Asked: Sarah Chen" in rendered
        assert "one more confirmation is still missing" in rendered
        assert "Lena Brandt cannot read this document" in rendered
        assert "Ahmed Haddad has an ambiguous chat account" in rendered
        for withheld in (fixtures.CRITICAL.question, "31 December", "termination clause"):
            assert withheld not in rendered


def test_quorum_notice_counts_several_missing_and_no_skips() -> None:
    """Two missing confirmations are counted in the plural; with nobody skipped the notice
    drops the skip heading and says nobody else is ranked."""
    view = replace(fixtures.QUORUM, required=3, missing=2, skipped=())
    words = steward_text.quorum_text(view)
    assert untrusted.plain(words.body).startswith(
        f"A critical date in {fixtures.LEASE.title} needs three confirmations")
    assert words.missing == (
        "Even if everyone asked confirms, 2 more confirmations are still missing.")
    assert "nobody else is ranked" in words.next_step
    for rendered in _both(slack.render_steward_quorum, teams.render_steward_quorum, view):
        assert "Why each person was skipped" not in rendered


def test_partial_escalation_does_not_say_nobody_could_be_asked() -> None:
    """A last attempt where the people asked all answered and the quorum is still short says
    who confirmed, never that nobody could be asked."""
    for rendered in _both(slack.render_steward_escalation, teams.render_steward_escalation,
                          fixtures.ESCALATION_PARTIAL):
        assert "Confirmed so far: Sarah Chen" in rendered
        assert "still needs more confirmations" in rendered
        assert "could be asked." not in rendered.replace("nobody else could be asked.", "")


STEWARD_VIEWS = [
    pytest.param(slack.render_steward_escalation, teams.render_steward_escalation,
                 fixtures.ESCALATION, id="escalation"),
    pytest.param(slack.render_steward_escalation, teams.render_steward_escalation,
                 fixtures.ESCALATION_UNANSWERED, id="escalation-unanswered"),
    pytest.param(slack.render_steward_notice, teams.render_steward_notice,
                 fixtures.HIGH_NOTICE, id="notice"),
    pytest.param(slack.render_steward_conflict, teams.render_steward_conflict,
                 fixtures.CONFLICT_NOTICE, id="conflict"),
    pytest.param(slack.render_steward_conflict, teams.render_steward_conflict,
                 fixtures.LATE_CONFLICT_NOTICE, id="late-conflict"),
    pytest.param(slack.render_steward_quorum, teams.render_steward_quorum,
                 fixtures.QUORUM, id="quorum"),
]


@pytest.mark.parametrize(("render_slack", "render_teams", "view"), STEWARD_VIEWS)
def test_withheld_document_shows_a_neutral_reference(render_slack, render_teams, view) -> None:
    """With a neutral reference, neither format holds the title, the URL or an "Open document"
    button; both say "a document in the Legal workspace" with the clarification reference."""
    original = view.document
    for rendered in _both(render_slack, render_teams, replace(view, document=WITHHELD)):
        assert original.title not in rendered and original.url not in rendered
        assert "docs.example.com" not in rendered and "Open document" not in rendered
        assert "a document in the Legal workspace (clarification clr-00042)" in rendered


def test_withheld_dead_letter_item_keeps_the_others_titles() -> None:
    """In a dead-letter digest only the item the steward may not read is neutral; the skip
    reasons stay."""
    items = (replace(fixtures.DEAD_LETTERS.items[0], document=WITHHELD),
             *fixtures.DEAD_LETTERS.items[1:])
    view = replace(fixtures.DEAD_LETTERS, items=items)
    for rendered in _both(slack.render_dead_letter_digest, teams.render_dead_letter_digest, view):
        assert fixtures.LEASE.title not in rendered and fixtures.LEASE.url not in rendered
        assert fixtures.POLICY.title in rendered
        assert "a document in the Legal workspace (clarification clr-00042)" in rendered
        assert "Sarah Okafor cannot read this document" in rendered


def test_neutral_reference_is_escaped_in_slack() -> None:
    """A workspace name holding mrkdwn control text is shown, never obeyed."""
    hostile = DocumentView.neutral(workspace="<!channel> & co", reference="clr-1")
    message = slack.render_steward_escalation(replace(fixtures.ESCALATION, document=hostile))
    assert not any("<!channel>" in t for t in slack_markup(message))
    assert any("&lt;!channel&gt; &amp; co" in t for t in slack_markup(message))  # notification
    assert any("a document in the <!channel> & co workspace" in t
               for t in slack_literal(message))


def test_skip_reason_words_cover_a_shared_chat_account() -> None:
    """ALIAS_AMBIGUOUS reads true for both directions: several accounts, or one shared."""
    line = steward_text.skip_text(SkippedCandidate("Marta Nowak", ReasonCode.ALIAS_AMBIGUOUS),
                          fixtures.STEWARD)
    assert "more than one, or one shared with another person" in line


@pytest.mark.parametrize("view", [fixtures.ESCALATION, fixtures.ESCALATION_UNANSWERED],
                         ids=["escalation", "escalation-unanswered"])
def test_the_redacted_escalation_keeps_the_document_link_for_a_steward_who_may_not_read_it(
        view) -> None:
    """Spec §3.3: the redacted question carries the document link. A steward who may not read
    the document gets the link (text and "Open document"), with the neutral words as its text:
    never the title, the question, a date or span text."""
    original = view.document
    linked = DocumentView.neutral(workspace="Legal", reference="clr-00042", url=original.url)
    for rendered in _both(slack.render_steward_escalation, teams.render_steward_escalation,
                          replace(view, document=linked)):
        assert original.url in rendered and "Open document" in rendered
        assert original.title not in rendered
        assert "a document in the Legal workspace (clarification clr-00042)" in rendered
        assert "ask for access" in rendered
        for withheld in (fixtures.QUESTION.question, fixtures.CRITICAL.question, "12 June",
                         "31 December"):
            assert withheld not in rendered
