"""A hold on a core without the heartbeat-lease extension (the baseline): each heartbeat extends
the lease by its own duration only, so the hold lives while a worker looks at it within every
lease (docs/delivery.md, "Working hours")."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from bot.clock import ManualClock
from bot.engine.handler import JobOutcome
from tests.engine.conftest import Rig
from tests.engine.test_working_hours import BERLIN_8AM, ProfiledChannel, hours_on

TEN_TO_EIGHT_BERLIN = datetime(2026, 12, 1, 6, 50, tzinfo=UTC)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(TEN_TO_EIGHT_BERLIN)


async def test_a_hold_lives_on_short_leases_while_a_worker_looks_often(
        make_rig: Callable[..., Rig], contract: str) -> None:
    rig = make_rig(clarify=hours_on(), channel=ProfiledChannel())
    await rig.create(authority={"authored_by": ["p-ahmed"]})
    await rig.burst()
    assert rig.engine.worker.outcomes.get(JobOutcome.HELD) == 1
    while rig.clock.now() < BERLIN_8AM:
        assert rig.channel.sent == []
        await rig.later(timedelta(seconds=20))  # within every 60-second lease
    assert [s.address.person_id for s in rig.channel.sent] == ["p-ahmed"]


async def test_a_hold_whose_lease_ran_out_is_given_up_to_the_core(
        make_rig: Callable[..., Rig], contract: str) -> None:
    if contract == "full":
        pytest.skip("the full contract's held lease lives an hour")
    rig = make_rig(clarify=hours_on(), channel=ProfiledChannel())
    await rig.create(authority={"authored_by": ["p-ahmed"]})
    await rig.burst()
    await rig.later(timedelta(minutes=5))  # every worker away for longer than the lease
    assert await rig.store.holds_due(now=rig.clock.now() + timedelta(days=1)) == []
    await rig.later(timedelta(minutes=15))
    assert rig.channel.sent == []  # the core counts the turn as expired: never asked late
