"""One tenant per workspace, across install levels: the one place an install is bound.

A Slack workspace is served by its own (workspace-level) installation, else by the org-wide
installation of its Enterprise Grid org (``Installations.resolve``). Both levels bind to a
tenant, so a workspace could be claimed twice: by its org's install for tenant X and by its own
for tenant Y. ``decide`` refuses every install that would let one workspace (or one org) serve
two tenants, whatever the order:

- ``workspace_of_another_tenant``: the same installation key (the workspace, or the org for an
  org-wide install) is bound to another tenant;
- ``org_of_another_tenant``: a workspace-level install into a workspace whose org has an
  org-wide installation bound to another tenant;
- ``org_has_workspaces_of_another_tenant``: an org-wide install of an org where a workspace of
  it is installed at workspace level for another tenant;
- ``link_already_used``: the link installed another workspace or org already.

A binding is never moved silently: a removed installation keeps its tenant, so these hold after
an uninstall too (an operator unbinds with the CLI). Same-tenant installs at either level are
accepted (a reinstall, or the org-wide install of a tenant whose workspaces it already has).

``decide`` runs inside the transaction that saves the install, after ``lock``: one transaction-
scoped PostgreSQL advisory lock for every binding decision, so two web processes finishing
installs of one org at once are decided one after the other (the second sees the first's row),
never both accepted. Installs are rare; one lock keeps the rule easy to check.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from adapters.slack.links import InstallRefused
from adapters.slack.schema import installations

BINDING_LOCK = 0x5C1A_B1D0  # pg_advisory_xact_lock: every binding decision, one at a time
# the closed list of the reasons a binding refuses an install (audited, logged, counted)
REASONS = ("workspace_of_another_tenant", "org_of_another_tenant",
           "org_has_workspaces_of_another_tenant", "link_already_used")


async def lock(conn: AsyncConnection) -> None:
    """Serialise binding decisions across every process, until the transaction ends."""
    await conn.execute(sa.text("SELECT pg_advisory_xact_lock(:id)"), {"id": BINDING_LOCK})


async def decide(conn: AsyncConnection, *, key: str, enterprise_id: str | None,
                 org_wide: bool, tenant: str, link_id: str) -> bool:
    """Whether the install of ``key`` for ``tenant`` by link ``link_id`` may be kept: True when
    ``key`` was installed before (a reinstall), False for a first install; InstallRefused
    (one of ``REASONS``) when it would give a workspace or org a second tenant. Call under
    ``lock``, in the transaction that then saves it."""
    c = installations.c
    held = (await conn.execute(sa.select(c.tenant).where(c.key == key)
                               .with_for_update())).first()
    if held is not None and held[0] != tenant:
        raise InstallRefused("workspace_of_another_tenant")
    if enterprise_id:
        if org_wide:  # any workspace of the org installed on its own for another tenant
            clash = await conn.scalar(sa.select(c.key).where(
                c.enterprise_id == enterprise_id, c.key != key, c.tenant != tenant).limit(1))
            if clash is not None:
                raise InstallRefused("org_has_workspaces_of_another_tenant")
        else:  # the org's org-wide install, bound to another tenant
            clash = await conn.scalar(sa.select(c.key).where(
                c.key == enterprise_id, c.is_enterprise_install.is_(True),
                c.tenant != tenant).limit(1))
            if clash is not None:
                raise InstallRefused("org_of_another_tenant")
    other = await conn.scalar(sa.select(c.key).where(c.link_id == link_id, c.key != key)
                              .limit(1))
    if other is not None:
        raise InstallRefused("link_already_used")
    return held is not None
