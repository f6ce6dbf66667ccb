"""A reach table that is missing (``clarify-bot db upgrade`` not run) is said, not only counted:
the log names it, the recorder logs it and shows it for ``/readyz``, ``check-config`` refuses
naming the fix, and ``clarify-bot db status`` shows the reach schema's version."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit

import asyncpg
import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from adapters.slack import schema
from bot import schema_steps
from bot.clock import ManualClock
from bot.reach import postgres
from bot.reach.log import Kind, ReachEntry
from bot.reach.recording import ReachRecorder
from bot.settings import load_settings
from clarify_bot import preflight
from clarify_bot.cli import main
from tests.reach.conftest import ADMIN_URL, DB_PREFIX


@pytest.fixture
async def bare_database() -> AsyncIterator[str]:
    """A fresh database nobody ran ``db upgrade`` on."""
    name = f"{DB_PREFIX}bare_{uuid.uuid4().hex[:10]}"
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


# the table as reach schema version 1 made it (the release before step 2), for the upgrade
V1 = sa.MetaData()
sa.Table(
    "clarify_reach_entries", V1,
    sa.Column("entry_id", sa.String(96), primary_key=True),
    sa.Column("at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("tenant", sa.String(200), nullable=False),
    sa.Column("workspace", sa.String(200), nullable=False),
    sa.Column("platform", sa.String(32), nullable=False),
    sa.Column("person_id", sa.String(200), nullable=False),
    sa.Column("clarification_id", sa.String(200), nullable=False),
    sa.Column("kind", sa.String(16), nullable=False),
    sa.Column("severity", sa.String(16), nullable=False),
    sa.Column("reason_code", sa.String(64)),
    sa.Column("cause", sa.String(200)),
    sa.Index("clarify_reach_entries_tenant_at", "tenant", "at"),
    sa.Index("clarify_reach_entries_person", "person_id"),
)
T0 = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)


async def at_version_1(url: str) -> None:
    """The database as a version 1 release left it: its table, with rows, at reach schema 1."""
    engine = schema.open_engine(url, pool_size=1)
    async with engine.begin() as conn:
        await conn.run_sync(lambda c: schema_steps.versions.metadata.create_all(c))
        await conn.run_sync(lambda c: V1.create_all(c))
        await conn.execute(schema_steps.versions.insert().values(component="reach", version=1))
        await conn.execute(V1.tables["clarify_reach_entries"].insert(), [
            {"entry_id": "e-1", "at": T0, "tenant": "acme", "workspace": "ws-1",
             "platform": "slack", "person_id": "p-sarah", "clarification_id": "c-1",
             "kind": "asked", "severity": "high", "reason_code": None, "cause": None},
            {"entry_id": "e-2", "at": T0, "tenant": "acme", "workspace": "ws-1",
             "platform": "teams", "person_id": "p-tom", "clarification_id": "c-1",
             "kind": "skipped", "severity": "high", "reason_code": "DELIVERY_FAILED",
             "cause": "MessageWritesBlocked: the person blocked the bot"}])
    await engine.dispose()


async def test_a_version_1_table_with_rows_is_upgraded_in_place(bare_database: str) -> None:
    """Step 2 on a populated version 1 table: said missing until applied, then applied alone;
    the rows keep their values, with no zone and no cause group (the report takes the tenant's
    default zone and the cause's words), and the log writes and reads the new fields and looks
    a question's first card up by its index."""
    await at_version_1(bare_database)
    log = postgres.PostgresReachLog(schema.open_engine(bare_database, pool_size=1))
    problem = await log.missing()
    assert problem is not None and "schema step 2: the zone each person was asked in" in problem
    assert "clarify-bot db upgrade" in problem and "reach schema 1" in problem
    recorder = ReachRecorder(log, clock=ManualClock(T0), retention=timedelta(days=90))
    assert await recorder.check() == problem and recorder.status() == {"reach": problem}
    engine = schema.open_engine(bare_database, pool_size=1)
    assert [s.version for s in await postgres.upgrade(engine)] == [2]
    assert await postgres.upgrade(engine) == []  # nothing left to apply
    assert await postgres.version(engine) == 2
    await engine.dispose()
    assert await log.missing() is None
    kept = await log.read()
    assert [(e.entry_id, e.kind, e.cause, e.zone, e.cause_group) for e in kept] == [
        ("e-1", Kind.ASKED, None, None, None),
        ("e-2", Kind.SKIPPED, "MessageWritesBlocked: the person blocked the bot", None, None)]
    await log.add([ReachEntry("e-3", T0 - timedelta(hours=1), "acme", "ws-1", "slack",
                              "p-ahmed", "c-1", Kind.DIGESTED, "high", zone="Europe/Berlin"),
                   ReachEntry("e-4", T0, "acme", "ws-1", "slack", "p-olga", "c-1",
                              Kind.SKIPPED, "high", "DELIVERY_FAILED", "user_disabled",
                              cause_group="deactivated")])
    by_id = {e.entry_id: e for e in await log.read()}
    assert (by_id["e-3"].zone, by_id["e-4"].cause_group) == ("Europe/Berlin", "deactivated")
    assert await log.first_asked("c-1") == T0 - timedelta(hours=1)
    assert await log.first_asked("c-2") is None
    conn = await asyncpg.connect(bare_database)
    try:
        indexes = {r["indexname"] for r in await conn.fetch(
            "SELECT indexname FROM pg_indexes WHERE tablename = 'clarify_reach_entries'")}
    finally:
        await conn.close()
    assert "clarify_reach_entries_question" in indexes
    await recorder.aclose()


def test_db_status_and_upgrade_from_version_1(bare_database: str) -> None:
    """``db status`` says a version 1 reach schema is behind; ``db upgrade`` applies step 2
    alone and says so."""
    asyncio.run(at_version_1(bare_database))
    env = {"CLARIFY_BOT_DATABASE_URL": bare_database}
    before = CliRunner().invoke(main, ["db", "status"], env=env)
    assert before.exit_code == 1
    assert f"reach schema version 1; this release needs {postgres.LATEST}" in before.output
    assert "missing reach step 2: the zone each person was asked in" in before.output
    assert "missing reach step 1" not in before.output
    upgraded = CliRunner().invoke(main, ["db", "upgrade"], env=env)
    assert upgraded.exit_code == 0, upgraded.output
    assert ("applied reach 2: the zone each person was asked in, each skip's cause group, and "
            "an index by question") in upgraded.output
    assert "applied reach 1" not in upgraded.output
    after = CliRunner().invoke(main, ["db", "status"], env=env)
    assert after.exit_code == 0, after.output
    assert "reach schema version 2; this release needs 2" in after.output
    assert "missing reach step" not in after.output
