"""The largest inputs the product can meet, checked by both validators including Microsoft's."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, date, datetime

import pytest

from bot.core.models import AuthorityRelation, ReasonCode, Severity
from cards import fixtures, slack, teams
from cards import platform_limits as limits
from cards.reach_views import ReachCauseView, ReachReportView, ReachTotals
from cards.views import (
    CandidateView,
    CustomError,
    CustomFormView,
    DeadLetterDigestView,
    DeadLetterItem,
    DigestView,
    DocumentView,
    OutcomeKind,
    OutcomeView,
    QuorumBanner,
    SkippedCandidate,
    StewardEscalationView,
    StewardNoticeView,
    StewardQuorumView,
    Viewer,
)
from tests.support.card_text import teams_block_text

EMOJI = "👩🏽‍💼"  # five code points, seven UTF-16 units, 15 UTF-8 bytes
RTL = Viewer(locale="ar", time_zone="Asia/Riyadh")
DOC = DocumentView(title=("عقد الإيجار " + EMOJI) * 40, url="https://d.example/" + "x" * 1980)
WORST = replace(
    fixtures.CRITICAL, question=EMOJI * 400, document=DOC, viewer=RTL, required_confirmations=9,
    candidates=tuple(CandidateView(index=n, label=EMOJI * 60,
                                   valid_from=datetime(2000 + n, 1, 2, tzinfo=UTC),
                                   valid_to=datetime(2100, 12, 31, tzinfo=UTC))
                     for n in range(60)),
    banner=QuorumBanner(answer=fixtures.JUNE_12, confirmed_by=(EMOJI * 50,) * 30),
    refresh_user_ids=tuple(f"29:user{n}" for n in range(100)),
    relation=AuthorityRelation.OWNED_BY, excerpt=EMOJI * 2000)  # clipped on the card
SKIPS = tuple(SkippedCandidate(person=EMOJI * 80, reason=code)
              for code in list(ReasonCode) * 8)
UNANSWERED = (EMOJI * 80,) * 40  # asked, no answer: forty people with 560-unit names


def _worst_payloads(codec) -> dict[str, tuple[dict, dict]]:
    digest = DigestView(digest_ref="dig_x", viewer=RTL,
                        questions=tuple(replace(WORST, card_ref=f"d{n}") for n in range(200)))
    form = CustomFormView(question=WORST, error=CustomError.END_BEFORE_START,
                          entered_note=EMOJI * 800)
    outcome = OutcomeView(kind=OutcomeKind.FIRST_CONFIRMATION, clarification_id="c",
                          question=WORST.question, document=DOC, viewer=RTL,
                          as_of=fixtures.NOW, answer=fixtures.JUNE_12,
                          confirmed_by=(EMOJI * 50,) * 30, remaining=7)
    escalation = StewardEscalationView(clarification_id="c", card_ref="d", document=DOC,
                                       severity=Severity.CRITICAL, skipped=SKIPS, viewer=RTL,
                                       unanswered=UNANSWERED)
    notice = StewardNoticeView(clarification_id="c", card_ref="d", document=DOC,
                               severity=Severity.HIGH, asked=(EMOJI * 50,) * 30, viewer=RTL)
    quorum = StewardQuorumView(clarification_id="c", card_ref="d", document=DOC,
                               severity=Severity.CRITICAL, required=12, missing=11,
                               asked=UNANSWERED, skipped=SKIPS, viewer=RTL)
    dead = DeadLetterDigestView(viewer=RTL, items=tuple(
        DeadLetterItem(clarification_id=f"c{n}", document=DOC, severity=Severity.HIGH,
                       skipped=SKIPS, unanswered=UNANSWERED) for n in range(200)))
    # the weekly reach report: huge counts, causes the bot does not know with 560-unit codes
    reach = ReachReportView(
        viewer=RTL, start=date(1999, 12, 27), end=date(2000, 1, 2), unreached=10**9,
        totals=ReachTotals(questions=10**12, asked=10**12, bound=10**12, open=10**12,
                           escalated=10**12, dead_lettered=10**12, bound_before_escalation=1.0,
                           median_hours=10.0**9, median_working_hours=10.0**9),
        causes=tuple(ReachCauseView(EMOJI * 80, people=10**9, questions=10**9)
                     for _ in range(3)), more_causes=10**9)
    return {
        "reach_report": (slack.render_reach_report(reach), teams.render_reach_report(reach)),
        "question": (slack.render_question(WORST, codec=codec),
                     teams.render_question(WORST, codec=codec)),
        "form": (slack.render_custom_modal(form, codec=codec),
                 teams.render_custom_form(form, codec=codec)),
        "outcome": (slack.render_outcome(outcome), teams.render_outcome(outcome)),
        "escalation": (slack.render_steward_escalation(escalation),
                       teams.render_steward_escalation(escalation)),
        "steward_notice": (slack.render_steward_notice(notice),
                           teams.render_steward_notice(notice)),
        "quorum": (slack.render_steward_quorum(quorum), teams.render_steward_quorum(quorum)),
        "dead_letters": (slack.render_dead_letter_digest(dead),
                         teams.render_dead_letter_digest(dead)),
        "dead_letters_unread": (slack.render_dead_letter_digest(replace(dead, whole=False)),
                                teams.render_dead_letter_digest(replace(dead, whole=False))),
        "digest": (slack.render_digest(digest, codec=codec),
                   teams.render_digest(digest, codec=codec)),
    }


@pytest.mark.slow
def test_worst_cases_keep_every_limit(codec, slack_validator, adaptive_validator) -> None:
    """Maximal text, 60 candidates, RTL, emoji and 200-question digests fit both platforms."""
    payloads = _worst_payloads(codec)
    for message, _ in payloads.values():
        slack_validator(message)
    for _, card in payloads.values():
        assert limits.teams_card_problems(card) == []
    report = adaptive_validator({name: card for name, (_, card) in payloads.items()})
    assert {name: problems for name, problems in report.items() if problems} == {}


def test_worst_digest_still_answers_in_place(codec) -> None:
    """Even the largest questions leave room for at least one answerable question a page."""
    message, card = _worst_payloads(codec)["digest"]
    assert any(b["block_id"] == "q0.question" for b in message["blocks"])
    assert any(item.get("id") == "q0" for item in card["body"])
    assert len(WORST.refresh_user_ids) > limits.TEAMS_REFRESH_USERS
    single = teams.render_question(WORST, codec=codec)
    assert len(single["refresh"]["userIds"]) == limits.TEAMS_REFRESH_USERS


def test_worst_dead_letter_digest_still_lists_items(codec) -> None:
    """Huge skip lists are cut per item, so the steward digest always lists some clarifications."""
    message, card = _worst_payloads(codec)["dead_letters"]
    assert any(b["block_id"] == "dead_letter.0" for b in message["blocks"])
    assert any(b["type"] == "Container" for b in card["body"])
    assert "more people" in str(card) and "more people" in str(message)


def test_worst_dead_letter_digest_from_a_cut_pass_counts_and_says_more_may_follow(codec
                                                                                  ) -> None:
    """A pass that did not reach the end of the core's list: the one closing line counts the
    items left out for room and says more may follow, inside both platforms' limits."""
    message, card = _worst_payloads(codec)["dead_letters_unread"]
    listed = sum(1 for b in message["blocks"] if b["block_id"][len("dead_letter."):].isdigit())
    closing = message["blocks"][-1]["elements"][0]["text"]
    assert message["blocks"][-1]["block_id"] == "dead_letter.more"
    assert f"and {200 - listed} more, and more may follow" in closing
    assert len(closing) <= limits.SLACK_CONTEXT_TEXT
    assert len(message["blocks"]) <= limits.SLACK_MESSAGE_BLOCKS
    shown = sum(1 for b in card["body"] if b["type"] == "Container")
    assert f"and {200 - shown} more, and more may follow" in teams_block_text(card["body"][-1])
    assert limits.card_bytes(card) <= limits.TEAMS_CARD_BYTES


def test_worst_escalation_keeps_the_unanswered_count(codec) -> None:
    """Forty long unanswered names are cut to a line that still counts the people not named,
    and the skip heading survives in both formats."""
    message, card = _worst_payloads(codec)["escalation"]
    line = next(b["text"]["text"] for b in message["blocks"]
                if b["block_id"] == "escalation.unanswered")
    assert line.startswith("Asked, no answer: ") and line.endswith(" more people")
    assert limits.text_length(line) <= 1000
    texts = [teams_block_text(b) for b in card["body"]]
    assert texts[2] == line and texts[3] == "Why each person was skipped:"
