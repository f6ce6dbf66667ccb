"""The values the store keeps and hands back: delivery keys and slots, card records, admissions
and digest batches, notices, outbox entries (``bot.store.base`` names them all with ``Store``)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

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
    # what a question card said when it was sent: when the question moves on if
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
    # read only, never written with the card: when its not-yet-reported mark was set (the
    # card's reservation), while the mark is kept. The job that sent it holds its reports until
    # it ends and clears the mark once the core has them; a worker killed meanwhile leaves it
    # (``bot.engine.unreported``)
    unreported_since: datetime | None = None

    @property
    def unreported(self) -> bool:
        return self.unreported_since is not None


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
