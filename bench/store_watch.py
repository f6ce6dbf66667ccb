"""What the store watch costs a process: one check of the store's generation
(``bot.process.storewatch.StoreWatch.check``, every ``store.watch_seconds``, 10 s by default)
against a real Redis, with 0, 1,000 and 10,000 held questions in the store and remembered by the
process (each check counts what the store holds and prunes the process's memory of holds that
another replica released), and how long noticing an emptied store takes (the check that finds
it, up to and including the audit event; the recovery's calls to the core are not timed here).

Run: .venv/bin/python bench/store_watch.py [--url redis://127.0.0.1:6379/15] [--checks 200]
It writes under a throw-away prefix and deletes its keys afterwards; it never flushes a database.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import statistics
import time
from datetime import UTC, datetime, timedelta
from typing import cast
from uuid import uuid4

import structlog

from bot.audit import Audit, MemorySink
from bot.clock import ManualClock
from bot.core.client import CoreClient
from bot.process.storewatch import StoreWatch
from bot.store.connect import client_for, parse_redis_url
from bot.store.redis import RedisStore

T0 = datetime(2026, 12, 7, 7, 0, tzinfo=UTC)


def _hold(i: int) -> str:
    return json.dumps({"job": None, "due": (T0 + timedelta(hours=1)).isoformat(),
                       "named": [f"job-{i:06d}", f"lease-{i:06d}"]})


async def _wipe(url: str, prefix: str) -> None:
    client = client_for(parse_redis_url(url), password=None, max_connections=4)
    async for name in client.scan_iter(f"{prefix}:*"):
        await client.delete(name)
    await client.aclose()


async def one_size(url: str, holds: int, checks: int) -> tuple[float, float, float]:
    """Median and worst check (ms) with ``holds`` held questions, and the check that notices
    the store emptied (ms)."""
    prefix = f"benchw{uuid4().hex[:8]}"
    clock = ManualClock(T0)
    try:
        async with RedisStore.from_url(url, prefix=prefix, max_connections=8) as store:
            for start in range(0, holds, 500):
                await asyncio.gather(*(store.hold_put(f"job-{i:06d}", _hold(i), at=T0)
                                       for i in range(start, min(start + 500, holds))))
            audit = Audit(sink=MemorySink(), core=cast(CoreClient, None))  # store events stay local
            watch = StoreWatch(store=store, clock=clock, audit=audit)
            await watch.start()
            took = []
            for _ in range(checks):
                clock.advance(timedelta(seconds=10))
                began = time.perf_counter()
                loss = await watch.check()
                took.append((time.perf_counter() - began) * 1000)
                assert loss is None
            await _wipe(url, prefix)  # the store emptied, as a Redis restarted without its data
            clock.advance(timedelta(seconds=10))
            began = time.perf_counter()
            loss = await watch.check()
            noticed = (time.perf_counter() - began) * 1000
            assert loss is not None, "the emptied store was not noticed"
    finally:
        await _wipe(url, prefix)
    return statistics.median(took), max(took), noticed


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", default="redis://127.0.0.1:6379/15")
    parser.add_argument("--checks", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL))
    print("| held questions | check, median (ms) | check, worst (ms) | noticing an emptied "
          "store (ms) |")
    print("|---:|---:|---:|---:|")
    for holds in (0, 1_000, 10_000):
        rounds = [await one_size(args.url, holds, args.checks) for _ in range(args.rounds)]
        worst = tuple(max(r[i] for r in rounds) for i in range(3))  # the worst of the rounds
        print(f"| {holds:,} | {worst[0]:.2f} | {worst[1]:.2f} | {worst[2]:.2f} |")


if __name__ == "__main__":
    asyncio.run(main())
