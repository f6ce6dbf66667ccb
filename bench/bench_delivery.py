"""Jobs handled per second by the delivery engine: 1 and 3 workers, Redis and memory stores.

Each run starts a fresh reference core on 127.0.0.1 (acme people, manual clock), creates N
normal/high/critical clarifications, and times the first pass: every worker's ``run_burst`` at
once until nothing is left to lease (the handler's full path: clarification and people reads,
RBAC, admission, send on a recording channel, delivery and event reports, housekeeping).

Run: .venv/bin/python bench/bench_delivery.py [--n 300] [--repeat 2] [--url redis://…/15]
A short warm-up run (imports, schema building) is not shown.
Workers share one event loop with each other and with the core, so the numbers compare set-ups
on one machine; they are not a capacity figure. Redis keys live under a throw-away prefix and
are deleted afterwards; no database is flushed.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import logging
import random
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from uuid import uuid4

import redis.asyncio as aioredis
import structlog

from bot.audit import MemorySink
from bot.channels.recording import RecordingChannel
from bot.clock import ManualClock
from bot.core.client import CoreClient, RetryPolicy
from bot.core.models import CreateClarificationRequest
from bot.process.runtime import Engine, EngineParts, build_engine
from bot.process.worker import WorkerConfig
from bot.settings import ClarifySettings, SlackSettings, SlackWorkspace
from bot.store.base import Store
from bot.store.memory import MemoryStore
from bot.store.redis import RedisStore
from devcore.client import DevCoreClient
from devcore.core import ReferenceCore, load_scenario
from devcore.scenario import read_scenario
from devcore.server import serve

CLARIFY_TOKEN = "dev-clarify-token-acme"
DEV_TOKEN = "dev-admin-token-local"
T0 = datetime(2026, 7, 6, 9, 0, tzinfo=UTC)
SLACK = SlackSettings(workspaces=(SlackWorkspace(team_id="T0ACME", enterprise_id="E0ACME",
                                                 tenant="acme"),))
PEOPLE = ["p-sarah", "p-ahmed", "p-priya", "p-lee", "p-maria", "p-olga", "p-tom"]


@dataclass(frozen=True, slots=True)
class Result:
    store: str
    workers: int
    jobs: int
    seconds: float
    cpu_seconds: float  # of this process: the workers and the core together

    def row(self) -> str:
        rate, per_cpu = self.jobs / self.seconds, self.jobs / self.cpu_seconds
        return (f"| {self.store} | {self.workers} | {self.jobs} | {self.seconds:.2f} | "
                f"{rate:,.0f} | {per_cpu:,.0f} |")


async def _no_sleep(_: float) -> None:
    return None


def _spec(rng: random.Random, i: int) -> CreateClarificationRequest:
    spec = copy.deepcopy(read_scenario("acme")["clarifications"][1])
    tag = f"b{i:05d}"
    spec["target"] = f"fact-{tag}"
    spec["document"]["document_id"] = f"doc-{tag}"
    spec["document"]["content_hash"] = f"sha256:{tag}"
    people = rng.sample(PEOPLE, k=3)
    spec["authority"] = {"authored_by": people[:1], "named": people[1:2], "owned_by": people[2:]}
    roll = rng.random()
    if roll >= 0.8:
        spec["severity_hint"] = "high" if roll < 0.93 else "critical"
    return CreateClarificationRequest.model_validate(spec)


async def _engine(url: str, store: Store, clock: ManualClock, channel: RecordingChannel,
                  index: int) -> tuple[Engine, CoreClient]:
    client = CoreClient(base_url=url, token=CLARIFY_TOKEN, retry=RetryPolicy(max_attempts=1))
    engine = build_engine(EngineParts(
        core=client, store=store, channels={"slack": channel},
        clarify=ClarifySettings(channels=("slack",), hours={"enabled": False}),
        clock=clock, audit_sink=MemorySink(),
        slack=SLACK, worker_id=f"bench-{index}", sleep=_no_sleep,
        worker=WorkerConfig(concurrency=4, heartbeat_seconds=3600)))
    return engine, client


async def run_once(*, kind: str, workers: int, n: int, redis_url: str) -> Result:
    clock = ManualClock(T0)
    data = read_scenario("acme")
    data["clarifications"] = []
    core = ReferenceCore(clock=clock)
    load_scenario(core, data)
    prefix = f"benchdl{uuid4().hex[:8]}"
    redis_clients: list[aioredis.Redis] = []

    def store() -> Store:
        if kind == "memory":
            return shared_memory
        client = aioredis.Redis.from_url(redis_url, decode_responses=True)
        redis_clients.append(client)
        return RedisStore(client, prefix=prefix)

    shared_memory = MemoryStore(clock=clock)  # one process: the workers share it
    async with serve(core) as url:
        async with DevCoreClient(base_url=url, token=DEV_TOKEN) as dev:
            rng = random.Random(7)
            for i in range(n):
                await dev.create_clarification(request=_spec(rng, i))
        channel = RecordingChannel()
        built = [await _engine(url, store(), clock, channel, i) for i in range(workers)]
        start, cpu = time.perf_counter(), time.process_time()
        await asyncio.gather(*(engine.worker.run_burst() for engine, _ in built))
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        handled = sum(sum(e.worker.outcomes.values()) for e, _ in built)
        for _, client in built:
            await client.aclose()
    for client in redis_clients:
        await client.aclose()
    if kind == "redis":
        admin = aioredis.Redis.from_url(redis_url, decode_responses=True)
        async for name in admin.scan_iter(f"{prefix}:*"):
            await admin.delete(name)
        await admin.aclose()
    return Result(store=kind, workers=workers, jobs=handled, seconds=seconds, cpu_seconds=cpu)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=300, help="clarifications (one job each)")
    parser.add_argument("--url", default="redis://127.0.0.1:6379/15")
    parser.add_argument("--repeat", type=int, default=2, help="runs per row; the fastest shown")
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    await run_once(kind="memory", workers=1, n=20, redis_url=args.url)  # warm-up, not shown
    print("| store | workers | jobs | seconds | jobs/s | jobs per CPU-second |")
    print("|---|---:|---:|---:|---:|---:|")
    for kind in ("memory", "redis"):
        for workers in (1, 3):
            runs = [await run_once(kind=kind, workers=workers, n=args.n, redis_url=args.url)
                    for _ in range(args.repeat)]
            print(min(runs, key=lambda r: r.seconds).row(), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
