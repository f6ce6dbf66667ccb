"""The sentences of every card, built from a view and the catalog, shared by both renderers.

Renderers decide structure and markup; every word a person reads is decided here.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from babel.dates import format_time

from bot.core.models import Severity
from cards import dates, untrusted
from cards.catalog import FALLBACK_LANGUAGE, Catalog, catalog_for
from cards.platform_limits import clip, text_length
from cards.untrusted import Link, Run, Runs, linkable
from cards.views import (
    AnswerView,
    CandidateView,
    CustomError,
    DeadLetterDigestView,
    DocumentView,
    OutcomeKind,
    OutcomeView,
    QuestionView,
    ReminderView,
    SkippedCandidate,
    StewardConflictView,
    StewardEscalationView,
    StewardNoticeView,
    StewardQuorumView,
    Viewer,
)

QUESTION_CHARS = 1000
TITLE_CHARS = 200
MAX_CANDIDATE_BUTTONS = 20
PERSON_CHARS = 100
# Rankings are short (max_candidates is 3 by default); past this many, the rest are counted.
MAX_SKIP_LINES = 12
# The "Asked, no answer: …" line fits one renderer line; names past this are counted instead.
UNANSWERED_CHARS = 1000
# The custom form's "Dates the document gives: …" line is a reminder, cut well inside a card.
FOUND_CHARS = 300


def catalog_of(viewer: Viewer) -> Catalog:
    return catalog_for(viewer.locale)


def names_for(names: tuple[str, ...] | list[str], viewer: Viewer, key: str) -> str:
    """ "Sarah and Ahmed" for the message ``key``: joined in that message's language (an
    English sentence says "and", a German one "und"); each name one clean line."""
    return dates.names_list([untrusted.line(name) for name in names],
                            locale=catalog_of(viewer).words_locale(key))


def _day(moment: datetime, viewer: Viewer, reference_year: int | None) -> str:
    day = dates.calendar_day(moment, viewer.time_zone)
    return dates.day_label(day, locale=viewer.locale, reference_year=reference_year)


def interval_text(answer: AnswerView, viewer: Viewer, *, reference_year: int | None,
                  within: str | None = None) -> str:
    """ "12 June", "12 June – 30 June", "from 12 June", "until 30 June" or "No date"; the dates
    in the viewer's format, the words ("until") in the language of the message ``within``
    which the interval is shown (an English sentence says "until 31. Dezember")."""
    cat = catalog_of(viewer)
    if within is not None and not cat.translates(within):
        cat = catalog_for(FALLBACK_LANGUAGE)
    start, end = answer.valid_from, answer.valid_to
    if start and end:
        first = dates.calendar_day(start, viewer.time_zone)
        last = max(dates.last_day(end, viewer.time_zone), first)
        if last != first:  # "12 June – 30 June": both days inside the half-open interval
            return cat.text("candidate.range", start=_day(start, viewer, reference_year),
                            end=dates.day_label(last, locale=viewer.locale,
                                                reference_year=reference_year))
    if start:
        return _day(start, viewer, reference_year)
    if end:
        return cat.text("candidate.until", date=_day(end, viewer, reference_year))
    return cat.text("candidate.undated")


def candidate_text(candidate: CandidateView, viewer: Viewer, *, reference_year: int) -> str:
    """The button label from the spec: "12 June (signature)"."""
    when = interval_text(AnswerView.of(candidate), viewer, reference_year=reference_year)
    return catalog_of(viewer).text("candidate.label", date=when,
                                   origin=untrusted.line(candidate.label))


def found_dates(view: QuestionView) -> str | None:
    """The custom form's reminder of the document's dates: "Dates the document gives: 12 June
    (signature) and 3 July (countersignature)", each as its button reads."""
    candidates = shown_candidates(view)
    if not candidates:
        return None
    year = asked_year(view)
    labels = [candidate_text(c, view.viewer, reference_year=year) for c in candidates]
    line = catalog_of(view.viewer).text("custom.found", dates=names_for(labels, view.viewer,
                                                                        "custom.found"))
    return clip(line, FOUND_CHARS)


def shown_candidates(view: QuestionView) -> tuple[CandidateView, ...]:
    """The candidates that get a button: the core sends at most 20, and so do we, so that a
    single question always fits a card; any other date is one "Something else…" away."""
    return view.candidates[:MAX_CANDIDATE_BUTTONS]


def asked_year(view: QuestionView) -> int:
    return dates.instant_day(view.asked_at, view.viewer.time_zone).year


def quorum_notice(view: QuestionView) -> str | None:
    """The severity notice; its count comes from the quorum policy, never a constant."""
    if view.required_confirmations <= 1:
        return None
    cat = catalog_of(view.viewer)
    key = "question.notice.critical" if view.severity is Severity.CRITICAL else (
        "question.notice.quorum")
    return cat.text(key, count=cat.count_word(view.required_confirmations, for_key=key))


def why_asked(view: QuestionView) -> str | None:
    """Why this person is asked ("you wrote or signed this document"), from the ranking; a
    relation the bot does not know still says the person is connected to the document."""
    if view.relation is None:
        return None
    return catalog_of(view.viewer).text(f"question.why.{view.relation.value}")


def excerpt_text(view: QuestionView, *, limit: int) -> str | None:
    """The span excerpt line; the view holds one only for a person who passed the RBAC gate."""
    excerpt = " ".join(untrusted.line(view.excerpt).split())
    if not excerpt:
        return None
    return catalog_of(view.viewer).text("question.excerpt", excerpt=clip(excerpt, limit))


def question_text(question: str, limit: int = QUESTION_CHARS) -> str:
    """The question as the core asked it, on one line."""
    return clip(untrusted.line(question), limit)


def _moment(moment: datetime, viewer: Viewer, *, now: datetime) -> dict[str, str]:
    """An instant as the viewer reads it, in their zone: its day ("6 July"; with the year when
    it falls in another year than ``now`` there, "2 January 2027", "January 2, 2027") and its
    time ("14:00", "2:00 PM"), both by the locale's CLDR data."""
    local = moment.astimezone(dates.resolve_zone(viewer.time_zone))
    day = dates.day_label(local.date(), locale=viewer.locale,
                          reference_year=dates.instant_day(now, viewer.time_zone).year)
    return {"day": day,
            "time": format_time(local.timetz(), "short", locale=dates.resolve_locale(
                viewer.locale))}


def moves_on_text(view: QuestionView | ReminderView) -> str | None:
    """ "Moves on to the next person on 6 July at 14:00." (the steward, on the last turn), in
    the person's zone, the year named when it is not the year the card was built in; None when
    the card does not know when."""
    if view.moves_on_at is None:
        return None
    key = "question.moves_on.steward" if view.moves_on_to_steward else "question.moves_on"
    now = view.asked_at if isinstance(view, QuestionView) else view.as_of
    return catalog_of(view.viewer).text(key, **_moment(view.moves_on_at, view.viewer, now=now))


def reminder_line(view: QuestionView) -> str | None:
    """The card's own reminder line, once its reminder went out."""
    return catalog_of(view.viewer).text("question.reminder") if view.reminded else None


def reminder_text(view: ReminderView) -> str:
    """The nudge's words: the document as the card named it, and when the question moves on."""
    cat = catalog_of(view.viewer)
    if view.document.withheld or not untrusted.line(view.document.title):
        first = cat.text("reminder.text.withheld")
    else:
        first = cat.text("reminder.text", document=document_name(view.document, view.viewer))
    after = moves_on_text(view)
    return f"{first} {after}" if after else first


def banner_text(view: QuestionView) -> str | None:
    """The first confirmation so far; an answer whose status the bot does not know is named
    neutrally as recorded (``QuorumBanner.certain``)."""
    if view.banner is None:
        return None
    key = "banner.first_confirmation" if view.banner.certain else "banner.answer_recorded"
    answer = interval_text(view.banner.answer, view.viewer, reference_year=asked_year(view),
                           within=key)
    names = names_for(view.banner.confirmed_by, view.viewer, key)
    return catalog_of(view.viewer).text(key, answer=answer, names=names)


@dataclass(frozen=True)
class OutcomeText:
    headline: str
    details: tuple[str, ...]
    positive: bool  # a "✓" outcome (recorded) rather than a notice needing attention


_POSITIVE = {OutcomeKind.RECORDED, OutcomeKind.BINDING, OutcomeKind.STEWARD_OVERRIDE}


def outcome_text(view: OutcomeView) -> OutcomeText:
    """The sentence saying honestly what the answer did, plus supporting lines."""
    cat = catalog_of(view.viewer)
    year = dates.instant_day(view.as_of, view.viewer.time_zone).year
    answer = interval_text(view.answer, view.viewer, reference_year=year,
                           within="outcome.your_answer") if view.answer else ""
    when = _recorded_on(view)
    headline = _headline(cat, view, when=when, year=year)
    details: list[str] = []
    if view.kind is OutcomeKind.FIRST_CONFIRMATION:
        details.append(cat.plural("outcome.remaining", view.remaining))
    if view.answer and view.kind in _SHOWS_OWN_ANSWER:
        details.append(cat.text("outcome.your_answer", answer=answer))
    question = question_text(view.question)
    if question:  # none known (a card answered before the core was read), or withheld
        details.append(cat.text("outcome.question_was", question=question))
    return OutcomeText(headline=headline, details=tuple(details),
                       positive=view.kind in _POSITIVE)


_SETTLED = {OutcomeKind.RECORDED, OutcomeKind.BINDING, OutcomeKind.STEWARD_OVERRIDE}
_SHOWS_OWN_ANSWER = {OutcomeKind.ATTESTATION, OutcomeKind.CONFLICT,
                     OutcomeKind.CONFLICTING_ATTESTATION}


def _recorded_on(view: OutcomeView) -> str:
    moment = view.recorded_at or view.as_of
    return dates.short_date(dates.instant_day(moment, view.viewer.time_zone),
                            locale=view.viewer.locale)


def _moved_on(cat: Catalog, view: OutcomeView, year: int, when: str) -> str:
    text = cat.text("outcome.moved_on")
    if view.settled is not None:
        settled = interval_text(view.settled, view.viewer, reference_year=year,
                                within="outcome.moved_on")
        # the second sentence is in the first one's language (the spec's words are English)
        same = cat if cat.translates("outcome.moved_on") else catalog_for(FALLBACK_LANGUAGE)
        text = f"{text} {same.text('outcome.moved_on.settled', answer=settled, date=when)}"
    return text


_PLAIN_KEYS = {
    OutcomeKind.ATTESTATION: "outcome.attestation",
    OutcomeKind.CONFLICT: "outcome.conflict",
    OutcomeKind.CONFLICTING_ATTESTATION: "outcome.conflicting_attestation",
    OutcomeKind.IDENTITY_UNVERIFIED: "outcome.identity_unverified",
    OutcomeKind.IDENTITY_SHARED: "outcome.identity_shared",
    OutcomeKind.IDENTITY_UNKNOWN: "outcome.identity_unknown",
    OutcomeKind.PASSED_ON: "outcome.passed_on",
    OutcomeKind.PASSED_ON_LATER: "outcome.passed_on_later",
}
_ANSWER_KEYS = {
    OutcomeKind.RECORDED: "outcome.recorded",
    OutcomeKind.BINDING: "outcome.binding",
    OutcomeKind.STEWARD_OVERRIDE: "outcome.steward_override",
    OutcomeKind.FIRST_CONFIRMATION: "outcome.first_confirmation",
    OutcomeKind.RECORDING: "outcome.recording",
    OutcomeKind.PENDING: "outcome.pending",
}


def _headline(cat: Catalog, view: OutcomeView, *, when: str, year: int) -> str:
    if view.kind is OutcomeKind.MOVED_ON:
        return _moved_on(cat, view, year, when)
    if view.kind in _PLAIN_KEYS:
        return cat.text(_PLAIN_KEYS[view.kind])
    key = _ANSWER_KEYS[view.kind]
    if view.kind in (OutcomeKind.RECORDING, OutcomeKind.PENDING) and view.answer is None:
        key += ".plain"  # a custom answer's dates, or a pick's before the core named them
    if view.kind in _SETTLED and view.answer is None:
        # bound, but the record names no date the bot can read (a binding status it does not
        # know): settled, in words that need neither the date nor who confirmed it
        return cat.text("outcome.settled")
    if view.kind is OutcomeKind.FIRST_CONFIRMATION and len(view.confirmed_by) > 1:
        key = "outcome.confirmations_so_far"
    names = names_for(view.confirmed_by, view.viewer, key)
    answer = interval_text(view.answer, view.viewer, reference_year=year,
                           within=key) if view.answer else ""
    return cat.text(key, answer=answer, names=names, date=when)


def custom_error_text(error: CustomError, viewer: Viewer) -> str:
    return catalog_of(viewer).text(f"custom.error.{error.value}")


def skip_text(skipped: SkippedCandidate, viewer: Viewer) -> str:
    """A skip reason in plain words: "Dana Whitfield cannot read this document, …"."""
    cat = catalog_of(viewer)
    return cat.text("escalation.skip_line",
                    person=clip(untrusted.line(skipped.person), PERSON_CHARS),
                    reason=cat.text(f"reason.{skipped.reason.value}"))


def skip_texts(skipped: tuple[SkippedCandidate, ...], viewer: Viewer) -> list[str]:
    """The skip reasons to list, at most MAX_SKIP_LINES, then "…and N more"."""
    cat = catalog_of(viewer)
    if not skipped:
        return [cat.text("escalation.nobody")]
    lines = [skip_text(entry, viewer) for entry in skipped[:MAX_SKIP_LINES]]
    if len(skipped) > MAX_SKIP_LINES:
        lines.append(cat.plural("escalation.more_skipped", len(skipped) - MAX_SKIP_LINES))
    return lines


def unanswered_text(unanswered: tuple[str, ...], viewer: Viewer, *,
                    key: str = "escalation.unanswered") -> str | None:
    """ "Asked, no answer: Tom Becker and Jonas Weber", joined in the viewer's locale (``key``
    names another "<label>: {names}" line). Names are clipped like the skip lines; at most
    MAX_SKIP_LINES are named, and fewer when the line would pass UNANSWERED_CHARS, so the count
    of the rest ("and 3 more people") is kept."""
    if not unanswered:
        return None
    cat = catalog_of(viewer)
    names = [clip(untrusted.line(name), PERSON_CHARS) for name in unanswered]
    line = ""
    for shown in range(min(len(names), MAX_SKIP_LINES), 0, -1):
        listed = names[:shown]
        if shown < len(names):
            listed.append(cat.plural("escalation.more_unanswered", len(names) - shown))
        line = cat.text(key, names=dates.names_list(listed, locale=cat.words_locale(key)))
        if text_length(line) <= UNANSWERED_CHARS:
            break
    return line


def confirmed_text(confirmed: tuple[str, ...], viewer: Viewer) -> str | None:
    """ "Confirmed so far: Sarah Chen", clipped like the unanswered line."""
    return unanswered_text(confirmed, viewer, key="escalation.confirmed")


def document_name(document: DocumentView, viewer: Viewer) -> str:
    """The document in plain text: its title, or for a steward who may not read it the neutral
    reference ("a document in the Legal workspace (clarification clr-00012)"); "the source
    document" when the core gave no title."""
    if document.withheld:
        return catalog_of(viewer).text("document.withheld", workspace=clip(
            untrusted.line(document.workspace or ""), PERSON_CHARS), reference=clip(
                untrusted.line(document.reference), PERSON_CHARS))
    title = untrusted.line(document.title)
    if not title:
        return catalog_of(viewer).text("document.untitled")
    return clip(title, TITLE_CHARS)


def names_a_document(document: DocumentView) -> bool:
    """Whether a card has a document to name: a title, a link or a neutral reference (a card
    answered before the core was read knows none, and shows no source line)."""
    return document.withheld or bool(document.url) or bool(untrusted.line(document.title))


def document_run(document: DocumentView, viewer: Viewer) -> Run:
    """The document inside a sentence: a link to it named as ``document_name`` says, or those
    words alone where there is no web link (a neutral reference, a link of another scheme)."""
    name = document_name(document, viewer)
    return Link(name, untrusted.web_url(document.url)) if linkable(document.url) else name


def reference_text(viewer: Viewer, key: str, reference: str) -> str:
    """ "Clarification clr_7f3a9c": a reference the core gave, on one clean line."""
    return catalog_of(viewer).text(key, id=clip(untrusted.line(reference), PERSON_CHARS))


def quoted_document(document: DocumentView, viewer: Viewer) -> str:
    """The document for a notification line: the title in quotes, or the neutral reference."""
    if document.withheld or not untrusted.line(document.title):
        return document_name(document, viewer)
    return catalog_of(viewer).text("document.quoted", title=document_name(document, viewer))


def escalation_body(view: StewardEscalationView) -> Runs:
    """Says truthfully why the steward is asked: the people asked did not answer in time, or
    nobody could be asked; the document as a link where there is one."""
    cat = catalog_of(view.viewer)
    document = document_run(view.document, view.viewer)
    if view.unanswered:
        return cat.runs("escalation.body_unanswered", document=document)
    if view.confirmed:
        return cat.runs("escalation.body_partial", document=document)
    return cat.runs("escalation.body", document=document)


@dataclass(frozen=True)
class QuorumText:
    fallback: str
    title: str
    body: Runs
    asked: str | None  # "Asked: Sarah Chen"
    missing: str  # "Even if everyone asked confirms, one more confirmation is still missing."
    next_step: str


def quorum_text(view: StewardQuorumView) -> QuorumText:
    """The unreachable-quorum notice's sentences."""
    cat = catalog_of(view.viewer)
    document = document_run(view.document, view.viewer)
    return QuorumText(
        fallback=cat.text("quorum.fallback",
                          document=quoted_document(view.document, view.viewer)),
        title=cat.text("quorum.title"),
        body=cat.runs("quorum.body", document=document, count=cat.count_word(view.required,
                                                                      for_key="quorum.body")),
        asked=unanswered_text(view.asked, view.viewer, key="quorum.asked"),
        missing=cat.plural("quorum.missing", view.missing),
        next_step=cat.text("quorum.next_step" if view.skipped else "quorum.next_step_unranked"))


def escalation_next_step(view: StewardEscalationView) -> str:
    """What to do next; with a neutral reference the link (when there is one) may need access
    the steward does not have yet."""
    cat = catalog_of(view.viewer)
    if view.document.withheld:
        return cat.text("escalation.next_step_link" if view.document.url
                        else "escalation.next_step_withheld")
    return cat.text("escalation.next_step")


def dead_letter_intro(view: DeadLetterDigestView) -> str:
    """The digest's opening line; it mentions unanswered people only when an item has some."""
    cat = catalog_of(view.viewer)
    if any(item.unanswered for item in view.items):
        return cat.plural("dead_letter.intro_unanswered", len(view.items))
    return cat.plural("dead_letter.intro", len(view.items))


def dead_letter_more(view: DeadLetterDigestView, shown: int) -> str | None:
    """The digest's closing line: the items past the message's room, and whether more may
    follow (a pass that did not reach the end of the core's list); None: nothing to add."""
    cat = catalog_of(view.viewer)
    hidden = len(view.items) - shown
    if view.whole:
        return cat.plural("dead_letter.more", hidden) if hidden else None
    return cat.plural("dead_letter.more_unread", hidden) if hidden else cat.text(
        "dead_letter.unread")


def severity_text(severity: Severity, viewer: Viewer) -> str:
    return catalog_of(viewer).text(f"severity.{severity.value}")


def steward_notice_body(view: StewardNoticeView, *, names: str) -> Runs:
    """ "A high-severity date question about <document> was sent to Sarah Chen. …"; ``names``
    come joined (and clipped) by the renderer."""
    cat = catalog_of(view.viewer)
    severity = severity_text(view.severity, view.viewer)
    document = document_run(view.document, view.viewer)
    if not view.asked:
        # Names can be missing (an erased attribution); the sentence still reads naturally.
        return cat.runs("steward_notice.body_unnamed", severity=severity, document=document)
    return cat.runs("steward_notice.body", severity=severity, document=document, names=names)


def steward_notices_item(view: StewardNoticeView, *, names: str) -> Runs:
    """One notice in a steward's list: "<document> · high, sent to Sarah Chen"; ``names``
    come joined (and clipped) by the renderer."""
    cat = catalog_of(view.viewer)
    severity = severity_text(view.severity, view.viewer)
    document = document_run(view.document, view.viewer)
    if not view.asked:
        return cat.runs("steward_notices.item_unnamed", severity=severity, document=document)
    return cat.runs("steward_notices.item", severity=severity, document=document, names=names)


@dataclass(frozen=True)
class ConflictText:
    fallback: str
    title: str
    body: Runs


def steward_conflict_text(view: StewardConflictView, *, names: str) -> ConflictText:
    """The conflict notice's sentences; ``names`` come joined (and clipped) by the renderer;
    the notification line names the document in plain text."""
    cat = catalog_of(view.viewer)
    plain = quoted_document(view.document, view.viewer)
    document = document_run(view.document, view.viewer)
    if view.bound:
        # A date is bound: saying "no correction has been made" would be false here.
        return ConflictText(
            fallback=cat.text("steward_conflict.bound_fallback", document=plain),
            title=cat.text("steward_conflict.bound_title"),
            body=cat.runs("steward_conflict.bound_body", names=names, document=document))
    return ConflictText(
        fallback=cat.text("steward_conflict.fallback", document=plain),
        title=cat.text("steward_conflict.title"),
        body=cat.runs("steward_conflict.body", names=names, document=document))
