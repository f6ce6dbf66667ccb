"""The reach record in PostgreSQL (``CLARIFY_BOT_DATABASE_URL``): one table, its schema steps
(``STEPS``) recorded under the component ``reach`` in ``clarify_schema_versions`` and applied by
``clarify-bot db upgrade`` (``upgrade``), as the installation store's are.

1. the table ``clarify_reach_entries``;
2. its columns ``zone`` (the zone a person was asked in) and ``cause_group`` (a skip's
   structured cause), and the index by question (``clarification_id``: ``first_asked``).
   Both columns are nullable: the rows a version 1 table holds keep NULL there (the report then
   takes the tenant's default zone, and the cause from the words).

Every replica and ``clarify-bot report`` read the same rows; an entry is inserted once (its
``entry_id`` is the primary key, so a replayed event is kept once).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import distinct_on
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncEngine

from bot import schema_steps
from bot.reach.log import ASKING, CAUSE_LIMIT, GROUP_LIMIT, ZONE_LIMIT, Kind, ReachEntry
from bot.schema_steps import Step

COMPONENT = "reach"
LOCK_ID = 0x5C1A_0A18  # pg_advisory_xact_lock: one upgrade of this component at a time
METADATA = sa.MetaData()

entries = sa.Table(
    "clarify_reach_entries", METADATA,
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
    sa.Column("cause", sa.String(CAUSE_LIMIT)),
    sa.Column("zone", sa.String(ZONE_LIMIT)),  # step 2
    sa.Column("cause_group", sa.String(GROUP_LIMIT)),  # step 2
    sa.Index("clarify_reach_entries_tenant_at", "tenant", "at"),
    sa.Index("clarify_reach_entries_person", "person_id"),
    sa.Index("clarify_reach_entries_question", "clarification_id"),  # step 2
)

def _table(conn: sa.Connection) -> None:
    """The table (on a fresh database: as this release declares it, step 2's parts included,
    which step 2 then finds in place)."""
    METADATA.create_all(conn)


def _zone_and_cause_group(conn: sa.Connection) -> None:
    """Two nullable columns and an index on a table that may hold rows (metadata only in
    PostgreSQL: the rows are not rewritten)."""
    conn.execute(sa.text(f"ALTER TABLE {entries.name} "
                         f"ADD COLUMN IF NOT EXISTS zone varchar({ZONE_LIMIT}), "
                         f"ADD COLUMN IF NOT EXISTS cause_group varchar({GROUP_LIMIT})"))
    conn.execute(sa.text("CREATE INDEX IF NOT EXISTS clarify_reach_entries_question "
                         f"ON {entries.name} (clarification_id)"))


STEPS = (
    Step(1, "the reach record's table", _table),
    Step(2, "the zone each person was asked in, each skip's cause group, and an index by "
            "question", _zone_and_cause_group),
)
LATEST = STEPS[-1].version


async def version(engine: AsyncEngine) -> int:
    """The reach record's schema version in the database (0: none yet)."""
    return await schema_steps.version(engine, COMPONENT)


async def upgrade(engine: AsyncEngine) -> list[Step]:
    """Apply the missing steps, in order, in one transaction; returns those applied (none: the
    database is at ``LATEST`` already)."""
    async with engine.begin() as conn:
        return await schema_steps.apply_missing(conn, COMPONENT, STEPS, lock_id=LOCK_ID)


class PostgresReachLog:
    """``ReachLog`` over an SQLAlchemy engine (asyncpg); ``owns``: disposed on ``aclose``."""

    def __init__(self, engine: AsyncEngine, *, owns: bool = True) -> None:
        self._engine = engine
        self._owns = owns

    async def add(self, items: Sequence[ReachEntry]) -> int:
        if not items:
            return 0
        rows = [{"entry_id": e.entry_id, "at": e.at, "tenant": e.tenant,
                 "workspace": e.workspace, "platform": e.platform, "person_id": e.person_id,
                 "clarification_id": e.clarification_id, "kind": e.kind.value,
                 "severity": e.severity, "reason_code": e.reason_code,
                 "cause": e.cause[:CAUSE_LIMIT] if e.cause else None,
                 "zone": e.zone if e.zone and len(e.zone) <= ZONE_LIMIT else None,
                 "cause_group": e.cause_group[:GROUP_LIMIT] if e.cause_group else None}
                for e in items]
        stmt = pg_insert(entries).values(rows).on_conflict_do_nothing(
            index_elements=[entries.c.entry_id])
        async with self._engine.begin() as conn:
            result = await conn.execute(stmt)
        return max(int(result.rowcount or 0), 0)

    async def read(self, *, tenant: str | None = None, since: datetime | None = None,
                   kinds: Collection[Kind] | None = None) -> list[ReachEntry]:
        query = sa.select(entries).order_by(entries.c.at, entries.c.entry_id)
        if tenant is not None:
            query = query.where(entries.c.tenant == tenant)
        if since is not None:
            query = query.where(entries.c.at >= since)
        if kinds is not None:
            query = query.where(entries.c.kind.in_(sorted(k.value for k in kinds)))
        async with self._engine.connect() as conn:
            rows = (await conn.execute(query)).mappings().all()
        return [ReachEntry(entry_id=r["entry_id"], at=r["at"], tenant=r["tenant"],
                           workspace=r["workspace"], platform=r["platform"],
                           person_id=r["person_id"], clarification_id=r["clarification_id"],
                           kind=Kind(r["kind"]), severity=r["severity"],
                           reason_code=r["reason_code"], cause=r["cause"], zone=r["zone"],
                           cause_group=r["cause_group"]) for r in rows]

    async def first_asked(self, clarification_id: str) -> datetime | None:
        # by the index on clarification_id (schema step 2): a question's few rows
        query = (sa.select(sa.func.min(entries.c.at))
                 .where(entries.c.clarification_id == clarification_id)
                 .where(entries.c.kind.in_([k.value for k in ASKING])))
        async with self._engine.connect() as conn:
            found: datetime | None = await conn.scalar(query)
        return found

    async def workspaces(self, *, since: datetime) -> dict[tuple[str, str], str]:
        query = (sa.select(entries.c.tenant, entries.c.workspace, entries.c.clarification_id)
                 .where(entries.c.at >= since)
                 .ext(distinct_on(entries.c.tenant, entries.c.workspace))
                 .order_by(entries.c.tenant, entries.c.workspace, entries.c.at.desc()))
        async with self._engine.connect() as conn:
            rows = (await conn.execute(query)).all()
        return {(r[0], r[1]): r[2] for r in rows}

    async def erase_person(self, names: Iterable[str]) -> int:
        wanted = sorted(set(names))
        if not wanted:
            return 0
        async with self._engine.begin() as conn:
            gone = await conn.execute(sa.delete(entries)
                                      .where(entries.c.person_id.in_(wanted)))
            for name in wanted:
                await conn.execute(sa.update(entries)
                                   .where(entries.c.cause.contains(name, autoescape=True))
                                   .values(cause=None))
        return max(int(gone.rowcount or 0), 0)

    async def expire(self, before: datetime) -> int:
        async with self._engine.begin() as conn:
            gone = await conn.execute(sa.delete(entries).where(entries.c.at < before))
        return max(int(gone.rowcount or 0), 0)

    async def missing(self) -> str | None:
        found = await version(self._engine)
        if found >= LATEST:
            return None
        if found == 0:
            return (f"the reach record's table is missing (reach schema 0, this release "
                    f"needs {LATEST}): run `clarify-bot db upgrade`")
        steps = "; ".join(f"{s.version}: {s.what}" for s in STEPS if s.version > found)
        return (f"the reach record's table lacks schema step {steps} (reach schema {found}, "
                f"this release needs {LATEST}): run `clarify-bot db upgrade`")

    async def aclose(self) -> None:
        if self._owns:
            await self._engine.dispose()
