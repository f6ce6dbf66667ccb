"""What an operator changes in the installations: ``clarify-bot slack installations remove`` and
``… rebind`` (docs/slack.md, "Fixing an installation").

- ``remove``: the installation's token revoked at Slack (``auth.revoke``, best effort: Slack's
  answer is reported), its tokens deleted (slack_sdk's rows, every earlier one too), its row
  and so its tenant binding deleted: the workspace is as if never installed, and a link of any
  tenant installs it again.
- ``rebind``: the installation moved to another tenant in one transaction, under the one
  advisory lock every install's binding decision takes (``adapters.slack.binding.lock``, as
  ``InstallationDB.save`` does): an install of the org being decided at that moment is saved
  first and then moved with it, never left bound to the old tenant under the new one's org.
  An org-wide install moves with the workspace installs of its org (one tenant per org: a
  workspace of the org never serves another tenant than its org's); a workspace install under
  an org-wide install of another tenant is refused, naming the org to rebind instead.

The service processes see either within ``slack.oauth.directory_seconds``. Nothing here logs or
returns a token.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

import aiohttp
import sqlalchemy as sa
from slack_sdk.errors import SlackApiError
from sqlalchemy.ext.asyncio import AsyncEngine

from adapters.errors import AdapterError
from adapters.slack import binding
from adapters.slack.installations import REMOVED, InstallationDB, Installed
from adapters.slack.schema import installations
from adapters.slack.sealing import Sealer
from adapters.slack.web import web_client
from bot.settings.fields import _TENANT

TENANT = re.compile(_TENANT)
REVOKE_SECONDS = 10


class RebindRefused(AdapterError):
    """A rebind that would make one org serve two tenants."""


@dataclass(frozen=True, slots=True)
class Removed:
    key: str
    tenant: str
    # "revoked" (Slack revoked it), "no token" (none was kept), "already invalid" (Slack no
    # longer accepted it), or what kept Slack from answering (its error, or the network's)
    revoked: str


async def find(engine: AsyncEngine, key: str) -> Installed | None:
    return await InstallationDB(engine=engine, client_id="").get(key)


async def remove(engine: AsyncEngine, key: str, *, client_id: str, api_url: str,
                 sealer: Sealer, now: datetime | None = None) -> Removed | None:
    """Revoke, forget and unbind the installation ``key``; None when there is none (its token
    opened with ``sealer``, the keys the tokens rest sealed with)."""
    db = InstallationDB(engine=engine, client_id=client_id, sealer=sealer)
    held = await db.get(key)
    if held is None:
        return None
    revoked = "no token"
    installation = await db.find(held) if held.state != REMOVED else None
    token = None if installation is None else installation.bot_token
    if token:
        revoked = await _revoke(token, api_url)
    await db.remove(enterprise_id=held.enterprise_id, team_id=held.team_id,
                    is_enterprise_install=held.is_enterprise_install, reason="operator_removed",
                    now=now or datetime.now(UTC))
    async with engine.begin() as conn:
        await binding.lock(conn)  # after any install being decided (adapters.slack.binding)
        await conn.execute(installations.delete().where(installations.c.key == key))
    return Removed(key=key, tenant=held.tenant, revoked=revoked)


async def _revoke(token: str, api_url: str) -> str:
    async with aiohttp.ClientSession() as session:
        client = web_client(token=token, base_url=api_url, session=session,
                            timeout=REVOKE_SECONDS)
        try:
            await client.auth_revoke()
        except SlackApiError as exc:
            data = exc.response.data
            error = str(data.get("error", "unknown")) if isinstance(data, dict) else \
                f"HTTP {exc.response.status_code}"
            return "already invalid" if error in ("invalid_auth", "token_revoked",
                                                  "account_inactive", "token_expired") else error
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            return type(exc).__name__
    return "revoked"


async def rebind(engine: AsyncEngine, key: str, *, tenant: str,
                 now: datetime | None = None) -> Installed | None:
    """Move ``key`` (and, for an org-wide install, its org's workspace installs) to ``tenant``;
    the installation as it was before, or None when there is none. RebindRefused when a
    workspace's org is served by another tenant's org-wide install."""
    c = installations.c
    at = now or datetime.now(UTC)
    async with engine.begin() as conn:
        await binding.lock(conn)  # the one lock every binding decision takes
        row = (await conn.execute(sa.select(installations).where(c.key == key)
                                  .with_for_update())).mappings().first()
        if row is None:
            return None
        before = Installed(**{col.name: row[col.name] for col in installations.columns})
        moved = [key]
        if before.is_enterprise_install:
            members = (await conn.execute(sa.select(c.key).where(
                c.enterprise_id == before.enterprise_id, c.is_enterprise_install.is_(False))
                .with_for_update())).scalars().all()
            moved += list(members)
        elif before.enterprise_id is not None:
            org = (await conn.execute(sa.select(c.tenant, c.state).where(
                c.key == before.enterprise_id, c.is_enterprise_install.is_(True))
                .with_for_update())).first()
            if org is not None and org[1] != REMOVED and org[0] != tenant:
                raise RebindRefused(
                    f"{key} is a workspace of org {before.enterprise_id}, whose org-wide "
                    f"installation serves tenant {org[0]}: a workspace serves its org's "
                    f"tenant. Rebind {before.enterprise_id} (its workspaces move with it), or "
                    f"remove it first")
        await conn.execute(installations.update().where(c.key.in_(moved))
                           .values(tenant=tenant, changed_at=at))
        return before
