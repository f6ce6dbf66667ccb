"""After a crash: what an earlier attempt of a job left unsettled, settled before anyone is asked.

A job back after its lease ran out may follow a worker that died mid-job. Reservations of earlier
attempts left without a message reference are looked up on the platform (a channel that
``can_find``; otherwise the delivery is uncertain and never resent, ``Deliverer.reconcile``):
a card found is recorded and audited, one that never went out is a DELIVERY_FAILED skip; a turn
that passed without a trace is a skip with the reason the person would have been skipped for;
question cards whose delivery report never reached the core are reported now. Nobody asked or
skipped vanishes from the trail or the escalation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Protocol

from bot.channel import Address
from bot.core import batching
from bot.core.client import CoreClient
from bot.core.models import Clarification, DeliveryKind, LeasedJob, ReasonCode
from bot.engine import attempts
from bot.engine.asking import Asking
from bot.engine.delivery import Delivered, Deliverer, delivery_id
from bot.engine.holds import HOLD_LEASE_SECONDS, HOLD_MARGIN_SECONDS, LOST_AT, LOST_TURN
from bot.engine.trail import Skip, Trail
from bot.engine.unreported import off_trail
from bot.metrics import REGISTRY
from bot.settings import ClarifySettings
from bot.store.base import DeliveryKey, SlotState
from bot.store.kv import KeyValues
from bot.store.ledger import DeliveryLedger

STORE_LOST_WHY = ("the bot's store (Redis) lost its data while this person's question was held "
                  "for their working hours, and their turn has passed")
STORE_LOST_NEAR_WHY = ("the bot's store (Redis) lost its data less than a held lease's life "
                       "before this person's turn ran out unasked (a question held for their "
                       "working hours is lost with it), and their turn has passed")
TURN_EVENTS = frozenset({"skipped", "digested", "delivered"})


@dataclass
class Earlier:
    """Reservations of earlier attempts left by a crash: recovered cards, or skips."""

    recovered: list[str] = field(default_factory=list)
    skipped: list[Skip] = field(default_factory=list)


class RecoveryStore(DeliveryLedger, KeyValues, Protocol):
    """What recovery uses of the store: the delivery slots, the cards sent, the lost turns."""


@dataclass
class Recovery:
    """The handler's first step for a job back after its lease ran out."""

    core: CoreClient
    store: RecoveryStore
    deliverer: Deliverer
    trail: Trail
    settings: ClarifySettings
    asking: Asking  # who can be asked, and the trail's record of a card

    async def reconcile_earlier(self, c: Clarification, job: LeasedJob,
                                plan: attempts.Plan, scope: batching.JobScope) -> Earlier:
        """Reservations of earlier attempts left without a message reference (a worker died
        between reserving and recording): a card found on the platform is recorded and
        audited; one that never reached it is a DELIVERY_FAILED skip (that person's turn has
        passed), so nobody asked or skipped vanishes from the trail or the escalation."""
        earlier = Earlier()
        ranking = job.payload.ranking
        if plan.recover:
            await self._report_unreported(c, scope)
        for index in plan.earlier:
            if attempts.first_turn(ranking, index) is not None:
                continue  # a person named again: their first entry's turn is the one settled
            key = DeliveryKey(c.id, ranking[index], index, DeliveryKind.QUESTION.value)
            slot = await self.store.slot(key)
            if slot is None and not _traced(c, key.person_id):
                # a worker died holding this turn before anything was reserved (reading the
                # clarification or the people): the turn has passed without a trace
                skip = await self._unasked(c, key.person_id, scope, attempt=index)
                earlier.skipped.append(skip)
                await self.trail.skipped(c, skip, attempt=index, job_id=job.id, scope=scope)
                continue
            if slot is None or slot.state is not SlotState.RESERVED:
                continue
            outcome = await self._recover(c, key, scope)
            if isinstance(outcome, Skip):
                earlier.skipped.append(outcome)
                await self.trail.skipped(c, outcome, attempt=index, job_id=job.id,
                                         scope=scope)
            elif outcome is not None:
                earlier.recovered.append(key.person_id)
                await self.asking.delivered(c, job, outcome, key, recovered=True)
        return earlier

    async def _report_unreported(self, c: Clarification, scope: batching.JobScope) -> None:
        """Question cards the store holds whose delivery report never reached the core
        (reports go together at the end of a job: a worker killed after the send lost them).
        Digest entries and steward messages are reported, or not, their own way. The cards'
        not-yet-reported marks are cleared: at once for those on the trail already, once the
        core has the report for the others (``bot.engine.unreported``)."""
        lacking, on_trail = off_trail(self.core, c, await self.store.cards(c.id))
        for card in lacking:
            await self.deliverer.report(card, scope=scope)
            if card.unreported:
                scope.mark(delivery_id(card.delivery), card.delivery, self.store.clear_unreported)
        marked = [card.delivery for card in on_trail if card.unreported]
        if marked:
            await self.store.clear_unreported(marked)

    async def _unasked(self, c: Clarification, person_id: str, scope: batching.JobScope,
                       *, attempt: int | None = None) -> Skip:
        """A candidate whose turn passed unseen: the reason they would have been skipped for,
        or DELIVERY_FAILED when nothing but the stopped worker (or a store that lost its data
        while their question was held: ``LOST_TURN``) kept them from being asked."""
        found = await self.asking.askable(c, person_id, scope)
        if isinstance(found, Skip):
            return found
        if attempt is not None and await self.store.kv_get(LOST_TURN, f"{c.id}|{attempt}"):
            return Skip(person_id, ReasonCode.DELIVERY_FAILED, STORE_LOST_WHY,
                        said="was not asked")
        if _expired_after_loss(c, person_id, await self.store.kv_get(LOST_AT, "at"),
                               window=self.settings.escalation_window):
            REGISTRY.inc("clarify_holds_lost_total")  # found only now (no list of held jobs)
            return Skip(person_id, ReasonCode.DELIVERY_FAILED, STORE_LOST_NEAR_WHY,
                        said="was not asked")
        return Skip(person_id, ReasonCode.DELIVERY_FAILED,
                    "a worker stopped before this person was asked, and their turn has passed")


    async def _recover(self, c: Clarification, key: DeliveryKey, scope: batching.JobScope
                       ) -> Address | Skip | None:
        """One reservation: the address its card was found at, or why it counts as skipped."""
        found = await self.asking.reachable(c, key.person_id, scope)
        if isinstance(found, Skip):
            return found
        _, address = found
        result = await self.deliverer.reconcile(key, address, scope=scope)
        if result.status is Delivered.FAILED:
            return Skip(key.person_id, ReasonCode.DELIVERY_FAILED,
                        "the card never reached the platform: the worker stopped between "
                        "reserving and sending, and this person's turn has passed")
        if result.status is Delivered.UNCERTAIN:
            return Skip(key.person_id, ReasonCode.DELIVERY_FAILED,
                        "a worker stopped mid-send and the platform cannot say whether the card "
                        "arrived; it is not sent again")
        return address if result.recovered else None


def _expired_after_loss(c: Clarification, person_id: str, lost_at: str | None, *,
                        window: timedelta) -> bool:
    """The person's lease ran out within a held lease's life after the store lost its data
    (``LOST_AT``): the core's ``expired`` event comes an escalation window (its backoff)
    after the lease ran out."""
    if not lost_at:
        return False
    try:
        since = datetime.fromisoformat(lost_at) - timedelta(seconds=HOLD_MARGIN_SECONDS)
    except ValueError:
        return False
    until = since + timedelta(seconds=HOLD_LEASE_SECONDS + 2 * HOLD_MARGIN_SECONDS)
    return any(ev.person_id == person_id and ev.type == "expired"
               and since <= ev.at - window <= until for ev in c.events)


def _traced(c: Clarification, person_id: str) -> bool:
    """The core's trail shows the person's turn: a delivery, a skip, a digest entry (the
    core's own ``expired`` event names the candidate of a lease that ran out, which says
    nothing about whether they were asked)."""
    return person_id in c.asked or any(d.person_id == person_id for d in c.deliveries) or any(
        ev.person_id == person_id and ev.type in TURN_EVENTS for ev in c.events)


def turn_passed(c: Clarification, person_id: str) -> bool:
    """The record shows the person's turn over: traced (``_traced``), or the core's own
    ``expired`` event names them (their window ran out)."""
    return _traced(c, person_id) or any(
        ev.person_id == person_id and ev.type == "expired" for ev in c.events)
