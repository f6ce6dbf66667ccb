"""From the core's Clarification to the cards' view models (what a person may be shown)."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from datetime import datetime
from zoneinfo import ZoneInfo

from bot.chat import base_ref, person_order_token
from bot.core.models import (
    AuthorityRelation,
    BindingStatus,
    Clarification,
    DeliveryKind,
    Person,
    ReasonCode,
)
from bot.engine import evidence
from bot.engine.rbac import may_read
from bot.store.base import CardRecord, DeliveryKey
from cards.views import (
    CandidateView,
    DocumentView,
    QuestionView,
    SkippedCandidate,
    StewardConflictView,
    StewardEscalationView,
    StewardNoticeView,
    StewardQuorumView,
    Viewer,
)


def card_ref(key: DeliveryKey) -> str:
    """The opaque reference a card's buttons carry: names the delivery, grants nothing. Its
    tail is the recipient's order token (``bot.chat.person_order_token``, a keyed hash): the
    person's answers on any platform are ordered as one stream."""
    return (f"d.{hashlib.sha256(key.token().encode()).hexdigest()[:24]}."
            f"{person_order_token(key.person_id)}")


# a person's zone as ``bot.engine.zones`` decided it (``PersonZone.zone``), or its IANA name as
# a card's record kept it
Zone = ZoneInfo | str


def viewer(person: Person, zone: Zone) -> Viewer:
    """Whom a message is for: the core's locale for the person (their platform's replaces it
    when it is sent) and their zone, never the core's record alone (``bot.engine.zones``)."""
    return Viewer(locale=person.locale, time_zone=zone if isinstance(zone, str) else zone.key)


def card_zone(cards: list[CardRecord], person_id: str, *,
              clicked: tuple[str, str | None] = ("", None)) -> str | None:
    """The zone the person's cards among ``cards`` were written in (the ``clicked`` one, as
    platform and message reference, first; then their question cards), None when none of
    them says: an outcome shown on them reads as they did."""
    theirs = sorted((c for c in cards if c.delivery.person_id == person_id and c.time_zone),
                    key=lambda c: ((c.platform, c.message_ref) != clicked,
                                   c.delivery.kind != DeliveryKind.QUESTION.value))
    return theirs[0].time_zone if theirs else None


def document(c: Clarification) -> DocumentView:
    return DocumentView(title=c.document.title, url=c.document.url)


def steward_document(c: Clarification, steward: Person) -> DocumentView:
    """The document as a steward message names it: its title and link when the steward passes
    the RBAC gate, otherwise a neutral reference (workspace name and clarification id), since a
    title (and a URL, which often carries the file name) is document content too."""
    return shown_to(c, steward)[1]


def shown_to(c: Clarification, person: Person) -> tuple[str, DocumentView]:
    """The question and the document as ``person`` may see them: both in full when they pass
    the RBAC gate, otherwise no question and the neutral reference."""
    if may_read(person, acl=c.document.acl, tenant_id=c.tenant_id).allowed:
        return c.question, document(c)
    return "", DocumentView.neutral(workspace=c.workspace.name or c.workspace.workspace_id,
                                    reference=c.id)


def question(
    c: Clarification, *, key: DeliveryKey, person: Person, zone: Zone, now: datetime
) -> QuestionView:
    """The full question: only for someone who passed the RBAC gate."""
    return question_view(c, card_ref=card_ref(key), person=person, zone=zone, now=now)


def question_view(
    c: Clarification, *, card_ref: str, person: Person, zone: Zone, now: datetime
) -> QuestionView:
    """``question`` for a card already delivered, named by the reference its buttons carry.

    The span excerpt is filled only when ``person`` passes the RBAC gate for the source (the
    engine asks nobody who fails it, but a view must not rely on its caller for that)."""
    return QuestionView(
        clarification_id=c.id,
        card_ref=card_ref,
        question=c.question,
        candidates=tuple(
            CandidateView(
                index=x.index, label=x.label, valid_from=x.valid_from, valid_to=x.valid_to
            )
            for x in c.candidates
        ),
        document=document(c),
        severity=c.severity,
        required_confirmations=c.quorum_policy.required_confirmations,
        viewer=viewer(person, zone),
        asked_at=now,
        relation=relation(c, person.person_id),
        excerpt=c.span_excerpt if may_read(person, acl=c.document.acl,
                                           tenant_id=c.tenant_id).allowed else "",
    )


def as_sent(view: QuestionView, card: CardRecord | None, c: Clarification, *,
            now: datetime) -> QuestionView:
    """A rebuilt question card with what it said when it was sent (the store's card record,
    ``CardRecord.moves_on_at``): when the question moves on, whether to the steward, and its
    reminder once that went out, as long as the question still ``waits_on`` the card's person. A
    card that no longer waits on them (settled, answered or declined by them, or its move-on time
    passed), or one with no record of it, says none of that: a card never shows a move-on time or a
    reminder that is no longer true. Its times read in the zone the card was written in, when its
    record says."""
    if card is not None and card.time_zone:
        view = replace(view, viewer=replace(view.viewer, time_zone=card.time_zone))
    if card is None or card.moves_on_at is None or not waits_on(c, card, now=now):
        return replace(view, moves_on_at=None, moves_on_to_steward=False, reminded=False)
    return replace(view, moves_on_at=card.moves_on_at,
                   moves_on_to_steward=card.moves_on_to_steward, reminded=card.reminded)


def waits_on(c: Clarification, card: CardRecord, *, now: datetime) -> bool:
    """Whether the question still waits on the person of ``card`` there: not settled or
    dead-lettered, not answered or declined by them, and not past the card's move-on time
    (settled by the record's evidence, whatever its state word: ``bot.engine.evidence``)."""
    person_id = card.delivery.person_id
    if evidence.closed(c):
        return False
    if any(r.responder == person_id for r in c.responses) or declined(c, person_id):
        return False
    return card.moves_on_at is not None and now < card.moves_on_at


def sent_card(cards: list[CardRecord], ref: str) -> CardRecord | None:
    """The question card a button's reference names (``ref``, with or without its recipient
    tag), among a clarification's card records."""
    wanted = base_ref(ref)
    return next((card for card in cards if card.delivery.kind == DeliveryKind.QUESTION.value
                 and card_ref(card.delivery) == wanted), None)


def relation(c: Clarification, person_id: str) -> AuthorityRelation | None:
    """The person's relation to the target as the core ranked them, if it says."""
    return next((r.relation for r in c.relations if r.person_id == person_id), None)


def declined(c: Clarification, person_id: str) -> bool:
    """The person said they are not the right one (a skip with that code on the core's trail)."""
    return any(ev.type == "skipped" and ev.person_id == person_id
               and ev.reason_code is ReasonCode.CANDIDATE_DECLINED for ev in c.events)


def escalation(
    c: Clarification,
    *,
    key: DeliveryKey,
    steward: Person,
    skipped: tuple[SkippedCandidate, ...],
    unanswered: list[str] | None = None,
    confirmed: list[str] | None = None,
    zone: Zone,
) -> StewardEscalationView:
    """The redacted escalation: document link, who did not answer, who confirmed a quorum that
    is still short, skip reasons; no span text. A steward who may not read the document gets
    the neutral reference with the link still on it (spec §3.3: "document link, no span
    text"): no title, no question, but what they need to act."""
    shown = steward_document(c, steward)
    if shown.withheld:
        shown = replace(shown, url=c.document.url)
    return StewardEscalationView(
        clarification_id=c.id,
        card_ref=card_ref(key),
        document=shown,
        severity=c.severity,
        skipped=skipped,
        unanswered=tuple(unanswered or ()),
        confirmed=tuple(confirmed or ()),
        viewer=viewer(steward, zone),
    )


def quorum_unreachable(
    c: Clarification, *, key: DeliveryKey, steward: Person, asked: list[str], missing: int,
    skipped: tuple[SkippedCandidate, ...], zone: Zone,
) -> StewardQuorumView:
    """Too few people can confirm a critical question: whom it was asked (display names), how
    many confirmations are still missing, skip reasons; no span text."""
    return StewardQuorumView(
        clarification_id=c.id, card_ref=card_ref(key), document=steward_document(c, steward),
        severity=c.severity, required=c.quorum_policy.required_confirmations, missing=missing,
        asked=tuple(asked),
        skipped=skipped,
        viewer=viewer(steward, zone),
        candidates=override_candidates(c, steward) if c.quorum_policy.allow_steward_override
        else ())


def override_candidates(c: Clarification, steward: Person) -> tuple[CandidateView, ...]:
    """What a steward may override with: every candidate, or nothing for a steward who fails
    the RBAC gate (an answer, an override included, is only taken from someone who may read
    the source, so a "Decide" button would only be refused); the core checks the steward's
    rights again when the override arrives."""
    if not may_read(steward, acl=c.document.acl, tenant_id=c.tenant_id).allowed:
        return ()
    return tuple(CandidateView(index=x.index, label=x.label, valid_from=x.valid_from,
                               valid_to=x.valid_to)
                 for x in c.candidates)


def conflict(
    c: Clarification, *, steward: Person, names: dict[str, str], zone: Zone,
    key: DeliveryKey | None = None
) -> StewardConflictView:
    responders = tuple(
        dict.fromkeys(
            names.get(r.responder, r.responder)
            for r in c.responses
            if r.binding_status in (BindingStatus.BINDING_CANDIDATE, BindingStatus.CONFLICTING)
        )
    )
    return StewardConflictView(
        clarification_id=c.id,
        document=steward_document(c, steward),
        severity=c.severity,
        responders=responders,
        viewer=viewer(steward, zone),
        card_ref=card_ref(key) if key is not None else "",
        candidates=override_candidates(c, steward) if key is not None else (),
    )


def late_conflict(c: Clarification, *, steward: Person, responder: str, zone: Zone
                  ) -> StewardConflictView:
    """After binding: ``responder`` (a display name) answered differently from the bound date;
    names and the document link only."""
    return StewardConflictView(clarification_id=c.id, document=steward_document(c, steward),
                               severity=c.severity, responders=(responder,),
                               viewer=viewer(steward, zone), bound=True)


def notice(c: Clarification, *, key: DeliveryKey, steward: Person, asked: list[str],
           zone: Zone) -> StewardNoticeView:
    """High severity: the steward hears whom a question went to; no span text, no dates."""
    return StewardNoticeView(clarification_id=c.id, card_ref=card_ref(key),
                             document=steward_document(c, steward), severity=c.severity,
                             asked=tuple(asked), viewer=viewer(steward, zone))


def unanswered(c: Clarification) -> list[str]:
    """People asked (a card or a digest entry) who have not answered: ids, in asking order.
    From the core's delivery records; a core that keeps none says whom it counts as asked
    (the steward's own escalation is not a question to the ranking)."""
    answered = {r.responder for r in c.responses}
    if c.deliveries:
        asked = [d.person_id for d in c.deliveries
                 if d.kind in (DeliveryKind.QUESTION, DeliveryKind.DIGEST)]
    else:
        asked = [p for p in c.asked if p != c.workspace.steward_id]
    return [p for p in dict.fromkeys(asked) if p not in answered]
