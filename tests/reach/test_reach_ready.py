"""A reach table that is missing (``clarify-bot db upgrade`` not run) is said, not only counted:
the log names it, the recorder logs it and shows it for ``/readyz``, ``check-config`` refuses
naming the fix, and ``clarify-bot db status`` shows the reach schema's version."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit

import asyncpg
import pytest
from click.testing import CliRunner

from adapters.slack import schema
from bot.clock import ManualClock
from bot.reach import postgres
from bot.reach.recording import ReachRecorder
from bot.settings import load_settings
from clarify_bot import preflight
from clarify_bot.cli import main
from tests.reach.conftest import ADMIN_URL


@pytest.fixture
async def bare_database() -> AsyncIterator[str]:
    """A fresh database nobody ran ``db upgrade`` on."""
    name = f"clarify_reach_bare_{uuid.uuid4().hex[:10]}"
    try:
        admin = await asyncpg.connect(ADMIN_URL, timeout=5)
    except (OSError, asyncpg.PostgresError) as exc:
        pytest.skip(f"no PostgreSQL answers ({type(exc).__name__}); set CLARIFY_TEST_DATABASE")
    await admin.execute(f'CREATE DATABASE "{name}"')
    await admin.close()
    yield urlsplit(ADMIN_URL)._replace(path=f"/{name}").geturl()
    admin = await asyncpg.connect(ADMIN_URL)
    await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    await admin.close()


async def test_the_missing_table_is_said_until_db_upgrade(bare_database: str) -> None:
    log = postgres.PostgresReachLog(schema.open_engine(bare_database, pool_size=1))
    recorder = ReachRecorder(log, clock=ManualClock(datetime(2025, 3, 3, tzinfo=UTC)),
                             retention=timedelta(days=90))
    problem = await recorder.check()
    assert problem is not None and "clarify-bot db upgrade" in problem
    assert recorder.status() == {"reach": problem}
    settings = load_settings(None, environ={"CLARIFY_BOT_DATABASE_URL": bare_database})
    found = await preflight.reach_problem(settings)
    assert found is not None and found.key == "CLARIFY_BOT_DATABASE_URL"
    assert "db upgrade" in found.reason and bare_database not in str(found)
    engine = schema.open_engine(bare_database, pool_size=1)
    assert await postgres.upgrade(engine)
    await engine.dispose()
    assert await recorder.check() is None and recorder.status() == {"reach": "ok"}
    assert await preflight.reach_problem(settings) is None
    await recorder.aclose()


def test_db_status_shows_the_reach_schema(bare_database: str) -> None:
    env = {"CLARIFY_BOT_DATABASE_URL": bare_database}
    before = CliRunner().invoke(main, ["db", "status"], env=env)
    assert before.exit_code == 1
    assert f"reach schema version 0; this release needs {postgres.LATEST}" in before.output
    assert "clarify-bot db upgrade" in before.output
    upgraded = CliRunner().invoke(main, ["db", "upgrade"], env=env)
    assert upgraded.exit_code == 0, upgraded.output
    after = CliRunner().invoke(main, ["db", "status"], env=env)
    assert after.exit_code == 0, after.output
    assert f"reach schema version {postgres.LATEST}; this release needs" in after.output
