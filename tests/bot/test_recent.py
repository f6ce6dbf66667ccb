"""The few-seconds memory of the answer path (bot.recent)."""

from __future__ import annotations

from datetime import timedelta

from bot.clock import ManualClock
from bot.recent import Recent


def test_a_fact_is_remembered_for_its_ttl_only(clock: ManualClock) -> None:
    """Within the ttl the fact is known without asking the core; after it, not any more."""
    kept: Recent[str, str] = Recent(ttl_seconds=10)
    kept.keep("U0AHMED", "p-ahmed", now=clock.now())
    assert kept.get("U0AHMED", now=clock.advance(timedelta(seconds=9))) == "p-ahmed"
    assert kept.get("U0AHMED", now=clock.advance(timedelta(seconds=1))) is None
    assert kept.get("U0OTHER", now=clock.now()) is None


def test_a_zero_ttl_remembers_nothing(clock: ManualClock) -> None:
    """cache_seconds = 0: every answer reads its facts from the core."""
    kept: Recent[str, str] = Recent(ttl_seconds=0)
    kept.keep("U0AHMED", "p-ahmed", now=clock.now())
    assert kept.get("U0AHMED", now=clock.now()) is None


def test_the_memory_is_bounded(clock: ManualClock) -> None:
    """Past max_size the least recently kept fact is forgotten first."""
    kept: Recent[str, int] = Recent(ttl_seconds=10, max_size=2)
    for n, user in enumerate(("U1", "U2", "U3")):
        kept.keep(user, n, now=clock.now())
    assert kept.get("U1", now=clock.now()) is None
    assert kept.get("U3", now=clock.now()) == 2
