"""Card refresh: every delivered card of a clarification painted with its current state.

The one place a card is rewritten after an outcome: the answer path's follow-ups
(``bot.answering.followups``)
paint the answering person's outcome and everyone else's new state here, and the job handler asks
for a refresh when it finds a clarification settled without the bot (the core's CLI, an API key).
Each card is painted by one task at a time, and a view computed from an older state never
replaces a newer one.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from dataclasses import dataclass, field

import structlog

from bot.channel import Channel, ChannelError
from bot.clock import Clock
from bot.core.batching import JobScope
from bot.core.client import CoreClient
from bot.core.models import Clarification, DeliveryKind
from bot.engine import evidence, outcomes
from bot.engine.people import display_names
from bot.engine.zones import Zones
from bot.store.base import CardRecord, DeliveryLedger
from cards.views import OutcomeView, QuestionView

log = structlog.get_logger("clarify.refresh")
_PAINTED_KEPT = 100_000  # cards whose last painted state is remembered (oldest forgotten first)
# A paint's version: (when what it shows was known: the start of the read it was computed from,
# or the arrival of the core's answer; 1 for the answering person's own outcome, 0 for a card's
# state), on this process's monotonic clock. A card never goes back to an older version; so a
# state read after an answer replaces that answer's outcome, one read before it does not.
Version = tuple[float, int]


@dataclass
class _CardLock:
    """One card's lock and how many paints hold it or wait for it."""

    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    users: int = 0


@dataclass
class CardRefresher:
    core: CoreClient
    store: DeliveryLedger
    channels: dict[str, Channel]
    clock: Clock
    # the people's zones (``bot.engine.zones``), for a card whose record names none
    zones: Zones
    _painted: OrderedDict[str, Version] = field(default_factory=OrderedDict)
    _locks: dict[str, _CardLock] = field(default_factory=dict)  # cards being painted only

    async def refresh_now(self, clarification_id: str, *, scope: JobScope | None = None
                          ) -> int:
        """Show every delivered card of a clarification its current state; returns how many.
        ``scope``: the job's, whose people batch holds the cards' people."""
        read_at = time.monotonic()
        c = await self.core.get_clarification(clarification_id=clarification_id)
        return await self.paint_states(c, await self.store.cards(c.id), read_at, scope=scope)

    async def paint_states(self, c: Clarification, cards: list[CardRecord],
                           read_at: float, *, scope: JobScope | None = None) -> int:
        """Each question card its state in ``c`` (read at ``read_at``); returns how many."""
        names = await self.names(evidence.named(c), scope=scope)
        painted = 0
        for card in cards:
            if card.delivery.kind != DeliveryKind.QUESTION.value:
                continue  # digest entries (recorded as such) are never rewritten
            person = await self.core.get_person(person_id=card.delivery.person_id,
                                                tenant_id=c.tenant_id, scope=scope)
            view = outcomes.card_state(c, person, card, names=names, now=self.clock.now(),
                                       zone=self.zones.estimate(c.tenant_id, person))
            if view is not None and await self.paint(card, view, (read_at, 0)):
                painted += 1
        return painted

    async def paint(self, card: CardRecord, view: OutcomeView | QuestionView,
                    version: Version) -> bool:
        """Update one card, unless it already shows a newer state; True when updated."""
        token = card.delivery.token()
        held = self._locks.setdefault(token, _CardLock())
        held.users += 1
        try:
            async with held.lock:
                if self._painted.get(token, (-1.0, -1)) > version:
                    return False
                self._remember(token, version)
                try:
                    await self.channels[card.platform].update(card.message_ref, view)
                except (ChannelError, KeyError) as exc:
                    log.warning("answers.card_update_failed", error=type(exc).__name__)
                    return False
            return True
        finally:
            held.users -= 1
            if held.users == 0:  # nobody painting or waiting: forgotten, however it ended
                del self._locks[token]

    def shown(self, card: CardRecord, version: Version) -> None:
        """A card the platform was just given ``version`` of by other means (the click's own
        response): no later paint of an older state replaces it."""
        token = card.delivery.token()
        if self._painted.get(token, (-1.0, -1)) < version:
            self._remember(token, version)

    async def names(self, person_ids: list[str], *, scope: JobScope | None = None
                    ) -> list[str]:
        """Display names in the order given; an id the core does not know stands for itself."""
        names = await display_names(self.core, person_ids, scope=scope)
        return [names.get(person_id, person_id) for person_id in person_ids]

    def _remember(self, token: str, version: Version) -> None:
        self._painted[token] = version
        self._painted.move_to_end(token)
        while len(self._painted) > _PAINTED_KEPT:
            self._painted.popitem(last=False)
