"""The store: state the bot shares between replicas and keeps across restarts.

One Protocol, two implementations (Redis for production and replicas, memory for the demo and
single-process runs), one contract test suite run against both. Every multi-step operation is
atomic (a Lua script on Redis, a lock in memory) so caps and windows hold across workers.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Protocol

from bot.store.keys import delivery_token


class SlotState(StrEnum):
    RESERVED = "reserved"  # about to send; a crash here means "reconcile before resending"
    SENT = "sent"  # the message exists; message_ref says where
    DIGESTED = "digested"  # waiting in a digest batch; the digest's send records the ref


@dataclass(frozen=True, slots=True)
class DeliveryKey:
    """One card for one person at one attempt: never sent twice."""

    clarification_id: str
    person_id: str
    attempt: int
    kind: str  # bot.core.models.DeliveryKind value

    def token(self) -> str:
        return delivery_token(self.clarification_id, self.person_id, self.attempt, self.kind)


@dataclass(frozen=True, slots=True)
class DeliverySlot:
    key: DeliveryKey
    state: SlotState
    worker_id: str
    reserved_at: datetime
    message_ref: str | None = None
    batch_id: str | None = None


class Decision(StrEnum):
    DIRECT = "direct"  # send a card now
    DIGESTED = "digested"  # queued for the person's digest at the window's end
    CAPPED = "capped"  # the person's daily cap is reached: skip (DAILY_CAP_EXCEEDED)


@dataclass(frozen=True, slots=True)
class Admission:
    decision: Decision
    batch_id: str | None = None  # set when DIGESTED
    due_at: datetime | None = None  # when that digest goes out
    replayed: bool = False  # the same delivery key was admitted before: same decision
    # with ``reserve_for``, a fresh DIRECT decision's reservation, taken in the same step
    reserved: DeliverySlot | None = None
    created: bool = False  # the reservation was made by this call


@dataclass(frozen=True, slots=True)
class CardRecord:
    """A card (or digest entry) that was delivered: where it is, so that it can be updated."""

    delivery: DeliveryKey
    platform: str  # "slack" | "teams" | "recording"
    message_ref: str  # opaque to the engine, meaningful to the adapter
    # what a question card said when it was sent (issue 26): when the question moves on if
    # nobody answers, whether it then goes to the steward, and (set by its one reminder)
    # whether it was reminded; every later rebuild of the card says the same while the
    # question still waits on the person (``bot.engine.views.as_sent``). None: not known (a
    # digest entry, a card found after a crash, a record from before these were kept)
    moves_on_at: datetime | None = None
    moves_on_to_steward: bool = False
    reminded: bool = False
    # the IANA zone the message was written in (``bot.engine.zones``): every rebuild of the
    # card shows its times in it, as the first one did. None: not known (found after a crash,
    # or recorded before zones were kept)
    time_zone: str | None = None


@dataclass(frozen=True, slots=True)
class DigestItem:
    clarification_id: str
    person_id: str
    attempt: int
    job_id: str


@dataclass(frozen=True, slots=True)
class DigestBatch:
    batch_id: str
    person_id: str
    due_at: datetime
    items: tuple[DigestItem, ...]


@dataclass(frozen=True, slots=True)
class NoticeItem:
    """One high-severity notice waiting for its steward's next message: ids only (the
    clarification and the names are read again when it goes out, the RBAC gate with them)."""

    clarification_id: str
    job_id: str
    attempt: int
    asked: tuple[str, ...]  # person ids of the people the question went to


@dataclass(frozen=True, slots=True)
class NoticeBatch:
    """The notices one steward message lists: taken together, sent once, under one id."""

    batch_id: str
    tenant_id: str
    steward_id: str
    items: tuple[NoticeItem, ...]


class Acceptance(StrEnum):
    """What the outbox did with an answer offered to it (before the platform's acknowledgement)."""

    QUEUED = "queued"  # stored: a consumer forwards it
    DUPLICATE = "duplicate"  # the same action again (a platform retry, a replay): already held


@dataclass(frozen=True, slots=True)
class OutboxEntry:
    entry_id: str
    payload: str  # JSON of the pending answer; may hold answer text, so never logged
    attempts: int  # claims so far, this one included
    created_at: datetime
    order_key: str  # one person's answers to one clarification: forwarded one at a time
    acted_at: int  # the platform's time of the action, microseconds since the epoch
    failures: int = 0  # attempts that failed other than by the core being unavailable
    # an action of the same order key acted later was accepted (it waits, or went before this
    # one reached the front): forwarded all the same, as a superseded response
    superseded: bool = False
    answer: str = ""  # the answer's fingerprint (``Callback.fingerprint``); "": not given
    # the settled entry this one repeats (the next action of the key, forwarded already, with
    # the same answer): forwarded as a resend of that one (``bot.store.stream.repeat_of``)
    repeats: str | None = None


class Store(Protocol):
    # ------------------------------------------------ idempotent delivery
    async def reserve(self, key: DeliveryKey, *, worker_id: str, now: datetime
                      ) -> tuple[DeliverySlot, bool]:
        """Reserve a delivery; returns the slot and True when this call created it."""
        ...

    async def mark_sent(self, key: DeliveryKey, *, message_ref: str) -> DeliverySlot:
        """Record the message reference after a successful send (state SENT)."""
        ...

    async def record_sent(self, slot: DeliverySlot, card: CardRecord) -> DeliverySlot:
        """``mark_sent`` and ``add_card`` at once: the slot as this worker holds it becomes SENT
        with the card's reference, and the card is remembered (on Redis the card alone is
        written: a reserved slot whose card is remembered reads as SENT)."""
        ...

    async def mark_digested(self, key: DeliveryKey, *, batch_id: str, worker_id: str,
                            now: datetime) -> DeliverySlot:
        """Record that the card waits in a digest batch (creating the slot when none exists)."""
        ...

    async def release(self, key: DeliveryKey) -> None:
        """Forget a reservation whose send certainly did not happen (so it may be retried)."""
        ...

    async def slot(self, key: DeliveryKey) -> DeliverySlot | None: ...

    # ------------------------------------------------ cards to update
    async def add_card(self, card: CardRecord) -> None: ...

    async def cards(self, clarification_id: str) -> list[CardRecord]: ...

    async def replace_card(self, card: CardRecord) -> bool:
        """Replace the record of ``card``'s delivery (its reminder marks it ``reminded``), only
        while one is kept: a card erased or expired meanwhile is not written back. False when
        there was none. The record's time to live is not renewed."""
        ...

    # ------------------------------------------------ caps and digest batching
    async def admit(
        self, key: DeliveryKey, *, item: DigestItem, day: str, now: datetime, cap: int,
        threshold: int, window_seconds: int, batched: bool, reserve_for: str | None = None,
    ) -> Admission:
        """Decide DIRECT, DIGESTED or CAPPED for one delivery, atomically and idempotently.

        With ``reserve_for`` (a worker id), a fresh DIRECT decision also reserves the delivery
        for that worker, as ``reserve`` would, in the same step (one script on Redis):
        ``reserved`` and ``created`` say what ``reserve`` would have returned.

        ``day`` is the person's local calendar day (the cap's key). ``batched`` is True for
        normal severity: inside a person's window (opened by their first normal card, lasting
        ``window_seconds``) the first ``threshold`` normal cards are DIRECT and the rest join one
        digest due at the window's end. A DIRECT card costs 1 against the cap; a whole digest
        costs 1, charged when its first item joins. High and critical (batched=False) are DIRECT
        or CAPPED only. Admitting the same key again returns the first decision (replayed=True).
        """
        ...

    async def due_batches(self, *, now: datetime, limit: int = 100) -> list[str]:
        """Batch ids whose window has ended and that no live claim holds."""
        ...

    async def claim_batch(self, batch_id: str, *, now: datetime, lease_seconds: int
                          ) -> DigestBatch | None:
        """Claim a due batch for sending (None when not due or claimed by another worker)."""
        ...

    async def delay_batch(self, batch_id: str, *, until: datetime) -> None:
        """A claimed batch given back, due again at ``until`` (the person's next working hour,
        issue 26), its items kept."""
        ...

    async def finish_batch(self, batch_id: str) -> None:
        """The digest was sent: forget the batch."""
        ...

    # ------------------------------------------------ steward notices (bot/store/notices.py)
    async def notice_add(self, tenant_id: str, steward_id: str, item: NoticeItem, *,
                         now: datetime, window_seconds: int) -> bool:
        """Queue a notice on the steward's durable list; False when this clarification's
        notice was queued before (within ``keys.SLOT_TTL_SECONDS``). The first notice of a
        quiet period opens a window: every notice queued inside it is due at its end."""
        ...

    async def notices_due(self, *, now: datetime, limit: int = 100) -> list[tuple[str, str]]:
        """(tenant, steward) pairs whose notices are due, or whose taken batch's lease ran out."""
        ...

    async def notice_take(self, tenant_id: str, steward_id: str, *, now: datetime,
                          lease_seconds: int, limit: int) -> NoticeBatch | None:
        """The steward's batch to send, held for ``lease_seconds``: a batch taken before whose
        lease ran out (the same id and items: its holder died), else up to ``limit`` due
        notices (oldest window first, then by clarification id) as a new batch. None when
        nothing is due or a live lease holds the steward's batch."""
        ...

    async def notice_done(self, batch: NoticeBatch, *, now: datetime) -> None:
        """The batch was sent (or given up): forget it."""
        ...

    # ------------------------------------------------ reminders (bot/engine/reminders.py)
    async def reminder_add(self, member: str, *, due: datetime) -> None:
        """Index a question card's reminder by when it is due; a member indexed already keeps
        its due time (a job handled again does not move it)."""
        ...

    async def reminders_due(self, *, now: datetime, limit: int = 100) -> list[str]:
        """Members due by ``now`` that no live claim holds, earliest first."""
        ...

    async def reminder_claim(self, member: str, *, now: datetime, lease_seconds: int) -> bool:
        """Hold a due member for ``lease_seconds`` (one claim wins; a holder that dies lets it
        come due again when the lease ends). False when not due or held by another."""
        ...

    async def reminder_later(self, member: str, *, due: datetime) -> None:
        """Move an indexed member to a new due time (the next working hour)."""
        ...

    async def reminder_done(self, member: str) -> None:
        """Forget a member: its reminder went out, or never will."""
        ...

    # ------------------------------------------------ once-only markers
    async def mark_once(self, namespace: str, key: str, *, ttl_seconds: int) -> bool:
        """True the first time (namespace, key) is marked within ttl; False after."""
        ...

    async def hold_put(self, job_id: str, value: str, *, at: datetime) -> None:
        """Keep a job held for working hours (its lease token and when it is due) and when a
        worker should look at it next, ``at`` (issue 26, docs/delivery.md "Working hours")."""
        ...

    async def holds_due(self, *, now: datetime, limit: int = 100) -> list[tuple[str, str]]:
        """Held jobs whose ``at`` has come, (job id, value), earliest first."""
        ...

    async def hold_claim(self, job_id: str, *, now: datetime, lease_seconds: int) -> bool:
        """Take a hold whose ``at`` has come for ``lease_seconds`` (its ``at`` moves to then):
        one claim wins, so one replica at a time extends or releases it, and a claimant that
        dies lets it come due again when the claim ends. False when not due, gone, or held by
        another claim."""
        ...

    async def hold_text(self, job_id: str) -> str | None:
        """One held job's hold, as kept."""
        ...

    async def hold_drop(self, job_id: str) -> None:
        """Forget a held job (delivered, settled, or its lease lost)."""
        ...

    async def kv_put(self, namespace: str, key: str, value: str, *, ttl_seconds: int) -> None:
        """Keep a small document (e.g. a digest's contents, for its next page)."""
        ...

    async def kv_get(self, namespace: str, key: str) -> str | None: ...

    async def kv_delete(self, namespace: str, key: str) -> bool:
        """Forget a remembered value; True when there was one."""
        ...

    async def swap_latest(self, namespace: str, key: str, value: str, *, ttl_seconds: int
                          ) -> str | None:
        """Remember ``value`` as the latest for (namespace, key); returns the previous one."""
        ...

    # ------------------------------------------------ Teams conversation references
    async def conversation_put(self, tenant_id: str, aad_object_id: str, reference_json: str,
                               *, now: datetime) -> None:
        """Keep the 1:1 conversation reference of a Teams user in a tenant (replacing any
        earlier one); it lasts ``keys.CONVERSATION_TTL_SECONDS`` from ``now``."""
        ...

    async def conversation_get(self, tenant_id: str, aad_object_id: str) -> str | None:
        """The reference kept for that user in that tenant, or None (never another tenant's)."""
        ...

    async def conversation_delete(self, tenant_id: str, aad_object_id: str) -> None:
        """Forget it (the app was uninstalled); forgetting nothing is not an error."""
        ...

    # ------------------------------------------------ platform rate limits (shared by replicas)
    async def rate_take(self, bucket: str, *, rate_per_second: float, burst: int,
                        now: datetime, reserve: int = 0) -> float:
        """Take one token; returns how many seconds to wait before using it (0: go now).

        With ``reserve`` (bulk work), a token is taken only when ``reserve`` remain after it;
        otherwise nothing is taken and the answer is how long until then: ask again after it.
        """
        ...

    async def rate_block(self, bucket: str, *, seconds: float, rate_per_second: float,
                         burst: int, now: datetime) -> None:
        """The platform said 429: nobody takes from this bucket for ``seconds``."""
        ...

    # ------------------------------------------------ answer outbox (durable)
    async def outbox_accept(self, entry_id: str, payload: str, *, order_key: str, acted_at: int,
                            now: datetime, answer: str = "") -> Acceptance:
        """Store an answer to forward and raise its order key's "latest action" marker, at once
        (``answer``: its fingerprint, kept with the entry and, once it settled, in the marker;
        "" for none: it then never repeats another, ``bot.store.stream``).

        DUPLICATE (nothing stored) when the entry is held already or was settled or parked
        (within the order marker's TTL). An action older than one accepted before is queued too,
        in its place in the key's order. The marker is only ever raised.
        """
        ...

    async def outbox_claim(self, *, now: datetime, lease_seconds: int, limit: int,
                           entry_id: str | None = None) -> list[OutboxEntry]:
        """Entries due now (only ``entry_id`` when given), at most one per order key, none whose
        key another claim holds, and only a key's first waiting entry by action time (the
        person's order); each is held, with its key, for ``lease_seconds``, its attempts raised
        by one, flagged superseded when a later action of its key was accepted, and naming the
        settled entry it repeats, if any (``bot.store.stream.repeat_of``)."""
        ...

    async def outbox_retry(self, entry: OutboxEntry, *, at: datetime, failed: bool) -> None:
        """Try again at ``at`` and free the key; ``failed`` counts the attempt as a failure."""
        ...

    async def outbox_done(self, entry: OutboxEntry, *, now: datetime | None = None) -> None:
        """Settled: forget the entry, free its key, remember its action time as settled; with
        ``now``, the key's next entry in the person's order is due at once."""
        ...

    async def outbox_park(self, entry: OutboxEntry, *, reason: str, now: datetime) -> None:
        """Set aside for an operator (kept, never forwarded again); frees the key, and the
        key's next entry in the person's order is due at once."""
        ...

    async def outbox_size(self) -> int:
        """Entries waiting to be forwarded (parked ones not counted)."""
        ...

    async def outbox_parked(self) -> int: ...

    async def outbox_overdue(self, *, now: datetime) -> float:
        """Seconds the most overdue waiting entry has been due (0 when none is): how far the
        outbox's consumers are behind. Held entries are not due until their hold ends."""
        ...

    # ------------------------------------------------ lifecycle
    async def aclose(self) -> None: ...
