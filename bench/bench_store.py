"""Rough throughput of the store's hot paths (admit, reserve, outbox claim) on memory and Redis.

Run: .venv/bin/python bench/bench_store.py [--url redis://127.0.0.1:6379/15] [--n 2000]
(--url takes every form redis.url does: redis+cluster://..., redis+sentinel://...)
It writes under a throw-away prefix and deletes its keys afterwards; it never flushes a database.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from uuid import uuid4

from bot.store.base import DeliveryKey, DigestItem, Store
from bot.store.connect import client_for, parse_redis_url
from bot.store.memory import MemoryStore
from bot.store.redis import RedisStore

T0 = datetime(2026, 7, 6, 9, 0, tzinfo=UTC)


async def _timed(label: str, n: int, make: Callable[[int], Awaitable[object]]) -> None:
    start = time.perf_counter()
    await asyncio.gather(*(make(i) for i in range(n)))
    elapsed = time.perf_counter() - start
    print(f"  {label:<14} {n / elapsed:>10,.0f} ops/s")


async def bench(name: str, store: Store, n: int) -> None:
    print(name)

    def key(i: int) -> DeliveryKey:
        return DeliveryKey(f"c{i}", f"p{i % 100}", 0, "question")

    await _timed("reserve", n, lambda i: store.reserve(key(i), worker_id="w", now=T0))
    await _timed("admit", n, lambda i: store.admit(
        key(i), item=DigestItem(f"c{i}", f"p{i % 100}", 0, "j"), day="2026-07-06",
        now=T0 + timedelta(seconds=i), cap=5, threshold=3, window_seconds=1800, batched=True))
    await _timed("outbox_accept", n, lambda i: store.outbox_accept(
        f"a{i}", "{}", order_key=f"k{i}", acted_at=i, now=T0))
    await _timed("outbox_claim", n // 10, lambda i: store.outbox_claim(
        now=T0, lease_seconds=30, limit=10))


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", default="redis://127.0.0.1:6379/15")
    parser.add_argument("--n", type=int, default=2000)
    args = parser.parse_args()
    await bench("memory", MemoryStore(), args.n)
    prefix = f"bench{uuid4().hex[:8]}"
    async with RedisStore.from_url(args.url, prefix=prefix, max_connections=32) as store:
        await bench("redis", store, args.n)
    client = client_for(parse_redis_url(args.url), password=None, max_connections=4)
    async for name in client.scan_iter(f"{prefix}:*"):
        await client.delete(name)
    await client.aclose()


if __name__ == "__main__":
    asyncio.run(main())
