"""The Deliverer's send retries take their waits from its policy (``SEND_RETRY``, bot.retry):
a send the platform certainly refused is tried three times, the waits between at most 1 s and
2 s, half of each random (the injected draw)."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

import pytest

from bot.channel import Address, CredentialsRejected
from bot.channels.recording import RecordingChannel
from bot.engine.delivery import SEND_RETRY, Delivered, Deliverer
from bot.store.base import DeliveryKey
from bot.store.memory import MemoryStore

NOW = datetime(2026, 7, 6, 9, 0, tzinfo=UTC)
KEY = DeliveryKey("clr-1", "p-sarah", 0, "question")
ADDRESS = Address(platform="slack", person_id="p-sarah", user_id="U0SARAH")


@dataclass
class Waits:
    taken: list[float] = field(default_factory=list)

    async def __call__(self, seconds: float) -> None:
        self.taken.append(seconds)


async def _refused_send(draw: Callable[[], float]) -> tuple[Delivered, list[float]]:
    waits = Waits()
    deliverer = Deliverer(ledger=MemoryStore(), core=None,  # type: ignore[arg-type]
                          channels={"slack": RecordingChannel(fail_for={"p-sarah"})},
                          worker_id="w-1", sleep=waits, random=draw)
    result = await deliverer.deliver(KEY, ADDRESS, object(), now=NOW,  # type: ignore[arg-type]
                                     report=False)
    return result.status, waits.taken


@pytest.mark.parametrize(("draw", "waits"), [(1.0, [1.0, 2.0]), (0.0, [0.5, 1.0]),
                                             (0.5, [0.75, 1.5])])
async def test_a_refused_send_waits_as_the_policy_says(draw: float, waits: list[float]) -> None:
    status, taken = await _refused_send(lambda: draw)
    assert status is Delivered.FAILED
    assert taken == waits == [SEND_RETRY.delay(n, draw=draw) for n in (1, 2)]


async def test_two_deliveries_failing_together_wait_apart() -> None:
    """With the real random source two workers refused at the same moment do not retry in
    step (each wait somewhere in [half, all] of its ceiling)."""
    first, second = (await _refused_send(random.random))[1], (await _refused_send(random.random))[1]
    assert first != second
    for taken in (first, second):
        assert 0.5 <= taken[0] <= 1.0 and 1.0 <= taken[1] <= 2.0


@dataclass
class Refusing:
    """A platform that answers a send with a refusal of the credentials (``certain``: it said
    so; not certain: a look-up after an unclear post met it)."""

    certain: bool = True
    platform: str = "slack"
    can_find: bool = True
    idempotent: bool = False

    async def send(self, address: Address, message: object, *, key: DeliveryKey) -> str:
        refused = CredentialsRejected("token_expired", setting="SLACK_BOT_TOKEN")
        refused.certain = self.certain
        raise refused


@pytest.mark.parametrize("certain", [True, False])
async def test_a_send_refused_for_credentials_keeps_no_reservation_unless_unclear(
        certain: bool) -> None:
    """Slack answered, so nothing was posted: the job is held and sends on resume, never taken
    for one a worker stopped mid-send (DELIVERY_FAILED "cannot say whether the card arrived").
    A refusal met only while looking for an unclear post keeps the reservation."""
    store = MemoryStore()
    deliverer = Deliverer(ledger=store, core=None,  # type: ignore[arg-type]
                          channels={"slack": Refusing(certain)},  # type: ignore[dict-item]
                          worker_id="w-1", sleep=Waits())
    with pytest.raises(CredentialsRejected):
        await deliverer.deliver(KEY, ADDRESS, object(), now=NOW,  # type: ignore[arg-type]
                                report=False)
    assert (await store.slot(KEY) is None) is certain
