""""Not the right person": a person declines a question card, and it moves on at once.

A decline is decided here, once, for every platform (the adapters verify, parse, acknowledge and
render). It is refused like an answer from a stranger unless the verified PERSON behind the chat
identity is the person the card was delivered to. Accepted, it is a skip with the reason code
``CANDIDATE_DECLINED`` on the audit sink and the core's trail (one per person and
clarification, however often they press), and the core is asked to ``expedite`` the
clarification's job: the next turn of the ranking starts now instead of after the escalation
window (the job is usually waiting out its backoff, so there is no lease to ``advance`` with).
The next turn is the worker's ordinary walk: the next candidate, or, after the last one, the
redacted steward escalation.

A core without the expedite extension cannot start the next turn early. Then, while this bot still
holds the job's lease (the worker keeps its lease token in the store for the lease's life), the
decline's process extends the lease, advances it past the person who declined and walks the
ranking from there at once; otherwise the next candidate is asked when the person's turn ends,
and their card says exactly that (``OutcomeKind.PASSED_ON_LATER``), never that it was passed on.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

import structlog

from bot.aio import Tasks
from bot.audit import AuditEvent, occurrence_of
from bot.chat import ChatUser
from bot.clock import Clock
from bot.core import errors as e
from bot.core.client import CoreClient
from bot.core.extensions import Extension
from bot.core.models import Clarification, LeasedJob, ReasonCode
from bot.engine import aliases, evidence, outcomes, views
from bot.engine.aliases import Unlinked
from bot.engine.handler import HELD_LEASE
from bot.engine.refresh import CardRefresher
from bot.engine.trail import Skip, Trail
from bot.store.base import CardRecord, DeliveryLedger, KeyValues
from cards.views import OutcomeView

log = structlog.get_logger("clarify.declines")

_NAMESPACE = "declined"
_KEPT_SECONDS = 90 * 86400  # longer than any ranking's windows
_IN_FLIGHT_SECONDS = 30  # one decline at a time per person and clarification
# what a person whose chat identity answers for nobody is told instead of "not sent to you"
UNLINKED_TOLD = {Unlinked.SHARED: "decline.identity_shared",
                 Unlinked.UNKNOWN: "decline.identity_unknown",
                 Unlinked.UNVERIFIED: "decline.identity_unverified"}
HELD = HELD_LEASE  # clarification id -> "job id|lease token", while a worker's lease lives
Redo = Callable[[LeasedJob], Coroutine[Any, Any, object]]  # the handler's walk, on a lease


class DeclineStatus(StrEnum):
    PASSED_ON = "passed_on"  # recorded (now, or by an earlier press)
    MOVED_ON = "moved_on"  # already settled: nothing to pass on
    NOT_ALLOWED = "not_allowed"  # not this person's card, unverified, out of scope: refused
    UNAVAILABLE = "unavailable"  # the core could not be reached: nothing shown as done


@dataclass(frozen=True, slots=True)
class Declined:
    status: DeclineStatus
    view: OutcomeView | None = None  # what replaces the card (PASSED_ON, MOVED_ON)
    recorded: bool = False  # this press recorded the skip (False for a repeat)
    # a refusal's own words (a catalog key) where they name its cause better than the status
    told: str | None = None


@dataclass
class Declines:
    core: CoreClient
    ledger: DeliveryLedger  # the cards sent, to find the one pressed
    kv: KeyValues  # what a press recorded, and the held lease it may take
    trail: Trail
    refresher: CardRefresher
    clock: Clock
    redo: Redo | None = None  # without the expedite extension: the next turn on a held lease
    tasks: Tasks = field(default_factory=lambda: Tasks("declines", counted=False))

    async def decline(self, user: ChatUser, *, tenant: str | None, clarification_id: str,
                      card_ref: str, paint: bool) -> Declined:
        """``paint``: update the card here (Slack); False when the platform's acknowledgement
        carries the replacement card (a Teams invoke answers with it)."""
        try:
            return await self._decline(user, tenant=tenant, clarification_id=clarification_id,
                                       card_ref=card_ref, paint=paint)
        except e.CoreError as exc:
            log.warning("declines.unavailable", error=type(exc).__name__)
            return Declined(DeclineStatus.UNAVAILABLE)

    async def _decline(self, user: ChatUser, *, tenant: str | None, clarification_id: str,
                       card_ref: str, paint: bool) -> Declined:
        if tenant is None:
            return await self._refuse(user, clarification_id, ReasonCode.TENANT_SCOPE_MISMATCH,
                                      "A decline came from a workspace mapped to no tenant.")
        person = await aliases.clicker(self.core, tenant_id=tenant, user=user.identity())
        if isinstance(person, Unlinked):
            refused = await self._refuse(user, clarification_id, person.reason,
                                         f"A decline came from a chat identity that answers "
                                         f"for nobody ({person.why}); nothing was recorded.")
            return replace(refused, told=UNLINKED_TOLD[person])
        try:
            c = await self.core.get_clarification(clarification_id=clarification_id)
        except e.ClarificationNotFound:
            return Declined(DeclineStatus.NOT_ALLOWED)
        card = await self._card(c, card_ref)
        if c.tenant_id != tenant or card is None \
                or card.delivery.person_id != person.person_id:
            return await self._refuse(user, clarification_id,
                                      ReasonCode.RESPONDER_NOT_AUTHORISED,
                                      "A decline came from someone the card was not sent to; "
                                      "nothing was recorded.")
        now = self.clock.now()
        # the card's own zone, else the person's as known without asking (bot.engine.zones)
        zone = card.time_zone or self.refresher.zones.estimate(c.tenant_id, person)
        # nothing to pass on: settled (by the evidence, whatever the state word), or
        # dead-lettered (no turn comes after it; a decline there records no skip). EXPIRED is
        # not closed: the core marks a turn's window running out with it while the ranking
        # goes on.
        if evidence.closed(c):
            view = outcomes.moved_on(c, person, now=now, zone=zone)
            return await self._shown(card, Declined(DeclineStatus.MOVED_ON, view), paint)
        recorded, now_on = await self._record(c, card)
        view = outcomes.passed_on(c, person, now=now, zone=zone, later=not now_on)
        return await self._shown(card, Declined(DeclineStatus.PASSED_ON, view, recorded), paint)

    async def _record(self, c: Clarification, card: CardRecord) -> tuple[bool, bool]:
        """The skip and the next turn, once per person and clarification: (recorded by this
        press, the next turn starts now). A repeat says what the first press found."""
        person_id, attempt = card.delivery.person_id, card.delivery.attempt
        key = f"{c.id}|{person_id}"
        earlier = await self.kv.kv_get(_NAMESPACE, key)
        if earlier is not None:
            return False, earlier != "later"
        if views.declined(c, person_id):
            return False, True
        if not await self.kv.mark_once("declining", key, ttl_seconds=_IN_FLIGHT_SECONDS):
            return False, True  # the same decline is being recorded right now
        await self.trail.skipped(c, Skip(person_id, ReasonCode.CANDIDATE_DECLINED,
                                            "they said they are not the right person"),
                                 attempt=attempt, job_id=c.job_id)
        now_on = await self._next_turn(c, attempt)
        await self.kv.kv_put(_NAMESPACE, key, "now" if now_on else "later",
                                ttl_seconds=_KEPT_SECONDS)
        return True, now_on

    async def _next_turn(self, c: Clarification, attempt: int) -> bool:
        """Start the next turn now: the core's expedite, or the fallback on a held lease.
        False: the next candidate is asked when this turn's window ends."""
        if c.job_id is not None and self.core.offers(Extension.EXPEDITE):
            try:
                await self.core.expedite_job(job_id=c.job_id, attempt=attempt,
                                             reason_code=ReasonCode.CANDIDATE_DECLINED)
                return True
            except e.ExtensionUnavailable:
                pass
        return await self._on_held_lease(c, attempt)

    async def _on_held_lease(self, c: Clarification, attempt: int) -> bool:
        if self.redo is None:
            return False
        # taken (atomically), so two declines never both walk the ranking on one lease
        held = await self.kv.swap_latest(HELD, c.id, "", ttl_seconds=1)
        if held is None or "|" not in held:
            log.info("declines.next_turn_later")  # the window runs out as usual
            return False
        job_id, lease_token = held.split("|", 1)
        try:
            job = await self.core.heartbeat_job(job_id=job_id, lease_token=lease_token)
            if job is None or job.attempts != attempt:
                return False  # the job moved on meanwhile (or cannot say): nothing to skip
            await self.core.advance_job(job_id=job_id, lease_token=lease_token,
                                        attempt=attempt + 1,
                                        reason_code=ReasonCode.CANDIDATE_DECLINED)
        except (e.Conflict, e.NotFound):  # the lease ran out or is someone else's now
            return False
        # the walk from the next candidate goes on after the decline is acknowledged
        self.tasks.spawn(self.redo(job.model_copy(update={"attempts": attempt + 1})))
        return True

    async def _shown(self, card: CardRecord, declined: Declined, paint: bool) -> Declined:
        if paint and declined.view is not None:
            # the person's own outcome: newer than any state read before it
            await self.refresher.paint(card, declined.view, (time.monotonic(), 1))
        return declined

    async def _card(self, c: Clarification, card_ref: str) -> CardRecord | None:
        """The question card the button was on, by the reference it carried."""
        return views.sent_card(await self.ledger.cards(c.id), card_ref)

    async def _refuse(self, user: ChatUser, clarification_id: str, reason: ReasonCode,
                      message: str) -> Declined:
        await self.trail.audit.emit(AuditEvent(
            type="decline_refused", at=self.clock.now(), clarification_id=clarification_id,
            message=message, reason_code=reason, channel=user.platform,
            extra={"chat_user": user.user_id},
            # one per person refused on the question, a repeated click being the same refusal
            occurrence=occurrence_of(user.platform, user.user_id)), to_core=False)
        return Declined(DeclineStatus.NOT_ALLOWED)
