"""Property-based: hostile text and sizes never push either renderer past a platform limit."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, date, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from slack_sdk.models.views import View

from bot.core.models import ReasonCode, Severity
from cards import attention, fixtures, reach, slack, teams
from cards import platform_limits as limits
from cards.actions import ActionCodec
from cards.reach_views import (
    REACH_CAUSES,
    ReachCauseView,
    ReachDetailView,
    ReachReportView,
    ReachTimingView,
    ReachTotals,
    ReachWorkspaceView,
)
from cards.views import (
    AnswerView,
    AttentionView,
    CandidateView,
    CustomError,
    CustomFormView,
    DeadLetterDigestView,
    DeadLetterItem,
    DigestView,
    DocumentView,
    OutcomeKind,
    OutcomeView,
    QuestionView,
    QuorumBanner,
    SkippedCandidate,
    StewardConflictView,
    StewardEscalationView,
    StewardNoticeView,
    StewardQuorumView,
    Viewer,
)

pytestmark = pytest.mark.slow  # property-based: every card kind over generated views

CODEC = ActionCodec(fixtures.PREVIEW_KEY)
SETTINGS = settings(max_examples=35, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# Right-to-left scripts, emoji (outside the BMP), mrkdwn/markdown control characters, quotes.
PIECES = ["signature", "توقيع العقد", "חתימה", "👩🏽‍💼", "📄🗓️", "<!channel>", "&amp;", "*_~`",
          "[x](y)", "|", "\u200f", "e\u0301", "😀" * 3, "Ω", "\n", '"', " "]
piece = st.sampled_from(PIECES)
short = st.lists(piece, min_size=1, max_size=8).map("".join)
long_text = st.one_of(short, st.tuples(short, st.integers(1, 400)).map(lambda t: t[0] * t[1]))
moments = st.datetimes(min_value=datetime(1900, 1, 1), max_value=datetime(2200, 1, 1),
                       timezones=st.just(UTC))
viewers = st.builds(Viewer, locale=st.sampled_from(["en", "en-US", "de", "ar", "he", "ja", "xx"]),
                    time_zone=st.sampled_from(["UTC", "America/Los_Angeles", "Asia/Kolkata",
                                               "Pacific/Kiritimati", "Nowhere/Else"]))
documents = st.one_of(
    st.builds(DocumentView, title=long_text,
              url=st.sampled_from(["https://d.example/x", "https://d.example/" + "a" * 1990,
                                   "https://d.example/a b|c(d)"])),
    st.builds(DocumentView.neutral, workspace=long_text, reference=long_text))
candidates = st.lists(st.builds(CandidateView, index=st.integers(0, 999), label=long_text,
                                valid_from=st.none() | moments, valid_to=st.none() | moments),
                      min_size=1, max_size=40, unique_by=lambda c: c.index)
names = st.lists(long_text, max_size=30).map(tuple)
questions = st.builds(
    QuestionView, clarification_id=st.from_regex(r"[A-Za-z0-9_]{1,200}", fullmatch=True),
    card_ref=st.from_regex(r"[A-Za-z0-9_]{1,200}", fullmatch=True), question=long_text,
    candidates=candidates.map(tuple), document=documents, severity=st.sampled_from(Severity),
    required_confirmations=st.integers(1, 12), viewer=viewers, asked_at=moments,
    banner=st.none() | st.builds(QuorumBanner, answer=st.builds(AnswerView, moments, moments),
                                 confirmed_by=names),
    refresh_user_ids=st.lists(st.just("29:user"), max_size=100).map(tuple))
skipped = st.lists(st.builds(SkippedCandidate, person=long_text,
                             reason=st.sampled_from(ReasonCode)), max_size=60).map(tuple)


def _check(slack_payload: dict, card: dict, slack_validator) -> None:
    slack_validator(slack_payload)
    assert limits.teams_card_problems(card) == []


@SETTINGS
@given(view=questions)
def test_questions_stay_inside_limits(view: QuestionView, slack_validator) -> None:
    """Any question, however long or many its candidates, fits both platforms."""
    _check(slack.render_question(view, codec=CODEC), teams.render_question(view, codec=CODEC),
           slack_validator)


@SETTINGS
@given(view=questions, error=st.none() | st.sampled_from(CustomError), note=long_text)
def test_custom_forms_stay_inside_limits(view, error, note, slack_validator) -> None:
    """The free-form modal, its inline errors and the Teams form stay inside the limits."""
    form = CustomFormView(question=view, error=error, entered_note=note)
    slack_validator(slack.render_custom_modal(form, codec=CODEC))
    slack_validator(slack.render_custom_errors(form))
    assert limits.teams_card_problems(teams.render_custom_form(form, codec=CODEC)) == []


@SETTINGS
@given(kind=st.sampled_from(OutcomeKind), question=long_text, document=documents,
       viewer=viewers, answer=st.none() | st.builds(AnswerView, moments, moments),
       confirmed=names, remaining=st.integers(0, 20), as_of=moments)
def test_outcomes_stay_inside_limits(kind, question, document, viewer, answer, confirmed,
                                     remaining, as_of, slack_validator) -> None:
    """Every outcome card fits, with long names lists and hostile question text."""
    view = OutcomeView(kind=kind, clarification_id="clr_1", question=question,
                       document=document, viewer=viewer, as_of=as_of, answer=answer,
                       confirmed_by=confirmed, recorded_at=as_of, remaining=remaining,
                       settled=answer)
    _check(slack.render_outcome(view), teams.render_outcome(view), slack_validator)


@SETTINGS
@given(document=documents, skipped_people=skipped, viewer=viewers, responders=names,
       unanswered=names, bound=st.booleans())
def test_steward_cards_stay_inside_limits(document, skipped_people, viewer, responders,
                                          unanswered, bound, slack_validator) -> None:
    """Escalations with many long skip lines and long lists of people asked without an answer,
    conflict notices (before and after binding) and high-severity notices with long lists of
    asked people fit both platforms."""
    escalation = StewardEscalationView(clarification_id="clr_1", card_ref="d", document=document,
                                       severity=Severity.HIGH, skipped=skipped_people,
                                       viewer=viewer, unanswered=unanswered)
    _check(slack.render_steward_escalation(escalation),
           teams.render_steward_escalation(escalation), slack_validator)
    notice = StewardConflictView(clarification_id="clr_1", document=document,
                                 severity=Severity.CRITICAL, responders=responders, viewer=viewer,
                                 bound=bound)
    _check(slack.render_steward_conflict(notice), teams.render_steward_conflict(notice),
           slack_validator)
    sent = StewardNoticeView(clarification_id="clr_1", card_ref="d", document=document,
                             severity=Severity.HIGH, asked=responders, viewer=viewer)
    _check(slack.render_steward_notice(sent), teams.render_steward_notice(sent), slack_validator)
    partial = replace(escalation, unanswered=(), confirmed=responders)
    _check(slack.render_steward_escalation(partial), teams.render_steward_escalation(partial),
           slack_validator)


@SETTINGS
@given(document=documents, skipped_people=skipped, viewer=viewers, asked=names,
       required=st.integers(2, 12), missing=st.integers(1, 12))
def test_quorum_notices_stay_inside_limits(document, skipped_people, viewer, asked, required,
                                           missing, slack_validator) -> None:
    """The unreachable-quorum notice fits both platforms with long lists of people asked,
    many long skip lines, hostile workspace names and any counts."""
    view = StewardQuorumView(clarification_id="clr_1", card_ref="d", document=document,
                             severity=Severity.CRITICAL, required=required, missing=missing,
                             asked=asked, skipped=skipped_people, viewer=viewer)
    _check(slack.render_steward_quorum(view), teams.render_steward_quorum(view), slack_validator)


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(sample=st.lists(questions, min_size=1, max_size=3), count=st.integers(1, 200),
       viewer=viewers)
def test_digests_of_up_to_200_questions_stay_inside_limits(sample, count, viewer,
                                                           slack_validator) -> None:
    """A digest of up to 200 questions shows what fits and counts the rest in a final line."""
    many = tuple(replace(sample[n % len(sample)], card_ref=f"dlv{n}") for n in range(count))
    view = DigestView(digest_ref="dig_1", questions=many, viewer=viewer)
    message, card = slack.render_digest(view, codec=CODEC), teams.render_digest(view, codec=CODEC)
    _check(message, card, slack_validator)
    answered_in_place = sum(b["block_id"].endswith(".question") for b in message["blocks"])
    has_more = any(b["block_id"] == "digest.more" for b in message["blocks"])
    assert 1 <= answered_in_place <= min(count, slack.DIGEST_MAX_QUESTIONS)
    assert has_more == (answered_in_place < count)


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(documents=st.lists(documents, min_size=1, max_size=5), count=st.integers(1, 200),
       skipped_people=skipped, unanswered=names, viewer=viewers)
def test_dead_letter_digests_stay_inside_limits(documents, count, skipped_people, unanswered,
                                                viewer, slack_validator) -> None:
    """A steward digest of up to 200 dead letters, with skip lines and unanswered names, fits
    both platforms."""
    items = tuple(DeadLetterItem(clarification_id=f"c{n}", document=documents[n % len(documents)],
                                 severity=Severity.NORMAL, skipped=skipped_people,
                                 unanswered=unanswered)
                  for n in range(count))
    view = DeadLetterDigestView(items=items, viewer=viewer)
    _check(slack.render_dead_letter_digest(view), teams.render_dead_letter_digest(view),
           slack_validator)


counts = st.integers(0, 10**9)
hours = st.none() | st.floats(0, 10**6, allow_nan=False)
totals = st.builds(ReachTotals, questions=counts, asked=counts, bound=counts, open=counts,
                   escalated=counts, dead_lettered=counts,
                   bound_before_escalation=st.none() | st.floats(0, 1), median_hours=hours,
                   median_working_hours=hours)
reach_causes = st.lists(st.builds(
    ReachCauseView, cause=st.sampled_from(REACH_CAUSES) | long_text, people=counts,
    questions=counts, names=st.lists(long_text, max_size=40).map(tuple),
    more=st.integers(0, 10**6)), max_size=30).map(tuple)
days = st.dates(min_value=date(1900, 1, 1), max_value=date(2200, 1, 1))


@SETTINGS
@given(viewer=viewers, start=days, end=days, week=totals, causes=reach_causes,
       more=st.integers(0, 10**6), unreached=counts)
def test_weekly_reach_reports_stay_inside_limits(viewer, start, end, week, causes, more,
                                                 unreached, slack_validator) -> None:
    """The weekly reach report fits both platforms whatever its counts and causes (codes the
    bot does not know, hostile and long, included)."""
    view = ReachReportView(viewer=viewer, start=start, end=end, totals=week, causes=causes,
                           more_causes=more, unreached=unreached)
    _check(slack.render_reach_report(view), teams.render_reach_report(view), slack_validator)


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(viewer=viewers, start=days, end=days, week=totals, causes=reach_causes,
       workspaces=st.lists(st.builds(ReachWorkspaceView, workspace=long_text,
                                     platform=st.sampled_from(["slack", "teams", "-"]) | short,
                                     totals=totals), max_size=250).map(tuple),
       timings=st.lists(st.builds(ReachTimingView, severity=st.sampled_from(Severity),
                                  bound=counts, median_hours=hours, p90_hours=hours,
                                  median_working_hours=hours, p90_working_hours=hours),
                        max_size=4).map(tuple),
       busiest=st.lists(st.tuples(long_text, counts), max_size=60).map(tuple),
       median=hours, p95=hours)
def test_reach_details_stay_inside_limits(viewer, start, end, week, causes, workspaces, timings,
                                          busiest, median, p95) -> None:
    """The reach report's detail fits a Slack Home view (with its tabs) and a Teams card, with
    up to 250 workspaces, 30 causes of 40 long names and 60 people interrupted most."""
    view = ReachDetailView(viewer=viewer, steward=True, start=start, end=end, totals=week,
                           causes=causes, workspaces=workspaces, timings=timings,
                           busiest=busiest, interruptions_median=median, interruptions_p95=p95)
    home = attention.render_slack_home(AttentionView(viewer=viewer, steward=True), reach=view)
    parsed = View(**home)
    parsed.validate_json()
    assert parsed.to_dict() == home
    assert limits.slack_modal_problems(home) == []
    assert limits.teams_card_problems(reach.render_teams_reach_detail(view)) == []
