"""Digests: the normal-severity questions held back in a window go out as one message at its end.

At send time every item is checked again: a question that has been answered meanwhile is dropped,
and the RBAC gate runs again (memberships can change inside a window). A person away when it
closes gets nothing: the digest waits for them, or its questions are passed over (``_away``).
Each question in the digest keeps its own delivery key, so answers and card updates work exactly
as for a single card.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Protocol

import structlog

from bot.audit import Audit, AuditEvent, EventFacts
from bot.channel import Address
from bot.clock import Clock
from bot.core import errors as e
from bot.core.client import CoreClient
from bot.core.extensions import Extension
from bot.core.models import Clarification, DeliveryKind, DeliveryReport, Person, ReasonCode
from bot.engine import away, evidence, views
from bot.engine.away import AwayCheck, Decision, Verdict
from bot.engine.delivery import Delivered, Deliverer, delivery_id
from bot.engine.rbac import may_read
from bot.engine.routing import Routing, Unroutable
from bot.engine.zones import PersonZone, Zones
from bot.store.base import (
    Admissions,
    CardRecord,
    DeliveryKey,
    DeliveryLedger,
    DigestBatch,
    DigestItem,
    KeyValues,
)
from bot.store.keys import batch_parts
from cards.views import DigestView, QuestionView

log = structlog.get_logger("clarify.digests")
# a digest's first clarification, its person, and where they are reached (``_reader``)
_Reader = tuple[Clarification, Person, Address | Unroutable]
DIGEST_MEMORY_SECONDS = 14 * 24 * 3600


class DigestStore(Admissions, DeliveryLedger, KeyValues, Protocol):
    """What the digests use of the store: the batches, the cards sent, a digest's pages."""


@dataclass
class DigestSender:
    core: CoreClient
    store: DigestStore
    deliverer: Deliverer
    routing: Routing
    audit: Audit
    clock: Clock
    # the people's zones (every time a digest shows) and working hours: a window that would
    # close outside them closes at the start of the person's next working hour instead
    zones: Zones
    claim_seconds: int = 300
    # whether the person is away when the window closes (None: never asked, [clarify.away]
    # off), and the escalation window: a digest waits for a person back within it
    away: AwayCheck | None = None
    window: timedelta = timedelta(hours=48)

    async def flush(self) -> int:
        """Send every digest whose window has ended; returns how many went out."""
        sent = 0
        now = self.clock.now()
        for batch_id in await self.store.due_batches(now=now):
            batch = await self.store.claim_batch(
                batch_id, now=now, lease_seconds=self.claim_seconds
            )
            if batch is None:
                continue  # another worker holds it
            reader = await self._reader(batch)
            zone = None
            if reader is not None:  # else the send says why
                zone = await self._zone(*reader)
                if self.away is not None and isinstance(reader[2], Address) \
                        and await self._away(batch, reader, zone):
                    continue
                later = self.zones.held(reader[0].tenant_id, zone, self.clock.now())
                if later is not None:
                    await self.store.delay_batch(batch_id, until=later)
                    continue
            if await self.send(batch, reader, zone):
                sent += 1
            await self.store.finish_batch(batch_id)
        return sent

    async def _away(self, batch: DigestBatch, reader: _Reader, zone: PersonZone) -> bool:
        """A person away when their digest's window closes (``bot.engine.away``; they were not
        when its questions were queued): nothing is sent while they are. Back before its
        questions could move on (the window's start plus the escalation window), the digest
        waits for their first working hour back; else its questions are passed over, each a
        skip with ``PERSON_AWAY``, and the core is asked to start each one's next turn now
        (``expedite``; without it the next person is asked when the turn's window ends). True
        when the digest does not go now."""
        assert self.away is not None
        c, person, address = reader
        assert isinstance(address, Address)
        gone = await self.away.lookup(address, self.clock.now())
        if gone is None:
            return False
        back = self.away.back(c.tenant_id, zone, gone)
        if back is not None and back < _opened(batch) + self.window:
            away.counted(away.Action.DIGEST_HELD, gone)
            await self.store.delay_batch(batch.batch_id, until=back)
            return True
        away.counted(away.Action.DIGEST_PASSED_OVER, gone)
        decision = Decision(Verdict.PASS, gone)
        for n, item in enumerate(batch.items):
            question = c if n == 0 else \
                await self.core.get_clarification(clarification_id=item.clarification_id)
            if evidence.settled(question):
                continue
            skip = away.skip(person.person_id, decision, address.platform)
            await away.remember(self.store, question.id, person.person_id, gone)
            await self._event(question, item, "skipped", ReasonCode.PERSON_AWAY,
                              f"Dropped from the digest: the person {skip.said} "
                              f"({skip.why}).", platform=address.platform,
                              cause=skip.why, cause_group=away.CAUSE_GROUP)
            await self._next_turn(item)
        await self.store.finish_batch(batch.batch_id)
        return True

    async def _next_turn(self, item: DigestItem) -> None:
        """The item's next turn now, where the core can start it early (``expedite``)."""
        if not self.core.offers(Extension.EXPEDITE):
            return
        try:
            await self.core.expedite_job(job_id=item.job_id, attempt=item.attempt,
                                         reason_code=ReasonCode.PERSON_AWAY)
        except e.CoreError as exc:  # the turn's window ends as usual
            log.warning("digest.expedite_failed", error=type(exc).__name__)

    async def _reader(self, batch: DigestBatch) -> _Reader | None:
        """The digest's first clarification, its person and where they are reached now (routed
        again: a chat user claimed by someone else meanwhile gets nothing); None when the
        clarification or the person cannot be found (the send then says why)."""
        if not batch.items:
            return None
        try:
            c = await self.core.get_clarification(
                clarification_id=batch.items[0].clarification_id)
            person = await self.core.get_person(person_id=batch.person_id,
                                                tenant_id=c.tenant_id)
        except e.NotFound:
            return None
        return c, person, await self.routing.route(self.core, person, tenant_id=c.tenant_id)

    async def _zone(self, c: Clarification, person: Person,
                    address: Address | Unroutable | None) -> PersonZone:
        """The person's zone (``bot.engine.zones``): the window's close is held to it, and the
        digest's times read in it."""
        return await self.zones.zone(c.tenant_id, person,
                                     address if isinstance(address, Address) else None)

    async def send(self, batch: DigestBatch, reader: _Reader | None = None,
                   zone: PersonZone | None = None) -> bool:
        """One digest of the batch's questions still open and readable; ``reader``: the first
        clarification, the person and their address as ``_reader`` found them just now, and
        ``zone`` the person's (``_zone``)."""
        person: Person | None = None
        address: Address | Unroutable | None = None
        first: Clarification | None = None
        if reader is not None:
            first, person, address = reader
        entries: list[tuple[DigestItem, QuestionView, Clarification]] = []
        for n, item in enumerate(batch.items):
            c = first if n == 0 and first is not None else \
                await self.core.get_clarification(clarification_id=item.clarification_id)
            if person is None:
                person = await self.core.get_person(
                    person_id=batch.person_id, tenant_id=c.tenant_id
                )
                # routed again: a chat user claimed by someone else meanwhile gets nothing
                address = await self.routing.route(self.core, person, tenant_id=c.tenant_id)
            if zone is None:
                zone = await self._zone(c, person, address)
            if evidence.settled(c):  # by the evidence, whatever the state word
                continue  # answered while it waited: nothing to ask
            if not may_read(person, acl=c.document.acl, tenant_id=c.tenant_id).allowed:
                await self._event(
                    c,
                    item,
                    "skipped",
                    ReasonCode.NO_READ_PERMISSION,
                    "Dropped from the digest: the person may no longer read it.",
                )
                continue
            key = _question_key(item)
            view = views.question(c, key=key, person=person, zone=zone.zone,
                                  now=self.clock.now())
            entries.append((item, view, c))
        if isinstance(address, Unroutable):
            for item, _, c in entries:
                await self._event(c, item, "skipped", address.reason,
                                  f"Dropped from the digest: {address.why}.", cause=address.why,
                                  platform=address.platform)
            return False
        if not entries or person is None or address is None or zone is None:
            return False
        digest = DigestView(
            digest_ref=_digest_ref(batch),
            questions=tuple(v for _, v, _ in entries),
            viewer=views.viewer(person, zone.zone),
        )
        digest_key = DeliveryKey(
            f"digest.{_digest_ref(batch)}", batch.person_id, 0, DeliveryKind.DIGEST.value
        )
        # its pages are known before the card exists: a "next questions" click that comes as
        # soon as the card shows (before each item is recorded) finds them
        # (and the zone it reads in: its next pages read in it too)
        await self.store.kv_put("digest", digest.digest_ref, json.dumps({
            "person": batch.person_id, "tenant": entries[0][2].tenant_id,
            "items": [[item.clarification_id, item.attempt, item.job_id] for item, _, _ in entries],
            "tz": zone.name,
        }), ttl_seconds=DIGEST_MEMORY_SECONDS)
        result = await self.deliverer.deliver(
            digest_key, address, digest, now=self.clock.now(), report=False
        )
        if result.status not in (Delivered.NEW, Delivered.EARLIER) or result.message_ref is None:
            for item, _, c in entries:
                await self._event(
                    c,
                    item,
                    "delivery_failed",
                    ReasonCode.DELIVERY_FAILED,
                    "The digest could not be delivered.",
                    platform=address.platform, cause=result.why,
                    cause_group=result.cause_group,
                )
            return False
        for item, _, c in entries:
            await self._record(item, c, address, result.message_ref, zone.name)
        return True

    async def page(self, *, digest_ref: str, person: Person, offset: int) -> DigestView | None:
        """The digest's questions from ``offset`` on, for its "next questions" button.

        Only the person the digest was for gets a page, questions answered meanwhile are left
        out, and the RBAC gate runs again.
        """
        raw = await self.store.kv_get("digest", digest_ref)
        if raw is None:
            return None
        saved = json.loads(raw)
        if saved["person"] != person.person_id or saved["tenant"] != person.tenant_id:
            return None
        kept = saved.get("tz")  # a digest sent before its zone was kept: as known without asking
        zone = kept if isinstance(kept, str) and kept else \
            self.zones.estimate(person.tenant_id, person)
        questions: list[QuestionView] = []
        for clarification_id, attempt, job_id in saved["items"][offset:]:
            c = await self.core.get_clarification(clarification_id=clarification_id)
            if evidence.settled(c):  # by the evidence, whatever the state word
                continue
            if not may_read(person, acl=c.document.acl, tenant_id=c.tenant_id).allowed:
                continue
            key = _question_key(DigestItem(clarification_id, person.person_id, attempt, job_id))
            questions.append(views.question(c, key=key, person=person, zone=zone,
                                            now=self.clock.now()))
        if not questions:
            return None
        return DigestView(digest_ref=digest_ref, questions=tuple(questions),
                          viewer=views.viewer(person, zone), offset=offset)

    async def _record(
        self, item: DigestItem, c: Clarification, address: Address, ref: str, zone: str
    ) -> None:
        key = _question_key(item)
        await self.store.mark_sent(key, message_ref=ref)
        # recorded as a digest entry: a card refresh must never rewrite the whole digest message
        entry = replace(key, kind=DeliveryKind.DIGEST.value)
        await self.store.add_card(
            CardRecord(delivery=entry, platform=address.platform, message_ref=ref, time_zone=zone)
        )
        try:
            await self.core.report_delivery(
                clarification_id=c.id,
                report=DeliveryReport(
                    delivery_id=delivery_id(key),
                    person_id=item.person_id,
                    channel=self.deliverer.words.channel(address.platform),
                    kind=DeliveryKind.DIGEST,
                    attempt=item.attempt,
                    message_ref=ref[:500],
                ),
            )
        except e.CoreError as exc:
            log.warning("digest.report_failed", error=type(exc).__name__)
        # the core has the delivery already; the bot's own sink gets the event too
        await self._event(c, item, "digest_sent", None,
                          f"Question delivered in a digest on {address.platform}.",
                          to_core=False, platform=address.platform, zone=zone)

    async def _event(
        self, c: Clarification, item: DigestItem, type_: str, reason: ReasonCode | None,
        message: str, *, to_core: bool = True, platform: str | None = None,
        cause: str | None = None, cause_group: str | None = None, zone: str | None = None,
    ) -> None:
        await self.audit.emit(
            AuditEvent(
                type=type_,
                at=self.clock.now(),
                clarification_id=c.id,
                message=message,
                person_id=item.person_id,
                attempt=item.attempt,
                reason_code=reason,
                job_id=item.job_id,
                occurrence=None,  # one per (question, person, attempt, type, reason)
                facts=EventFacts.of(c, platform=platform, cause=cause,
                                    cause_group=cause_group, zone=zone),
            ),
            to_core=to_core,
        )


def _opened(batch: DigestBatch) -> datetime:
    """When the batch's window opened (its id names it), else when it closes."""
    try:
        return datetime.fromtimestamp(int(batch_parts(batch.batch_id)[1]) / 1000, tz=UTC)
    except ValueError:
        return batch.due_at


def _question_key(item: DigestItem) -> DeliveryKey:
    return DeliveryKey(
        item.clarification_id, item.person_id, item.attempt, DeliveryKind.QUESTION.value
    )


def _digest_ref(batch: DigestBatch) -> str:
    return views.card_ref(DeliveryKey(batch.batch_id, batch.person_id, 0, "digest"))
