"""Interactions: what a person's tap asks of the bot, decided once for every platform.

An adapter verifies a callback, parses it once into a ``ChatUser`` and the references its card
carried, acknowledges, and renders what comes back; the decisions are here: in which tenant a
chat user acts (the one place it is resolved), whether the custom-answer form opens and with what,
the digest's next page, whether a person may see a clarification, where an answer's outcome
is shown, declines ("Not the right person", ``bot.interaction.declines``), and what a steward's
attention
queue in chat lists. Answers themselves go to
``bot.answering.answers`` (``Callback``, ``AnswerService.accept``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from zoneinfo import ZoneInfo

import structlog

from bot.channel import address_of
from bot.chat import ChatUser, UserTenants
from bot.clock import Clock
from bot.core import errors as e
from bot.core.client import CoreClient
from bot.core.models import Clarification, DeliveryKind, Person
from bot.engine import views
from bot.engine.digests import DigestSender
from bot.engine.rbac import may_read
from bot.engine.zones import Zones
from bot.interaction.attention import AttentionBoard
from bot.interaction.declines import Declined, Declines
from bot.interaction.reach import ReachDesk
from bot.store.base import CardRecord, DeliveryLedger
from bot.store.errors import StoreError
from cards.reach_views import ReachDetailView
from cards.views import AttentionView, DigestView, OverrideFormView, QuestionView, Viewer

log = structlog.get_logger("clarify.interactions")
QUEUE_COMMAND = "queue"  # the personal chat message that asks for the queue (Teams)
REACH_COMMAND = "reach"  # the personal chat message that asks for the reach detail (Teams)


@dataclass(frozen=True, slots=True)
class Placement:
    """Where an answering person's outcome is shown: the cards it repaints, and the messages
    next to which they are told privately (a digest is never rewritten)."""

    paint: tuple[CardRecord, ...] = ()
    notes: tuple[tuple[str, str], ...] = ()  # (platform, message reference)


def placement(own: list[CardRecord], *, platform: str, clicked: str | None,
              override: bool = False) -> Placement:
    """Where one person's outcome shows: on each of their question cards; next to each digest
    holding one of their questions; with no card of theirs on record, next to what they
    clicked (never a message the callback names when a card of theirs is known). A steward's
    override also replaces the steward card of theirs it was made from (as a Teams invoke's
    answer does), so its "Decide" buttons do not stay."""
    if not own:
        return Placement(notes=((platform, clicked),) if clicked is not None else ())

    def painted(c: CardRecord) -> bool:
        return c.delivery.kind == DeliveryKind.QUESTION.value or (
            override and c.delivery.kind != DeliveryKind.DIGEST.value
            and c.platform == platform and c.message_ref == clicked)

    paint = tuple(c for c in own if painted(c))
    notes = dict.fromkeys((c.platform, c.message_ref) for c in own if not painted(c))
    return Placement(paint=paint, notes=tuple(notes))


def tenant_of(user: ChatUser, tenants: Mapping[str, UserTenants]) -> str | None:
    """The tenant a chat identity acts in, or None (deny by default): the one place it is
    decided, by the tenant map its platform's mount supplied (docs/slack.md; the Teams tenant
    list for Teams); a platform without one serves no tenant."""
    found = tenants.get(user.platform)
    return found.tenant_of(user) if found is not None else None


def wants_queue(message: str | None) -> bool:
    """Whether a personal chat message asks for the steward's queue: "queue", in any case, with
    any surrounding blanks; anything else gets the short help."""
    return (message or "").strip().casefold() == QUEUE_COMMAND


def wants_reach(message: str | None) -> bool:
    """Whether a personal chat message asks for the steward's reach detail: "reach", in any
    case, with any surrounding blanks."""
    return (message or "").strip().casefold() == REACH_COMMAND


def may_see(person: Person, c: Clarification, *, tenant_id: str) -> bool:
    """The RBAC gate for anything showing a clarification's content to a person."""
    return c.tenant_id == tenant_id and may_read(person, acl=c.document.acl,
                                                 tenant_id=tenant_id).allowed


@dataclass
class Interactions:
    core: CoreClient
    store: DeliveryLedger  # the cards sent: what a card said of when it moves on (``custom_form``)
    digests: DigestSender
    clock: Clock
    tenants: Mapping[str, UserTenants]  # per platform, as its mount supplied (``tenant_of``)
    declines: Declines
    board: AttentionBoard
    zones: Zones  # the readers' zones (``bot.engine.zones``), for a card whose record names none
    reach: ReachDesk | None = None  # the steward's reach detail (None: the record is not kept)

    def tenant(self, user: ChatUser) -> str | None:
        """The tenant a callback acts in, or None (deny by default): ``tenant_of``."""
        return tenant_of(user, self.tenants)

    async def custom_form(self, user: ChatUser, *, clarification_id: str, card_ref: str
                          ) -> QuestionView | None:
        """The question the "Something else…" form asks, for the card it was opened from (also
        the card a Teams refresh rebuilds for its reader); None: no form (no tenant, a person who
        may not see it, or the core cannot tell now). While the question waits on the person the
        card was sent to, it says when it moves on as the card did (its record in the store,
        ``views.as_sent``); a reader who is not that person gets no move-on line."""
        read = await self._person_and(user, clarification_id, event="interactions.form_unavailable")
        if read is None:
            return None
        person, tenant, c = read
        if not may_see(person, c, tenant_id=tenant) or views.declined(c, person.person_id):
            return None  # a decliner's card says "passed on" (a Teams refresh must not undo it)
        now = self.clock.now()
        try:
            card = views.sent_card(await self.store.cards(c.id), card_ref)
        except StoreError as exc:  # the form still opens: without the move-on line
            log.warning("interactions.card_record_unavailable", error=type(exc).__name__)
            card = None
        if card is not None and card.delivery.person_id != person.person_id:
            card = None  # another's card: its turn is not this reader's
        # the zone the card was written in, else the reader's
        zone = card.time_zone if card is not None and card.time_zone else \
            await self._zone(user, person, tenant)
        return views.as_sent(views.question_view(c, card_ref=card_ref, person=person, zone=zone,
                                                 now=now), card, c, now=now)

    async def decline(self, user: ChatUser, *, clarification_id: str, card_ref: str,
                      paint: bool) -> Declined:
        """"Not the right person" on a question card (``bot.interaction.declines``), in the user's
        tenant."""
        return await self.declines.decline(user, tenant=self.tenant(user),
                                           clarification_id=clarification_id,
                                           card_ref=card_ref, paint=paint)

    async def override_form(self, user: ChatUser, *, clarification_id: str, card_ref: str,
                            candidate: int) -> OverrideFormView | None:
        """The steward override's confirmation step for one candidate; None: no form (no
        tenant, another tenant's clarification, no such candidate, or the core cannot tell).
        Whether the person may override is not decided here: the core reads their rights when
        the override arrives and refuses a non-steward (the person is then told privately)."""
        read = await self._person_and(user, clarification_id,
                                      event="interactions.override_form_unavailable")
        if read is None:
            return None
        person, tenant, c = read
        chosen = next((x for x in views.override_candidates(c, person) if x.index == candidate),
                      None)
        if c.tenant_id != tenant or chosen is None:
            return None
        return OverrideFormView(clarification_id=c.id, card_ref=card_ref, candidate=chosen,
                                document=views.steward_document(c, person),
                                viewer=views.viewer(person, await self._zone(user, person,
                                                                             tenant)))

    async def digest_page(self, user: ChatUser, *, digest_ref: str, offset: int
                          ) -> DigestView | None:
        """The digest's questions from ``offset`` on, for the person it was sent to; None: no
        more (answered meanwhile, not theirs, or the core cannot tell now)."""
        try:
            found = await self._person(user)
            if found is None:
                return None
            return await self.digests.page(digest_ref=digest_ref, person=found[0], offset=offset)
        except e.CoreError as exc:
            log.warning("interactions.digest_page_failed", error=type(exc).__name__)
            return None

    async def attention(self, user: ChatUser) -> AttentionView:
        """A steward's attention queue, for the chat identity (``bot.interaction.attention``: built
        from the
        core, remembered for a short while per steward)."""
        return await self.board.for_user(user)

    @property
    def reach_kept(self) -> bool:
        """Whether a reach record is kept (a database, or a memory store): without one there
        is no reach detail to show, and no tab or button offers it."""
        return self.reach is not None and self.reach.reach is not None

    async def reach_detail(self, user: ChatUser) -> ReachDetailView:
        """A steward's reach detail, for the chat identity (``bot.interaction.reach``); anyone
        else: the view with nothing for them."""
        if self.reach is None:
            return ReachDetailView(viewer=Viewer(), steward=False)
        return await self.reach.detail(user)

    async def _zone(self, user: ChatUser, person: Person, tenant: str) -> ZoneInfo:
        """The reader's zone (``bot.engine.zones``), their platform's from the identity that
        clicked."""
        return (await self.zones.zone(tenant, person, address_of(user, person.person_id))).zone

    async def _person_and(self, user: ChatUser, clarification_id: str, *, event: str
                          ) -> tuple[Person, str, Clarification] | None:
        """The person behind ``user``, their tenant and the clarification; None when the user
        acts in no tenant or the core cannot tell now (logged as ``event``, by error type)."""
        try:
            found = await self._person(user)
            if found is None:
                return None
            c = await self.core.get_clarification(clarification_id=clarification_id)
        except e.CoreError as exc:
            log.warning(event, error=type(exc).__name__)
            return None
        return found[0], found[1], c

    async def _person(self, user: ChatUser) -> tuple[Person, str] | None:
        tenant = self.tenant(user)
        if tenant is None:
            return None
        resolved = await self.core.resolve_person(tenant_id=tenant, identity=user.identity())
        return resolved.person, tenant
