"""The bot's shared state: one Protocol, a Redis and an in-memory implementation."""

from bot.store.base import (
    Admission,
    CardRecord,
    Decision,
    DeliveryKey,
    DeliverySlot,
    DigestBatch,
    DigestItem,
    OutboxEntry,
    SlotState,
    Store,
)
from bot.store.errors import SlotContended, SlotNotFound, StoreError, StoreUnavailable
from bot.store.memory import MemoryStore
from bot.store.redis import RedisStore

__all__ = [
    "Admission", "CardRecord", "Decision", "DeliveryKey", "DeliverySlot", "DigestBatch",
    "DigestItem", "MemoryStore", "OutboxEntry", "RedisStore", "SlotContended", "SlotNotFound",
    "SlotState", "Store", "StoreError", "StoreUnavailable",
]
