"""Where the reach record is kept, from the settings: PostgreSQL when
``CLARIFY_BOT_DATABASE_URL`` is set, memory with ``store.backend = "memory"`` and no database,
none otherwise (or with ``reach.enabled = false``). ``serve`` writes it; ``clarify-bot report``
and ``clarify-bot clarify erase-attribution`` open the same log."""

from __future__ import annotations

from datetime import timedelta

import structlog

from adapters.slack import schema
from bot.clock import Clock
from bot.reach.log import MemoryReachLog, ReachLog
from bot.reach.postgres import PostgresReachLog
from bot.reach.recording import ReachRecorder
from bot.settings import Settings

log = structlog.get_logger("clarify.reach")


def open_log(settings: Settings, *, pool_size: int = 2) -> ReachLog | None:
    """The reach log the settings name (a memory one only for a memory store), or None."""
    if not settings.reach.enabled:
        return None
    url = settings.secrets.value("database_url")
    if url:
        return PostgresReachLog(schema.open_engine(url, pool_size=pool_size))
    if settings.store.backend == "memory":
        return MemoryReachLog()
    return None


def kept_log(settings: Settings) -> ReachLog | None:
    """The reach record another process can reach (PostgreSQL), or None."""
    if not settings.reach.enabled or not settings.secrets.value("database_url"):
        return None
    return open_log(settings, pool_size=1)


def open_recorder(settings: Settings, clock: Clock) -> ReachRecorder | None:
    reach = open_log(settings)
    if reach is None:
        log.info("reach.not_kept", enabled=settings.reach.enabled,
                 hint="set CLARIFY_BOT_DATABASE_URL to keep the reach record")
        return None
    return ReachRecorder(reach, clock=clock,
                         retention=timedelta(days=settings.reach.retention_days))
