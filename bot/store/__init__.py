"""The bot's shared state, by concern (``bot.store.base``): a Redis and an in-memory
implementation of each, and ``Store``, all of them at once."""

from bot.store.base import (
    Admission,
    Admissions,
    CardRecord,
    Conversations,
    Decision,
    DeliveryKey,
    DeliveryLedger,
    DeliverySlot,
    DigestBatch,
    DigestItem,
    HeldJobs,
    KeyValues,
    NoticeLists,
    Outbox,
    OutboxEntry,
    RateBuckets,
    ReminderIndex,
    SlotState,
    Store,
)
from bot.store.errors import SlotContended, SlotNotFound, StoreError, StoreUnavailable
from bot.store.memory import MemoryStore
from bot.store.redis import RedisStore

__all__ = [
    "Admission", "Admissions", "CardRecord", "Conversations", "Decision", "DeliveryKey",
    "DeliveryLedger", "DeliverySlot", "DigestBatch", "DigestItem", "HeldJobs", "KeyValues",
    "MemoryStore", "NoticeLists", "Outbox", "OutboxEntry", "RateBuckets", "RedisStore",
    "ReminderIndex", "SlotContended", "SlotNotFound", "SlotState", "Store", "StoreError",
    "StoreUnavailable",
]
