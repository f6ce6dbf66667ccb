"""One reminder per question card, before the question moves on (docs/delivery.md).

When a question card goes out, its reminder is indexed in the store by when it is due:
``reminder_at_percent`` (75 % by default) of the way from the send to the moment the question
moves on (the end of the person's escalation window), moved to the person's next working hour
when that point falls in their quiet hours (in the zone the card was written in). That is one
store command a card (a sorted-set add) and no read.

The worker's housekeeping pass (``Reminders.flush``) takes the due ones. For each:

1. a claim on the index (one claim wins across replicas; a holder that dies lets it come due
   again when the claim's lease ends);
2. the clarification read again: settled, dead-lettered, answered by this person, declined by
   them, or past its move-on time: no reminder (counted by that outcome);
3. the person's zone as decided now (``bot.engine.zones``: their platform's, kept a day, else
   the core's, else the tenant's), and their tenant's hours: in quiet hours, moved to the next
   working hour if that is still inside the window, else skipped and counted; a person their
   platform shows as away (``bot.engine.away``) likewise: moved to their first working hour
   back when that comes before the question moves on, else skipped (``away``);
4. the reminder's own delivery reserved in the store (kind ``reminder``, SET NX on the
   person's delivery state): the durable mark that makes it once-only. The card is repainted
   in place with the reminder and the move-on line, then the short nudge goes into the card's
   conversation (Slack: a thread reply broadcast to the DM; Teams: a message in the 1:1 chat).

A worker killed between the reservation and the send leaves the reservation: the claim's lease
ends, another pass finds it, and the delivery is reconciled the way every card is
(``bot.engine.delivery``): Slack looks the nudge up by its metadata (found: recorded, not sent
again; absent: sent); Teams cannot look up what it sent, so the nudge is not sent again (at most
once: a missing reminder is better than two). The repaint in place is idempotent and is simply
done again. Reminders never pass through the admission, so they never count against the daily
cap.
"""

from __future__ import annotations

import time as _time
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, time, timedelta
from enum import StrEnum
from typing import Protocol
from zoneinfo import ZoneInfo

import structlog

from bot.audit import EventFacts
from bot.channel import Address, Away
from bot.chat import for_recipient
from bot.clock import Clock
from bot.core import errors as e
from bot.core.client import CoreClient
from bot.core.models import Clarification, DeliveryKind, Person
from bot.engine import away, evidence, views
from bot.engine.away import AwayCheck
from bot.engine.delivery import Delivered, Deliverer
from bot.engine.hours import WorkingHours, working_point, working_seconds
from bot.engine.refresh import CardRefresher
from bot.engine.routing import Routing, Unroutable
from bot.engine.trail import Trail
from bot.engine.zones import PersonZone, Zones
from bot.metrics import REGISTRY
from bot.settings import ClarifySettings
from bot.store.base import CardRecord, DeliveryKey, DeliveryLedger, ReminderIndex, SlotState
from cards.views import QuestionView, ReminderView

log = structlog.get_logger("clarify.reminders")
REMINDER_KIND = "reminder"  # the nudge's own delivery kind (not reported to the core)
CLAIM_SECONDS = 300  # how long a pass holds a due reminder before another may take it
SCAN_SECONDS = 60.0  # how often the due index is read at most (besides this process's own)


class Outcome(StrEnum):
    SENT = "sent"
    DEFERRED = "deferred"  # due in quiet hours: moved to the next working hour
    QUIET_HOURS = "quiet_hours"  # the next working hour comes after the question moves on
    AWAY = "away"  # the person is away until after the question moves on
    SETTLED = "settled"  # answered, conflicted or dead-lettered meanwhile
    ANSWERED = "answered"  # this person answered (the question waits for others)
    DECLINED = "declined"  # this person said they are not the right one
    MOVED_ON = "moved_on"  # the window ended before the reminder could go
    NO_CARD = "no_card"  # no card of this turn on record (its send failed)
    UNREACHABLE = "unreachable"  # the person can no longer be routed on the card's platform
    FAILED = "failed"  # the platform refused the nudge
    UNCERTAIN = "uncertain"  # a crashed send the platform cannot look up: not sent again
    ALREADY_SENT = "already_sent"  # the reservation shows it went out before


REGISTRY.preset("clarify_reminders_total", outcome=Outcome)
# what is not a reminder sent, indexed or put off: the question got none (audited as skipped)
_SKIPPED = frozenset({Outcome.FAILED, Outcome.UNCERTAIN})


@dataclass(frozen=True, slots=True)
class Reminder:
    """A question card's reminder as the store indexes it: the clarification and the turn
    (``attempt``, which names the card and so the person), when the question moves on, and
    whether it then goes to the steward. No person id: the index names nobody."""

    clarification_id: str
    attempt: int
    moves_on_at: datetime
    to_steward: bool = False

    @property
    def member(self) -> str:
        return (f"{self.attempt}|{round(self.moves_on_at.timestamp())}|"
                f"{int(self.to_steward)}|{self.clarification_id}")

    @classmethod
    def parse(cls, member: str) -> Reminder | None:
        attempt, moves, steward, clarification = (member.split("|", 3) + ["", "", "", ""])[:4]
        try:
            return cls(clarification, int(attempt),
                       datetime.fromtimestamp(int(moves), tz=UTC), steward == "1")
        except ValueError:
            return None


def moves_on(sent_at: datetime, lease_expires_at: datetime, window: timedelta) -> datetime:
    """When a card sent at ``sent_at`` moves on if nobody answers: the job's lease runs out
    (at the earliest when it was leased to expire), and the core's backoff, the escalation
    window, brings the next turn after that."""
    return max(sent_at, lease_expires_at) + window


def due_at(sent_at: datetime, moves_on_at: datetime, *, percent: int, hours: WorkingHours,
           zone: ZoneInfo, working: bool = True) -> datetime | None:
    """When the reminder goes: ``percent`` of the person's working time between the send and
    the move-on time (``working``: their hours read in their zone; nights, days off and
    weekends count nothing, so it lands while they still have working time to answer),
    else ``percent`` of the way in wall time, moved to their next working hour; None when
    there is no such moment before the question moves on (or reminders are off)."""
    if percent <= 0 or moves_on_at <= sent_at:
        return None
    if working:
        budget = working_seconds(hours, zone, sent_at, moves_on_at)
        if budget <= 0:
            return None
        due = working_point(hours, zone, sent_at, budget * percent / 100)
    else:
        due = hours.next_open(sent_at + (moves_on_at - sent_at) * (percent / 100), zone)
    return due if due < moves_on_at else None


def _always() -> WorkingHours:
    """Working hours that are always open (``[clarify.hours] enabled = false``)."""
    return WorkingHours(days=frozenset(range(7)), start=time(0, 0), end=time(23, 59, 59))


class ReminderStore(ReminderIndex, DeliveryLedger, Protocol):
    """What the reminders use of the store: their due index, their slots, the cards sent."""


@dataclass
class Reminders:
    core: CoreClient
    store: ReminderStore
    deliverer: Deliverer
    routing: Routing
    refresher: CardRefresher
    trail: Trail
    clock: Clock
    settings: ClarifySettings
    # the people's zones (their platform's first) and their tenants' hours (bot.engine.zones)
    zones: Zones
    claim_seconds: int = CLAIM_SECONDS
    # whether the person is away (``bot.engine.away``): nothing is sent while they are (None:
    # never asked, ``[clarify.away]`` off)
    away: AwayCheck | None = None
    # the index is read at most this often (and whenever a reminder this process indexed falls
    # due): a reminder goes at most this late, and a housekeeping pass costs no store command
    # otherwise
    scan_seconds: float = SCAN_SECONDS
    _next_scan: datetime | None = field(default=None, init=False)

    def _hours(self, tenant_id: str) -> WorkingHours:
        """The tenant's working hours; always open when ``[clarify.hours] enabled`` is off."""
        return self.zones.hours(tenant_id) if self.settings.hours.enabled else _always()

    def _due_by(self, due: datetime) -> None:
        """A reminder this process indexed is due then: the index is read by then (a process
        that has not read it yet reads it at its next pass anyway)."""
        if self._next_scan is not None and due < self._next_scan:
            self._next_scan = due

    # ---------------------------------------------------------------- when a card goes out

    async def schedule(self, c: Clarification, key: DeliveryKey, zone: ZoneInfo, *,
                       sent_at: datetime, moves_on_at: datetime, to_steward: bool) -> bool:
        """Index the card's reminder (one store command, no other read); False when reminders
        are off. Due at the point of the window, or the next working hour after it in the
        person's ``zone`` (the card's, ``bot.engine.zones``); when that comes only after the
        question moves on, at the point itself: the pass then decides with the person's zone
        as it is then (it may have changed), and skips it, counted, if it is night there
        too."""
        percent = self.settings.reminder_at_percent
        if percent <= 0 or moves_on_at <= sent_at:
            return False
        point = sent_at + (moves_on_at - sent_at) * (percent / 100)
        due = due_at(sent_at, moves_on_at, percent=percent, hours=self._hours(c.tenant_id),
                     zone=zone, working=self.settings.hours.enabled) or point
        reminder = Reminder(c.id, key.attempt, moves_on_at, to_steward)
        await self.store.reminder_add(reminder.member, due=due)
        self._due_by(due)
        return True

    # ---------------------------------------------------------------- housekeeping

    async def flush(self, *, limit: int = 100) -> int:
        """Send every due reminder; returns how many went out."""
        sent = 0
        now = self.clock.now()
        if self._next_scan is not None and now < self._next_scan:
            return 0
        self._next_scan = now + timedelta(seconds=self.scan_seconds)
        due = await self.store.reminders_due(now=now, limit=limit)
        if len(due) == limit:  # more are due: the next pass reads again
            self._next_scan = now
        for member in due:
            if not await self.store.reminder_claim(member, now=now,
                                                   lease_seconds=self.claim_seconds):
                continue  # another worker holds it
            reminder = Reminder.parse(member)
            if reminder is None:
                await self.store.reminder_done(member)
                continue
            try:
                outcome, later = await self.remind(reminder)
            except e.CoreError as exc:
                # the claim's lease runs out and a later pass tries again
                log.warning("reminders.core_unavailable", error=type(exc).__name__)
                continue
            if outcome is Outcome.DEFERRED and later is not None:
                await self.store.reminder_later(member, due=later)
                self._due_by(later)
            else:
                await self.store.reminder_done(member)
            REGISTRY.inc("clarify_reminders_total", outcome=outcome.value)
            sent += outcome is Outcome.SENT
        return sent

    async def remind(self, reminder: Reminder) -> tuple[Outcome, datetime | None]:
        """One due reminder: what became of it, and (deferred) when it is due again."""
        now = self.clock.now()
        if now >= reminder.moves_on_at:
            return Outcome.MOVED_ON, None
        c = await self.core.get_clarification(clarification_id=reminder.clarification_id)
        if evidence.closed(c):  # by the evidence, whatever the state word says
            return Outcome.SETTLED, None
        card = await self._card(c, reminder.attempt) or await self._recovered(c, reminder)
        if card is None:
            return Outcome.NO_CARD, None
        person_id = card.delivery.person_id
        if any(r.responder == person_id for r in c.responses):
            return Outcome.ANSWERED, None
        if views.declined(c, person_id):
            return Outcome.DECLINED, None
        try:
            person = await self.core.get_person(person_id=person_id, tenant_id=c.tenant_id)
        except e.PersonNotFound:
            return Outcome.UNREACHABLE, None
        others = tuple(str(ch) for ch in self.routing.channels if str(ch) != card.platform)
        address = await self.routing.route(self.core, person, tenant_id=c.tenant_id,
                                           besides=others)
        if isinstance(address, Unroutable) or address.platform != card.platform:
            await self._audit(c, card, "reminder_skipped", Outcome.UNREACHABLE.value)
            return Outcome.UNREACHABLE, None
        zone = await self.zones.zone(c.tenant_id, person, address)
        if self.away is not None:
            gone = await self.away.lookup(address, now)
            if gone is not None:
                return await self._away(c, card, reminder, zone, gone)
        later = self.zones.held(c.tenant_id, zone, now)
        if later is not None and not zone.told:
            # their platform cannot tell it now: looked at again shortly; with no time left,
            # the zone known without it decides (the core's)
            if later < reminder.moves_on_at:
                return Outcome.DEFERRED, later
            later = self.zones.held(c.tenant_id, replace(zone, told=True), now)
        if later is not None:
            if later < reminder.moves_on_at:
                return Outcome.DEFERRED, later
            await self._audit(c, card, "reminder_skipped", "quiet hours until it moves on")
            return Outcome.QUIET_HOURS, None
        outcome = await self._send(c, card, person, address, zone, reminder, now)
        if outcome is Outcome.SENT:
            await self._audit(c, card, "reminder_sent", "sent", channel=card.platform)
        elif outcome in _SKIPPED:
            await self._audit(c, card, "reminder_skipped", outcome.value)
        return outcome, None

    async def _away(self, c: Clarification, card: CardRecord, reminder: Reminder,
                    zone: PersonZone, gone: Away) -> tuple[Outcome, datetime | None]:
        """Nothing is sent to a person while they are away: the reminder waits for their first
        working hour back when that comes before the question moves on, else it is skipped."""
        assert self.away is not None
        back = self.away.back(c.tenant_id, zone, gone)
        if back is not None and back < reminder.moves_on_at:
            away.counted(away.Action.REMINDER_DEFERRED, gone)
            return Outcome.DEFERRED, back
        away.counted(away.Action.REMINDER_SKIPPED, gone)
        await self._audit(c, card, "reminder_skipped", "away until it moves on")
        return Outcome.AWAY, None

    async def _card(self, c: Clarification, attempt: int) -> CardRecord | None:
        """The question card of that turn (a digest entry is not reminded: its digest holds
        other questions and is never rewritten)."""
        for card in await self.store.cards(c.id):
            if card.delivery.kind == DeliveryKind.QUESTION.value \
                    and card.delivery.attempt == attempt:
                return card
        return None

    async def _recovered(self, c: Clarification, reminder: Reminder) -> CardRecord | None:
        """The turn's card when a worker was killed between its send and its record: the
        reminder is indexed before the send, so it may find the card reserved and not yet
        recorded. The turn's person is the ranking's (a core that names no ranking on the
        clarification: none, `no_card`); the card is looked up on the platform and recorded
        (and reported) as every card found after a crash (``Deliverer.reconcile``)."""
        if reminder.attempt >= len(c.ranking):
            return None
        key = DeliveryKey(c.id, c.ranking[reminder.attempt], reminder.attempt,
                          DeliveryKind.QUESTION.value)
        slot = await self.store.slot(key)
        if slot is None or slot.state is not SlotState.RESERVED:
            return None
        try:
            person = await self.core.get_person(person_id=key.person_id, tenant_id=c.tenant_id)
        except e.PersonNotFound:
            return None
        address = await self.routing.route(self.core, person, tenant_id=c.tenant_id)
        if isinstance(address, Unroutable):
            return None
        found = await self.deliverer.reconcile(key, address)
        if found.status is not Delivered.EARLIER or found.message_ref is None:
            return None
        return CardRecord(delivery=key, platform=address.platform, message_ref=found.message_ref)

    async def _send(self, c: Clarification, card: CardRecord, person: Person,
                    address: Address, zone: PersonZone, reminder: Reminder, now: datetime
                    ) -> Outcome:
        key = DeliveryKey(c.id, person.person_id, reminder.attempt, REMINDER_KIND)
        # the durable mark first: whoever reserves it sends (or, after a crash, reconciles)
        slot, created = await self.store.reserve(key, worker_id=self.deliverer.worker_id,
                                                 now=now)
        if not created and slot.state is SlotState.SENT:
            return Outcome.ALREADY_SENT
        read_at = _time.monotonic()
        # the card's record says it was reminded before the card does: a rebuild of it from
        # now on (another's confirmation, a Teams refresh) keeps the reminder line
        card = replace(card, moves_on_at=reminder.moves_on_at,
                       moves_on_to_steward=reminder.to_steward, reminded=True)
        await self.store.replace_card(card)
        await self.refresher.paint(card, self._card_view(c, card, person, address, zone, now),
                                   (read_at, 0))
        _, document = views.shown_to(c, person)
        # the nudge names the move-on time as the card above it does: in the card's zone
        nudge = ReminderView(clarification_id=c.id, near=card.message_ref, document=document,
                             viewer=views.viewer(person, card.time_zone or zone.zone), as_of=now,
                             moves_on_at=reminder.moves_on_at,
                             moves_on_to_steward=reminder.to_steward)
        result = await self.deliverer.deliver(key, address, nudge, now=now, report=False,
                                              reserved=(slot, created))
        if result.status is Delivered.NEW:
            return Outcome.SENT
        if result.status is Delivered.EARLIER:
            return Outcome.SENT if result.recovered else Outcome.ALREADY_SENT
        if result.status is Delivered.UNCERTAIN:
            return Outcome.UNCERTAIN
        return Outcome.FAILED

    def _card_view(self, c: Clarification, card: CardRecord, person: Person,
                   address: Address, zone: PersonZone, now: datetime) -> QuestionView:
        """The card as it was sent (its buttons carry the same reference, its times read in its
        zone), with the reminder line and when it moves on (``card`` as the reminder marked
        it)."""
        view = views.as_sent(views.question(c, key=card.delivery, person=person,
                                            zone=zone.zone, now=now), card, c, now=now)
        return replace(view, card_ref=for_recipient(view.card_ref, address.platform,
                                                    address.user_id))

    async def _audit(self, c: Clarification, card: CardRecord, type_: str, what: str, *,
                     channel: str | None = None) -> None:
        await self.trail.event(
            c.id, type_, person_id=card.delivery.person_id, attempt=card.delivery.attempt,
            channel=channel, to_core=False, extra={"outcome": what},
            facts=EventFacts.of(c) if type_ == "reminder_sent" else None,
            message="Reminder sent in the card's conversation." if type_ == "reminder_sent"
            else "No reminder: " + what + ".")
