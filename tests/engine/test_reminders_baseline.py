"""A reminder on a core that offers only the baseline contract (docs/core-contract.md): its
clarifications name no ``ranking``, so a card a killed worker sent but never recorded cannot be
found again from its reminder. The fallback: no reminder for that card, counted ``no_card``,
and never a second question card."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from bot.channels.recording import RecordingChannel
from cards.views import QuestionView
from tests.engine.kit import Restart, create
from tests.engine.test_engine_reminders import DiesAfterTheQuestion, counted, reminders

pytestmark = pytest.mark.baseline_contract


async def test_on_the_baseline_a_card_never_recorded_gets_no_reminder_and_no_second_card(
        restart: Callable[[RecordingChannel], Restart], dev_client: object,
        contract: str) -> None:
    assert contract == "baseline"
    channel = DiesAfterTheQuestion()
    rig = restart(channel)
    killed = rig.worker("worker-killed")
    await create(dev_client,  # type: ignore[arg-type]
                 authority={"authored_by": ["p-sarah", "p-ahmed"]}, severity="high")
    with contextlib.suppress(asyncio.CancelledError):
        await killed.worker.run_burst()
    successor = rig.worker("worker-next")
    no_card = counted("no_card")
    rig.clock.set(datetime(2026, 7, 8, 7, 0, tzinfo=UTC))  # past 75 % of Sarah's window
    await successor.engine.reminders.flush()
    await successor.engine.reminders.flush()
    assert reminders(channel) == []
    assert counted("no_card") == no_card + 1
    assert len([s for s in channel.to("p-sarah") if isinstance(s.message, QuestionView)]) == 1
