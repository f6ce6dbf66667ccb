"""The sentences every card shares, built from a view and the catalog, for both renderers: names
joined in a message's language, dates and intervals, the document named or withheld, and the
question card's and its reminder's own lines.

Renderers decide structure and markup; every word a person reads is decided here and in the two
modules beside it: ``cards.outcome_text`` (what an answer did) and ``cards.steward_text`` (the
steward's escalations, notices and digests).
"""

from __future__ import annotations

from datetime import datetime

from babel.dates import format_time

from bot.core.models import Severity
from cards import dates, untrusted
from cards.catalog import FALLBACK_LANGUAGE, Catalog, catalog_for
from cards.platform_limits import clip
from cards.untrusted import Link, Run, linkable
from cards.views import (
    AnswerView,
    CandidateView,
    CustomError,
    DocumentView,
    QuestionView,
    ReminderView,
    Viewer,
)

QUESTION_CHARS = 1000
TITLE_CHARS = 200
MAX_CANDIDATE_BUTTONS = 20
PERSON_CHARS = 100
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


def custom_error_text(error: CustomError, viewer: Viewer) -> str:
    return catalog_of(viewer).text(f"custom.error.{error.value}")


def severity_text(severity: Severity, viewer: Viewer) -> str:
    return catalog_of(viewer).text(f"severity.{severity.value}")


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
