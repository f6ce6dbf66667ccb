"""Numbered schema steps in PostgreSQL, one component at a time (the Slack installation
store's, the reach record's): each component's version is a row of ``clarify_schema_versions``,
and an upgrade applies the steps past it in order, in the caller's transaction, then records the
newest. Nothing here runs unless an operator runs ``clarify-bot db upgrade``: the service never
changes the schema."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

versions = sa.Table(
    "clarify_schema_versions", sa.MetaData(),
    sa.Column("component", sa.String(32), primary_key=True),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("applied_at", sa.DateTime(timezone=True), nullable=False,
              server_default=sa.func.now()),
)


@dataclass(frozen=True)
class Step:
    version: int
    what: str
    apply: Callable[[sa.Connection], None]


async def version(engine: AsyncEngine, component: str) -> int:
    """The component's schema version in the database (0: none yet)."""
    async with engine.connect() as conn:
        return await version_in(conn, component)


async def version_in(conn: AsyncConnection, component: str) -> int:
    exists = await conn.run_sync(lambda c: sa.inspect(c).has_table(versions.name))
    if not exists:
        return 0
    found = await conn.scalar(sa.select(versions.c.version)
                              .where(versions.c.component == component))
    return int(found or 0)


async def apply_missing(conn: AsyncConnection, component: str, steps: Sequence[Step], *,
                        lock_id: int) -> list[Step]:
    """In the caller's transaction: one upgrade of the component at a time (an advisory lock),
    the steps past its version applied in order, and its version set to the newest step's;
    returns the steps applied (none: already at the newest)."""
    await conn.execute(sa.text("SELECT pg_advisory_xact_lock(:id)"), {"id": lock_id})
    await conn.run_sync(lambda c: versions.metadata.create_all(c))
    current = await version_in(conn, component)
    applied = [step for step in steps if step.version > current]
    for step in applied:
        await conn.run_sync(step.apply)
    if applied:
        latest = steps[-1].version
        stmt = pg_insert(versions).values(component=component, version=latest)
        await conn.execute(stmt.on_conflict_do_update(
            index_elements=[versions.c.component],
            set_={"version": latest, "applied_at": sa.func.now()}))
    return applied
