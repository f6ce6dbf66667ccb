"""What the card refresher keeps per card (bot.engine.refresh): its painted-state memory is
bounded, and a card's lock lives only while a paint holds or waits for it, however that paint
ends (the soak's growing RSS, docs/reliability.md "Soak")."""

from __future__ import annotations

import asyncio
from typing import Any

from bot.channel import ChannelError
from bot.clock import ManualClock
from bot.engine.refresh import CardRefresher
from bot.store.base import CardRecord, DeliveryKey

VIEW: Any = object()  # the fake channel never renders it


class FakeChannel:
    def __init__(self) -> None:
        self.updated: list[str] = []
        self.failing = False
        self.gate: asyncio.Event | None = None

    async def update(self, ref: str, view: object) -> None:
        if self.gate is not None:
            await self.gate.wait()
        if self.failing:
            raise ChannelError("down", certain=True, retryable=True)
        self.updated.append(ref)


def _card(n: int) -> CardRecord:
    return CardRecord(DeliveryKey(f"clr-{n}", "p-ahmed", 1, "question"), "slack", f"D1:{n}")


def _refresher(channel: FakeChannel, clock: ManualClock) -> CardRefresher:
    channels: dict[str, Any] = {"slack": channel}
    return CardRefresher(core=None, store=None, channels=channels,  # type: ignore[arg-type]
                         clock=clock, zones=None)  # type: ignore[arg-type]


async def test_no_card_lock_outlives_its_paint_however_it_ends(clock: ManualClock) -> None:
    """10,000 cards painted, then each offered an older state (refused) and a failing update:
    no lock is left behind for any of them (an older state used to leave its lock forever)."""
    channel = FakeChannel()
    refresher = _refresher(channel, clock)
    for n in range(10_000):
        assert await refresher.paint(_card(n), VIEW, (2.0, 0))
        assert not await refresher.paint(_card(n), VIEW, (1.0, 0))  # older: not painted
    channel.failing = True
    for n in range(10_000, 10_100):
        assert not await refresher.paint(_card(n), VIEW, (1.0, 0))
    assert len(channel.updated) == 10_000
    assert refresher._locks == {}


async def test_paints_of_one_card_still_wait_for_each_other(clock: ManualClock) -> None:
    """Two paints of one card at once: the second waits for the first (one lock), and the lock
    is gone once both are done."""
    channel = FakeChannel()
    channel.gate = asyncio.Event()
    refresher = _refresher(channel, clock)
    first = asyncio.ensure_future(refresher.paint(_card(1), VIEW, (1.0, 0)))
    second = asyncio.ensure_future(refresher.paint(_card(1), VIEW, (2.0, 0)))
    await asyncio.sleep(0)
    assert len(refresher._locks) == 1 and refresher._locks[_card(1).delivery.token()].users == 2
    channel.gate.set()
    assert await asyncio.gather(first, second) == [True, True]
    assert channel.updated == ["D1:1", "D1:1"]
    assert refresher._locks == {}
