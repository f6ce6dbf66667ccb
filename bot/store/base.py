"""The store: state the bot shares between replicas and keeps across restarts, by concern.

Each concern is a small Protocol beside its two implementations (Redis for production and
replicas, memory for the demo and single-process runs) and its Lua scripts:

- ``DeliveryLedger`` (``bot.store.ledger``): delivery slots, never sent twice, and the cards
  sent, to update;
- ``Admissions`` (``bot.store.admissions``): the daily cap and digest windows, and the digest
  batches they fill;
- ``HeldJobs`` (``bot.store.holds``): jobs held for a person's working hours;
- ``ReminderIndex`` (``bot.store.reminders``): question cards' reminders by due time;
- ``NoticeLists`` (``bot.store.notices``): each steward's batched notices;
- ``KeyValues`` (``bot.store.kv``): once-only markers and small documents;
- ``Conversations`` (``bot.store.conversations``): Teams conversation references;
- ``Directories`` (``bot.store.directory``): a platform's people as a bulk listing said, per
  workspace;
- ``RateBuckets`` (``bot.store.rates``): the platforms' rate limits, shared by replicas;
- ``Outbox`` (``bot.store.outbox``): answers made durable before the acknowledgement.

``Store`` is all of them at once: ``MemoryStore`` and ``RedisStore`` implement it, each one
object over one lock or one client. A part of the bot takes only the concerns it uses. One
contract suite per concern runs against memory, Redis and a Redis Cluster (tests/store/). Every
multi-step operation is atomic (a Lua script on Redis, a lock in memory) so caps and windows
hold across workers.
"""

from __future__ import annotations

from typing import Protocol

from bot.store.admissions import Admissions
from bot.store.conversations import Conversations
from bot.store.directory import Directories
from bot.store.holds import HeldJobs
from bot.store.kv import KeyValues
from bot.store.ledger import DeliveryLedger
from bot.store.notices import NoticeLists
from bot.store.outbox import Outbox
from bot.store.rates import RateBuckets
from bot.store.records import (
    Acceptance,
    Admission,
    CardRecord,
    Decision,
    DeliveryKey,
    DeliverySlot,
    DigestBatch,
    DigestItem,
    NoticeBatch,
    NoticeItem,
    OutboxEntry,
    SlotState,
)
from bot.store.reminders import ReminderIndex
from bot.store.unreported import UnreportedIndex

__all__ = [
    "Acceptance", "Admission", "Admissions", "CardRecord", "Conversations", "Decision",
    "DeliveryKey", "DeliveryLedger", "DeliverySlot", "DigestBatch", "DigestItem", "Directories",
    "HeldJobs",
    "KeyValues", "NoticeBatch", "NoticeItem", "NoticeLists", "Outbox", "OutboxEntry",
    "RateBuckets", "ReminderIndex", "SlotState", "Store", "UnreportedIndex",
]


class Store(DeliveryLedger, Admissions, HeldJobs, ReminderIndex, UnreportedIndex, NoticeLists,
            KeyValues, Conversations, Directories, RateBuckets, Outbox, Protocol):
    """Every concern of the store at once (what ``MemoryStore`` and ``RedisStore`` are)."""

    async def aclose(self) -> None: ...
