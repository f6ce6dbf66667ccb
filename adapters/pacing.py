"""Pacing shared by the platform adapters: token buckets in the store (shared by replicas), with
an interactive lane ahead of bulk delivery.

Bulk work (cards going out) takes a token only while ``reserve`` tokens of the bucket remain
after it, and never queues in debt: it waits until then and asks again. Interactive work (a
card's update after a click, a digest's next page, a note) takes with no reserve, so it always
finds a token at once, and bulk still gets the whole rate while nobody clicks.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime
from enum import StrEnum
from typing import Any

from bot.clock import Clock
from bot.retry import retry_after_seconds
from bot.store.base import RateBuckets


def retry_after(headers: Any, now: datetime) -> float | None:
    """An HTTP answer's Retry-After in seconds (at least 0; delta-seconds or an HTTP date from
    ``now``), or None: missing, or no finite number (a wait of ``inf`` would spend a call's
    whole budget; NaN is no wait at all)."""
    return retry_after_seconds((headers or {}).get("Retry-After"), now)


class Lane(StrEnum):
    """Who is waiting for a call: a person who just clicked, or bulk delivery."""

    INTERACTIVE = "interactive"
    BULK = "bulk"


async def take(store: RateBuckets, clock: Clock, sleep: Callable[[float], Awaitable[None]],
               bucket: str, *, rate_per_second: float, burst: int, reserve: int,
               patience: float | None = None) -> float | None:
    """Take one token of ``bucket`` (waiting with ``sleep`` as long as it says); returns the
    seconds waited. ``reserve`` is what bulk leaves to clicks (0 for interactive work), capped
    at ``burst - 1`` so that bulk can always take something. ``patience`` (bulk work only: its
    take never queues in debt): None, nothing taken, when the token would come only after
    waiting longer than that in all (work that has a fallback, such as a profile lookup)."""
    reserve = min(reserve, burst - 1)
    waited = 0.0
    while True:
        before = clock.now()
        wait = await store.rate_take(bucket, rate_per_second=rate_per_second, burst=burst,
                                     now=before, reserve=reserve)
        if wait <= 0:
            return waited
        if patience is not None and reserve > 0 and waited + wait > patience:
            return None
        waited += wait
        await sleep(wait)
        if reserve == 0:  # the token is ours, used after the wait
            return waited
        if clock.now() <= before:
            # a clock that stands still (a test's) refills nothing: queue like a click
            reserve = 0
