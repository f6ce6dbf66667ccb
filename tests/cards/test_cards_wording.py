"""The sentences of §7: each outcome says honestly what the answer did."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from bot.core.models import AnswerOutcome, AuthorityRelation, Severity
from cards import fixtures, slack, steward_text, teams, text
from cards.outcome_text import outcome_text
from cards.views import DocumentView, OutcomeKind, Viewer, outcome_kind
from tests.support.card_text import slack_block_text, slack_texts, teams_block_text


def _headline(name: str) -> str:
    return outcome_text(fixtures.OUTCOMES[name]).headline


def test_recorded_and_binding_sentences_match_the_spec() -> None:
    """Normal and quorum-satisfied outcomes read exactly as spec §7 shows them."""
    assert _headline("outcome_recorded") == (
        "✓ Recorded as evidence: 12 June, confirmed by Sarah, 4 Jul 2026.")
    assert _headline("outcome_binding") == (
        "✓ Recorded as binding evidence: 12 June, confirmed by Sarah and Ahmed, 4 Jul 2026.")


def test_first_confirmation_says_how_many_remain() -> None:
    """A partial confirmation names the first confirmer and counts what remains."""
    view = replace(fixtures.OUTCOMES["outcome_first_confirmation"], answer=fixtures.JUNE_12)
    words = outcome_text(view)
    assert words.headline == "First confirmation recorded: 12 June (Sarah)."
    assert words.details[0] == (
        "One more confirmation is required before the correction becomes binding.")
    words = outcome_text(replace(view, remaining=2, confirmed_by=("Sarah", "Ahmed")))
    assert words.headline == "Confirmations recorded: 12 June (Sarah and Ahmed)."
    assert words.details[0].startswith("2 more confirmations are required")


@pytest.mark.parametrize(("name", "start"), [
    ("outcome_attestation", "Your answer is recorded as an attestation. A steward or editor"),
    ("outcome_conflict", "A conflicting answer has been recorded. This clarification now"),
    ("outcome_moved_on", "This clarification has moved on"),
    ("outcome_identity_unverified", "Your answer was not recorded"),
    ("outcome_recording", "Your answer (12 June) is being recorded."),
    ("outcome_pending", "Your answer (12 June) is being recorded; this card shows its outcome"),
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
    assert labels == ["12 June (signature)", "3 July (countersignature)", "Something else…",
                      "Not the right person"]
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
    assert outcome_text(view).headline == (
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
    assert {"type": "link", "url": fixtures.MSA.url, "text": fixtures.MSA.title} in (
        message["blocks"][1]["elements"][0]["elements"])
    assert slack_texts(message)[1].startswith(
        f"A high-severity date question about {fixtures.MSA.title} was sent")
    assert "A high-severity date question about [Master Services Agreement" in str(card)
    assert sentence in str(message) and sentence in str(card)
    two = replace(fixtures.HIGH_NOTICE, asked=("Sarah Chen", "Ahmed Haddad"))
    assert "was sent to Sarah Chen and Ahmed Haddad." in str(slack.render_steward_notice(two))
    nobody = replace(fixtures.HIGH_NOTICE, asked=())
    assert "sent to the people best placed to answer it." in str(
        teams.render_steward_notice(nobody))


def test_conflict_notice_says_whether_a_date_is_bound() -> None:
    """Before binding the notice says nothing was corrected; after binding it says a date is
    bound, who answered differently, and that the bound date stays until a steward decides."""
    before = str(slack.render_steward_conflict(fixtures.CONFLICT_NOTICE))
    assert "No correction has been made" in before and "already bound" not in before
    late = ("A date is already bound for this clarification in {document}, and Ahmed answered "
            "differently. The answer is recorded as a conflicting attestation; the bound date "
            "stays as it is until a steward decides.")
    message = slack.render_steward_conflict(fixtures.LATE_CONFLICT_NOTICE)
    card = teams.render_steward_conflict(fixtures.LATE_CONFLICT_NOTICE)
    assert late.format(document=fixtures.MSA.title) in slack_texts(message)
    assert late.format(document=f"[{fixtures.MSA.title}]({fixtures.MSA.url})") in str(card)
    assert message["text"].startswith("A late answer about")
    for rendered in (str(message), str(card)):
        assert "A late answer differs from the bound date" in rendered
        assert "No correction has been made" not in rendered


def test_steward_notice_offers_no_answer() -> None:
    """The notice has one "Open document" link and no button that could answer the question."""
    message = slack.render_steward_notice(fixtures.HIGH_NOTICE)
    buttons = [e for b in message["blocks"] if b["type"] == "actions" for e in b["elements"]]
    assert [(b["text"]["text"], b.get("url"), "value" in b) for b in buttons] == [
        ("Open document", fixtures.MSA.url, False)]
    card = teams.render_steward_notice(fixtures.HIGH_NOTICE)
    assert [a["type"] for a in card["actions"]] == ["Action.OpenUrl"]
    assert "Action.Execute" not in str(card) and "ActionSet" not in str(card)


ASKED = ("Tom Becker", "Jonas Weber")
BODY_NOBODY_ASKED = "none of the people best placed to answer could be asked"
BODY_UNANSWERED = "the people asked have not answered in time"
HEADING = "Why each person was skipped:"
NOBODY = "No one was ranked for this document."
ASKED_LINE = "Asked, no answer: Tom Becker and Jonas Weber"


def _escalation_texts(**changes: object) -> list[str]:
    view = replace(fixtures.ESCALATION, **changes)  # type: ignore[arg-type]
    return [json.dumps(slack.render_steward_escalation(view), ensure_ascii=False),
            json.dumps(teams.render_steward_escalation(view), ensure_ascii=False)]


@pytest.mark.parametrize(("skipped", "unanswered", "present", "absent"), [
    (fixtures.SKIPPED, (), {BODY_NOBODY_ASKED, HEADING, "Sarah Okafor cannot read"},
     {BODY_UNANSWERED, "Asked, no answer", NOBODY}),
    (fixtures.SKIPPED[2:], ASKED, {BODY_UNANSWERED, ASKED_LINE, HEADING, "Lena Brandt had"},
     {BODY_NOBODY_ASKED, NOBODY}),
    ((), ASKED, {BODY_UNANSWERED, ASKED_LINE}, {BODY_NOBODY_ASKED, HEADING, NOBODY}),
    ((), (), {BODY_NOBODY_ASKED, NOBODY}, {BODY_UNANSWERED, HEADING, "Asked, no answer"}),
], ids=["all_skipped", "asked_and_skipped", "asked_only", "nobody_ranked"])
def test_escalation_says_truthfully_who_was_asked(skipped, unanswered, present,
                                                   absent) -> None:
    """Each mix of skipped and unanswered people gets only the sentences that are true of it,
    in the Slack message and the Adaptive Card alike."""
    for rendered in _escalation_texts(skipped=skipped, unanswered=unanswered):
        assert {s for s in present if s not in rendered} == set()
        assert {s for s in absent if s in rendered} == set()


def test_unanswered_line_follows_the_body() -> None:
    """The "Asked, no answer" line comes right after the body and before the skip heading."""
    message = slack.render_steward_escalation(fixtures.ESCALATION_UNANSWERED)
    assert [b["block_id"] for b in message["blocks"]][1:4] == [
        "escalation.body", "escalation.unanswered", "escalation.skipped"]
    card = teams.render_steward_escalation(fixtures.ESCALATION_UNANSWERED)
    assert [teams_block_text(b) for b in card["body"]][2:4] == [ASKED_LINE, HEADING]


def test_unanswered_names_are_joined_in_the_viewer_locale_and_clipped() -> None:
    """Names are joined by the locale's list rules, each cut like a skip line, at most twelve
    named and the rest counted."""
    german = Viewer(locale="de", time_zone="Europe/Berlin")
    assert (steward_text.unanswered_text(ASKED, german)
            == "Gefragt, keine Antwort: Tom Becker und Jonas Weber")
    spanish = Viewer(locale="es-ES", time_zone="Europe/Madrid")  # no catalog: English words
    assert (steward_text.unanswered_text(ASKED, spanish)
            == "Asked, no answer: Tom Becker and Jonas Weber")
    assert steward_text.unanswered_text((), fixtures.STEWARD) is None
    many = tuple(f"Person {n}" for n in range(20))
    line = steward_text.unanswered_text(many, fixtures.STEWARD) or ""
    assert "Person 11" in line and "Person 12" not in line
    assert line.endswith("Person 11 and 8 more people")
    long_names = ("x" * 500,) * 20
    line = steward_text.unanswered_text(long_names, fixtures.STEWARD) or ""
    assert "x" * 100 not in line and "x" * 98 + "…" in line
    assert len(line) <= steward_text.UNANSWERED_CHARS and line.endswith("more people")


def test_dead_letter_items_list_unanswered_names_under_skip_lines() -> None:
    """A dead letter lists who was asked without answering after its skip reasons, and says
    "No one was ranked" only when nobody was asked or skipped."""
    items = (replace(fixtures.DEAD_LETTERS.items[1], unanswered=ASKED),
             replace(fixtures.DEAD_LETTERS.items[2], skipped=(), unanswered=("Sarah Chen",)))
    view = replace(fixtures.DEAD_LETTERS, items=items)
    message = slack.render_dead_letter_digest(view)
    sections = [slack_block_text(b) for b in message["blocks"]
                if b["type"] in ("section", "rich_text")]
    assert "who was asked and did not answer" in sections[0]
    assert sections[1].endswith(
        "• Tom Becker belongs to a different organisation, so they may not be asked.\n"
        + ASKED_LINE)
    assert sections[2].endswith("· high\nAsked, no answer: Sarah Chen")
    card = teams.render_dead_letter_digest(view)
    entries = [[teams_block_text(b) for b in e["items"]] for e in card["body"]
               if e["type"] == "Container"]
    assert entries[0][-1] == ASKED_LINE and entries[0][-2].startswith("• Tom Becker")
    assert entries[1][1:] == ["Asked, no answer: Sarah Chen"]
    assert NOBODY not in json.dumps([message, card])
    empty = replace(view, items=(replace(items[1], unanswered=()),))
    assert NOBODY in json.dumps(slack.render_dead_letter_digest(empty))
    assert "who was asked" not in json.dumps(slack.render_dead_letter_digest(empty))


@pytest.mark.parametrize(("relation", "line"), [
    (AuthorityRelation.AUTHORED_BY, "You were asked because you wrote or signed this document."),
    (AuthorityRelation.UNKNOWN, "You were asked because you are connected to this document."),
    (None, None),
])
def test_why_asked_is_neutral_for_an_unknown_relation(relation: AuthorityRelation | None,
                                                       line: str | None) -> None:
    """A relation the bot does not know keeps a neutral why line; no relation named, none."""
    assert text.why_asked(replace(fixtures.QUESTION, relation=relation)) == line


@pytest.mark.parametrize(("certain", "start"), [
    (True, "First confirmation recorded: until 31 December (Sarah)."),
    (False, "An answer has been recorded: until 31 December (Sarah)."),
])
def test_the_banner_names_an_unknown_status_neutrally(certain: bool, start: str) -> None:
    """A confirmation the quorum counts is the first confirmation; an answer whose status the
    bot does not know is only named as recorded. Both ask whether the reader agrees."""
    view = replace(fixtures.AWAITING_SECOND,
                   banner=replace(fixtures.FIRST_BANNER, certain=certain))
    assert text.banner_text(view) == f"{start} Do you agree?"


@pytest.mark.parametrize("kind", [OutcomeKind.RECORDED, OutcomeKind.BINDING,
                                  OutcomeKind.STEWARD_OVERRIDE])
def test_a_settled_outcome_without_a_date_is_neutral(kind: OutcomeKind) -> None:
    """Bound with no date the bot can read: one neutral sentence, no empty date or names."""
    view = replace(fixtures.OUTCOMES["outcome_recorded"], kind=kind, answer=None,
                   confirmed_by=())
    assert outcome_text(view).headline == (
        "✓ This question has been settled and its answer recorded as evidence. There is "
        "nothing more to do.")


@pytest.mark.parametrize("kind", [OutcomeKind.RECORDING, OutcomeKind.IDENTITY_UNVERIFIED])
def test_a_card_that_knows_nothing_of_the_question_shows_no_empty_lines(kind: OutcomeKind
                                                                        ) -> None:
    """The card a Teams invoke answers with while the core is slow or away ("being recorded"),
    or an identity card, knows neither the question nor the document: it says what happened and
    shows no "Question:" line with nothing after it, nor a source line naming no document, on
    either platform."""
    from bot.engine.outcomes import placeholder

    view = placeholder(kind, "clr-1", answer=None, now=datetime(2026, 7, 6, 9, tzinfo=UTC))
    words = outcome_text(view)
    assert not [line for line in words.details if line.strip().endswith(":")]
    shown = [*slack_texts(slack.render_outcome(view)),
             *[teams_block_text(e) for e in teams.render_outcome(view)["body"]]]
    assert not [line for line in shown if "Question:" in line or "Source" in line]
    assert any(words.headline in line for line in shown)


def test_a_withheld_question_leaves_out_its_line_and_keeps_the_neutral_reference() -> None:
    """An outcome for someone who may not read the source: no empty "Question:" line; the
    neutral reference to the document stays."""
    withheld = DocumentView.neutral(workspace="Legal", reference="clr-1")
    view = replace(fixtures.OUTCOMES["outcome_recorded"], question="", document=withheld)
    assert not [line for line in outcome_text(view).details if "Question" in line]
    shown = slack_texts(slack.render_outcome(view))
    assert any("Legal" in line for line in shown)
