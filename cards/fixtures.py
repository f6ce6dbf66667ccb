"""Sample view models for every card state, used by the preview gallery and the golden tests.

The signing key here is a public, preview-only value; real deployments pass their own key.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime

from bot.core.models import AuthorityRelation, ClarificationState, ReasonCode, Severity
from cards import attention, reach, slack, teams
from cards.actions import ActionCodec
from cards.reach_views import (
    ReachCauseView,
    ReachDetailView,
    ReachReportView,
    ReachTimingView,
    ReachTotals,
    ReachWorkspaceView,
)
from cards.views import (
    AnswerView,
    AttentionItem,
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
    ReminderView,
    SkippedCandidate,
    StewardConflictView,
    StewardEscalationView,
    StewardNoticeView,
    StewardQuorumView,
    Viewer,
    with_locale,
)

PREVIEW_KEY = b"clarify-bot preview key, not a secret"
NOW = datetime(2026, 7, 4, 9, 30, tzinfo=UTC)
VIEWER = Viewer(locale="en", time_zone="Europe/London")
STEWARD = Viewer(locale="en", time_zone="Europe/Berlin")

MSA = DocumentView(title="Master Services Agreement – Northwind Traders",
                   url="https://docs.example.com/contracts/northwind-msa-2026.pdf")
LEASE = DocumentView(title="Office lease, 3rd floor, Harbour Street",
                     url="https://docs.example.com/facilities/harbour-street-lease.docx")
POLICY = DocumentView(title="Travel policy v4", url="https://docs.example.com/hr/travel-v4")

SIGNATURE = CandidateView(index=0, label="signature",
                          valid_from=datetime(2026, 6, 12, tzinfo=UTC))
COUNTERSIGNATURE = CandidateView(index=1, label="countersignature",
                                 valid_from=datetime(2026, 7, 3, tzinfo=UTC))
JUNE_12 = AnswerView.of(SIGNATURE)

QUESTION = QuestionView(
    clarification_id="clr_7f3a9c", card_ref="dlv_01J2ZK8Q4M",
    question="When does the Northwind Master Services Agreement take effect?",
    candidates=(SIGNATURE, COUNTERSIGNATURE), document=MSA, severity=Severity.NORMAL,
    required_confirmations=1, viewer=VIEWER, asked_at=NOW,
    relation=AuthorityRelation.AUTHORED_BY,
    excerpt="This Agreement takes effect on the date of the last signature below.")
CRITICAL = replace(QUESTION, clarification_id="clr_c41b02", card_ref="dlv_01J2ZK9R7T",
                   relation=AuthorityRelation.NAMED, excerpt="",
                   question="On which date does the Harbour Street lease terminate?",
                   document=LEASE, severity=Severity.CRITICAL, required_confirmations=2,
                   candidates=(
                       CandidateView(index=0, label="termination clause",
                                     valid_to=datetime(2026, 12, 31, tzinfo=UTC)),
                       CandidateView(index=1, label="notice letter",
                                     valid_to=datetime(2027, 3, 31, tzinfo=UTC))),
                   refresh_user_ids=("29:1sarah-aad-object-id", "29:1ahmed-aad-object-id"))
FIRST_BANNER = QuorumBanner(answer=AnswerView(valid_to=datetime(2026, 12, 31, tzinfo=UTC)),
                            confirmed_by=("Sarah",))
AWAITING_SECOND = replace(CRITICAL, card_ref="dlv_01J2ZKA0B8", banner=FIRST_BANNER)
# The same card where the core named a relation and a binding status the bot does not know:
# neutral words, never a sentence that means something else.
UNKNOWN_WORDS = replace(AWAITING_SECOND, card_ref="dlv_01J2ZKN6P1",
                        relation=AuthorityRelation.UNKNOWN,
                        banner=replace(FIRST_BANNER, certain=False))
TRAVEL = replace(QUESTION, clarification_id="clr_5d20e1", card_ref="dlv_01J2ZKB3C1",
                 question="From when does travel policy v4 apply?", document=POLICY,
                 candidates=(CandidateView(index=0, label="approval minutes",
                                           valid_from=datetime(2026, 9, 1, tzinfo=UTC)),
                             CandidateView(index=1, label="intranet notice",
                                           valid_from=datetime(2026, 10, 1, tzinfo=UTC))))


def _outcome(kind: OutcomeKind, **changes: object) -> OutcomeView:
    base = OutcomeView(kind=kind, clarification_id=QUESTION.clarification_id,
                       question=QUESTION.question, document=MSA, viewer=VIEWER, as_of=NOW,
                       answer=JUNE_12, confirmed_by=("Sarah",), recorded_at=NOW)
    return replace(base, **changes)  # type: ignore[arg-type]


OUTCOMES = {
    "outcome_recorded": _outcome(OutcomeKind.RECORDED),
    "outcome_first_confirmation": _outcome(
        OutcomeKind.FIRST_CONFIRMATION, remaining=1, question=CRITICAL.question,
        document=LEASE, answer=AWAITING_SECOND.banner.answer),  # type: ignore[union-attr]
    "outcome_binding": _outcome(OutcomeKind.BINDING, confirmed_by=("Sarah", "Ahmed")),
    "outcome_attestation": _outcome(OutcomeKind.ATTESTATION, confirmed_by=()),
    "outcome_conflict": _outcome(OutcomeKind.CONFLICT, answer=AnswerView.of(COUNTERSIGNATURE)),
    "outcome_conflicting_attestation": _outcome(OutcomeKind.CONFLICTING_ATTESTATION,
                                                answer=AnswerView.of(COUNTERSIGNATURE)),
    "outcome_steward_override": _outcome(OutcomeKind.STEWARD_OVERRIDE, confirmed_by=("Dana",)),
    "outcome_moved_on": _outcome(OutcomeKind.MOVED_ON, settled=JUNE_12,
                                 recorded_at=datetime(2026, 7, 3, 16, 5, tzinfo=UTC)),
    # bound, but the record names no date the bot can read: the neutral settled line
    "outcome_settled": _outcome(OutcomeKind.RECORDED, answer=None, confirmed_by=()),
    "outcome_identity_unverified": _outcome(OutcomeKind.IDENTITY_UNVERIFIED),
    "outcome_identity_shared": _outcome(OutcomeKind.IDENTITY_SHARED),
    "outcome_identity_unknown": _outcome(OutcomeKind.IDENTITY_UNKNOWN),
    "outcome_recording": _outcome(OutcomeKind.RECORDING, recorded_at=None),
    "outcome_pending": _outcome(OutcomeKind.PENDING, recorded_at=None),
    "outcome_passed_on": _outcome(OutcomeKind.PASSED_ON, answer=None, confirmed_by=()),
    "outcome_passed_on_later": _outcome(OutcomeKind.PASSED_ON_LATER, answer=None,
                                        confirmed_by=()),
}

SKIPPED = (SkippedCandidate(person="Sarah Okafor", reason=ReasonCode.NO_READ_PERMISSION),
           SkippedCandidate(person="Ahmed Haddad", reason=ReasonCode.NO_DELIVERY_ALIAS),
           SkippedCandidate(person="Lena Brandt", reason=ReasonCode.DAILY_CAP_EXCEEDED))
ESCALATION = StewardEscalationView(clarification_id=CRITICAL.clarification_id,
                                   card_ref="dlv_01J2ZKC5D9", document=LEASE,
                                   severity=Severity.CRITICAL, skipped=SKIPPED, viewer=STEWARD)
# The last attempt after the escalation windows ran out: two people asked, one skipped.
ESCALATION_UNANSWERED = replace(
    ESCALATION, card_ref="dlv_01J2ZKJ2K7", unanswered=("Tom Becker", "Jonas Weber"),
    skipped=(SkippedCandidate("Lena Brandt", ReasonCode.DAILY_CAP_EXCEEDED),))
# A critical question's last attempt: one confirmation in, nobody else could be asked.
ESCALATION_PARTIAL = replace(
    ESCALATION, card_ref="dlv_01J2ZKK3L8", confirmed=("Sarah Chen",),
    skipped=(SkippedCandidate("Ahmed Haddad", ReasonCode.NO_READ_PERMISSION),))
# A steward who may not read the lease: no title, no link, a neutral reference instead.
WITHHELD = DocumentView.neutral(workspace="Facilities", reference=CRITICAL.clarification_id)
ESCALATION_WITHHELD = replace(ESCALATION, card_ref="dlv_01J2ZKL4M9", document=WITHHELD)
# Two confirmations needed, only Sarah Chen could be asked: told at once, in the same pass.
QUORUM = StewardQuorumView(
    clarification_id=CRITICAL.clarification_id, card_ref="dlv_01J2ZKM5N0", document=LEASE,
    severity=Severity.CRITICAL, required=2, missing=1, asked=("Sarah Chen",),
    skipped=(SkippedCandidate("Ahmed Haddad", ReasonCode.ALIAS_AMBIGUOUS),
             SkippedCandidate("Lena Brandt", ReasonCode.NO_READ_PERMISSION)),
    viewer=STEWARD)
CONFLICT_NOTICE = StewardConflictView(clarification_id=QUESTION.clarification_id, document=MSA,
                                      severity=Severity.HIGH, responders=("Sarah", "Ahmed"),
                                      viewer=STEWARD)
# After binding: Ahmed's late answer differs from the bound date, which stays.
LATE_CONFLICT_NOTICE = replace(CONFLICT_NOTICE, responders=("Ahmed",), bound=True)
HIGH_NOTICE = StewardNoticeView(clarification_id="clr_8e21d4", card_ref="dlv_01J2ZKH1J6",
                                document=MSA, severity=Severity.HIGH, asked=("Sarah Chen",),
                                viewer=STEWARD)
DEAD_LETTERS = DeadLetterDigestView(viewer=STEWARD, items=(
    DeadLetterItem(clarification_id="clr_0a11", document=LEASE, severity=Severity.CRITICAL,
                   skipped=SKIPPED),
    DeadLetterItem(clarification_id="clr_0a12", document=POLICY, severity=Severity.NORMAL,
                   skipped=(SkippedCandidate("Marta Nowak", ReasonCode.ALIAS_AMBIGUOUS),
                            SkippedCandidate("Tom Becker", ReasonCode.TENANT_SCOPE_MISMATCH))),
    DeadLetterItem(clarification_id="clr_0a13", document=MSA, severity=Severity.HIGH,
                   skipped=(SkippedCandidate("Sarah Okafor", ReasonCode.DELIVERY_FAILED),
                            SkippedCandidate("Ahmed Haddad",
                                             ReasonCode.RESPONDER_NOT_AUTHORISED))),
))
DIGEST = DigestView(digest_ref="dig_01J2ZKD7E2", viewer=VIEWER,
                    questions=(QUESTION, replace(TRAVEL, card_ref="dlv_01J2ZKE8F3"),
                               replace(QUESTION, clarification_id="clr_91aa07",
                                       card_ref="dlv_01J2ZKF9G4",
                                       question="When does the Northwind price schedule end?",
                                       candidates=(replace(COUNTERSIGNATURE, index=0),))))
OVERFLOW = DigestView(digest_ref="dig_01J2ZKG0H5", viewer=VIEWER, questions=tuple(
    replace(TRAVEL, clarification_id=f"clr_ov{n:03d}", card_ref=f"dlv_ov{n:03d}")
    for n in range(14)))
# The card's one reminder (docs/delivery.md, "Reminders"): at 75 % of its window the card is
# repainted in place with the reminder line above its move-on line, and a short nudge goes to
# the card's conversation (Slack: threaded under the card and broadcast; Teams: a short card).
MOVES_ON = datetime(2026, 7, 6, 13, 0, tzinfo=UTC)  # 14:00 in London
REMINDED = replace(QUESTION, moves_on_at=MOVES_ON, reminded=True)
NUDGE = ReminderView(clarification_id=QUESTION.clarification_id, near="1783157400.000100",
                     document=MSA, viewer=VIEWER, as_of=QUESTION.asked_at, moves_on_at=MOVES_ON)
# The ranking's last turn, for a person who may no longer read the document: the neutral
# words, and the steward as the next stop.
NUDGE_WITHHELD = replace(
    NUDGE, document=DocumentView.neutral(workspace="Legal", reference=QUESTION.clarification_id),
    moves_on_to_steward=True)
INVALID = CustomFormView(question=QUESTION, error=CustomError.END_BEFORE_START,
                         entered_from=date(2026, 6, 30), entered_to=date(2026, 6, 1),
                         entered_note="Per the countersigned copy in the shared drive")

# The steward's attention queue (Slack: the App Home, its "Queue" tab; Teams: the queue card).
QUEUE = AttentionView(viewer=STEWARD, steward=True, items=(
    AttentionItem(clarification_id=CRITICAL.clarification_id, document=LEASE,
                  severity=Severity.CRITICAL, state=ClarificationState.CONFLICTED),
    AttentionItem(clarification_id="clr_0a11", document=WITHHELD, severity=Severity.HIGH,
                  state=ClarificationState.DEAD_LETTERED)))
# The steward's weekly reach report (a message) and its detail (Slack: the App Home's "Reach"
# tab; Teams: a card): a week of the workspaces they steward.
WEEK = (date(2026, 6, 29), date(2026, 7, 5))
WEEK_TOTALS = ReachTotals(questions=42, asked=39, bound=31, open=6, escalated=4,
                          dead_lettered=2, bound_before_escalation=0.87, median_hours=26.5,
                          median_working_hours=3.5)
UNREACHED = (
    ReachCauseView("no_alias", people=3, questions=5,
                   names=("Ahmed Haddad", "Marta Nowak", "Jonas Weber")),
    ReachCauseView("app_not_installed", people=2, questions=3,
                   names=("Tom Becker", "Dana Whitfield")),
    ReachCauseView("no_read_permission", people=2, questions=2,
                   names=("Sarah Okafor", "Lena Brandt")),
    ReachCauseView("blocked_or_uninstalled", people=1, questions=1, names=("Priya Raman",)),
    ReachCauseView("tenant_scope", people=14, questions=2, more=4, names=(
        "Aiko Tanaka", "Bruno Costa", "Chen Wei", "Daniel Okoro", "Elif Yilmaz", "Femi Adeyemi",
        "Greta Lind", "Hugo Martin", "Ines Duarte", "Jan Novak")),
)
REACH_REPORT = ReachReportView(
    viewer=STEWARD, start=WEEK[0], end=WEEK[1], totals=WEEK_TOTALS, unreached=22,
    causes=tuple(replace(cause, names=(), more=0) for cause in UNREACHED[:3]), more_causes=2)
# A week where everyone asked could be reached.
REACH_REPORT_CLEAR = ReachReportView(
    viewer=STEWARD, start=WEEK[0], end=WEEK[1],
    totals=ReachTotals(questions=12, asked=12, bound=11, open=1, bound_before_escalation=1.0,
                       median_hours=4.0, median_working_hours=2.5))
REACH_DETAIL = ReachDetailView(
    viewer=STEWARD, steward=True, start=WEEK[0], end=WEEK[1], totals=WEEK_TOTALS,
    causes=UNREACHED,
    busiest=(("Sarah Okafor", 14), ("Tom Becker", 11), ("Jonas Weber", 9)),
    interruptions_median=3, interruptions_p95=11,
    timings=(ReachTimingView(Severity.CRITICAL, bound=4, median_hours=30.0, p90_hours=70.0,
                             median_working_hours=5.0, p90_working_hours=12.0),
             ReachTimingView(Severity.HIGH, bound=9, median_hours=20.5, p90_hours=52.0,
                             median_working_hours=3.0, p90_working_hours=9.5),
             ReachTimingView(Severity.NORMAL, bound=18, median_hours=26.0, p90_hours=75.0,
                             median_working_hours=3.5, p90_working_hours=14.0)),
    workspaces=(
        ReachWorkspaceView("Legal", "slack", ReachTotals(
            questions=25, asked=24, bound=20, open=3, escalated=2, dead_lettered=1,
            bound_before_escalation=0.9, median_hours=22.0, median_working_hours=3.0)),
        ReachWorkspaceView("Facilities", "teams", ReachTotals(
            questions=15, asked=15, bound=11, open=2, escalated=2, dead_lettered=1,
            bound_before_escalation=0.8, median_hours=30.0, median_working_hours=4.5)),
        ReachWorkspaceView("Finance", "-", ReachTotals(questions=2, open=1))))


@dataclass(frozen=True)
class State:
    """One card state with its Slack and Teams rendering."""

    name: str
    title: str
    slack: Callable[[ActionCodec], dict]
    teams: Callable[[ActionCodec], dict]


def _question(view: QuestionView, name: str, title: str) -> State:
    return State(name, title, lambda c: slack.render_question(view, codec=c),
                 lambda c: teams.render_question(view, codec=c))


def _outcome_state(name: str, view: OutcomeView) -> State:
    title = name.removeprefix("outcome_").replace("_", " ").capitalize()
    return State(name, f"After an answer: {title.lower()}", lambda c: slack.render_outcome(view),
                 lambda c: teams.render_outcome(view))


# The gallery's and the goldens' locales: the catalog's three languages, each with a region
# (a bare "en", the core's default, reads as British English: "12 June", "4 Jul 2026").
LOCALES = {"en": "en", "de": "de-DE", "fr": "fr-FR"}


def localised[V](view: V, locale: str) -> V:
    """``view`` for a person reading ``locale`` (every Viewer in it)."""
    return with_locale(view, locale)


def states(locale: str = "en", *, alter: Callable[[object], object] | None = None
           ) -> list[State]:
    """Every state the product shows, in gallery order, for a person reading ``locale``;
    ``alter`` changes each view first (the tests give every state hostile text that way)."""
    def the[V](view: V) -> V:
        shown = with_locale(view, locale)
        return alter(shown) if alter else shown  # type: ignore[return-value]

    form, invalid = the(CustomFormView(question=QUESTION)), the(INVALID)
    escalation, unanswered = the(ESCALATION), the(ESCALATION_UNANSWERED)
    partial, withheld, quorum = the(ESCALATION_PARTIAL), the(ESCALATION_WITHHELD), the(QUORUM)
    nudge, nudge_withheld = the(NUDGE), the(NUDGE_WITHHELD)
    conflict, late = the(CONFLICT_NOTICE), the(LATE_CONFLICT_NOTICE)
    notice, dead, digest, overflow = (the(HIGH_NOTICE), the(DEAD_LETTERS), the(DIGEST),
                                      the(OVERFLOW))
    queue, report, clear = the(QUEUE), the(REACH_REPORT), the(REACH_REPORT_CLEAR)
    detail = the(REACH_DETAIL)
    return [
        _question(the(QUESTION), "question_normal", "Question (normal severity)"),
        _question(the(CRITICAL), "question_critical", "Question (critical: two confirmations)"),
        _question(the(AWAITING_SECOND), "question_awaiting_second",
                  "Question after the first confirmation (other asked people)"),
        _question(the(UNKNOWN_WORDS), "question_unknown_words",
                  "Question after an answer, in words the bot does not know (neutral lines)"),
        _question(the(REMINDED), "question_reminded",
                  "Question repainted by its one reminder (when it moves on)"),
        State("reminder", "Reminder: the nudge (Slack thread reply / Teams message)",
              lambda c: slack.render_reminder(nudge),
              lambda c: teams.render_reminder(nudge)),
        State("reminder_withheld",
              "Reminder on the last turn, for a person who may no longer read the document",
              lambda c: slack.render_reminder(nudge_withheld),
              lambda c: teams.render_reminder(nudge_withheld)),
        State("custom_form", "Something else… (Slack modal / Teams form)",
              lambda c: slack.render_custom_modal(form, codec=c),
              lambda c: teams.render_custom_form(form, codec=c)),
        State("custom_invalid", "Something else… with an inline field error",
              lambda c: slack.render_custom_errors(invalid),
              lambda c: teams.render_custom_form(invalid, codec=c)),
        *[_outcome_state(name, the(view)) for name, view in OUTCOMES.items()],
        State("steward_escalation", "Steward: redacted escalation",
              lambda c: slack.render_steward_escalation(escalation),
              lambda c: teams.render_steward_escalation(escalation)),
        State("steward_escalation_unanswered",
              "Steward: escalation after the people asked did not answer",
              lambda c: slack.render_steward_escalation(unanswered),
              lambda c: teams.render_steward_escalation(unanswered)),
        State("steward_escalation_partial",
              "Steward: escalation with a quorum still short after everyone answered",
              lambda c: slack.render_steward_escalation(partial),
              lambda c: teams.render_steward_escalation(partial)),
        State("steward_escalation_withheld",
              "Steward: escalation for a steward who may not read the document",
              lambda c: slack.render_steward_escalation(withheld),
              lambda c: teams.render_steward_escalation(withheld)),
        State("steward_quorum_unreachable",
              "Steward: too few people can confirm a critical date",
              lambda c: slack.render_steward_quorum(quorum),
              lambda c: teams.render_steward_quorum(quorum)),
        State("steward_conflict", "Steward: conflict notice",
              lambda c: slack.render_steward_conflict(conflict),
              lambda c: teams.render_steward_conflict(conflict)),
        State("steward_conflict_bound", "Steward: late answer differs from the bound date",
              lambda c: slack.render_steward_conflict(late),
              lambda c: teams.render_steward_conflict(late)),
        State("steward_notice", "Steward: high-severity question sent directly",
              lambda c: slack.render_steward_notice(notice),
              lambda c: teams.render_steward_notice(notice)),
        State("steward_dead_letter_digest", "Steward: dead-letter digest",
              lambda c: slack.render_dead_letter_digest(dead),
              lambda c: teams.render_dead_letter_digest(dead)),
        State("steward_dead_letter_digest_unread",
              "Steward: dead-letter digest from a pass that did not reach the list's end",
              lambda c: slack.render_dead_letter_digest(replace(dead, whole=False)),
              lambda c: teams.render_dead_letter_digest(replace(dead, whole=False))),
        State("steward_queue", "Steward: the attention queue (Slack App Home, Queue tab)",
              lambda c: attention.render_slack_home(queue),
              lambda c: attention.render_teams_queue(queue)),
        State("steward_reach_report", "Steward: the weekly reach report",
              lambda c: slack.render_reach_report(report),
              lambda c: teams.render_reach_report(report)),
        State("steward_reach_report_clear",
              "Steward: the weekly reach report of a week where everyone could be reached",
              lambda c: slack.render_reach_report(clear),
              lambda c: teams.render_reach_report(clear)),
        State("steward_reach_detail",
              "Steward: the reach report's detail (Slack App Home, Reach tab)",
              lambda c: attention.render_slack_home(queue, reach=detail),
              lambda c: reach.render_teams_reach_detail(detail)),
        State("digest", "Digest: three questions",
              lambda c: slack.render_digest(digest, codec=c),
              lambda c: teams.render_digest(digest, codec=c)),
        State("digest_overflow", "Digest: fourteen questions (overflow)",
              lambda c: slack.render_digest(overflow, codec=c),
              lambda c: teams.render_digest(overflow, codec=c)),
    ]


def preview_codec() -> ActionCodec:
    return ActionCodec(PREVIEW_KEY)
