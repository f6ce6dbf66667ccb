"""Tokens sealed at rest, on a real PostgreSQL: a database of the previous schema (plain-text
tokens, superseded rows) read during the migration, upgraded, sealed, its files scanned for the
tokens' bytes; a key rotation through ``clarify-bot slack rotate-token-key``; a wrong key refused
in words that name key ids, never a key or a token."""

from __future__ import annotations

import asyncio
import base64
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg
import pytest
from click.testing import CliRunner
from slack_sdk.oauth.installation_store import Installation
from slack_sdk.oauth.installation_store.sqlalchemy import AsyncSQLAlchemyInstallationStore
from sqlalchemy.dialects.postgresql import insert as pg_insert

from adapters.slack import schema
from adapters.slack.installations import QUIET, InstallationDB, SealedInstallationStore
from adapters.slack.sealing import Sealer, TokenKeyError, key_id
from bot import schema_steps
from bot.settings import SettingsError, load_settings
from clarify_bot.cli import main
from tests.slack.distributed import ADMIN_URL, _with_database

pytestmark = pytest.mark.full_contract  # no core involved
CLIENT = "1111.2222"
NOW = datetime(2026, 7, 4, 9, 0, tzinfo=UTC)
KEY_A = base64.b64encode(b"A" * 32).decode()
KEY_B = base64.b64encode(b"B" * 32).decode()
# a rotating token pair as long as Slack's (a sealed one no longer fits slack_sdk's VARCHAR(200))
OLD_TOKEN = "xoxe.xoxb-1-OLD" + "o" * 40
NEW_TOKEN = "xoxe.xoxb-1-NEW" + "n" * 120
NEW_REFRESH = "xoxe-1-REFRESH" + "r" * 150
ORG_TOKEN = "xoxb-ORG" + "g" * 40
TOKENS = (OLD_TOKEN, NEW_TOKEN, NEW_REFRESH, ORG_TOKEN)
TABLES = ("slack_installations", "slack_bots")


def install(team: str | None, token: str, *, at: datetime, refresh: str | None = None,
            org: str | None = None) -> Installation:
    found = Installation(app_id="A0FAKEAPP", enterprise_id=org, team_id=team, bot_token=token,
                         bot_id="B0", bot_user_id="U0BOT", bot_scopes="chat:write",
                         user_id="U0INSTALLER", bot_refresh_token=refresh,
                         is_enterprise_install=team is None, installed_at=at.timestamp())
    found.bot_token_expires_at = int(at.timestamp()) + 43200 if refresh else None
    return found


@pytest.fixture
async def empty_db() -> AsyncIterator[str]:
    name = f"clarify_seal_{uuid.uuid4().hex[:12]}"
    admin = await asyncpg.connect(ADMIN_URL)
    await admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield _with_database(name)
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


async def previous_release(url: str) -> None:
    """The database as release 2 left it: schema 2, tokens in plain text as slack_sdk's own
    store wrote them, the rows of a first install still beside the reinstall's."""
    engine = schema.open_engine(url, pool_size=1)
    try:
        async with engine.begin() as conn:
            await conn.run_sync(lambda c: schema_steps.versions.metadata.create_all(c))
            for step in schema.STEPS[:2]:
                await conn.run_sync(step.apply)
            await conn.execute(pg_insert(schema_steps.versions).values(component=schema.COMPONENT,
                                                                 version=2))
        plain = AsyncSQLAlchemyInstallationStore(client_id=CLIENT, engine=engine, logger=QUIET)
        await plain.async_save(install("T0ACME", OLD_TOKEN, at=NOW))
        await plain.async_save(install("T0ACME", NEW_TOKEN, at=NOW + timedelta(days=1),
                                       refresh="xoxe-1-short"))
        await plain.async_save(install(None, ORG_TOKEN, at=NOW, org="E0GLOBEX"))
    finally:
        await engine.dispose()


async def table_bytes(url: str) -> bytes:
    """The bytes of the token tables' files on the server's disk (after a checkpoint), and
    every row as PostgreSQL renders it."""
    conn = await asyncpg.connect(url)  # the test server's superuser
    try:
        await conn.execute("CHECKPOINT")
        found = b""
        for table in TABLES:
            path = await conn.fetchval("SELECT pg_relation_filepath($1)", table)
            found += await conn.fetchval("SELECT pg_read_binary_file($1)", path)
            rows = await conn.fetch(f"SELECT t::text FROM {table} AS t")
            found += "\n".join(r[0] for r in rows).encode()
        return found
    finally:
        await conn.close()


def store(engine: object, key: str) -> SealedInstallationStore:
    return SealedInstallationStore(sealer=Sealer.from_setting(key), client_id=CLIENT,
                                   engine=engine, logger=QUIET)


async def test_plain_text_tokens_of_the_previous_schema_are_read_then_sealed_by_the_upgrade(
        empty_db: str) -> None:
    await previous_release(empty_db)
    # first, the long refresh token of a later refresh, still in plain text (the old release)
    engine = schema.open_engine(empty_db, pool_size=1)
    try:
        before = await table_bytes(empty_db)
        assert OLD_TOKEN.encode() in before and NEW_TOKEN.encode() in before  # the scan sees
        with pytest.raises(schema.SchemaOutdated):
            await schema.require_current(engine)
        # during the migration, the new release reads the rows the old one wrote
        reader = store(engine, KEY_A)
        found = await reader.async_find_installation(enterprise_id=None, team_id="T0ACME")
        assert found is not None and found.bot_token == NEW_TOKEN
        # without the key, the upgrade refuses and changes nothing
        with pytest.raises(schema.TokensInPlainText, match="CLARIFY_BOT_SLACK_TOKEN_KEY"):
            await schema.upgrade(engine)
        assert await schema.version(engine) == 2
        applied = await schema.upgrade(engine, Sealer.from_setting(KEY_A))
        assert [s.version for s in applied] == [3]
        # the new release's processes start now, with connections of their own (a connection
        # that prepared its statements before the columns changed must be opened again)
        await engine.dispose()
        engine = schema.open_engine(empty_db, pool_size=1)
        reader = store(engine, KEY_A)
        await schema.require_current(engine)
        # a refresh after the upgrade writes a token longer than the old columns took
        refreshed = install("T0ACME", NEW_TOKEN, at=NOW + timedelta(days=1), refresh=NEW_REFRESH)
        await reader.async_save(refreshed)
        found = await reader.async_find_installation(enterprise_id=None, team_id="T0ACME")
        assert found is not None and (found.bot_token, found.bot_refresh_token) == (
            NEW_TOKEN, NEW_REFRESH)
        bot = await reader.async_find_bot(enterprise_id="E0GLOBEX", team_id=None,
                                          is_enterprise_install=True)
        assert bot is not None and bot.bot_token == ORG_TOKEN
        assert await InstallationDB(engine=engine, client_id=CLIENT,
                                    sealer=Sealer.from_setting(KEY_A)).check_tokens() == (6, 0)
    finally:
        await engine.dispose()
    after = await table_bytes(empty_db)
    assert b"clarify-sealed:v1:" + key_id(base64.b64decode(KEY_A)).encode() in after
    assert b"T0ACME" in after and b"E0GLOBEX" in after  # the scan reads the rows' bytes
    assert [t for t in TOKENS if t.encode() in after] == []
    assert b"xoxe-1-short" not in after
    conn = await asyncpg.connect(empty_db)
    try:  # the first install's rows are gone: one row per installation in each table
        assert [await conn.fetchval(f"SELECT count(*) FROM {t}") for t in TABLES] == [2, 2]
    finally:
        await conn.close()


CONFIG = """
[slack.oauth]
enabled = true
client_id = "1111.2222"
public_url = "https://clarify.example.com"
"""


async def rotate(tmp_path: Path, url: str, keys: str) -> tuple[int, str]:
    """``clarify-bot slack rotate-token-key`` (its own event loop, in a thread)."""
    return await asyncio.to_thread(_rotate, tmp_path, url, keys)


def _rotate(tmp_path: Path, url: str, keys: str) -> tuple[int, str]:
    config = tmp_path / "clarify-bot.toml"
    config.write_text(CONFIG)
    result = CliRunner().invoke(main, ["slack", "rotate-token-key", "--config", str(config)],
                                env={"CLARIFY_BOT_DATABASE_URL": url,
                                     "CLARIFY_BOT_SLACK_TOKEN_KEY": keys,
                                     "CLARIFY_BOT_CONFIG": None})
    return result.exit_code, result.output


async def test_a_key_is_rotated_without_downtime_and_the_old_one_removed(
        empty_db: str, tmp_path: Path) -> None:
    engine = schema.open_engine(empty_db, pool_size=1)
    try:
        await schema.upgrade(engine)
        await store(engine, KEY_A).async_save(install("T0ACME", NEW_TOKEN, at=NOW,
                                                      refresh=NEW_REFRESH))
        await store(engine, KEY_A).async_save(install(None, ORG_TOKEN, at=NOW, org="E0GLOBEX"))
        # a row an older release still running wrote in plain text, after the upgrade
        plain = AsyncSQLAlchemyInstallationStore(client_id=CLIENT, engine=engine, logger=QUIET)
        await plain.async_save(install("T0INITECH", OLD_TOKEN, at=NOW))
        # 1. the new key first, the old one kept: rows of the old key read, writes use the new
        both = store(engine, f"{KEY_B},{KEY_A}")
        assert (await InstallationDB(engine=engine, client_id=CLIENT, sealer=both.sealer)
                .check_tokens()) == (8, 2)  # start-up says two are in plain text (one row each)
        found = await both.async_find_installation(enterprise_id=None, team_id="T0ACME")
        assert found is not None and found.bot_token == NEW_TOKEN
        await both.async_save(install("T0ACME", NEW_TOKEN, at=NOW + timedelta(hours=1),
                                      refresh=NEW_REFRESH))  # a reinstall, under key B
        with pytest.raises(TokenKeyError):  # the org's row is still under key A
            await store(engine, KEY_B).async_find_bot(enterprise_id="E0GLOBEX", team_id=None,
                                                      is_enterprise_install=True)
        # 2. every row re-sealed with the new key
        code, out = await rotate(tmp_path, empty_db, f"{KEY_B}, {KEY_A}")
        assert code == 0, out
        kid_b = key_id(base64.b64decode(KEY_B))
        # the org's rows under key A, Initech's in plain text (Acme's are under B already)
        assert "re-sealed 4 row(s) of tokens" in out and f"key id {kid_b}" in out
        assert KEY_A not in out and KEY_B not in out and NEW_TOKEN not in out
        assert (await rotate(tmp_path, empty_db, f"{KEY_B},{KEY_A}"))[1].startswith("re-sealed 0 ")
        # 3. the old key removed: everything still reads
        only_b = store(engine, KEY_B)
        found = await only_b.async_find_installation(enterprise_id=None, team_id="T0ACME")
        assert found is not None and found.bot_refresh_token == NEW_REFRESH
        bot = await only_b.async_find_bot(enterprise_id="E0GLOBEX", team_id=None,
                                          is_enterprise_install=True)
        assert bot is not None and bot.bot_token == ORG_TOKEN
        found = await only_b.async_find_installation(enterprise_id=None, team_id="T0INITECH")
        assert found is not None and found.bot_token == OLD_TOKEN
    finally:
        await engine.dispose()
    after = await table_bytes(empty_db)
    assert b"clarify-sealed:v1:" + key_id(base64.b64decode(KEY_A)).encode() not in after
    assert [t for t in TOKENS if t.encode() in after] == []


async def test_a_wrong_key_is_refused_naming_key_ids_only(empty_db: str, tmp_path: Path
                                                          ) -> None:
    engine = schema.open_engine(empty_db, pool_size=1)
    try:
        await schema.upgrade(engine)
        await store(engine, KEY_A).async_save(install("T0ACME", NEW_TOKEN, at=NOW))
        db = InstallationDB(engine=engine, client_id=CLIENT, sealer=Sealer.from_setting(KEY_B))
        with pytest.raises(TokenKeyError) as wrong:
            await db.check_tokens()
        with pytest.raises(TokenKeyError):
            await db.sdk.async_find_installation(enterprise_id=None, team_id="T0ACME")
    finally:
        await engine.dispose()
    said = str(wrong.value)
    assert key_id(base64.b64decode(KEY_A)) in said and "CLARIFY_BOT_SLACK_TOKEN_KEY" in said
    assert NEW_TOKEN not in said and KEY_A not in said and KEY_B not in said
    code, out = await rotate(tmp_path, empty_db, KEY_B)  # the command says the same, no traceback
    assert code == 1 and "CLARIFY_BOT_SLACK_TOKEN_KEY" in out and "Traceback" not in out
    assert NEW_TOKEN not in out and KEY_B not in out


def test_a_sealed_value_does_not_open_in_another_column_or_when_altered() -> None:
    sealer = Sealer.from_setting(KEY_A)
    sealed = sealer.seal(NEW_TOKEN, column="bot_token")
    assert sealed is not None and NEW_TOKEN not in sealed
    assert sealer.open(sealed, column="bot_token") == NEW_TOKEN
    assert sealer.seal(NEW_TOKEN, column="bot_token") != sealed  # a fresh nonce each time
    with pytest.raises(TokenKeyError, match="bot_refresh_token"):
        sealer.open(sealed, column="bot_refresh_token")
    altered = sealed[:-2] + ("AA" if not sealed.endswith("AA") else "BB")
    with pytest.raises(TokenKeyError):
        sealer.open(altered, column="bot_token")


@pytest.mark.parametrize("value", ["not base64!", base64.b64encode(b"short").decode(),
                                   f"{KEY_A},{KEY_A}", " , "])
def test_a_malformed_key_setting_is_refused_without_echo(value: str) -> None:
    with pytest.raises(SettingsError) as refused:
        load_settings(None, environ={"CLARIFY_BOT_SLACK_TOKEN_KEY": value})
    [problem] = refused.value.problems
    assert problem.key == "CLARIFY_BOT_SLACK_TOKEN_KEY" and problem.value is None
    assert "openssl rand -base64 32" in str(refused.value)
    assert value.strip(" ,") == "" or value not in str(refused.value)


def test_a_distributed_app_does_not_start_without_a_token_key(tmp_path: Path) -> None:
    config = tmp_path / "clarify-bot.toml"
    config.write_text("[clarify]\nchannels = [\"slack\"]\n" + CONFIG)
    settings = load_settings(config, environ={})
    assert "CLARIFY_BOT_SLACK_TOKEN_KEY" in settings.missing_secrets()
    with pytest.raises(SettingsError) as refused:
        settings.require_secrets()
    assert "CLARIFY_BOT_SLACK_TOKEN_KEY: not set" in str(refused.value)


def _db_upgrade(tmp_path: Path, url: str, keys: str | None) -> tuple[int, str]:
    config = tmp_path / "clarify-bot.toml"
    config.write_text(CONFIG)
    result = CliRunner().invoke(main, ["db", "upgrade", "--config", str(config)],
                                env={"CLARIFY_BOT_DATABASE_URL": url,
                                     "CLARIFY_BOT_SLACK_TOKEN_KEY": keys,
                                     "CLARIFY_BOT_CONFIG": None})
    return result.exit_code, result.output


async def test_db_upgrade_names_the_key_it_needs_then_seals_with_it(empty_db: str,
                                                                    tmp_path: Path) -> None:
    await previous_release(empty_db)
    code, out = await asyncio.to_thread(_db_upgrade, tmp_path, empty_db, None)
    assert code == 1 and "6 row(s) of Slack tokens in plain text" in out
    assert "set CLARIFY_BOT_SLACK_TOKEN_KEY" in out and "Traceback" not in out
    code, out = await asyncio.to_thread(_db_upgrade, tmp_path, empty_db, KEY_A)
    assert code == 0 and "applied 3: Slack tokens sealed at rest" in out, out
    assert [t for t in TOKENS if t in out] == [] and KEY_A not in out
    assert [t for t in TOKENS if t.encode() in await table_bytes(empty_db)] == []
