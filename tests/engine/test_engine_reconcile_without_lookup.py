"""Crash reconciliation on a platform that cannot look up what it sent (Teams-like)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from bot.channel import Address
from bot.channels.recording import RecordingChannel
from bot.engine.delivery import Delivered, Deliverer
from bot.store.base import DeliveryKey
from bot.store.memory import MemoryStore
from tests.engine.conftest import no_sleep

NOW = datetime(2026, 7, 6, 9, 0, tzinfo=UTC)
KEY = DeliveryKey("clr-1", "p-sarah", 0, "question")
ADDRESS = Address(platform="slack", person_id="p-sarah", user_id="U0SARAH")


@dataclass
class NoLookup(RecordingChannel):
    can_find: bool = False

    async def find(self, address: Address, key: DeliveryKey) -> str | None:
        raise AssertionError("a channel that cannot look up is never asked to")


async def reserved_then_delivered(channel: RecordingChannel) -> tuple[Any, Deliverer]:
    store = MemoryStore()
    deliverer = Deliverer(ledger=store, core=None,  # type: ignore[arg-type]
                          channels={"slack": channel}, worker_id="w-2", sleep=no_sleep)
    await store.reserve(KEY, worker_id="w-1", now=NOW)  # w-1 died between reserving and sending
    return await deliverer.deliver(KEY, ADDRESS, object(), now=NOW,  # type: ignore[arg-type]
                                   report=False), deliverer


async def test_without_lookup_or_idempotency_nothing_is_resent() -> None:
    """A reservation left by a crash on a platform that can neither look up nor deduplicate:
    the delivery is uncertain and never sent a second time."""
    channel = NoLookup()
    result, deliverer = await reserved_then_delivered(channel)
    assert result.status is Delivered.UNCERTAIN and channel.sent == []
    assert (await deliverer.reconcile(KEY, ADDRESS)).status is Delivered.UNCERTAIN


async def test_an_idempotent_platform_is_sent_to_again_with_the_same_key() -> None:
    """Where the platform deduplicates by the delivery key, the reserved delivery is sent again
    under the same key (the platform keeps one message) and recorded."""
    channel = NoLookup(idempotent=True)
    result, deliverer = await reserved_then_delivered(channel)
    assert result.status is Delivered.NEW and [s.key for s in channel.sent] == [KEY]
    slot = await deliverer.ledger.slot(KEY)
    assert slot is not None and slot.message_ref == result.message_ref
