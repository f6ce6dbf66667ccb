"""What the reach record costs per card, for ``bench/delivery.py --reach-db``.

Two measures: the workers of each bot phase write the record to a PostgreSQL database of the
run's own (rows written per card, counted in the table; the workers' CPU per card is the
phase's own column, to set beside a run without ``--reach-db``), and the recorder alone, in
this process: each card's audit event through ``ReachRecorder.seen`` and its writes, on the
memory log and on the same PostgreSQL (CPU ms per card by ``time.process_time``, the event's
path and the writes together; PostgreSQL's own CPU not included).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, cast
from urllib.parse import urlsplit

import asyncpg

from adapters.slack import schema
from bot.audit import AuditEvent, EventFacts
from bot.clock import ManualClock
from bot.reach import postgres
from bot.reach.log import MemoryReachLog, ReachEntry, ReachLog
from bot.reach.recording import ReachRecorder

BATCH = 64  # cards whose events arrive before the recorder's write task runs


async def reach_database(admin_url: str) -> str:
    """A fresh database at the reach record's schema; its URL."""
    name = f"clarify_bench_{uuid.uuid4().hex[:10]}"
    admin = await asyncpg.connect(admin_url, timeout=5)
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    url = urlsplit(admin_url)._replace(path=f"/{name}").geturl()
    engine = schema.open_engine(url, pool_size=1)
    try:
        await postgres.upgrade(engine)
    finally:
        await engine.dispose()
    return url


async def drop_database(admin_url: str, url: str) -> None:
    admin = await asyncpg.connect(admin_url, timeout=5)
    try:
        await admin.execute(f'DROP DATABASE IF EXISTS "{urlsplit(url).path[1:]}" WITH (FORCE)')
    finally:
        await admin.close()


async def count_rows(url: str) -> int:
    conn = await asyncpg.connect(url, timeout=5)
    try:
        return int(await conn.fetchval("SELECT count(*) FROM clarify_reach_entries"))
    finally:
        await conn.close()


@dataclass
class RecorderCost:
    log: str
    cards: int
    cpu_ms_per_card: float
    rows_per_card: float


async def recorder_cost(cards: int, url: str | None) -> list[RecorderCost]:
    """The recorder's CPU per card on the memory log and (with ``url``) on PostgreSQL."""
    found = [await _cost("memory", MemoryReachLog(), cards)]
    if url:
        found.append(await _cost("postgres", postgres.PostgresReachLog(
            schema.open_engine(url, pool_size=2)), cards))
    return found


class _Counted:
    """The log, counting the rows its writes added (the recorder's own write task among
    them)."""

    def __init__(self, log: ReachLog) -> None:
        self.log = log
        self.added = 0

    async def add(self, entries: Sequence[ReachEntry]) -> int:
        added = await self.log.add(entries)
        self.added += added
        return added

    def __getattr__(self, name: str) -> Any:
        return getattr(self.log, name)


async def _cost(name: str, log: ReachLog, cards: int) -> RecorderCost:
    at = datetime.now(UTC)
    counted = _Counted(log)
    recorder = ReachRecorder(cast(ReachLog, counted), clock=ManualClock(at),
                             retention=timedelta(days=90))
    tag = uuid.uuid4().hex[:8]
    events = [AuditEvent(type="delivery", at=at, clarification_id=f"cost-{tag}-{n}",
                         message="Question card sent.", person_id=f"p-{n % 1000}",
                         attempt=0, channel="slack",
                         facts=EventFacts("bench", "T-bench", "normal", platform="slack"))
              for n in range(cards)]
    start = time.process_time()
    for first in range(0, cards, BATCH):
        for event in events[first:first + BATCH]:
            recorder.seen(event)
        await recorder.flush()
    await recorder.aclose()  # its write task done, what is left written, the log closed
    cpu = time.process_time() - start
    return RecorderCost(name, cards, cpu * 1000 / max(cards, 1), counted.added / max(cards, 1))
