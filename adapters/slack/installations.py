"""Slack installations in PostgreSQL: slack_sdk's stores, the tenant of each, and its state.

Tokens live in slack_sdk's own ``AsyncSQLAlchemyInstallationStore`` (tables ``slack_installations``
and ``slack_bots``) and OAuth states in its ``AsyncSQLAlchemyOAuthStateStore``; the bot adds one
row per installation (``clarify_slack_installations``, ``adapters.slack.schema``): the tenant its
install link bound it to, its state (``active``; ``paused``, Slack refuses its token; ``removed``,
uninstalled or its tokens revoked), when its token expires, and the row a token refresh locks.

Why a relational database and not the Redis the rest of the bot's state lives in: installations
are the only state here that is not rebuilt by the core or by time. A token lost is a workspace
an operator must reinstall by hand; Redis, as the bot runs it, is tuned for speed (TTLs on every
key, eviction policies, AOF optional, Cluster resharding) and its outbox tolerates a failover's
last milliseconds, installations should not. PostgreSQL gives transactions for "bind this
workspace to this tenant unless another tenant holds it", a row lock for "refresh this token
once across every replica", backups and point-in-time recovery operators already run, and it is
what slack_sdk's SQLAlchemy stores are written for.

Nothing here logs or raises a token, a refresh token, a client secret or an OAuth code: the
stores get a silent logger (slack_sdk's would quote a state or a code in its warnings), and
every error names only what failed.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from slack_sdk.oauth.installation_store import Bot, Installation
from slack_sdk.oauth.installation_store.sqlalchemy import AsyncSQLAlchemyInstallationStore
from slack_sdk.oauth.state_store.sqlalchemy import AsyncSQLAlchemyOAuthStateStore
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from adapters.errors import AdapterError
from adapters.slack import binding
from adapters.slack.schema import install_states, installations
from adapters.slack.sealing import TOKEN_COLUMNS, Sealer, is_sealed

ACTIVE, PAUSED, REMOVED = "active", "paused", "removed"
STATES = (ACTIVE, PAUSED, REMOVED)
# slack_sdk's stores log states, codes and rows in their warnings: they get this one
QUIET = logging.getLogger("clarify.slack.sdk_store")
QUIET.addHandler(logging.NullHandler())
QUIET.propagate = False
QUIET.setLevel(logging.CRITICAL + 1)


def installation_key(*, enterprise_id: str | None, team_id: str | None,
                     is_enterprise_install: bool) -> str:
    """One installation's key: the org for an org-wide install, else the workspace."""
    key = enterprise_id if is_enterprise_install or team_id is None else team_id
    if not key:
        raise ValueError("an installation names a workspace or an org")
    return key


@dataclass(frozen=True, slots=True)
class Installed:
    """One installation as operators see it: never a token."""

    key: str
    enterprise_id: str | None
    team_id: str | None
    is_enterprise_install: bool
    enterprise_name: str | None
    team_name: str | None
    tenant: str
    link_id: str
    state: str
    reason: str | None
    installed_at: datetime
    changed_at: datetime
    token_expires_at: datetime | None
    refreshed_at: datetime | None
    refresh_failures: int

    @property
    def scope(self) -> str:
        """Its deliveries' pause scope (``bot.process.pauses``)."""
        return f"slack:{self.key}"

    def public(self) -> dict[str, object]:
        """What ``clarify-bot slack installations`` lists."""
        def when(t: datetime | None) -> str | None:
            return None if t is None else t.astimezone(UTC).isoformat()

        return {"key": self.key, "team_id": self.team_id, "team_name": self.team_name,
                "enterprise_id": self.enterprise_id, "enterprise_name": self.enterprise_name,
                "org_wide": self.is_enterprise_install, "tenant": self.tenant,
                "state": self.state, "reason": self.reason,
                "installed_at": when(self.installed_at), "changed_at": when(self.changed_at),
                "token_expires_at": when(self.token_expires_at),
                "refreshed_at": when(self.refreshed_at),
                "refresh_failures": self.refresh_failures}


def _row(row: sa.RowMapping) -> Installed:
    return Installed(**{c.name: row[c.name] for c in installations.columns})


def _aware(t: datetime | None) -> datetime | None:
    return None if t is None or t.tzinfo is not None else t.replace(tzinfo=UTC)


def expires_at(installation: Installation) -> datetime | None:
    stamp = installation.bot_token_expires_at
    return None if stamp is None else datetime.fromtimestamp(stamp, UTC)


class TokenKeyMissing(AdapterError):
    """A token read or written without ``CLARIFY_BOT_SLACK_TOKEN_KEY``."""

    def __init__(self) -> None:
        super().__init__("installations' tokens are sealed at rest: set "
                         "CLARIFY_BOT_SLACK_TOKEN_KEY (docs/slack.md)")


class SealedInstallationStore(AsyncSQLAlchemyInstallationStore):
    """slack_sdk's store with every token sealed as it is written and opened as it is read
    (``adapters.slack.sealing``), and the rows a save supersedes deleted: the tokens of an
    earlier install or of before a refresh do not stay in the database."""

    def __init__(self, *, sealer: Sealer | None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.sealer = sealer

    def _need(self) -> Sealer:
        if self.sealer is None:
            raise TokenKeyMissing()
        return self.sealer

    async def async_save(self, installation: Installation) -> None:
        sealer = self._need()
        sealed = Installation(**installation.to_dict_for_copying())
        for column in TOKEN_COLUMNS["slack_installations"]:
            setattr(sealed, column, sealer.seal(getattr(installation, column), column=column))
        await super().async_save(sealed)
        await self.delete_superseded(enterprise_id=installation.enterprise_id,
                                     team_id=installation.team_id)

    async def async_save_bot(self, bot: Bot) -> None:
        sealer = self._need()
        if any(sealer.needs_sealing(getattr(bot, c)) for c in TOKEN_COLUMNS["slack_bots"]):
            sealed = Bot(**bot.to_dict_for_copying())
            for column in TOKEN_COLUMNS["slack_bots"]:
                setattr(sealed, column, sealer.seal(getattr(bot, column), column=column))
            bot = sealed
        await super().async_save_bot(bot)

    async def delete_superseded(self, *, enterprise_id: str | None, team_id: str | None) -> int:
        """Delete every row of the installation but its newest, in both tables; how many."""
        deleted = 0
        async with self.engine.begin() as conn:
            for table in (self.installations, self.bots):
                deleted += (await conn.execute(superseded(table, self.client_id, enterprise_id,
                                                          team_id))).rowcount or 0
        return deleted

    async def async_find_installation(self, *, enterprise_id: str | None, team_id: str | None,
                                      user_id: str | None = None,
                                      is_enterprise_install: bool | None = False
                                      ) -> Installation | None:
        found = await super().async_find_installation(
            enterprise_id=enterprise_id, team_id=team_id, user_id=user_id,
            is_enterprise_install=is_enterprise_install)
        if found is None:
            return None
        sealer = self._need()
        for column in TOKEN_COLUMNS["slack_installations"]:
            setattr(found, column, sealer.open(getattr(found, column), column=column))
        return found

    async def async_find_bot(self, *, enterprise_id: str | None, team_id: str | None,
                             is_enterprise_install: bool | None = False) -> Bot | None:
        found = await super().async_find_bot(enterprise_id=enterprise_id, team_id=team_id,
                                             is_enterprise_install=is_enterprise_install)
        if found is None:
            return None
        sealer = self._need()
        for column in TOKEN_COLUMNS["slack_bots"]:
            setattr(found, column, sealer.open(getattr(found, column), column=column))
        return found


def superseded(table: sa.Table, client_id: str, enterprise_id: str | None,
               team_id: str | None) -> sa.Delete:
    """The rows of one installation (client, org, workspace) but its newest."""
    c = table.c
    same = sa.and_(c.client_id == client_id, c.enterprise_id.is_not_distinct_from(enterprise_id),
                   c.team_id.is_not_distinct_from(team_id))
    newest = sa.select(c.id).where(same).order_by(c.installed_at.desc(), c.id.desc()).limit(1)
    return table.delete().where(same, c.id != newest.scalar_subquery())


class _Within:
    """An engine as slack_sdk's store uses one (``begin``, ``connect``), over a connection
    already in a transaction: each ``begin`` a savepoint of it, so the store's writes commit
    (or roll back) with the caller's."""

    def __init__(self, conn: AsyncConnection) -> None:
        self.conn = conn

    @contextlib.asynccontextmanager
    async def begin(self) -> AsyncIterator[AsyncConnection]:
        async with self.conn.begin_nested():
            yield self.conn

    @contextlib.asynccontextmanager
    async def connect(self) -> AsyncIterator[AsyncConnection]:
        yield self.conn


@dataclass
class InstallationDB:
    """The database side: every read and write of installations, states and tenants."""

    engine: AsyncEngine
    client_id: str
    # seals the tokens (``adapters.slack.sealing``); None where no token is read or written
    # (``clarify-bot slack installations``): a token then raises TokenKeyMissing
    sealer: Sealer | None = None
    state_seconds: int = 600  # how long an OAuth state is accepted (Bolt's default)

    def __post_init__(self) -> None:
        self.sdk = SealedInstallationStore(sealer=self.sealer, client_id=self.client_id,
                                           engine=self.engine, logger=QUIET)
        self.states = AsyncSQLAlchemyOAuthStateStore(expiration_seconds=self.state_seconds,
                                                     engine=self.engine, logger=QUIET)

    # ------------------------------------------------------------ reads

    async def check_tokens(self) -> tuple[int, int]:
        """Every stored token opens with the configured keys (start-up's check, so a wrong key
        stops the service with TokenKeyError, naming key ids only); how many tokens, and how
        many of them are still in plain text."""
        sealer = self.sdk._need()
        opened = plain = 0
        async with self.engine.connect() as conn:
            for table, columns in TOKEN_COLUMNS.items():
                for row in await conn.execute(sa.text(f"SELECT {', '.join(columns)} FROM {table}")):
                    for column, value in zip(columns, row, strict=True):
                        if value is not None:
                            sealer.open(value, column=column)
                            opened += 1
                            plain += not is_sealed(value)
        return opened, plain

    async def all(self) -> list[Installed]:
        async with self.engine.connect() as conn:
            rows = (await conn.execute(sa.select(installations)
                                       .order_by(installations.c.installed_at))).mappings()
            return [_row(r) for r in rows]

    async def get(self, key: str) -> Installed | None:
        async with self.engine.connect() as conn:
            row = (await conn.execute(sa.select(installations)
                                      .where(installations.c.key == key))).mappings().first()
            return None if row is None else _row(row)

    async def serving(self, *, team_id: str | None, enterprise_id: str | None
                      ) -> list[Installed]:
        """The installations that could serve a workspace (its own, its org's, and the org's
        other workspaces'), as the database holds them now: a look-up by key."""
        c = installations.c
        keys = [k for k in (team_id, enterprise_id) if k]
        if not keys:
            return []
        where = c.key.in_(keys) if not enterprise_id \
            else sa.or_(c.key.in_(keys), c.enterprise_id == enterprise_id)
        async with self.engine.connect() as conn:
            rows = (await conn.execute(sa.select(installations).where(where))).mappings()
            return [_row(r) for r in rows]

    async def find(self, installed: Installed) -> Installation | None:
        """slack_sdk's record of it (with its token), or None when it was removed."""
        return await self.sdk.async_find_installation(
            enterprise_id=installed.enterprise_id, team_id=installed.team_id,
            is_enterprise_install=installed.is_enterprise_install)

    # ------------------------------------------------------------ install

    async def bind_state(self, state: str, *, tenant: str, link_id: str, now: datetime,
                         expire_at: datetime) -> None:
        async with self.engine.begin() as conn:
            await conn.execute(install_states.insert().values(
                state=state, tenant=tenant, link_id=link_id, expire_at=expire_at))
            # states of links nobody finished are forgotten once expired
            await conn.execute(install_states.delete().where(
                install_states.c.expire_at < now))

    async def take_binding(self, state: str) -> tuple[str, str] | None:
        """The (tenant, link id) a state was issued for, forgotten as it is read."""
        async with self.engine.begin() as conn:
            row = (await conn.execute(install_states.delete()
                                      .where(install_states.c.state == state)
                                      .returning(install_states.c.tenant,
                                                 install_states.c.link_id))).first()
            return None if row is None else (row[0], row[1])

    async def save(self, installation: Installation, *, tenant: str, link_id: str,
                   now: datetime) -> bool:
        """Keep an install bound to ``tenant``; True when it was installed before (a
        reinstall). InstallRefused when it would give a workspace or org a second tenant, or the
        link already installed another one (``adapters.slack.binding``)."""
        key = installation_key(enterprise_id=installation.enterprise_id,
                               team_id=installation.team_id,
                               is_enterprise_install=bool(installation.is_enterprise_install))
        org_wide = bool(installation.is_enterprise_install)
        c = installations.c
        async with self.engine.begin() as conn:
            # one tenant per workspace across install levels, decided under one lock
            # (adapters.slack.binding); committed before the redirect's page says "installed"
            await binding.lock(conn)
            again = await binding.decide(conn, key=key, enterprise_id=installation.enterprise_id,
                                         org_wide=org_wide, tenant=tenant, link_id=link_id)
            # the tokens in this same transaction: a process that stops before the binding is
            # committed leaves neither, never a token at rest that no installation lists
            within = SealedInstallationStore(sealer=self.sealer, client_id=self.client_id,
                                             engine=_Within(conn), logger=QUIET)
            await within.async_save(installation)
            values = {
                "enterprise_id": installation.enterprise_id, "team_id": installation.team_id,
                "is_enterprise_install": org_wide,
                "enterprise_name": installation.enterprise_name,
                "team_name": installation.team_name, "tenant": tenant, "link_id": link_id,
                "state": ACTIVE, "reason": None, "changed_at": now,
                "token_expires_at": expires_at(installation), "refreshed_at": None,
                "refresh_failures": 0}
            stmt = pg_insert(installations).values(key=key, installed_at=now, **values)
            await conn.execute(stmt.on_conflict_do_update(index_elements=[c.key], set_=values))
            return again

    # ------------------------------------------------------------ state

    async def set_state(self, key: str, state: str, *, reason: str | None, now: datetime,
                        only_from: tuple[str, ...] = STATES) -> bool:
        """Move an installation to ``state`` (from one of ``only_from``); True if it moved."""
        async with self.engine.begin() as conn:
            moved = await conn.execute(
                installations.update()
                .where(installations.c.key == key, installations.c.state.in_(only_from),
                       sa.or_(installations.c.state != state,
                              installations.c.reason.is_distinct_from(reason)))
                .values(state=state, reason=reason, changed_at=now))
            return bool(moved.rowcount)

    async def remove(self, *, enterprise_id: str | None, team_id: str | None,
                     is_enterprise_install: bool, reason: str, now: datetime) -> Installed | None:
        """Forget its tokens (slack_sdk's rows) and mark it removed; the tenant binding stays,
        so its people are skipped with a reason and a reinstall needs the same tenant."""
        key = installation_key(enterprise_id=enterprise_id, team_id=team_id,
                               is_enterprise_install=is_enterprise_install)
        held = await self.get(key)
        if held is None:
            return None
        await self.sdk.async_delete_installation(enterprise_id=held.enterprise_id,
                                                 team_id=held.team_id)
        await self.sdk.async_delete_bot(enterprise_id=held.enterprise_id, team_id=held.team_id)
        await self.set_state(key, REMOVED, reason=reason, now=now)
        return await self.get(key)

    # ------------------------------------------------------------ rotation

    async def refreshing(self, installed: Installed, *,
                         due: Callable[[Installation], bool],
                         rotate: Callable[[Installation], Awaitable[Installation]],
                         now: datetime) -> Installation | None:
        """Refresh the installation's token if ``due``, once across every replica: its row is
        locked (``FOR UPDATE``) while Slack is asked, and whoever waited for the lock reads the
        token the first one saved. Returns the installation as it is after that."""
        c = installations.c
        async with self.engine.begin() as conn:
            await conn.execute(sa.text("SET LOCAL lock_timeout = '15s'"))
            locked = await conn.scalar(sa.select(c.state).where(c.key == installed.key)
                                       .with_for_update())
            if locked is None or locked == REMOVED:
                return None
            current = await self.find(installed)  # what the last holder of the lock saved
            if current is None or not due(current):
                return current
            rotated = await rotate(current)  # a failure rolls back and releases the lock
            await self.sdk.async_save(rotated)
            await conn.execute(installations.update().where(c.key == installed.key).values(
                token_expires_at=expires_at(rotated), refreshed_at=now, refresh_failures=0))
            return rotated

    async def refresh_failed(self, key: str) -> None:
        async with self.engine.begin() as conn:
            c = installations.c
            await conn.execute(installations.update().where(c.key == key)
                               .values(refresh_failures=c.refresh_failures + 1))


def stripped(installation: Installation) -> Installation:
    """The installation as Bolt's authorize is given it: the current token, no refresh token
    and no expiry, so Bolt never rotates it itself (``adapters.slack.tokens`` does, once
    across replicas, on the bot's clock)."""
    copy = Installation(**installation.to_dict_for_copying())
    copy.bot_refresh_token = None
    copy.bot_token_expires_at = None
    copy.user_refresh_token = None
    copy.user_token_expires_at = None
    return copy


def redated(installation: Installation, *, now: datetime) -> Installation:
    """slack_sdk dates a new token's expiry (``expires_in``) by the wall clock: re-dated on the
    bot's clock (a no-op on the system clock), so tests move expiry with their clock."""
    if installation.bot_token_expires_at is None:
        return installation
    left = installation.bot_token_expires_at - int(time.time())
    copy = Installation(**installation.to_dict_for_copying())
    copy.bot_token_expires_at = int(now.timestamp()) + left
    copy.installed_at = now.timestamp()
    return copy

