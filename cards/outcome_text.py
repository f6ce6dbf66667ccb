"""The outcome's sentences: what an answer did, said honestly ("✓ Recorded as evidence: 12 June,
confirmed by Sarah Chen, 3 Jul 2026."), with the lines that support it (the answer given, the
question asked).
"""

from __future__ import annotations

from dataclasses import dataclass

from cards import dates
from cards.catalog import FALLBACK_LANGUAGE, Catalog, catalog_for
from cards.text import catalog_of, interval_text, names_for, question_text
from cards.views import OutcomeKind, OutcomeView


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
