"""One tenant per workspace across install levels (``adapters.slack.binding``) on a real
PostgreSQL; a stale view of the installations confirmed against the database
(``Installations.confirm``) without ever letting one tenant's workspace serve another; a token
gone for good removing its installation with the cause; the kinds of unserved callbacks."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import aiohttp
import pytest
import sqlalchemy as sa
from slack_sdk.oauth.installation_store import Installation

from adapters.slack import binding, operators, schema, unserved
from adapters.slack.binding import REASONS
from adapters.slack.installations import InstallationDB, SealedInstallationStore
from adapters.slack.links import InstallRefused
from adapters.slack.oauth import REFUSED_TEXT
from adapters.slack.sealing import Sealer
from adapters.slack.tokens import REVOKED_ERRORS, Installations
from bot.channel import NotReachable, SlackReach
from bot.clock import ManualClock
from bot.metrics import REGISTRY
from tests.slack.distributed import (
    TOKEN_KEY,
    database_url,  # noqa: F401 (a fixture)
)
from tests.slack.test_installation_store import NOW, installation

pytestmark = pytest.mark.full_contract  # no core involved


def org_wide(org: str, *, token: str = "xoxb-org") -> Installation:
    found = installation(team=None, org=org, token=token)  # type: ignore[arg-type]
    found.is_enterprise_install = True
    return found


@pytest.fixture
async def db(database_url: str) -> AsyncIterator[InstallationDB]:  # noqa: F811
    engine = schema.open_engine(database_url)
    yield InstallationDB(engine=engine, client_id="1111.2222",
                         sealer=Sealer.from_setting(TOKEN_KEY))
    await engine.dispose()


@pytest.fixture
async def installations(db: InstallationDB) -> AsyncIterator[Installations]:
    async with aiohttp.ClientSession() as session:
        found = Installations(db=db, clock=ManualClock(NOW), client_id="1111.2222",
                              client_secret="secret", api_url="http://127.0.0.1:9/api/",
                              session=session, directory_seconds=3600)
        await found.load()
        yield found


async def refused(db: InstallationDB, made: Installation, tenant: str, link: str) -> str:
    with pytest.raises(InstallRefused) as caught:
        await db.save(made, tenant=tenant, link_id=link, now=NOW)
    return caught.value.reason


async def test_a_workspace_install_under_another_tenants_org_wide_install_is_refused(
        db: InstallationDB) -> None:
    assert await db.save(org_wide("E0ACME"), tenant="acme", link_id="L1", now=NOW) is False
    reason = await refused(db, installation("T0ACME", org="E0ACME"), "globex", "L2")
    assert reason == "org_of_another_tenant"
    # the same tenant at workspace level is kept; a workspace outside the org is another's
    assert await db.save(installation("T0ACME", org="E0ACME"), tenant="acme", link_id="L3",
                         now=NOW) is False
    assert await db.save(installation("T0GLOBEX"), tenant="globex", link_id="L4",
                         now=NOW) is False
    assert {(i.key, i.tenant) for i in await db.all()} == {
        ("E0ACME", "acme"), ("T0ACME", "acme"), ("T0GLOBEX", "globex")}


async def test_an_org_wide_install_over_a_workspace_of_another_tenant_is_refused(
        db: InstallationDB) -> None:
    await db.save(installation("T0INI", org="E0INI"), tenant="globex", link_id="L1", now=NOW)
    assert await refused(db, org_wide("E0INI"), "acme", "L2") == \
        "org_has_workspaces_of_another_tenant"
    assert await db.save(org_wide("E0INI"), tenant="globex", link_id="L3", now=NOW) is False
    assert await db.save(org_wide("E0INI", token="xoxb-2"), tenant="globex", link_id="L3",
                         now=NOW) is True  # a reinstall
    assert {(i.key, i.tenant) for i in await db.all()} == {("T0INI", "globex"),
                                                            ("E0INI", "globex")}


async def test_a_removed_install_keeps_its_org_bound(db: InstallationDB) -> None:
    await db.save(org_wide("E0ACME"), tenant="acme", link_id="L1", now=NOW)
    await db.remove(enterprise_id="E0ACME", team_id=None, is_enterprise_install=True,
                    reason="app_uninstalled", now=NOW)
    assert await refused(db, installation("T0ACME", org="E0ACME"), "globex", "L2") == \
        "org_of_another_tenant"


async def test_clashing_installs_at_once_one_wins(db: InstallationDB) -> None:
    """Two processes finishing an org-wide install and a workspace install of one org for two
    tenants at the same moment: the lock decides them one after the other."""
    for round in range(5):
        org, team = f"E0R{round}", f"T0R{round}"
        results = await asyncio.gather(
            db.save(org_wide(org), tenant="acme", link_id=f"A{round}", now=NOW),
            db.save(installation(team, org=org), tenant="globex", link_id=f"G{round}", now=NOW),
            return_exceptions=True)
        assert sorted(type(r).__name__ for r in results) == ["InstallRefused", "bool"], results
        tenants = {i.tenant for i in await db.all() if i.enterprise_id == org}
        assert len(tenants) == 1


def test_every_binding_reason_has_a_page_that_names_no_other_tenant() -> None:
    for reason in REASONS:
        text = REFUSED_TEXT[reason]
        assert "another organisation" in text or "another workspace" in text, reason


async def test_a_stale_view_is_confirmed_and_never_serves_another_tenant(
        db: InstallationDB, installations: Installations) -> None:
    acme = SlackReach(team_id="T0ACME", enterprise_id="E0ACME")
    assert installations.tenant_for(team_id="T0ACME", enterprise_id="E0ACME") is None
    # another process installs acme's org: this one's view is old until confirmed
    await db.save(org_wide("E0ACME"), tenant="acme", link_id="L1", now=NOW)
    assert installations.resolve(acme) is None
    assert await installations.confirm(team_id="T0ACME", enterprise_id="E0ACME") is True
    assert installations.tenant_for(team_id="T0ACME", enterprise_id="E0ACME") == "acme"
    reloads = REGISTRY.value("clarify_slack_directory_reloads_total")
    # current now: the caller decides again on this view, and nothing is read again
    assert await installations.confirm(team_id="T0ACME", enterprise_id="E0ACME") is True
    assert REGISTRY.value("clarify_slack_directory_reloads_total") == reloads
    # a workspace bound to globex stays globex's, however often it is confirmed
    await db.save(installation("T0GLOBEX"), tenant="globex", link_id="L2", now=NOW)
    await installations.confirm(team_id="T0GLOBEX", enterprise_id=None)
    assert installations.tenant_for(team_id="T0GLOBEX", enterprise_id=None) == "globex"
    assert await installations.confirm(team_id="T0NOBODY", enterprise_id=None) is False
    assert installations.tenant_for(team_id="T0NOBODY", enterprise_id=None) is None


async def test_a_view_read_again_by_another_task_since_the_decision_still_decides_again(
        db: InstallationDB, installations: Installations) -> None:
    """A worker decides on its old view (globex's workspace unknown), another task of the same
    process reads the view again (a concurrent job's confirmation), then this decision's
    confirmation finds the view current: it still says "decide again", as the decision was
    made on the older view (a full run skipped a question created after its install so)."""
    assert installations.tenant_for(team_id="T0GLOBEX", enterprise_id=None) is None  # decided
    await db.save(installation("T0GLOBEX"), tenant="globex", link_id="L1", now=NOW)
    await installations.load()  # another task's confirmation read the view again meanwhile
    assert await installations.confirm(team_id="T0GLOBEX", enterprise_id=None) is True
    assert installations.tenant_for(team_id="T0GLOBEX", enterprise_id=None) == "globex"


async def test_a_token_gone_for_good_removes_its_installation_with_the_cause(
        db: InstallationDB, installations: Installations) -> None:
    await db.save(installation("T0GLOBEX"), tenant="globex", link_id="L1", now=NOW)
    await installations.load()
    assert {"token_revoked", "account_inactive", "invalid_auth", "team_access_revoked",
            "org_login_required"} <= REVOKED_ERRORS
    gone = await installations.refused("T0GLOBEX", "token_revoked")
    assert isinstance(gone, NotReachable) and "token_revoked" in gone.reason \
        and "uninstalled" in gone.reason and gone.certain
    assert gone.cause == "blocked_or_uninstalled"  # the reach report's cause group
    found = await db.get("T0GLOBEX")
    assert found is not None and (found.state, found.reason) == ("removed", "token_revoked")
    with pytest.raises(NotReachable) as later:  # every later send: the same cause
        await installations.client(SlackReach(team_id="T0GLOBEX"))
    assert "token_revoked" in later.value.reason
    assert later.value.cause == "blocked_or_uninstalled"
    with pytest.raises(NotReachable) as none:  # a workspace no installation serves
        await installations.client(SlackReach(team_id="T0NOBODY"))
    assert none.value.cause == "app_not_installed"
    # the binding stays: another tenant cannot take the workspace
    assert await refused(db, installation("T0GLOBEX"), "acme", "L2") == \
        "workspace_of_another_tenant"


async def test_a_token_paused_not_removed_for_other_credential_errors(
        db: InstallationDB, installations: Installations) -> None:
    await db.save(installation("T0GLOBEX"), tenant="globex", link_id="L1", now=NOW)
    await installations.load()
    paused = await installations.refused("T0GLOBEX", "not_authed")
    assert type(paused).__name__ == "CredentialsRejected"
    found = await db.get("T0GLOBEX")
    assert found is not None and found.state == "paused"


def test_unserved_kinds_are_a_closed_list() -> None:
    def event(kind: object) -> dict[str, object]:
        return {"type": "event_callback", "event": {"type": kind}}
    assert unserved.kind_of(event("app_home_opened")) == "app_home_opened"
    assert unserved.kind_of(event("message")) == "message"
    assert unserved.kind_of(event("x" * 500)) == "other_event"
    assert unserved.kind_of({"type": "block_actions"}) == "block_actions"
    assert unserved.kind_of({"type": "<script>"}) == "other"
    assert unserved.kind_of({"type": "event_callback", "event": []}) == "other_event"
    assert set(unserved.KINDS) >= {"app_home_opened", "other", "other_event"}


async def _blocked_or_done(db: InstallationDB, task: asyncio.Task[object]) -> bool:
    """Whether ``task`` finished, or waits for a lock another session holds (polled: no clock)."""
    for _ in range(400):
        if task.done():
            return False
        async with db.engine.connect() as conn:
            waiting = await conn.scalar(sa.text(
                "SELECT count(*) FROM pg_locks WHERE NOT granted AND locktype = 'advisory'"))
        if waiting:
            return True
        await asyncio.sleep(0.025)
    raise AssertionError("the rebind neither finished nor waited")


@pytest.mark.parametrize("change", ["rebind", "remove"])
async def test_an_operator_change_waits_for_an_install_being_decided(
        db: InstallationDB, change: str) -> None:
    """A workspace install of acme's org being decided (under the binding lock) while the
    operator rebinds the org to globex, or removes it: the operator's change waits for the
    install, so the org never ends with a workspace of acme under globex's org-wide install."""
    await db.save(org_wide("E0ACME"), tenant="acme", link_id="L-ORG", now=NOW)
    async with db.engine.connect() as install:
        transaction = await install.begin()
        await binding.lock(install)
        assert await binding.decide(install, key="T0ACME", enterprise_id="E0ACME",
                                    org_wide=False, tenant="acme", link_id="L-TEAM") is False
        task: asyncio.Task[object] = asyncio.ensure_future(
            operators.rebind(db.engine, "E0ACME", tenant="globex", now=NOW)
            if change == "rebind" else operators.remove(
                db.engine, "E0ACME", client_id=db.client_id, api_url="http://127.0.0.1:9/api/",
                sealer=Sealer.from_setting(TOKEN_KEY), now=NOW))
        blocked = await _blocked_or_done(db, task)
        await install.execute(schema.installations.insert().values(
            key="T0ACME", enterprise_id="E0ACME", team_id="T0ACME", is_enterprise_install=False,
            tenant="acme", link_id="L-TEAM", state="active", installed_at=NOW, changed_at=NOW,
            refresh_failures=0))
        await transaction.commit()
    await task
    assert blocked, "the operator's change did not wait for the install being decided"
    rows = {i.key: i.tenant for i in await db.all()}
    if change == "rebind":
        assert rows == {"E0ACME": "globex", "T0ACME": "globex"}, rows
    else:
        assert rows == {"T0ACME": "acme"}, rows


async def test_an_install_that_dies_before_its_binding_is_saved_keeps_no_token(
        db: InstallationDB, monkeypatch: pytest.MonkeyPatch) -> None:
    """A web process that stops mid-install (killed, the database gone) between saving the
    tokens and the binding: nothing of it stays, neither a binding nor a token at rest that no
    `slack installations` lists and no `remove` can reach (the tokens were committed in a
    transaction of their own)."""
    async def stopped(self: object, **_: object) -> int:
        raise ConnectionResetError("the process stopped here")
    monkeypatch.setattr(SealedInstallationStore, "delete_superseded", stopped)
    with pytest.raises(ConnectionResetError):
        await db.save(installation("T0GLOBEX", token="xoxb-orphan"), tenant="globex",
                      link_id="L-DIES", now=NOW)
    assert await db.all() == []
    async with db.engine.connect() as conn:
        for table in ("slack_installations", "slack_bots"):
            assert await conn.scalar(sa.text(f"SELECT count(*) FROM {table}")) == 0, table
