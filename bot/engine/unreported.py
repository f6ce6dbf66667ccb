"""Question cards whose delivery report a killed worker never sent, reported soon after someone
answers instead of a window later.

A job holds its reports until it ends (``bot.core.batching``), so a worker killed after a send
loses them; the job's next pass reports what the core's trail lacks (``bot.engine.recovery``),
but that pass comes a lease and an escalation window later, and the trail meanwhile shows an
answer from a person it never showed asked (found by bench/soak.py). So a question card is
recorded with a not-yet-reported mark (``DeliveryLedger.record_sent``), and the job clears the
mark once the core has its report. An answer's follow-up that finds a card of the clarification
still marked indexes the clarification (``answered``) for when a live job would surely have
reported it: a lease after the card's reservation. A worker's housekeeping then (``flush``) reads
the clarification once, reports the marked cards the trail lacks and clears their marks.

Waiting out the lease rather than reporting at once keeps a card from being reported twice while
its job is still running, which a core that cannot deduplicate reports (the baseline's) would
record as a second delivery; reading the trail first keeps a job killed after its report reached
the core from having it sent again.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

import structlog

from bot.clock import Clock
from bot.core import errors as e
from bot.core.client import CoreClient
from bot.core.extensions import Extension
from bot.core.models import Clarification, DeliveryKind
from bot.engine.delivery import Deliverer, delivery_id
from bot.metrics import REGISTRY
from bot.store.base import CardRecord, DeliveryLedger, UnreportedIndex
from bot.store.errors import StoreError

log = structlog.get_logger("clarify.unreported")
LOOK_LEASE_SECONDS = 60  # one worker looks at a clarification at a time
BATCH = 100


class UnreportedStore(DeliveryLedger, UnreportedIndex, Protocol):
    """The cards with their marks, and the index of clarifications to look at."""


def off_trail(core: CoreClient, c: Clarification, cards: list[CardRecord]
              ) -> tuple[list[CardRecord], list[CardRecord]]:
    """The question cards among ``cards`` the core's trail lacks, and those it has: by delivery
    id, or, on a core that keeps none (the baseline), by whom it says it counts as asked."""
    known = {d.delivery_id for d in c.deliveries}
    by_person = not core.offers(Extension.REPORT_DETAILS)
    lacking: list[CardRecord] = []
    on_trail: list[CardRecord] = []
    for card in cards:
        if card.delivery.kind != DeliveryKind.QUESTION.value:
            continue
        if (by_person and card.delivery.person_id in c.asked) \
                or delivery_id(card.delivery) in known:
            on_trail.append(card)
        else:
            lacking.append(card)
    return lacking, on_trail


def _marked(cards: list[CardRecord]) -> list[tuple[CardRecord, datetime]]:
    """The question cards still marked unreported, with their marks' times."""
    return [(card, card.unreported_since) for card in cards
            if card.unreported_since is not None
            and card.delivery.kind == DeliveryKind.QUESTION.value]


@dataclass
class UnreportedCards:
    core: CoreClient
    store: UnreportedStore
    deliverer: Deliverer
    clock: Clock
    # how long a live job may hold a card's report: the worker's lease
    after: timedelta

    async def answered(self, clarification_id: str, cards: list[CardRecord]) -> None:
        """Someone answered: a question card still marked is looked at once its job, if alive,
        would have reported it (nothing is indexed when no card is marked, the usual case)."""
        marked = _marked(cards)
        if marked:
            await self.store.unreported_add(
                clarification_id, due=min(since for _, since in marked) + self.after)

    async def flush(self) -> None:
        """Housekeeping: every clarification due is looked at by one worker."""
        now = self.clock.now()
        for clarification_id in await self.store.unreported_due(now=now, limit=BATCH):
            if not await self.store.unreported_claim(clarification_id, now=now,
                                                     lease_seconds=LOOK_LEASE_SECONDS):
                continue
            try:
                await self._look(clarification_id, now)
            except (e.CoreError, StoreError) as exc:  # the claim's lease runs out: again later
                log.warning("unreported.look_failed", error=type(exc).__name__)

    async def _look(self, clarification_id: str, now: datetime) -> None:
        marked = _marked(await self.store.cards(clarification_id))
        due = [card for card, since in marked if since + self.after <= now]
        later = [since for _, since in marked if since + self.after > now]
        if due:
            try:
                c: Clarification | None = await self.core.get_clarification(
                    clarification_id=clarification_id)
            except e.NotFound:  # gone from the core (erased): nothing to report to
                c = None
            lacking = [] if c is None else off_trail(self.core, c, due)[0]
            for card in lacking:
                await self.deliverer.report(card)
                REGISTRY.inc("clarify_unreported_cards_total")
                log.info("unreported.card_reported", kind=card.delivery.kind,
                         attempt=card.delivery.attempt)
            await self.store.clear_unreported([card.delivery for card in due])
        if later:  # another job's card, still young: its own time
            await self.store.unreported_later(clarification_id, due=min(later) + self.after)
        else:
            await self.store.unreported_done(clarification_id)
