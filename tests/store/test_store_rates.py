"""Contract: the rate buckets shared by replicas (``bot.store.rates``), on memory, a real Redis
and a real Redis Cluster."""

from __future__ import annotations

from datetime import timedelta

import pytest

from bot.store.base import RateBuckets

from .conftest import T0, at


async def test_rate_take_spaces_callers_by_the_rate(store: RateBuckets) -> None:
    """A bucket of burst 2 at 1/s: two go at once, the next waits 1 s, the one after 2 s."""
    waits = [await store.rate_take("slack:T1:chat.postMessage", rate_per_second=1.0, burst=2,
                                   now=T0) for _ in range(4)]
    assert waits == [0.0, 0.0, pytest.approx(1.0), pytest.approx(2.0)]
    later = await store.rate_take("slack:T1:chat.postMessage", rate_per_second=1.0, burst=2,
                                  now=at(10))
    assert later == 0.0  # refilled, never above the burst


async def test_rate_block_holds_everyone_back(store: RateBuckets) -> None:
    """After a 429 with Retry-After 30 s, the next taker waits about 30 s."""
    await store.rate_block("slack:T1:chat.update", seconds=30, rate_per_second=0.5, burst=5,
                           now=T0)
    wait = await store.rate_take("slack:T1:chat.update", rate_per_second=0.5, burst=5, now=T0)
    assert wait == pytest.approx(32.0)


async def test_rate_take_with_a_reserve_takes_nothing_until_the_reserve_is_left(
        store: RateBuckets) -> None:
    """Bulk work leaves ``reserve`` tokens to clicks: it is told how long to wait, takes
    nothing meanwhile, and a click (no reserve) still finds a token at once."""
    bucket = "slack:T1:chat.postMessage"
    bulk = [await store.rate_take(bucket, rate_per_second=2.0, burst=4, now=T0, reserve=2)
            for _ in range(3)]
    assert bulk == [0.0, 0.0, 0.5]  # two taken; the third would eat into the reserve
    assert await store.rate_take(bucket, rate_per_second=2.0, burst=4, now=T0) == 0.0
    assert await store.rate_take(bucket, rate_per_second=2.0, burst=4, now=T0) == 0.0
    later = T0 + timedelta(seconds=1.5)  # three tokens back: the reserve and one more
    assert await store.rate_take(bucket, rate_per_second=2.0, burst=4, now=later,
                                 reserve=2) == 0.0
