"""The installation store on a real PostgreSQL: slack_sdk's SQLAlchemy stores with the bot's
tenant bindings, the schema's upgrades, the refresh lock across concurrent callers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest
from slack_sdk.oauth.installation_store import Installation

from adapters.slack import database, schema
from adapters.slack.installations import InstallationDB, expires_at
from adapters.slack.links import InstallRefused
from adapters.slack.sealing import Sealer
from tests.slack.distributed import (
    TOKEN_KEY,
    database_url,  # noqa: F401 (a fixture)
)

pytestmark = pytest.mark.full_contract  # no core involved
NOW = datetime(2026, 7, 4, 9, 0, tzinfo=UTC)


def installation(team: str = "T0ACME", *, token: str = "xoxb-acme-1", org: str | None = None,
                 expires_in: int | None = 3600) -> Installation:
    found = Installation(app_id="A0FAKEAPP", enterprise_id=org, team_id=team,
                         team_name=team, bot_token=token, bot_id="B0", bot_user_id="U0BOT",
                         bot_scopes="chat:write", user_id="U0INSTALLER",
                         bot_refresh_token="xoxe-1-refresh" if expires_in else None,
                         installed_at=NOW.timestamp())
    found.bot_token_expires_at = int(NOW.timestamp()) + expires_in if expires_in else None
    return found


@pytest.fixture
async def db(database_url: str) -> AsyncIterator[InstallationDB]:  # noqa: F811
    engine = schema.open_engine(database_url)
    yield InstallationDB(engine=engine, client_id="1111.2222",
                         sealer=Sealer.from_setting(TOKEN_KEY))
    await engine.dispose()


async def test_the_schema_is_upgraded_by_the_command_only_and_once(database_url: str  # noqa: F811
                                                                   ) -> None:
    engine = schema.open_engine(database_url)
    try:
        assert await schema.version(engine) == schema.LATEST
        assert await schema.upgrade(engine) == []  # nothing twice
        await schema.require_current(engine)
    finally:
        await engine.dispose()


@pytest.mark.slow
async def test_a_fresh_database_is_refused_until_upgraded(database_url: str) -> None:  # noqa: F811
    import asyncpg

    from tests.slack.distributed import ADMIN_URL, _with_database
    name = database_url.rsplit("/", 1)[1] + "_fresh"
    admin = await asyncpg.connect(ADMIN_URL)
    await admin.execute(f'CREATE DATABASE "{name}"')
    engine = schema.open_engine(_with_database(name))
    try:
        with pytest.raises(schema.SchemaOutdated, match="clarify-bot db upgrade"):
            await schema.require_current(engine)
        applied = await asyncio.gather(schema.upgrade(engine), schema.upgrade(engine))
        assert sorted(len(a) for a in applied) == [0, len(schema.STEPS)]  # the lock: once
        await schema.require_current(engine)
    finally:
        await engine.dispose()
        await admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
        await admin.close()


async def test_an_installation_is_bound_to_one_tenant(db: InstallationDB) -> None:
    assert await db.save(installation(), tenant="acme", link_id="L1", now=NOW) is False
    assert await db.save(installation(token="xoxb-acme-2"), tenant="acme", link_id="L1",
                         now=NOW) is True  # a reinstall
    with pytest.raises(InstallRefused) as refused:
        await db.save(installation(), tenant="globex", link_id="L2", now=NOW)
    assert refused.value.reason == "workspace_of_another_tenant"
    with pytest.raises(InstallRefused) as reused:
        await db.save(installation("T0OTHER"), tenant="acme", link_id="L1", now=NOW)
    assert reused.value.reason == "link_already_used"
    [only] = await db.all()
    assert (only.key, only.tenant, only.state) == ("T0ACME", "acme", "active")
    found = await db.find(only)
    assert found is not None and found.bot_token == "xoxb-acme-2"
    assert "xoxb" not in repr(only) and "xoxb" not in str(only.public())


async def test_an_org_wide_install_is_keyed_by_its_org(db: InstallationDB) -> None:
    org = installation(team=None, org="E0ACME")  # type: ignore[arg-type]
    org.is_enterprise_install = True
    await db.save(org, tenant="acme", link_id="L1", now=NOW)
    [only] = await db.all()
    assert (only.key, only.is_enterprise_install, only.team_id) == ("E0ACME", True, None)


async def test_a_refresh_happens_once_however_many_replicas_ask(db: InstallationDB) -> None:
    await db.save(installation(), tenant="acme", link_id="L1", now=NOW)
    [held] = await db.all()
    rotations = 0

    def due(i: Installation) -> bool:
        return i.bot_token == "xoxb-acme-1"

    async def rotate(i: Installation) -> Installation:
        nonlocal rotations
        rotations += 1
        await asyncio.sleep(0.3)  # Slack answering, while the row stays locked
        new = Installation(**i.to_dict_for_copying())
        new.bot_token, new.bot_token_expires_at = "xoxb-acme-2", int(NOW.timestamp()) + 7200
        return new

    results = await asyncio.gather(*(db.refreshing(held, due=due, rotate=rotate, now=NOW)
                                     for _ in range(5)))
    assert rotations == 1
    assert {r.bot_token for r in results if r is not None} == {"xoxb-acme-2"}
    [after] = await db.all()
    assert after.token_expires_at == NOW + timedelta(hours=2) == expires_at(results[0])


async def test_a_failed_refresh_keeps_the_token_and_counts(db: InstallationDB) -> None:
    await db.save(installation(), tenant="acme", link_id="L1", now=NOW)
    [held] = await db.all()

    async def fails(i: Installation) -> Installation:
        raise RuntimeError("slack said no")

    with pytest.raises(RuntimeError):
        await db.refreshing(held, due=lambda i: True, rotate=fails, now=NOW)
    await db.refresh_failed(held.key)
    [after] = await db.all()
    assert after.refresh_failures == 1
    found = await db.find(after)
    assert found is not None and found.bot_token == "xoxb-acme-1"


async def test_removal_forgets_the_tokens_and_keeps_the_tenant(db: InstallationDB) -> None:
    await db.save(installation(), tenant="acme", link_id="L1", now=NOW)
    gone = await db.remove(enterprise_id=None, team_id="T0ACME", is_enterprise_install=False,
                           reason="app_uninstalled", now=NOW)
    assert gone is not None and (gone.state, gone.reason, gone.tenant) == (
        "removed", "app_uninstalled", "acme")
    assert await db.find(gone) is None
    assert await db.sdk.async_find_bot(enterprise_id=None, team_id="T0ACME") is None
    with pytest.raises(InstallRefused):  # reinstalled for the same tenant only
        await db.save(installation(), tenant="globex", link_id="L2", now=NOW)


async def test_a_state_is_bound_to_its_tenant_once(db: InstallationDB) -> None:
    state = await db.states.async_issue()
    await db.bind_state(state, tenant="acme", link_id="L1", now=NOW,
                        expire_at=NOW + timedelta(minutes=10))
    assert await db.states.async_consume(state) is True
    assert await db.states.async_consume(state) is False  # one use
    assert await db.take_binding(state) == ("acme", "L1")
    assert await db.take_binding(state) is None


@pytest.mark.parametrize("query", ["sslmode=disable", "sslmode=prefer", "connect_timeout=5",
                                   "sslmode=prefer&connect_timeout=10&application_name=clarify"])
async def test_a_url_with_libpq_parameters_opens_the_database(
        database_url: str, query: str) -> None:  # noqa: F811
    """What a managed PostgreSQL's connection string carries (``sslmode``, ``connect_timeout``,
    as libpq and psql take them) opens the database: it was refused '(TypeError)', the driver
    given them as keywords it does not know."""
    engine = schema.open_engine(f"{database_url}?{query}", pool_size=1)
    try:
        assert await schema.version(engine) == schema.LATEST
    finally:
        await engine.dispose()
    with pytest.raises(Exception) as caught:  # a mode the server cannot meet: named, no value
        engine = schema.open_engine(f"{database_url}?sslmode=require&password=PWSECRET99")
        try:
            await schema.version(engine)
        finally:
            await engine.dispose()
    said = database.failure(caught.value, f"{database_url}?sslmode=require")
    assert "PWSECRET99" not in said and "TypeError" not in said, said
    assert "does not accept SSL" in said and "sslmode" in said, said
