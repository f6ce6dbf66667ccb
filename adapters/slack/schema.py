"""The installation store's schema in PostgreSQL, and its upgrades: ``clarify-bot db upgrade``.

slack_sdk's own tables (``slack_installations``, ``slack_bots``, ``slack_oauth_states``, built by
its SQLAlchemy stores' table builders, so they are exactly what those stores read and write) and
the bot's two: ``clarify_slack_installations``, one row per installation with the tenant its
install link bound it to, its state (active, paused, removed) and the row a token refresh locks;
``clarify_slack_install_states``, the tenant and link an OAuth state was issued for.

Schema changes are numbered steps recorded in ``clarify_schema_versions``; ``upgrade`` applies
the missing ones in one transaction under an advisory lock (two operators, or two release jobs,
never apply a step twice). Step 3 widens slack_sdk's token columns for sealed values
(``adapters.slack.sealing``); every ``upgrade`` given the token key then seals the tokens still in
plain text (rows written before sealing, or by an older release still running) and deletes the
rows a later install or refresh superseded, and compacts the two tables (``VACUUM FULL``) so the
plain-text row versions do not stay in their files. The service never changes the schema: it
checks the version when it starts and refuses, naming the command, when an upgrade is due
(docs/operations.md).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import asyncpg
import sqlalchemy as sa
from slack_sdk.oauth.installation_store.sqlalchemy import SQLAlchemyInstallationStore
from slack_sdk.oauth.state_store.sqlalchemy import SQLAlchemyOAuthStateStore
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from adapters.errors import AdapterError
from adapters.slack.sealing import KEY_SETTING, TOKEN_COLUMNS, Sealer, is_sealed
from bot import schema_steps
from bot.schema_steps import Step

COMPONENT = "slack"
LOCK_ID = 0x5C1A_0A17  # pg_advisory_xact_lock: one upgrade at a time
METADATA = sa.MetaData()

installations = sa.Table(
    "clarify_slack_installations", METADATA,
    # "E…" for an org-wide install, "T…" for a workspace's own install
    sa.Column("key", sa.String(32), primary_key=True),
    sa.Column("enterprise_id", sa.String(32)),
    sa.Column("team_id", sa.String(32)),
    sa.Column("is_enterprise_install", sa.Boolean, nullable=False, default=False),
    sa.Column("enterprise_name", sa.String(200)),
    sa.Column("team_name", sa.String(200)),
    sa.Column("tenant", sa.String(200), nullable=False),
    sa.Column("link_id", sa.String(64), nullable=False),
    sa.Column("state", sa.String(16), nullable=False),  # active | paused | removed
    sa.Column("reason", sa.String(64)),  # why paused or removed: a Slack error code or event
    sa.Column("installed_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("changed_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("token_expires_at", sa.DateTime(timezone=True)),  # None: the token never expires
    sa.Column("refreshed_at", sa.DateTime(timezone=True)),
    sa.Column("refresh_failures", sa.Integer, nullable=False, default=0),
    sa.Index("clarify_slack_installations_link", "link_id"),
)

install_states = sa.Table(
    "clarify_slack_install_states", METADATA,
    sa.Column("state", sa.String(200), primary_key=True),
    sa.Column("tenant", sa.String(200), nullable=False),
    sa.Column("link_id", sa.String(64), nullable=False),
    sa.Column("expire_at", sa.DateTime(timezone=True), nullable=False),
)



def _slack_sdk_tables(conn: sa.Connection) -> None:
    """slack_sdk's tables, from its stores' own builders."""
    metadata = sa.MetaData()
    SQLAlchemyInstallationStore.build_installations_table(
        metadata, SQLAlchemyInstallationStore.default_installations_table_name)
    SQLAlchemyInstallationStore.build_bots_table(
        metadata, SQLAlchemyInstallationStore.default_bots_table_name)
    SQLAlchemyOAuthStateStore.build_oauth_states_table(
        metadata, SQLAlchemyOAuthStateStore.default_table_name)
    metadata.create_all(conn)


def _clarify_tables(conn: sa.Connection) -> None:
    METADATA.create_all(conn)


def _token_columns(conn: sa.Connection) -> None:
    """slack_sdk declares its token columns VARCHAR(200): a sealed refresh token is longer."""
    for table, columns in TOKEN_COLUMNS.items():
        for column in columns:
            conn.execute(sa.text(f"ALTER TABLE {table} ALTER COLUMN {column} TYPE text"))


STEPS = (
    Step(1, "slack_sdk's installation, bot and OAuth state tables", _slack_sdk_tables),
    Step(2, "installations bound to tenants, and the tenant of each OAuth state",
         _clarify_tables),
    Step(3, "Slack tokens sealed at rest (AES-256-GCM): token columns hold sealed values",
         _token_columns),
)
LATEST = STEPS[-1].version


class TokensInPlainText(AdapterError):
    """Tokens in plain text to seal, and no key to seal them with."""

    def __init__(self, rows: int) -> None:
        super().__init__(f"the installation database holds {rows} row(s) of Slack tokens in "
                         f"plain text: set {KEY_SETTING} (docs/slack.md) so that `clarify-bot "
                         "db upgrade` seals them")
        self.rows = rows


@dataclass(frozen=True)
class Resealed:
    """What a pass over the token rows did: rows (re-)sealed, superseded rows deleted."""

    sealed: int
    deleted: int


def _rows_to_seal(conn: sa.Connection, table: str, columns: tuple[str, ...],
                  needs: Callable[[str | None], bool]) -> list[sa.Row]:
    rows = conn.execute(sa.text(f"SELECT id, {', '.join(columns)} FROM {table} "
                                "ORDER BY id FOR UPDATE")).all()
    return [row for row in rows if any(needs(value) for value in row[1:])]


def plain_rows(conn: sa.Connection) -> int:
    """How many token rows hold a token in plain text."""
    return sum(len(_rows_to_seal(conn, table, columns,
                                 lambda v: v is not None and not is_sealed(v)))
               for table, columns in TOKEN_COLUMNS.items())


def reseal(conn: sa.Connection, sealer: Sealer) -> Resealed:
    """Delete the superseded rows, then seal with the first key every token that is in plain
    text or sealed with another key (all in the caller's transaction, rows locked)."""
    deleted = 0
    for table in TOKEN_COLUMNS:
        deleted += conn.execute(sa.text(
            f"DELETE FROM {table} WHERE id IN (SELECT id FROM (SELECT id, row_number() OVER "
            "(PARTITION BY client_id, enterprise_id, team_id ORDER BY installed_at DESC, id DESC)"
            f" AS n FROM {table}) AS ranked WHERE n > 1)")).rowcount or 0
    sealed = 0
    for table, columns in TOKEN_COLUMNS.items():
        for row in _rows_to_seal(conn, table, columns, sealer.needs_sealing):
            values = {c: sealer.seal(v, column=c) for c, v in zip(columns, row[1:], strict=True)}
            conn.execute(sa.text(f"UPDATE {table} SET "
                                 + ", ".join(f"{c} = :{c}" for c in columns)
                                 + " WHERE id = :id"), {"id": row[0], **values})
            sealed += 1
    return Resealed(sealed, deleted)


async def compact(engine: AsyncEngine) -> None:
    """Rewrite the token tables so the row versions a reseal left behind (plain text, or an
    old key's) leave their files too (``VACUUM FULL``: a brief exclusive lock)."""
    async with engine.connect() as conn:
        auto = await conn.execution_options(isolation_level="AUTOCOMMIT")
        for table in TOKEN_COLUMNS:
            await auto.execute(sa.text(f"VACUUM FULL {table}"))


async def seal_tokens(engine: AsyncEngine, sealer: Sealer) -> Resealed:
    """``clarify-bot slack rotate-token-key``: every token sealed with the first key."""
    async with engine.begin() as conn:
        await conn.execute(sa.text("SELECT pg_advisory_xact_lock(:id)"), {"id": LOCK_ID})
        done = await conn.run_sync(lambda c: reseal(c, sealer))
    if done.sealed or done.deleted:
        await compact(engine)
    return done


class SchemaOutdated(AdapterError):
    """The database is behind this release: ``clarify-bot db upgrade`` brings it up."""

    def __init__(self, found: int) -> None:
        super().__init__(f"the installation database is at schema version {found}, this "
                         f"release needs {LATEST}: run `clarify-bot db upgrade`")
        self.found = found


def async_url(url: str) -> str:
    """A ``postgresql://`` URL as SQLAlchemy's asyncpg dialect takes it."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(scheme="postgresql+asyncpg"))


def where(url: str) -> str:
    """The database a URL names, without its credentials (for messages)."""
    parts = urlsplit(url)
    return f"{parts.hostname}:{parts.port or 5432}/{parts.path.strip('/')}"


def open_engine(url: str, *, pool_size: int = 5) -> AsyncEngine:
    """An engine on the database ``url`` names. The URL is handed to asyncpg whole, as a DSN,
    so the parameters of libpq's connection strings that managed PostgreSQL services print
    (``sslmode``, ``sslrootcert``, ``sslcert``, ``sslkey``…) mean what they mean to psql;
    ``connect_timeout`` (seconds) bounds the connect. (SQLAlchemy's dialect would pass each
    query parameter to asyncpg as a keyword it does not take: "(TypeError)".)"""
    dsn, timeout = _dsn(url)

    async def connect() -> Any:
        return await asyncpg.connect(dsn, timeout=timeout)

    # pre-ping: a connection the server closed (a restart, an idle timeout) is replaced, not
    # handed to a request
    return create_async_engine("postgresql+asyncpg://", async_creator=connect,
                               pool_size=pool_size, max_overflow=pool_size,
                               pool_pre_ping=True, pool_timeout=5)


def _dsn(url: str) -> tuple[str, float]:
    """The URL as asyncpg's DSN (scheme ``postgresql``), and its connect timeout: libpq's
    ``connect_timeout`` (asyncpg would send it to the server as a setting), else 60 s."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    timeout = 60.0
    kept = []
    for name, value in query:
        if name == "connect_timeout":
            with contextlib.suppress(ValueError):
                timeout = float(value) if float(value) > 0 else timeout
        else:
            kept.append((name, value))
    return urlunsplit(parts._replace(scheme="postgresql", query=urlencode(kept))), timeout


async def version(engine: AsyncEngine) -> int:
    """The schema version the database holds (0: none yet)."""
    return await schema_steps.version(engine, COMPONENT)


async def upgrade(engine: AsyncEngine, sealer: Sealer | None = None) -> list[Step]:
    """Apply the missing steps, in order, in one transaction; returns those applied. With
    ``sealer``, tokens still in plain text are sealed (and superseded rows deleted) in the same
    transaction; without it, TokensInPlainText when there are any (nothing is applied)."""
    changed = Resealed(0, 0)
    async with engine.begin() as conn:
        applied = await schema_steps.apply_missing(conn, COMPONENT, STEPS, lock_id=LOCK_ID)
        if sealer is not None:
            changed = await conn.run_sync(lambda c: reseal(c, _plain_only(sealer)))
        elif plain := await conn.run_sync(plain_rows):
            raise TokensInPlainText(plain)  # the transaction, the steps' too, is rolled back
    if changed.sealed or changed.deleted:
        await compact(engine)
    return applied


class _plain_only(Sealer):  # noqa: N801 (a view of a sealer)
    """A sealer that re-seals only plain text (``upgrade`` leaves key rotation to
    ``rotate-token-key``)."""

    def __init__(self, sealer: Sealer) -> None:
        self.__dict__.update(sealer.__dict__)

    def needs_sealing(self, value: str | None) -> bool:
        return value is not None and not is_sealed(value)


async def require_current(engine: AsyncEngine) -> None:
    """Start-up's check: SchemaOutdated unless the database is at this release's version."""
    found = await version(engine)
    if found != LATEST:
        raise SchemaOutdated(found)
