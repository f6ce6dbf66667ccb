"""The sentences of §7: each outcome says honestly what the answer did."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from bot.core.models import AnswerOutcome, Severity
from cards import fixtures, slack, teams, text
from cards.views import OutcomeKind, outcome_kind


def _headline(name: str) -> str:
    return text.outcome_text(fixtures.OUTCOMES[name]).headline


def test_recorded_and_binding_sentences_match_the_spec() -> None:
    """Normal and quorum-satisfied outcomes read exactly as spec §7 shows them."""
    assert _headline("outcome_recorded") == (
        "✓ Recorded as evidence: 12 June, confirmed by Sarah, 4 Jul 2026.")
    assert _headline("outcome_binding") == (
        "✓ Recorded as binding evidence: 12 June, confirmed by Sarah and Ahmed, 4 Jul 2026.")


def test_first_confirmation_says_how_many_remain() -> None:
    """A partial confirmation names the first confirmer and counts what remains."""
    view = replace(fixtures.OUTCOMES["outcome_first_confirmation"], answer=fixtures.JUNE_12)
    words = text.outcome_text(view)
    assert words.headline == "First confirmation recorded: 12 June (Sarah)."
    assert words.details[0] == (
        "One more confirmation is required before the correction becomes binding.")
    words = text.outcome_text(replace(view, remaining=2, confirmed_by=("Sarah", "Ahmed")))
    assert words.headline == "Confirmations recorded: 12 June (Sarah and Ahmed)."
    assert words.details[0].startswith("2 more confirmations are required")


@pytest.mark.parametrize(("name", "start"), [
    ("outcome_attestation", "Your answer is recorded as an attestation. A steward or editor"),
    ("outcome_conflict", "A conflicting answer has been recorded. This clarification now"),
    ("outcome_moved_on", "This clarification has moved on"),
    ("outcome_identity_unverified", "Your answer was not recorded"),
    ("outcome_recording", "Your answer (12 June) is being recorded."),
    ("outcome_conflicting_attestation", "Your answer differs from the date already bound."),
])
def test_other_outcomes(name: str, start: str) -> None:
    """Every other outcome has its own honest sentence."""
    assert _headline(name).startswith(start)


def test_quorum_notice_comes_from_the_policy() -> None:
    """The critical notice counts the policy's confirmations; one confirmation shows none."""
    assert text.quorum_notice(fixtures.CRITICAL) == (
        "This clarification affects a high-stakes date and requires two confirmations.")
    three = replace(fixtures.CRITICAL, required_confirmations=3)
    assert "requires three confirmations" in (text.quorum_notice(three) or "")
    assert text.quorum_notice(fixtures.QUESTION) is None
    high = replace(fixtures.QUESTION, severity=Severity.HIGH, required_confirmations=2)
    assert text.quorum_notice(high) == "This clarification requires two confirmations."


def test_notice_reaches_both_formats(codec) -> None:
    """The critical notice appears in the Slack message and in the Adaptive Card."""
    needle = "requires two confirmations"
    assert needle in str(slack.render_question(fixtures.CRITICAL, codec=codec))
    assert needle in str(teams.render_question(fixtures.CRITICAL, codec=codec))
    assert needle not in str(slack.render_question(fixtures.QUESTION, codec=codec))


def test_candidate_buttons_carry_date_and_origin(codec) -> None:
    """Buttons read "12 June (signature)", with the year only when it differs."""
    message = slack.render_question(fixtures.QUESTION, codec=codec)
    labels = [e["text"]["text"] for b in message["blocks"] if b["type"] == "actions"
              for e in b["elements"]]
    assert labels == ["12 June (signature)", "3 July (countersignature)", "Something else…"]
    later = replace(fixtures.SIGNATURE, valid_from=datetime(2027, 6, 12, tzinfo=UTC))
    assert text.candidate_text(later, fixtures.VIEWER, reference_year=2026) == (
        "12 June 2027 (signature)")


def test_answer_outcomes_map_to_card_states() -> None:
    """Each core AnswerOutcome has a card state; BOUND depends on the quorum policy."""
    assert outcome_kind(AnswerOutcome.BOUND, required_confirmations=1) is OutcomeKind.RECORDED
    assert outcome_kind(AnswerOutcome.BOUND, required_confirmations=2) is OutcomeKind.BINDING
    for outcome in AnswerOutcome:
        assert outcome_kind(outcome, required_confirmations=2) in OutcomeKind


def test_dates_follow_the_viewer(codec) -> None:
    """A US viewer in Los Angeles sees "June 12" and the recording day in their zone."""
    viewer = replace(fixtures.VIEWER, locale="en-US", time_zone="America/Los_Angeles")
    view = replace(fixtures.OUTCOMES["outcome_recorded"], viewer=viewer,
                   recorded_at=datetime(2026, 7, 5, 3, 0, tzinfo=UTC))
    assert text.outcome_text(view).headline == (
        "✓ Recorded as evidence: June 12, confirmed by Sarah, Jul 4, 2026.")


def test_right_to_left_locales_mark_the_card(codec) -> None:
    """An Arabic viewer's Adaptive Card is marked rtl."""
    view = replace(fixtures.QUESTION, viewer=replace(fixtures.VIEWER, locale="ar"))
    assert teams.render_question(view, codec=codec).get("rtl") is True
    assert "rtl" not in teams.render_question(fixtures.QUESTION, codec=codec)


def test_steward_notice_says_who_was_asked() -> None:
    """The high-severity notice names the document and the people asked, in both formats."""
    sentence = "was sent to Sarah Chen. You will hear again if nobody answers."
    message = slack.render_steward_notice(fixtures.HIGH_NOTICE)
    card = teams.render_steward_notice(fixtures.HIGH_NOTICE)
    assert "A high-severity date question about <https://docs.example.com/" in str(message)
    assert "A high-severity date question about [Master Services Agreement" in str(card)
    assert sentence in str(message) and sentence in str(card)
    two = replace(fixtures.HIGH_NOTICE, asked=("Sarah Chen", "Ahmed Haddad"))
    assert "was sent to Sarah Chen and Ahmed Haddad." in str(slack.render_steward_notice(two))
    nobody = replace(fixtures.HIGH_NOTICE, asked=())
    assert "sent to the people best placed to answer it." in str(
        teams.render_steward_notice(nobody))


def test_steward_notice_offers_no_answer() -> None:
    """The notice has one "Open document" link and no button that could answer the question."""
    message = slack.render_steward_notice(fixtures.HIGH_NOTICE)
    buttons = [e for b in message["blocks"] if b["type"] == "actions" for e in b["elements"]]
    assert [(b["text"]["text"], b.get("url"), "value" in b) for b in buttons] == [
        ("Open document", fixtures.MSA.url, False)]
    card = teams.render_steward_notice(fixtures.HIGH_NOTICE)
    assert [a["type"] for a in card["actions"]] == ["Action.OpenUrl"]
    assert "Action.Execute" not in str(card) and "ActionSet" not in str(card)
