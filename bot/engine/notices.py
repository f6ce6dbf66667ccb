"""High-severity notices to the steward, batched per steward: one message lists a window's.

A job that sends a high-severity question queues the steward's notice on the steward's durable
list in the store (``Stewards.notify_high``); the first notice of a quiet period opens a window
(``[clarify.severity] steward_notice_window_seconds``, 60 s by default) and every notice queued
inside it goes out with it, in one message at the window's end (``NoticeSender.flush``, part of
the worker's housekeeping). So a steward gets at most one notice message per window (and one
more per ``STEWARD_NOTICES_MAX`` notices past that), instead of one per question; a window of 0
sends each notice at the next housekeeping pass, still listing every notice due by then.

When the message goes out, each clarification is read again, so each notice is redacted as a
single one always was: the steward sees a document's title and link only when they pass its
RBAC gate (``views.steward_document``), never the question, the span or the candidates.

Each notice keeps its own delivery (``STEWARD_NOTICE`` for that clarification and steward): it
is recorded against the message and reported to the core, idempotent on its delivery id, so
each report reaches the core exactly once however often it is sent again. Crash safety:

- a worker killed between taking a batch and sending it leaves the batch leased in the store;
  when the lease (``claim_seconds``) runs out, the same batch (same id, same notices) is taken
  again, so nothing is lost;
- the message has its own delivery key (the batch's id), reserved before the send and recorded
  after it, like any card: a worker killed mid-send leaves a reservation that Slack resolves by
  looking the message up (sent: recorded, not sent again; absent: sent); on Teams, which cannot
  look up what it sent, such a message is never sent twice, and its notices are given up with
  an event saying so (at most once);
- killed after the send was recorded: the batch comes back, finds the message recorded, and
  only records and reports its notices again (idempotent), so no second message.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import structlog

from bot.audit import Audit, AuditEvent, EventFacts
from bot.channel import Address
from bot.clock import Clock
from bot.core import batching
from bot.core import errors as e
from bot.core.client import CoreClient
from bot.core.models import Clarification, DeliveryKind, DeliveryReport, ReasonCode
from bot.engine import views
from bot.engine.delivery import Delivered, Deliverer, delivery_id
from bot.engine.people import display_names
from bot.engine.routing import Routing, Unroutable
from bot.engine.stewards import Told
from bot.engine.zones import Zones
from bot.store.base import (
    CardRecord,
    DeliveryKey,
    DeliveryLedger,
    NoticeBatch,
    NoticeItem,
    NoticeLists,
)
from cards.views import STEWARD_NOTICES_MAX, StewardNoticesView, StewardNoticeView

log = structlog.get_logger("clarify.notices")
NOTICES_KIND = "steward_notices"  # the batch message's own delivery kind (not reported)


def notice_key(clarification_id: str, steward_id: str) -> DeliveryKey:
    """One notice: one per clarification and steward, as when each went out on its own."""
    return DeliveryKey(clarification_id, steward_id, 0, DeliveryKind.STEWARD_NOTICE.value)


class NoticeStore(NoticeLists, DeliveryLedger, Protocol):
    """What the notices use of the store: the stewards' lists and the cards sent."""


@dataclass
class NoticeSender:
    core: CoreClient
    store: NoticeStore
    deliverer: Deliverer
    routing: Routing
    audit: Audit
    clock: Clock
    # the stewards' zones and own working hours (``bot.engine.zones``): a notice due outside
    # them waits for the steward's next working hour; the message reads in their zone
    zones: Zones
    claim_seconds: int = 300
    told: Told | None = None  # a message went to the steward (``bot.interaction.attention``)

    async def flush(self) -> int:
        """Send every steward's due notices, one message each; returns how many went out."""
        sent = 0
        for tenant_id, steward_id in await self.store.notices_due(now=self.clock.now()):
            # more than a message's worth due: the next message follows at once
            while (batch := await self.store.notice_take(
                    tenant_id, steward_id, now=self.clock.now(),
                    lease_seconds=self.claim_seconds, limit=STEWARD_NOTICES_MAX)) is not None:
                scope = batching.JobScope()
                try:
                    told = await self.send(batch, scope)
                finally:
                    await self.core.flush(scope)  # the notices' reports, in one call
                if told is None:
                    # the steward is away: the batch stays taken and is looked at again when
                    # its lease (``claim_seconds``) runs out; nothing of it is lost or sent
                    break
                sent += told
                await self.store.notice_done(batch, now=self.clock.now())
        return sent


    async def send(self, batch: NoticeBatch, scope: batching.JobScope) -> int | None:
        """One message for the batch (1), or none (0) with every notice's reason on record;
        None: the steward is outside their working hours, nothing sent or recorded."""
        asked = [p for item in batch.items for p in item.asked]
        await self.core.read_people(scope, tenant_id=batch.tenant_id,
                                    person_ids=[batch.steward_id, *asked])
        try:
            steward = await self.core.get_person(person_id=batch.steward_id,
                                                 tenant_id=batch.tenant_id, scope=scope)
        except e.PersonNotFound:
            await self._given_up(batch, batch.items, ReasonCode.TENANT_SCOPE_MISMATCH,
                                 "the steward is not a person of this tenant", scope=scope)
            return 0
        address = await self.routing.route(self.core, steward, tenant_id=batch.tenant_id,
                                           scope=scope)
        if isinstance(address, Unroutable):
            await self._given_up(batch, batch.items, address.reason, address.why, scope=scope,
                                 platform=address.platform)
            return 0
        # outside the steward's working hours now, high-severity notices wait (the critical ones
        # never come this way: they go at once, ``bot.engine.stewards``); asked once the
        # batch's people are read, it costs no core call of its own
        zone = await self.zones.zone(batch.tenant_id, steward, address)
        if self.zones.held(batch.tenant_id, zone, self.clock.now()) is not None:
            return None
        names = await display_names(self.core, asked, tenant_id=batch.tenant_id, scope=scope)
        shown: list[tuple[NoticeItem, StewardNoticeView]] = []
        read: dict[str, Clarification] = {}
        for item in batch.items:
            try:
                c = await self.core.get_clarification(clarification_id=item.clarification_id)
            except e.ClarificationNotFound:
                continue  # erased meanwhile: nothing to tell
            read[c.id] = c
            view = views.notice(c, key=notice_key(c.id, steward.person_id), steward=steward,
                                asked=[names.get(p, p) for p in item.asked], zone=zone.zone)
            shown.append((item, view))
        if not shown:
            return 0
        message = StewardNoticesView(notices=tuple(v for _, v in shown),
                                     viewer=views.viewer(steward, zone.zone))
        key = DeliveryKey(f"notices.{batch.batch_id}", steward.person_id, 0, NOTICES_KIND)
        result = await self.deliverer.deliver(key, address, message, now=self.clock.now(),
                                              report=False, scope=scope)
        if result.status not in (Delivered.NEW, Delivered.EARLIER) or result.message_ref is None:
            why = ("a worker stopped mid-send and the platform cannot say whether the message "
                   "arrived; it is not sent again") if result.status is Delivered.UNCERTAIN \
                else (result.why or "retries exhausted")
            await self._given_up(batch, tuple(i for i, _ in shown),
                                 ReasonCode.DELIVERY_FAILED, why, scope=scope,
                                 platform=address.platform, cause_group=result.cause_group,
                                 read=read)
            return 0
        for item, _ in shown:
            await self._record(item, steward.person_id, address, result.message_ref,
                               told=result.status is Delivered.NEW or result.recovered,
                               scope=scope)
        if result.status is Delivered.NEW and self.told is not None:
            await self.told(batch.tenant_id, steward, address)
        return 1 if result.status is Delivered.NEW else 0

    async def _record(self, item: NoticeItem, steward_id: str, address: Address, ref: str, *,
                      told: bool, scope: batching.JobScope) -> None:
        """The notice's own delivery: its card, its report to the core (idempotent on its
        delivery id) and, when the message was sent now or found after a crash, its event."""
        key = notice_key(item.clarification_id, steward_id)
        await self.store.add_card(CardRecord(delivery=key, platform=address.platform,
                                             message_ref=ref))
        await self.core.report_delivery(
            clarification_id=item.clarification_id,
            report=DeliveryReport(delivery_id=delivery_id(key), person_id=steward_id,
                                  channel=self.deliverer.words.channel(address.platform),
                                  kind=DeliveryKind.STEWARD_NOTICE, attempt=0,
                                  message_ref=ref[:500]),
            scope=scope)
        if told:
            await self._event(item, "steward_notified", steward_id, None,
                              "The steward was told a high-severity question was sent.",
                              channel=address.platform, scope=scope)

    async def _given_up(self, batch: NoticeBatch, items: tuple[NoticeItem, ...],
                        reason: ReasonCode, why: str, *, scope: batching.JobScope,
                        platform: str | None = None, cause_group: str | None = None,
                        read: dict[str, Clarification] | None = None) -> None:
        """Each notice's reason on record, with its question's facts for the reach record
        (the steward not reached: ``bot.reach``); a question erased meanwhile has none."""
        for item in items:
            c = (read or {}).get(item.clarification_id)
            if c is None:
                try:
                    c = await self.core.get_clarification(
                        clarification_id=item.clarification_id)
                except e.ClarificationNotFound:
                    c = None
            facts = None if c is None else EventFacts.of(
                c, platform=platform, cause=why, cause_group=cause_group)
            await self._event(item, "steward_unreachable", batch.steward_id, reason,
                              f"The workspace steward cannot be reached ({why}); the "
                              "high-severity notice was not sent.", scope=scope, facts=facts)

    async def _event(self, item: NoticeItem, type_: str, steward_id: str,
                     reason: ReasonCode | None, message: str, *,
                     channel: str | None = None, scope: batching.JobScope,
                     facts: EventFacts | None = None) -> None:
        await self.audit.emit(AuditEvent(
            type=type_, at=self.clock.now(), clarification_id=item.clarification_id,
            message=message, person_id=steward_id, attempt=item.attempt, reason_code=reason,
            job_id=item.job_id, channel=channel,
            occurrence=None,  # one notice per (question, steward, attempt, type, reason)
            facts=facts),
            scope=scope)

