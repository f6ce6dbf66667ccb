"""Idempotent delivery: reserve, send, record; after a crash, reconcile instead of resending.

A card is never sent twice for the same (clarification, person, attempt, kind): the reservation is
taken before the send and the message reference recorded after. A reservation found without a
reference means a worker died mid-send: a channel that can look up what it sent is asked whether
the message exists, and only a certain "no" allows sending; a channel whose platform deduplicates
sends by the delivery key is sent to again with the same key; with neither, nothing is resent.
"""

from __future__ import annotations

import random as _random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

import structlog

from bot.channel import (
    Address,
    Channel,
    ChannelError,
    ContractWords,
    CredentialsRejected,
    Message,
    NotReachable,
    NotYet,
)
from bot.core.batching import JobScope
from bot.core.client import CoreClient
from bot.core.models import DeliveryKind, DeliveryReport, ReasonCode
from bot.metrics import PLATFORMS, REGISTRY
from bot.pseudonym import digest
from bot.retry import RetryPolicy
from bot.store.base import CardRecord, DeliveryKey, DeliveryLedger, DeliverySlot, SlotState
from bot.store.errors import StoreError
from cards.views import QuestionView, Viewer, with_locale

log = structlog.get_logger("clarify.delivery")
Sleep = Callable[[float], Awaitable[None]]
# The person's own locale as their platform states it (``en-US``, ``de-DE``), None when it does
# not say: every card sent is rendered in it (``cards.views.with_locale``), else in the core's
# locale for the person (``Person.locale``)
Locales = Callable[[Address], Awaitable[str | None]]
# a send the platform certainly did not take, retried inside the job: 3 tries, 1 s then 2 s at
# most, half of each wait random (docs/reliability.md, "Retries")
SEND_RETRY = RetryPolicy(max_attempts=3, base=1.0, cap=2.0, retry_after_cap=0.0, jitter=0.5)


class Delivered(StrEnum):
    NEW = "new"  # sent now
    EARLIER = "earlier"  # it had been sent before (found on reconciliation or recorded)
    FAILED = "failed"  # not sent after retries: DELIVERY_FAILED
    UNCERTAIN = "uncertain"  # a prior send may exist and the platform cannot tell: not resent


REGISTRY.preset("clarify_delivery_attempts_total", outcome=Delivered, platform=PLATFORMS)


@dataclass(frozen=True, slots=True)
class Result:
    status: Delivered
    message_ref: str | None = None
    # found on the platform after a crash and recorded now (the audit says so)
    recovered: bool = False
    # FAILED: the reason code a skip takes, and the channel's value-free cause (words, and
    # its cause group where the platform's adapter classified it: ``ChannelError.cause``)
    reason: ReasonCode = ReasonCode.DELIVERY_FAILED
    why: str | None = None
    cause_group: str | None = None
    # FAILED: nothing was sent for certain (the reservation is released): another platform
    # may be tried with the same delivery key
    certain: bool = False
    # FAILED: the platform says the refusal will hold for the person's later questions too
    lasting: bool = False
    # FAILED: the platform can take the card from then on (``NotYet``): the turn is kept
    later: datetime | None = None


@dataclass
class Deliverer:
    ledger: DeliveryLedger
    core: CoreClient
    channels: dict[str, Channel]
    worker_id: str
    sleep: Sleep
    retry: RetryPolicy = SEND_RETRY
    random: Callable[[], float] = _random.random  # the retries' jitter draws (tests: 1.0)
    locales: Locales | None = None  # the person's platform locale for the cards sent

    @property
    def words(self) -> ContractWords:
        """The contract's words of the platforms sent on (their reports' channel word)."""
        return ContractWords.of(self.channels)

    async def deliver(
        self,
        key: DeliveryKey,
        address: Address,
        message: Message,
        *,
        now: datetime,
        report: bool = True,
        reserved: tuple[DeliverySlot, bool] | None = None,
        scope: JobScope | None = None,
    ) -> Result:
        """``reserved``: the slot (and whether it was new) when the store reserved it already,
        with the admission (``Store.admit(reserve_for=...)``); ``scope``: the job's, which
        holds the delivery report until the job ends."""
        result = await self._deliver(key, address, message, now=now, report=report,
                                     reserved=reserved, scope=scope)
        REGISTRY.inc("clarify_delivery_attempts_total", outcome=result.status.value,
                     platform=address.platform)
        return result

    async def _deliver(self, key: DeliveryKey, address: Address, message: Message, *,
                       now: datetime, report: bool,
                       reserved: tuple[DeliverySlot, bool] | None,
                       scope: JobScope | None) -> Result:
        channel = self.channels[address.platform]
        slot, created = reserved or await self.ledger.reserve(key, worker_id=self.worker_id,
                                                             now=now)
        if not created:
            if slot.state is SlotState.SENT and slot.message_ref is not None:
                return Result(Delivered.EARLIER, slot.message_ref)
            found = await _look(channel, address, key)
            if found is _UNKNOWN:  # the platform cannot tell: never risk a second card
                return Result(Delivered.UNCERTAIN)
            if isinstance(found, str):
                return await self._recorded(key, address, found, report=report,
                                            status=Delivered.EARLIER, recovered=True,
                                            scope=scope, sent=message)
        try:
            ref = await self._send(channel, address, message, key)
        except CredentialsRejected as exc:
            # nobody can be reached: the worker pauses. The platform answered, so nothing was
            # sent (unless the channel says otherwise): the reservation goes, and the job sends
            # when it resumes instead of taking its own reservation for a worker that stopped
            # mid-send
            if exc.certain:
                await self.ledger.release(key)
            raise
        except ChannelError as exc:
            if exc.certain:
                await self.ledger.release(key)
            log.warning(
                "delivery.failed", platform=address.platform, reason=exc.reason, kind=key.kind
            )
            if isinstance(exc, NotYet):  # the person keeps their turn: asked again then
                return Result(Delivered.FAILED, why=exc.reason, certain=True, later=exc.at)
            if isinstance(exc, NotReachable):  # nothing can be sent until an operator acts
                return Result(Delivered.FAILED, reason=ReasonCode.NO_DELIVERY_ALIAS,
                              why=exc.reason, cause_group=exc.cause, certain=exc.certain,
                              lasting=exc.lasting)
            return Result(Delivered.FAILED, why=exc.reason, cause_group=exc.cause,
                          certain=exc.certain, lasting=exc.lasting)
        REGISTRY.inc("clarify_deliveries_total", kind=key.kind, platform=address.platform)
        return await self._recorded(key, address, ref, report=report, status=Delivered.NEW,
                                    held=slot if created else None, scope=scope, sent=message)

    async def reconcile(self, key: DeliveryKey, address: Address, *,
                        scope: JobScope | None = None) -> Result:
        """A reservation left by a worker that died mid-send: record the message if it exists.

        Certainly absent: the reservation is released and the result is FAILED (the caller
        skips the person with a reason code); the platform cannot tell: UNCERTAIN, kept.
        """
        slot = await self.ledger.slot(key)
        if slot is None or slot.state is not SlotState.RESERVED:
            return Result(Delivered.EARLIER, slot.message_ref if slot else None)
        channel = self.channels[address.platform]
        # resending an earlier attempt would ask a person whose turn has passed
        found = await _look(channel, address, key) if channel.can_find else _UNKNOWN
        if found is _UNKNOWN:
            return Result(Delivered.UNCERTAIN)
        if found is None:
            await self.ledger.release(key)
            return Result(Delivered.FAILED)
        assert isinstance(found, str)
        return await self._recorded(key, address, found, report=True, status=Delivered.EARLIER,
                                    recovered=True, scope=scope)

    async def _locale(self, address: Address) -> str | None:
        """The person's platform locale; a lookup that fails never holds a card back (it is
        rendered in the core's locale for the person instead)."""
        if self.locales is None:
            return None
        try:
            return await self.locales(address)
        except (ChannelError, StoreError) as exc:
            log.warning("delivery.locale_unknown", platform=address.platform,
                        error=type(exc).__name__)
            return None

    async def _send(
        self, channel: Channel, address: Address, message: Message, key: DeliveryKey
    ) -> str:
        message = with_locale(message, await self._locale(address))
        attempt = 1
        while True:
            try:
                return await channel.send(address, message, key=key)
            except ChannelError as exc:
                if not (exc.retryable and exc.certain) or self.retry.last(attempt):
                    raise
                await self.sleep(self.retry.delay(attempt, draw=self.random()))
                attempt += 1

    async def _recorded(
        self, key: DeliveryKey, address: Address, ref: str, *, report: bool, status: Delivered,
        recovered: bool = False, held: DeliverySlot | None = None,
        scope: JobScope | None = None, sent: Message | None = None,
    ) -> Result:
        """``held``: the slot this worker reserved just now, so the store can record the send
        and the card in one step; ``sent``: the message that went out (a question card's record
        keeps what it said of when it moves on, for every later rebuild of it)."""
        card = _card(key, address.platform, ref, sent)
        # a question card whose report waits for the end of its job is marked unreported in
        # the same write, and the mark cleared once the core has the report: a worker killed
        # before then leaves it, and the card is reported soon after someone answers it
        # (``bot.engine.unreported``), not a window later when the job comes back
        marked = held is not None and report and scope is not None \
            and key.kind == DeliveryKind.QUESTION.value
        try:
            if held is not None:
                await self.ledger.record_sent(held, card, unreported=marked)
            else:
                await self.ledger.mark_sent(key, message_ref=ref)
                await self.ledger.add_card(card)
        except StoreError:
            # the card is out but the store could not record it (found by bench/soak.py: Redis
            # restarted just after a send): no later pass can find it, so the core hears of it
            # now (the job's reports are sent as its error unwinds), then the job fails
            await self.report(card, scope=scope)
            raise
        if report:
            await self.report(card, scope=scope)
            if marked and scope is not None:
                scope.mark(delivery_id(key), key, self.ledger.clear_unreported)
        return Result(status, ref, recovered)

    async def report(self, card: CardRecord, *, scope: JobScope | None = None) -> None:
        """The core's delivery report of one card (idempotent on its delivery id; held in the
        job's ``scope`` when one is given)."""
        key = card.delivery
        await self.core.report_delivery(
            clarification_id=key.clarification_id,
            report=DeliveryReport(
                delivery_id=delivery_id(key),
                person_id=key.person_id,
                channel=self.words.channel(card.platform),
                kind=DeliveryKind(key.kind),
                attempt=key.attempt,
                message_ref=card.message_ref[:500],
            ),
            scope=scope,
        )


_UNKNOWN = object()  # the platform cannot say whether the message exists


def _card(key: DeliveryKey, platform: str, ref: str, sent: Message | None) -> CardRecord:
    """The record of a delivered card, with the zone it was written in; a question card's
    with its move-on time and turn too."""
    viewer = getattr(sent, "viewer", None)
    zone = viewer.time_zone if isinstance(viewer, Viewer) else None
    if not isinstance(sent, QuestionView):
        return CardRecord(delivery=key, platform=platform, message_ref=ref, time_zone=zone)
    return CardRecord(delivery=key, platform=platform, message_ref=ref,
                      moves_on_at=sent.moves_on_at, moves_on_to_steward=sent.moves_on_to_steward,
                      reminded=sent.reminded, time_zone=zone)


async def _look(channel: Channel, address: Address, key: DeliveryKey) -> str | None | object:
    """A reserved delivery's message: its reference, None when certainly absent (or when the
    platform deduplicates a send again by the key), or ``_UNKNOWN``."""
    if not channel.can_find:
        return None if channel.idempotent else _UNKNOWN
    try:
        return await channel.find(address, key)
    except CredentialsRejected:
        raise
    except ChannelError:
        return _UNKNOWN


def delivery_id(key: DeliveryKey) -> str:
    """The core's idempotency key for a delivery report: one per delivery key, naming the
    person only by a keyed hash (``bot.pseudonym``), so that what stays on the core's record
    after an erasure names nobody."""
    return f"dl.{key.kind}.{digest(key.token(), purpose='delivery')[:40]}"
