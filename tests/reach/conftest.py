"""A reach log of each kind: memory, and PostgreSQL in a database of the test's own (skipped,
saying why, only where no PostgreSQL answers)."""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import asyncpg
import pytest

from adapters.slack import schema
from bot.reach import postgres
from bot.reach.log import MemoryReachLog, ReachLog

ADMIN_URL = os.environ.get("CLARIFY_TEST_DATABASE",
                           "postgresql://postgres@127.0.0.1:5432/postgres")
# the names of the databases these tests make start so (runs side by side keep apart)
DB_PREFIX = os.environ.get("CLARIFY_TEST_DB_PREFIX", "clarify_reach_")


@contextlib.asynccontextmanager
async def own_database() -> AsyncIterator[str]:
    """A fresh database at the reach record's schema (``postgres.upgrade``, as ``clarify-bot db
    upgrade`` applies it), dropped afterwards."""
    name = f"{DB_PREFIX}{uuid.uuid4().hex[:12]}"
    try:
        admin = await asyncpg.connect(ADMIN_URL, timeout=5)
    except (OSError, asyncpg.PostgresError) as exc:
        pytest.skip(f"no PostgreSQL answers at {schema.where(ADMIN_URL)} "
                    f"({type(exc).__name__}); set CLARIFY_TEST_DATABASE")
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    url = urlsplit(ADMIN_URL)._replace(path=f"/{name}").geturl()
    engine = schema.open_engine(url, pool_size=1)
    try:
        assert await postgres.upgrade(engine)
        assert not await postgres.upgrade(engine)  # a second upgrade applies nothing
        assert await postgres.version(engine) == postgres.LATEST
    finally:
        await engine.dispose()
    yield url
    admin = await asyncpg.connect(ADMIN_URL)
    try:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await admin.close()


@pytest.fixture
async def database_url() -> AsyncIterator[str]:
    async with own_database() as url:
        yield url


@pytest.fixture(params=["memory", "postgres"])
async def reach(request: pytest.FixtureRequest) -> AsyncIterator[ReachLog]:
    if request.param == "memory":
        yield MemoryReachLog()
        return
    async with own_database() as url:
        log = postgres.PostgresReachLog(schema.open_engine(url, pool_size=1))
        yield log
        await log.aclose()
