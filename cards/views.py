"""View models: everything a card shows, filled by the engine from the core's Clarification.

The steward views have no field for the question or the span excerpt: a redacted card cannot
leak span text because there is nothing to leak it from.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, is_dataclass, replace
from datetime import date, datetime
from enum import StrEnum

from bot.core.models import (
    AnswerOutcome,
    AuthorityRelation,
    ClarificationState,
    ReasonCode,
    Severity,
)


@dataclass(frozen=True)
class Viewer:
    """Whom the card is for: their locale (BCP 47 or POSIX form) and IANA time zone."""

    locale: str = "en"
    time_zone: str = "UTC"


def with_locale[V](view: V, locale: str | None) -> V:
    """``view`` with every Viewer in it (nested questions too) reading ``locale``: the person's
    own locale, learned from their platform after the view was built. None: unchanged."""
    if locale is None or not is_dataclass(view) or isinstance(view, type):
        return view
    changes: dict[str, object] = {}
    for field in fields(view):
        value = getattr(view, field.name)
        if isinstance(value, Viewer):
            changes[field.name] = replace(value, locale=locale)
        elif is_dataclass(value) and not isinstance(value, type):
            changes[field.name] = with_locale(value, locale)
        elif isinstance(value, tuple) and value and is_dataclass(value[0]):
            changes[field.name] = tuple(with_locale(item, locale) for item in value)
    return replace(view, **changes) if changes else view  # type: ignore[type-var]


@dataclass(frozen=True)
class DocumentView:
    """The source document as a card names it. For a steward who may not read it, ``neutral``:
    no title, only "a document in the <workspace> workspace" and a reference the steward review
    tools take (the clarification id); no link either, except on the redacted escalation (spec
    §3.3: "document link, no span text"), where the link is what lets the steward act (open it,
    or ask for access) and the neutral words are its text."""

    title: str
    url: str
    workspace: str | None = None  # set only on a neutral reference
    reference: str = ""

    @classmethod
    def neutral(cls, *, workspace: str, reference: str, url: str = "") -> DocumentView:
        return cls(title="", url=url, workspace=workspace, reference=reference)

    @property
    def withheld(self) -> bool:
        """True for a neutral reference: there is no title or link to show."""
        return self.workspace is not None


@dataclass(frozen=True)
class CandidateView:
    """One candidate interval; ``label`` is its origin in the document ("signature")."""

    index: int
    label: str
    valid_from: datetime | None = None
    valid_to: datetime | None = None


@dataclass(frozen=True)
class AnswerView:
    """An answer as dates: a chosen candidate's interval or a free-form one."""

    valid_from: datetime | None = None
    valid_to: datetime | None = None

    @classmethod
    def of(cls, candidate: CandidateView) -> AnswerView:
        return cls(valid_from=candidate.valid_from, valid_to=candidate.valid_to)


@dataclass(frozen=True)
class QuorumBanner:
    """Shown on the other asked people's cards once some confirmations are in. ``certain``
    False: the answer's status is a word the bot does not know, so the banner says neutrally
    that an answer was recorded, not that it confirmed anything."""

    answer: AnswerView
    confirmed_by: tuple[str, ...]
    certain: bool = True


@dataclass(frozen=True)
class QuestionView:
    """The one-tap question. ``card_ref`` is the opaque delivery reference for callbacks."""

    clarification_id: str
    card_ref: str
    question: str
    candidates: tuple[CandidateView, ...]
    document: DocumentView
    severity: Severity
    required_confirmations: int
    viewer: Viewer
    asked_at: datetime
    banner: QuorumBanner | None = None
    # why this person is asked (their relation to the document), when the core says; a
    # relation the bot does not know (``AuthorityRelation.UNKNOWN``) gets the neutral line
    relation: AuthorityRelation | None = None
    # the span the question is about: filled only for a person who passed the RBAC gate
    excerpt: str = ""
    # Teams user ids whose card refreshes itself on view (Universal Actions; at most 60 used).
    refresh_user_ids: tuple[str, ...] = ()
    # when the question moves on if nobody answers (the end of this person's escalation
    # window), and whether it then goes to the steward (the last turn of the ranking)
    moves_on_at: datetime | None = None
    moves_on_to_steward: bool = False
    # the card as its one reminder repaints it (docs/delivery.md, "Reminders")
    reminded: bool = False


@dataclass(frozen=True)
class ReminderView:
    """The short nudge that goes with a question card's one reminder, in the card's own
    conversation: ``near`` is the card's message reference (Slack threads the nudge under it).
    Names the document only as the card did; no question, no span, no dates to answer."""

    clarification_id: str
    near: str
    document: DocumentView
    viewer: Viewer
    as_of: datetime  # when the nudge goes: a move-on day in another year shows its year
    moves_on_at: datetime | None = None
    moves_on_to_steward: bool = False


class CustomError(StrEnum):
    START_REQUIRED = "start_required"
    END_BEFORE_START = "end_before_start"
    UNPARSEABLE = "unparseable"


@dataclass(frozen=True)
class CustomFormView:
    """The "Something else…" form, possibly re-shown with an inline error."""

    question: QuestionView
    slot: int = 0
    error: CustomError | None = None
    entered_from: date | None = None
    entered_to: date | None = None
    entered_note: str = ""


class OutcomeKind(StrEnum):
    RECORDED = "recorded"
    FIRST_CONFIRMATION = "first_confirmation"
    BINDING = "binding"
    ATTESTATION = "attestation"
    CONFLICT = "conflict"
    CONFLICTING_ATTESTATION = "conflicting_attestation"
    STEWARD_OVERRIDE = "steward_override"
    MOVED_ON = "moved_on"
    IDENTITY_UNVERIFIED = "identity_unverified"
    IDENTITY_SHARED = "identity_shared"  # the chat account is linked to several people
    IDENTITY_UNKNOWN = "identity_unknown"  # the chat account is linked to nobody
    RECORDING = "recording"  # durable, not at the core yet, and the core is failing
    PENDING = "pending"  # durable, on its way to the core (nothing known to be wrong)
    PASSED_ON = "passed_on"  # the person said they are not the right one: asked elsewhere
    # the same, where the next person can only be asked when this turn's window ends (a core
    # that cannot start the next turn at once): ``recorded_at`` says when
    PASSED_ON_LATER = "passed_on_later"


@dataclass(frozen=True)
class OutcomeView:
    """What an answer did, shown in place of the question."""

    kind: OutcomeKind
    clarification_id: str
    question: str
    document: DocumentView
    viewer: Viewer
    as_of: datetime
    answer: AnswerView | None = None
    confirmed_by: tuple[str, ...] = ()
    recorded_at: datetime | None = None
    remaining: int = 0
    settled: AnswerView | None = None


def outcome_kind(outcome: AnswerOutcome, *, required_confirmations: int) -> OutcomeKind:
    """The card state for a core answer outcome (spec §6 matrix, §7 wording)."""
    if outcome is AnswerOutcome.BOUND:
        return OutcomeKind.BINDING if required_confirmations > 1 else OutcomeKind.RECORDED
    return _OUTCOME_KINDS[outcome]


_OUTCOME_KINDS = {
    AnswerOutcome.PARTIALLY_CONFIRMED: OutcomeKind.FIRST_CONFIRMATION,
    AnswerOutcome.ATTESTATION: OutcomeKind.ATTESTATION,
    AnswerOutcome.CONFLICTED: OutcomeKind.CONFLICT,
    AnswerOutcome.CONFLICTING_ATTESTATION: OutcomeKind.CONFLICTING_ATTESTATION,
    AnswerOutcome.STEWARD_OVERRIDE: OutcomeKind.STEWARD_OVERRIDE,
}


@dataclass(frozen=True)
class SkippedCandidate:
    """A ranked person who was not asked, and the reason code why; ``until``: when a person
    passed over for being away (``PERSON_AWAY``) is back, where their platform said."""

    person: str
    reason: ReasonCode
    until: datetime | None = None


@dataclass(frozen=True)
class StewardEscalationView:
    """The redacted question for the steward: document link, skip reasons and the names of the
    people asked who did not answer; nothing from the document itself."""

    clarification_id: str
    card_ref: str
    document: DocumentView
    severity: Severity
    skipped: tuple[SkippedCandidate, ...]
    viewer: Viewer
    # Display names of people who were asked and did not answer before the escalation windows
    # ran out; empty when nobody in the ranking could be asked at all.
    unanswered: tuple[str, ...] = ()
    # Display names of people whose answers count toward a quorum that is still not met (a
    # critical question whose eligible people all answered, and it still needs more).
    confirmed: tuple[str, ...] = ()


@dataclass(frozen=True)
class StewardConflictView:
    """Tells the steward that answers disagree; no dates, no span text. With ``bound`` the
    answers of ``responders`` arrived after a date was bound and differ from it: they are
    conflicting attestations and the bound date stays until a steward decides."""

    clarification_id: str
    document: DocumentView
    severity: Severity
    responders: tuple[str, ...]
    viewer: Viewer
    bound: bool = False
    # The delivery reference the override actions carry, and the candidates a steward may
    # override with (dates always; labels only when the steward may read the document). Empty:
    # no override actions (a late conflict after binding, or a policy without overrides).
    card_ref: str = ""
    candidates: tuple[CandidateView, ...] = ()


@dataclass(frozen=True)
class StewardNoticeView:
    """Tells the steward a high-severity question went out directly: whom it was sent to and
    the document link, never the question, the span excerpt or the candidates."""

    clarification_id: str
    card_ref: str
    document: DocumentView
    severity: Severity
    asked: tuple[str, ...]  # display names of the people asked
    viewer: Viewer


# the most notices one steward message lists (the rest go in the next one, at once)
STEWARD_NOTICES_MAX = 20


@dataclass(frozen=True)
class StewardNoticesView:
    """The notices of one window for one steward, in one message: for each, whom a
    high-severity question went to and the document reference (each redacted as a single
    ``StewardNoticeView`` is: never the question, the span excerpt or the candidates)."""

    notices: tuple[StewardNoticeView, ...]
    viewer: Viewer


@dataclass(frozen=True)
class StewardQuorumView:
    """A critical question has fewer eligible people than confirmations it needs: told at once,
    with whom it was asked and how many confirmations are still missing even if they all
    confirm; names, counts, skip reasons and the document reference only."""

    clarification_id: str
    card_ref: str
    document: DocumentView
    severity: Severity
    required: int  # confirmations the quorum policy asks for
    missing: int  # confirmations still missing if everyone asked confirms
    asked: tuple[str, ...]  # display names of the people asked who may still answer
    skipped: tuple[SkippedCandidate, ...]
    viewer: Viewer
    # the candidates a steward may override with (see StewardConflictView); empty: no actions
    candidates: tuple[CandidateView, ...] = ()


@dataclass(frozen=True)
class OverrideFormView:
    """The override's confirmation step: the chosen answer and a required note."""

    clarification_id: str
    card_ref: str
    candidate: CandidateView
    document: DocumentView
    viewer: Viewer
    note_missing: bool = False  # re-shown because the note was left empty


@dataclass(frozen=True)
class DeadLetterItem:
    clarification_id: str
    document: DocumentView
    severity: Severity
    skipped: tuple[SkippedCandidate, ...]
    unanswered: tuple[str, ...] = ()  # display names of people asked who did not answer


@dataclass(frozen=True)
class DeadLetterDigestView:
    """The steward's list of clarifications whose ranking ran out. ``whole`` False: the
    core's list of dead letters went on past what one pass reads (later digests list the
    rest), and the digest says so."""

    items: tuple[DeadLetterItem, ...]
    viewer: Viewer
    whole: bool = True


@dataclass(frozen=True)
class DigestView:
    """Several questions for one person in one message; ``offset`` counts earlier pages."""

    digest_ref: str
    questions: tuple[QuestionView, ...]
    viewer: Viewer
    offset: int = 0


@dataclass(frozen=True)
class AttentionItem:
    """One clarification of a steward's attention queue. Like the other steward views it has no
    field for the question or the span; ``document`` is neutral where the steward may not read
    the source."""

    clarification_id: str
    document: DocumentView
    severity: Severity
    state: ClarificationState


@dataclass(frozen=True)
class AttentionView:
    """The steward's attention queue in chat (Slack App Home, the Teams ``queue`` message).
    ``steward`` False: the person stewards no workspace (or is not known): "nothing for you
    here". ``more``: items of the queue not listed (past the bot's cap). ``whole`` False: the
    bot cannot say how many (the core's list went on past what it reads for one view, or more
    of its entries than it reads do not say whose they are), so ``items`` and ``more`` are a
    lower bound, and the view says so instead of giving a count."""

    viewer: Viewer
    steward: bool
    items: tuple[AttentionItem, ...] = ()
    more: int = 0
    unavailable: bool = False  # the core could not be asked just now
    whole: bool = True

