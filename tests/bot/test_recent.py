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


async def test_callers_asking_at_once_share_one_read(clock: ManualClock) -> None:
    """Eight answers to one question taken at once read it from the core once."""
    import asyncio

    kept: Recent[str, str] = Recent(ttl_seconds=10)
    reads = 0
    release = asyncio.Event()

    async def load() -> str:
        nonlocal reads
        reads += 1
        await release.wait()
        return "clarification"

    waiting = [asyncio.ensure_future(kept.read("clr-1", load, now=clock.now())) for _ in range(8)]
    await asyncio.sleep(0)
    release.set()
    assert await asyncio.gather(*waiting) == ["clarification"] * 8
    assert reads == 1
    assert await kept.read("clr-1", load, now=clock.now()) == "clarification" and reads == 1


async def test_a_failed_read_is_not_remembered(clock: ManualClock) -> None:
    """A read that fails reaches every caller waiting for it, and the next caller reads again."""
    import pytest

    kept: Recent[str, str] = Recent(ttl_seconds=10)

    async def failing() -> str:
        raise LookupError("gone")

    async def working() -> str:
        return "clarification"

    with pytest.raises(LookupError):
        await kept.read("clr-1", failing, now=clock.now())
    assert await kept.read("clr-1", working, now=clock.now()) == "clarification"


def test_expired_facts_are_forgotten_without_being_asked_for_again(clock: ManualClock) -> None:
    """10,000 answers to 10,000 questions, one every 10 ms, with a 10 s ttl: the memory holds
    the last 10 s of them (about 1,000 clarifications), not all 10,000 (the soak's growing RSS:
    every answer kept its clarification until ``max_size``)."""
    kept: Recent[str, str] = Recent(ttl_seconds=10, max_size=10_000)
    for n in range(10_000):
        kept.keep(f"clr-{n}", "clarification", now=clock.advance(timedelta(milliseconds=10)))
    assert len(kept) <= 1_001
    assert kept.get("clr-9999", now=clock.now()) == "clarification"
    assert kept.get("clr-0", now=clock.now()) is None
    kept.keep("clr-last", "clarification", now=clock.advance(timedelta(seconds=10)))
    assert len(kept) == 1
