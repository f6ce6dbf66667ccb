"""What a card shows after an answer: outcome views built from the core's records.

Pure functions of the clarification, the person the card is for and names already looked up;
the answer service fetches, these decide (spec §7 wording lives in cards/).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from typing import Any

from bot.core.models import (
    AnswerOutcome,
    AnswerResult,
    BindingStatus,
    Clarification,
    Interval,
    Person,
    ResponseRecord,
)
from bot.engine import evidence, views
from bot.engine.aliases import Unlinked
from bot.store.base import CardRecord
from cards.views import (
    AnswerView,
    DocumentView,
    OutcomeKind,
    OutcomeView,
    QuestionView,
    QuorumBanner,
    Viewer,
    outcome_kind,
)


def answer_view(interval: Interval | None) -> AnswerView | None:
    if interval is None:
        return None
    return AnswerView(valid_from=interval.valid_from, valid_to=interval.valid_to)


def custom_answer_view(start: date | None, last: date | None) -> AnswerView:
    """A free-form answer as picked: ``last`` is the last valid day (the end is exclusive)."""
    def midnight(day: date) -> datetime:
        return datetime(day.year, day.month, day.day, tzinfo=UTC)

    return AnswerView(valid_from=midnight(start) if start else None,
                      valid_to=midnight(last + timedelta(days=1)) if last else None)


def after_answer(c: Clarification, fresh: Clarification, person: Person,
                 result: AnswerResult | None, *, names: list[str], now: datetime,
                 moved_on: bool, zone: views.Zone) -> OutcomeView:
    """The answering person's card: what their answer did, or that the question moved on."""
    base = _base(c, person, now, zone)
    settled = answer_view(fresh.bound_interval)
    if moved_on or result is None:
        # "settled … on <date>" is the binding's date, not the late answer's
        return OutcomeView(kind=OutcomeKind.MOVED_ON, settled=settled,
                           recorded_at=fresh.bound_fact_version_tx, **base)
    own = _own_response(fresh, result, person)
    kind = outcome_kind(result.outcome,
                        required_confirmations=c.quorum_policy.required_confirmations)
    if kind is OutcomeKind.ATTESTATION and own is not None:
        kind = _own_by_evidence(fresh, own, person)
    return OutcomeView(kind=kind, answer=answer_view(own.interval) if own else None,
                       confirmed_by=tuple(names), recorded_at=now,
                       remaining=result.quorum_remaining, settled=settled, **base)


def _own_by_evidence(fresh: Clarification, own: ResponseRecord, person: Person
                     ) -> OutcomeKind:
    """An answer the core's outcome word calls an attestation (also what an outcome the bot
    does not know reads as), told from the record instead where it says more (evidence before
    words): the binding response is shown bound, one the quorum counts as a confirmation."""
    bound = evidence.binding(fresh)
    if bound is not None and bound.response_id == own.response_id:
        return _bound_kind(fresh)
    if person.person_id in fresh.quorum.confirmed_by and evidence.standing(
            fresh) is evidence.Standing.OPEN:
        return OutcomeKind.FIRST_CONFIRMATION
    return OutcomeKind.ATTESTATION


def _own_response(fresh: Clarification, result: AnswerResult, person: Person
                  ) -> ResponseRecord | None:
    """The response the answer recorded: by its id, or (a core that leaves the id out) the
    person's latest."""
    for r in reversed(fresh.responses):
        if (r.response_id == result.response_id if result.response_id
                else r.responder == person.person_id):
            return r
    return None


def card_state(c: Clarification, person: Person, card: CardRecord, *, names: list[str],
               now: datetime, zone: views.Zone) -> OutcomeView | QuestionView | None:
    """Another recipient's card after someone answered; None: leave it as it is. Where the
    clarification stands is read from its evidence first (``bot.engine.evidence``): a date
    bound under a state word the bot does not know shows as bound. ``names``: the display
    names of ``evidence.named(c)``. A card that stays a question says when it moves on (and
    that it was reminded) as it did when sent (``views.as_sent``). ``zone``: the person's,
    read as the card was written (``CardRecord.time_zone``) when its record says."""
    zone = card.time_zone or zone
    base = _base(c, person, now, zone)
    confirmed = tuple(names)
    if views.declined(c, person.person_id):
        return None  # their card says it was passed on; it stays so
    standing = evidence.standing(c)
    if standing is evidence.Standing.BOUND:
        return OutcomeView(kind=_bound_kind(c), answer=answer_view(c.bound_interval),
                           confirmed_by=confirmed, recorded_at=now, **base)
    if standing is evidence.Standing.CONFLICTED:
        return OutcomeView(kind=OutcomeKind.CONFLICT, **base)
    mine = [r for r in evidence.active(c) if r.responder == person.person_id]
    if mine:  # their own answer: its outcome while it counts to the quorum, else as it is
        if person.person_id not in c.quorum.confirmed_by:
            return None
        return OutcomeView(kind=OutcomeKind.FIRST_CONFIRMATION,
                           answer=answer_view(mine[-1].interval), confirmed_by=confirmed,
                           remaining=evidence.remaining(c), **base)
    found = evidence.confirmation(c)
    if found is None:
        return None
    question = views.as_sent(views.question(c, key=card.delivery, person=person, zone=zone,
                                            now=now), card, c, now=now)
    banner = QuorumBanner(answer=answer_view(found.interval) or AnswerView(),
                          confirmed_by=confirmed, certain=found.certain)
    return replace(question, banner=banner)


def _bound_kind(c: Clarification) -> OutcomeKind:
    """What bound it: a steward's decision, a quorum's confirmations, or one answer."""
    found = evidence.binding(c)
    if found is not None and found.binding_status is BindingStatus.STEWARD_OVERRIDE:
        return OutcomeKind.STEWARD_OVERRIDE
    return (OutcomeKind.BINDING if c.quorum_policy.required_confirmations > 1
            else OutcomeKind.RECORDED)


def passed_on(c: Clarification, person: Person, *, now: datetime, zone: views.Zone,
              later: bool = False) -> OutcomeView:
    """The card of a person who said they are not the right one: it was passed on, or (``later``:
    the core cannot start the next turn early) will be when their turn ends."""
    kind = OutcomeKind.PASSED_ON_LATER if later else OutcomeKind.PASSED_ON
    return OutcomeView(kind=kind, **_base(c, person, now, zone))


def moved_on(c: Clarification, person: Person, *, now: datetime, zone: views.Zone
             ) -> OutcomeView:
    """A decline of a question already settled: nothing is passed on."""
    return OutcomeView(kind=OutcomeKind.MOVED_ON, settled=answer_view(c.bound_interval),
                       recorded_at=c.bound_fact_version_tx, **_base(c, person, now, zone))


def as_the_core_said(c: Clarification, person: Person, result: AnswerResult, *,
                     chosen: AnswerView | None, now: datetime, zone: views.Zone
                     ) -> OutcomeView:
    """The outcome from the core's answer alone, when the core is gone again right after."""
    required = c.quorum_policy.required_confirmations
    kind = outcome_kind(result.outcome, required_confirmations=required)
    if kind is OutcomeKind.ATTESTATION and not result.confirmers_derived \
            and person.person_id in result.confirmed_by:
        # the core counts the answer as a confirmation whatever its outcome word (one the bot
        # does not know reads as an attestation): evidence before words
        bound = result.quorum_satisfied or result.fact_version_tx is not None
        kind = (outcome_kind(AnswerOutcome.BOUND, required_confirmations=required) if bound
                else OutcomeKind.FIRST_CONFIRMATION)
    # other confirmers' names need the core; the person's own is known
    names = (person.display_name,) if person.person_id in result.confirmers(
        person.person_id) else ()
    return OutcomeView(kind=kind, answer=chosen, confirmed_by=names, recorded_at=now,
                       remaining=result.quorum_remaining,
                       settled=answer_view(result.bound_interval),
                       **_base(c, person, now, zone))


def placeholder(kind: OutcomeKind, clarification_id: str, *, answer: AnswerView | None,
                now: datetime) -> OutcomeView:
    """"Being recorded" or "identity not verified", when nothing else is known."""
    return OutcomeView(kind=kind, clarification_id=clarification_id, question="",
                       document=DocumentView(title="", url=""), viewer=Viewer(), as_of=now,
                       answer=answer)


UNLINKED_KINDS = {
    Unlinked.SHARED: OutcomeKind.IDENTITY_SHARED,
    Unlinked.UNKNOWN: OutcomeKind.IDENTITY_UNKNOWN,
    Unlinked.UNVERIFIED: OutcomeKind.IDENTITY_UNVERIFIED,
}


def unlinked(why: Unlinked, clarification_id: str, *, now: datetime) -> OutcomeView:
    """The identity card of a refused answer, naming why the chat identity answers for
    nobody: shared by several people, linked to nobody, or not verified."""
    return placeholder(UNLINKED_KINDS[why], clarification_id, answer=None, now=now)


def _base(c: Clarification, person: Person, now: datetime, zone: views.Zone
          ) -> dict[str, Any]:
    """What every outcome names: the question and the document only for someone who passes the
    RBAC gate now (a view must not rely on its caller for that), else the neutral reference;
    its times read in the person's ``zone``."""
    question, document = views.shown_to(c, person)
    return {"clarification_id": c.id, "question": question, "document": document,
            "viewer": views.viewer(person, zone), "as_of": now}
