"""The installation store's schema in PostgreSQL, and its upgrades: ``clarify-bot db upgrade``.

slack_sdk's own tables (``slack_installations``, ``slack_bots``, ``slack_oauth_states``, built by
its SQLAlchemy stores' table builders, so they are exactly what those stores read and write) and
the bot's two: ``clarify_slack_installations``, one row per installation with the tenant its
install link bound it to, its state (active, paused, removed) and the row a token refresh locks;
``clarify_slack_install_states``, the tenant and link an OAuth state was issued for.

Schema changes are numbered steps recorded in ``clarify_schema_versions``; ``upgrade`` applies
the missing ones in one transaction under an advisory lock (two operators, or two release jobs,
never apply a step twice). The service never changes the schema: it checks the version when it
starts and refuses, naming the command, when an upgrade is due (docs/operations.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

import sqlalchemy as sa
from slack_sdk.oauth.installation_store.sqlalchemy import SQLAlchemyInstallationStore
from slack_sdk.oauth.state_store.sqlalchemy import SQLAlchemyOAuthStateStore
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from adapters.errors import AdapterError

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

versions = sa.Table(
    "clarify_schema_versions", sa.MetaData(),
    sa.Column("component", sa.String(32), primary_key=True),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("applied_at", sa.DateTime(timezone=True), nullable=False,
              server_default=sa.func.now()),
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


@dataclass(frozen=True)
class Step:
    version: int
    what: str
    apply: Callable[[sa.Connection], None]


STEPS = (
    Step(1, "slack_sdk's installation, bot and OAuth state tables", _slack_sdk_tables),
    Step(2, "installations bound to tenants, and the tenant of each OAuth state",
         _clarify_tables),
)
LATEST = STEPS[-1].version


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
    # pre-ping: a connection the server closed (a restart, an idle timeout) is replaced, not
    # handed to a request
    return create_async_engine(async_url(url), pool_size=pool_size, max_overflow=pool_size,
                               pool_pre_ping=True, pool_timeout=5)


async def version(engine: AsyncEngine) -> int:
    """The schema version the database holds (0: none yet)."""
    async with engine.connect() as conn:
        return await _version(conn)


async def _version(conn: AsyncConnection) -> int:
    exists = await conn.run_sync(lambda c: sa.inspect(c).has_table(versions.name))
    if not exists:
        return 0
    found = await conn.scalar(sa.select(versions.c.version)
                              .where(versions.c.component == COMPONENT))
    return int(found or 0)


async def upgrade(engine: AsyncEngine) -> list[Step]:
    """Apply the missing steps, in order, in one transaction; returns those applied."""
    async with engine.begin() as conn:
        await conn.execute(sa.text("SELECT pg_advisory_xact_lock(:id)"), {"id": LOCK_ID})
        await conn.run_sync(lambda c: versions.metadata.create_all(c))
        current = await _version(conn)
        applied = [step for step in STEPS if step.version > current]
        for step in applied:
            await conn.run_sync(step.apply)
        if applied:
            stmt = pg_insert(versions).values(
                component=COMPONENT, version=LATEST)
            await conn.execute(stmt.on_conflict_do_update(
                index_elements=[versions.c.component],
                set_={"version": LATEST, "applied_at": sa.func.now()}))
        return applied


async def require_current(engine: AsyncEngine) -> None:
    """Start-up's check: SchemaOutdated unless the database is at this release's version."""
    found = await version(engine)
    if found != LATEST:
        raise SchemaOutdated(found)
