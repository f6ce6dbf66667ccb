"""Answers: a verified button callback → a responder the core knows → the core, exactly once.

Adapters verify the request (Slack signature, Bot Framework token), acknowledge it, and hand over
a ``Callback`` holding only what the verified request says (tenant, chat identity) and the opaque
references the card carried. Here the chat identity becomes a PERSON through the core (only a
verified enterprise identity answers), the person's rights are read at answer time, and the answer
is written to the durable outbox before it is forwarded, so that an answer that reached the bot is
never lost, and a double click, a platform retry or a replayed payload reaches the core once.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from datetime import date, datetime, timedelta
from enum import StrEnum

import structlog

from bot import outcomes
from bot.audit import Audit, AuditEvent
from bot.channel import Channel, ChannelError
from bot.clock import Clock
from bot.core import errors as e
from bot.core import models as m
from bot.core.client import CoreClient
from bot.engine.people import display_names
from bot.engine.rbac import may_read, role_in
from bot.metrics import REGISTRY
from bot.store.base import CardRecord, DeliveryKey, Store
from cards.views import AnswerView, OutcomeKind, OutcomeView, QuestionView

log = structlog.get_logger("clarify.answers")
DEDUPE_SECONDS = 7 * 24 * 3600
OUTBOX_LEASE_SECONDS = 60
OUTBOX_BACKOFF_CAP = timedelta(minutes=5)
# Tells the workspace steward about a conflict (the engine's JobHandler.notify_conflict).
ConflictNotifier = Callable[[m.Clarification], Awaitable[None]]
# Tells the steward that a responder's answer after binding differs from the bound date
# (the engine's JobHandler.notify_late_conflict); called with the responder's person id.
LateConflictNotifier = Callable[[m.Clarification, str], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Callback:
    """A verified callback, reduced to facts: whom it is from, which card, which answer."""

    platform: str  # "slack" | "teams"
    tenant_id: str | None  # from the verified workspace → tenant mapping; None: unmapped
    user_id: str
    team_id: str | None  # Slack team, or None
    enterprise_id: str | None  # Slack Enterprise Grid, or None
    aad_tenant_id: str | None  # Teams
    clarification_id: str
    card_ref: str
    message_ref: str | None  # the clicked card, in the adapter's own form
    answer_index: int | None = None
    custom_from: date | None = None
    custom_to: date | None = None
    custom_note: str = ""
    received_at: datetime | None = None

    def identity(self) -> m.SlackIdentity | m.TeamsIdentity:
        if self.platform == "teams":
            return m.TeamsIdentity(aad_object_id=self.user_id, tenant_id=self.aad_tenant_id or "")
        return m.SlackIdentity(user_id=self.user_id, team_id=self.team_id,
                               enterprise_id=self.enterprise_id)

    def fingerprint(self) -> str:
        """The answer itself, hashed: equal answers from one person are one answer."""
        if self.answer_index is not None:
            raw = f"i:{self.answer_index}"
        else:
            raw = f"c:{self.custom_from}:{self.custom_to}:{self.custom_note}"
        return hashlib.sha256(raw.encode()).hexdigest()[:32]

    def to_json(self) -> str:
        body = asdict(self)
        for name in ("custom_from", "custom_to", "received_at"):
            value = body[name]
            body[name] = value.isoformat() if value is not None else None
        return json.dumps(body)

    @classmethod
    def from_json(cls, raw: str) -> Callback:
        body = json.loads(raw)
        for name in ("custom_from", "custom_to"):
            if body[name] is not None:
                body[name] = date.fromisoformat(body[name])
        if body["received_at"] is not None:
            body["received_at"] = datetime.fromisoformat(body["received_at"])
        return cls(**body)


class Verdict(StrEnum):
    FORWARDED = "forwarded"  # the core took it; ``result`` says what it did
    QUEUED = "queued"  # the core is unreachable: in the outbox, the card says "being recorded"
    DUPLICATE = "duplicate"  # the same person's same answer again: not forwarded a second time
    UNVERIFIED = "unverified"  # RESPONDER_NOT_AUTHORISED: nothing forwarded
    OUT_OF_SCOPE = "out_of_scope"  # TENANT_SCOPE_MISMATCH: nothing forwarded
    NOT_ALLOWED = "not_allowed"  # unknown clarification, no read permission, refused by the core
    INVALID = "invalid"  # the core could not normalise the free-form answer: nothing bound


@dataclass(frozen=True, slots=True)
class Receipt:
    verdict: Verdict
    view: OutcomeView | None = None  # what the clicked card should now show
    result: m.AnswerResult | None = None


@dataclass
class AnswerService:
    core: CoreClient
    store: Store
    channels: dict[str, Channel]
    audit: Audit
    clock: Clock
    # Without it the steward hears of a conflict only when the job comes back, a window later.
    on_conflict: ConflictNotifier | None = None
    # After binding no job comes back: without it the steward never hears of a late conflict.
    on_late_conflict: LateConflictNotifier | None = None

    async def receive(self, cb: Callback) -> Receipt:
        """Handle one callback after the platform's acknowledgement."""
        if cb.tenant_id is None:
            await self._refuse(cb, m.ReasonCode.TENANT_SCOPE_MISMATCH,
                               "A callback came from a workspace mapped to no tenant.")
            return Receipt(Verdict.OUT_OF_SCOPE)
        entry_id = f"{cb.clarification_id}|{cb.fingerprint()}|{uuid.uuid4().hex[:12]}"
        # durable first: from here on the answer survives a crash or an unreachable core
        now = self.clock.now()
        await self.store.outbox_put(entry_id, cb.to_json(), now=now)
        # held by this attempt for a lease, so that the outbox loop does not forward it too
        await self.store.outbox_retry(entry_id, at=now + timedelta(seconds=OUTBOX_LEASE_SECONDS))
        return await self._process(entry_id, cb, first=True)

    async def flush_outbox(self, *, limit: int = 50) -> int:
        """Forward queued answers whose time has come; returns how many were settled."""
        settled = 0
        entries = await self.store.outbox_claim(now=self.clock.now(),
                                                lease_seconds=OUTBOX_LEASE_SECONDS, limit=limit)
        for entry in entries:
            cb = Callback.from_json(entry.payload)
            receipt = await self._process(entry.entry_id, cb, first=False)
            if receipt.verdict is Verdict.QUEUED:
                delay = min(timedelta(seconds=5 * 2 ** min(entry.attempts, 10)), OUTBOX_BACKOFF_CAP)
                await self.store.outbox_retry(entry.entry_id, at=self.clock.now() + delay)
                continue
            settled += 1
            if receipt.view is not None and cb.message_ref is not None:
                await self._update_clicked(cb, receipt.view)
        return settled

    # ---------------------------------------------------------------- the pipeline

    async def _process(self, entry_id: str, cb: Callback, *, first: bool) -> Receipt:
        try:
            receipt = await self._forward(entry_id, cb, first=first)
        except (e.CoreTransportError, e.ServerError, e.RateLimited) as exc:
            log.warning("answers.core_unreachable", error=type(exc).__name__)
            REGISTRY.inc("clarify_answers_total", verdict=Verdict.QUEUED.value)
            return Receipt(Verdict.QUEUED, self._recording_view(cb))
        await self.store.outbox_done(entry_id)
        REGISTRY.inc("clarify_answers_total", verdict=receipt.verdict.value)
        return receipt

    async def _forward(self, entry_id: str, cb: Callback, *, first: bool) -> Receipt:
        assert cb.tenant_id is not None
        person = await self._responder(cb)
        if person is None:
            return Receipt(Verdict.UNVERIFIED, self._unverified_view(cb))
        try:
            c = await self.core.get_clarification(clarification_id=cb.clarification_id)
        except e.ClarificationNotFound:
            return Receipt(Verdict.NOT_ALLOWED)
        if c.tenant_id != cb.tenant_id:
            await self._refuse(cb, m.ReasonCode.TENANT_SCOPE_MISMATCH,
                               "A callback named a clarification of another tenant.")
            return Receipt(Verdict.OUT_OF_SCOPE)
        if not may_read(person, acl=c.document.acl, tenant_id=c.tenant_id).allowed:
            await self._refuse(cb, m.ReasonCode.RESPONDER_NOT_AUTHORISED,
                               "The responder may not read this clarification's source.",
                               to_core=True)
            return Receipt(Verdict.NOT_ALLOWED)
        if first and await self._duplicate(cb, person):
            return Receipt(Verdict.DUPLICATE)
        settled_before = c.state is m.ClarificationState.ANSWERED
        request = _request(cb, person, rights=role_in(person, c.workspace.workspace_id),
                           request_id=_request_id(entry_id))
        try:
            answered = await self.core.answer_clarification(clarification_id=c.id,
                                                            request=request)
        except (e.AnswerUnnormalisable, e.AnswerIndexOutOfRange):
            await self.store.swap_latest("answer", _who(cb, person), "", ttl_seconds=1)
            return Receipt(Verdict.INVALID)
        except e.AlreadyAnswered:
            return Receipt(Verdict.FORWARDED, await self._view(c, person, None, moved_on=True))
        except e.PermissionDenied:
            return Receipt(Verdict.NOT_ALLOWED)
        result = answered.result
        # the core has it: never forwarded again, or a replay could supersede a later answer
        await self.store.outbox_done(entry_id)
        await self._audit_answer(c, person, cb, result)
        fresh: m.Clarification | None = None
        try:  # one read of the clarification after the answer serves every follow-up
            fresh = await self.core.get_clarification(clarification_id=c.id)
            view = await self._view(c, person, result, moved_on=settled_before, fresh=fresh)
            await self._refresh(fresh, except_ref=cb.message_ref)
        except (e.CoreTransportError, e.ServerError, e.RateLimited) as exc:
            log.warning("answers.follow_up_failed", error=type(exc).__name__)
            view = self._taken_view(c, person, cb, result)
        await self._tell_steward(c.id, fresh, result, responder=person.person_id)
        return Receipt(Verdict.FORWARDED, view, result)

    async def _tell_steward(self, clarification_id: str, fresh: m.Clarification | None,
                            result: m.AnswerResult, *, responder: str) -> None:
        """A conflict reaches the steward now: before binding one notice per clarification,
        after binding (a conflicting attestation) one per late responder; both are idempotent."""
        conflicted = result.state is m.ClarificationState.CONFLICTED
        late = result.outcome is m.AnswerOutcome.CONFLICTING_ATTESTATION
        if not (conflicted and self.on_conflict) and not (late and self.on_late_conflict):
            return
        try:
            if fresh is None:  # the follow-up read failed: one more try for the steward's sake
                fresh = await self.core.get_clarification(clarification_id=clarification_id)
            if conflicted and self.on_conflict is not None:
                await self.on_conflict(fresh)
            elif late and self.on_late_conflict is not None:
                await self.on_late_conflict(fresh, responder)
        except e.CoreError as exc:  # conflicted: the worker's next pass over the job tells them
            log.warning("answers.steward_not_told", error=type(exc).__name__, late=late)

    async def _responder(self, cb: Callback) -> m.Person | None:
        """The verified PERSON behind the chat identity, or None, refused with its reason:
        ALIAS_AMBIGUOUS for a chat id several people claim, else RESPONDER_NOT_AUTHORISED."""
        assert cb.tenant_id is not None
        try:
            resolved = await self.core.resolve_person(tenant_id=cb.tenant_id,
                                                      identity=cb.identity())
        except e.AliasAmbiguous:  # one chat id claimed by several people: nobody answers by it
            await self._refuse(cb, m.ReasonCode.ALIAS_AMBIGUOUS,
                               "The chat identity is claimed by more than one person; "
                               "nothing was forwarded.", to_core=True)
            return None
        except (e.PersonNotFound, e.TenantScopeMismatch):
            resolved = None
        if resolved is None or not resolved.verified:
            await self._refuse(cb, m.ReasonCode.RESPONDER_NOT_AUTHORISED,
                               "The chat identity is not a verified enterprise identity; "
                               "nothing was forwarded.", to_core=True)
            return None
        return resolved.person

    async def _duplicate(self, cb: Callback, person: m.Person) -> bool:
        previous = await self.store.swap_latest("answer", _who(cb, person), cb.fingerprint(),
                                                ttl_seconds=DEDUPE_SECONDS)
        return previous == cb.fingerprint()

    # ---------------------------------------------------------------- card views

    async def _view(self, c: m.Clarification, person: m.Person, result: m.AnswerResult | None,
                    *, moved_on: bool, fresh: m.Clarification | None = None) -> OutcomeView:
        """The answering person's card; ``fresh`` is the clarification after the answer."""
        if fresh is None:
            fresh = await self.core.get_clarification(clarification_id=c.id)
        names = await self._names(result.confirmed_by) if result is not None else []
        return outcomes.after_answer(c, fresh, person, result, names=names,
                                     now=self.clock.now(), moved_on=moved_on)

    async def refresh_settled(self, clarification_id: str) -> int:
        """Every delivered card of a clarification that was settled elsewhere (core CLI, API)."""
        return await self.refresh_cards(clarification_id, except_ref=None)

    async def refresh_cards(self, clarification_id: str, *, except_ref: str | None) -> int:
        """Show every other delivered card of the clarification its new state."""
        c = await self.core.get_clarification(clarification_id=clarification_id)
        return await self._refresh(c, except_ref=except_ref)

    async def _refresh(self, c: m.Clarification, *, except_ref: str | None) -> int:
        cards = await self.store.cards(c.id)
        updated = 0
        for card in cards:
            if card.message_ref == except_ref:
                continue  # the clicked card is the adapter's
            if card.delivery.kind != m.DeliveryKind.QUESTION.value:
                continue  # digest entries (recorded as such) are never rewritten
            view = await self._card_view(c, card)
            if view is None:
                continue
            try:
                await self.channels[card.platform].update(card, view)
                updated += 1
            except (ChannelError, KeyError) as exc:
                log.warning("answers.card_update_failed", error=type(exc).__name__)
        return updated

    async def _card_view(self, c: m.Clarification, card: CardRecord
                         ) -> OutcomeView | QuestionView | None:
        person = await self.core.get_person(person_id=card.delivery.person_id,
                                            tenant_id=c.tenant_id)
        names = await self._names(c.quorum.confirmed_by)
        return outcomes.card_state(c, person, card.delivery, names=names, now=self.clock.now())

    async def _names(self, person_ids: list[str]) -> list[str]:
        names = await display_names(self.core, person_ids)
        return [names.get(person_id, person_id) for person_id in person_ids]

    def _taken_view(self, c: m.Clarification, person: m.Person, cb: Callback,
                    result: m.AnswerResult) -> OutcomeView:
        chosen = next((x for x in c.candidates if x.index == cb.answer_index), None)
        answer = AnswerView(valid_from=chosen.valid_from, valid_to=chosen.valid_to) \
            if chosen else _cb_answer(cb)
        return outcomes.as_the_core_said(c, person, result, chosen=answer, now=self.clock.now())

    def _recording_view(self, cb: Callback) -> OutcomeView:
        return outcomes.placeholder(OutcomeKind.RECORDING, cb.clarification_id,
                                    answer=_cb_answer(cb), now=self.clock.now())

    def _unverified_view(self, cb: Callback) -> OutcomeView:
        return outcomes.placeholder(OutcomeKind.IDENTITY_UNVERIFIED, cb.clarification_id,
                                    answer=None, now=self.clock.now())

    async def _update_clicked(self, cb: Callback, view: OutcomeView) -> None:
        assert cb.message_ref is not None
        card = CardRecord(delivery=DeliveryKey(cb.clarification_id, cb.user_id, 0, "question"),
                          platform=cb.platform, message_ref=cb.message_ref)
        try:
            await self.channels[cb.platform].update(card, view)
        except (ChannelError, KeyError) as exc:
            log.warning("answers.card_update_failed", error=type(exc).__name__)

    # ---------------------------------------------------------------- audit

    async def _refuse(self, cb: Callback, reason: m.ReasonCode, message: str, *,
                      to_core: bool = False) -> None:
        await self.audit.emit(AuditEvent(
            type="answer_refused", at=self.clock.now(), clarification_id=cb.clarification_id,
            message=message, reason_code=reason, channel=cb.platform,
            extra={"chat_user": cb.user_id},
        ), to_core=to_core)

    async def _audit_answer(self, c: m.Clarification, person: m.Person, cb: Callback,
                            result: m.AnswerResult) -> None:
        await self.audit.emit(AuditEvent(
            type="answer_forwarded", at=self.clock.now(), clarification_id=c.id,
            person_id=person.person_id, channel=cb.platform,
            message=f"Answer forwarded; the core's outcome: {result.outcome}.",
        ), to_core=False)


def _who(cb: Callback, person: m.Person) -> str:
    return f"{cb.clarification_id}|{person.person_id}"


def _request_id(entry_id: str) -> str:
    """The outbox entry as the core's idempotency key: a resend is answered, never re-applied."""
    return "ans." + hashlib.sha256(entry_id.encode()).hexdigest()[:40]


def _request(cb: Callback, person: m.Person, *, rights: m.Role | None,
             request_id: str | None = None) -> m.AnswerRequest:
    custom = None
    if cb.answer_index is None:
        # people pick the last valid day; the core's intervals end exclusively the day after
        end = cb.custom_to + timedelta(days=1) if cb.custom_to else None
        custom = m.AnswerCustomInput(
            valid_from=cb.custom_from.isoformat() if cb.custom_from else None,
            valid_to=end.isoformat() if end else None,
            source_text=cb.custom_note or None,
        )
    return m.AnswerRequest(
        answer_index=cb.answer_index, answer_custom=custom, responder=person.person_id,
        rights=rights or m.Role.VIEWER, channel=m.Channel(cb.platform),
        message_ref=cb.message_ref[:500] if cb.message_ref else None, request_id=request_id,
    )


def _cb_answer(cb: Callback) -> AnswerView | None:
    if cb.answer_index is not None:
        return None
    return outcomes.custom_answer_view(cb.custom_from, cb.custom_to)
