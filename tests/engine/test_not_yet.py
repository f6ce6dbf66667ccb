"""A platform making a person reachable (``bot.channel.NotYet``: a Teams app being installed
for them) keeps the person's turn: the job is held, nobody is skipped and nobody else asked, and
the person gets exactly one card once the platform can take it. The engine as production wires
it, on the reference core and the injected clock."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from bot.channel import Address, Message, NotYet
from bot.channels.recording import RecordingChannel
from bot.engine.handler import JobOutcome
from bot.store.base import DeliveryKey
from cards.views import QuestionView
from tests.engine.conftest import Rig

STEP = timedelta(seconds=20)


@dataclass
class Installing(RecordingChannel):
    """Sarah cannot take a card before ``ready_at`` (her app is being installed)."""

    ready_at: datetime | None = None
    refused: int = 0

    async def send(self, address: Address, message: Message, *, key: DeliveryKey) -> str:
        assert self.ready_at is not None
        now = self.clock_now()
        if address.person_id == "p-sarah" and now < self.ready_at:
            self.refused += 1
            raise NotYet("being installed", at=now + timedelta(seconds=60))
        return await super().send(address, message, key=key)

    clock_now: Callable[[], datetime] = lambda: datetime.min  # noqa: E731


async def test_a_person_not_reachable_yet_keeps_the_turn_and_gets_one_card(
        make_rig: Callable[..., Rig]) -> None:
    channel = Installing()
    rig = make_rig(channel=channel)
    channel.clock_now = rig.clock.now
    channel.ready_at = rig.clock.now() + timedelta(seconds=90)
    cid = await rig.create(authority={"authored_by": ["p-sarah", "p-ahmed"]})
    await rig.burst()
    assert rig.engine.worker.outcomes.get(JobOutcome.HELD) == 1
    assert channel.sent == [] and rig.events("skipped", cid) == []
    while not channel.sent:
        assert rig.clock.now() < channel.ready_at + timedelta(minutes=5), "never asked"
        await rig.later(STEP)
    for _ in range(5):
        await rig.later(STEP)
    [card] = channel.sent
    assert card.address.person_id == "p-sarah" and card.key.attempt == 0
    assert isinstance(card.message, QuestionView)
    assert channel.refused == 2 and rig.events("skipped", cid) == []
