"""The operator's path, through the console script against a real reference core over HTTP, a
real PostgreSQL and a small Slack Web API double:

- `slack install-link --tenant` asks the core whether the tenant is one the bot's token serves
  before a link exists (`--no-check` when the core is down, said so);
- `slack installations remove|rebind`: confirmed (or `--yes`), audited, and what they change is
  what the store then holds; an org serves one tenant;
- `slack installations` before `db upgrade` names the command; database failures name what
  failed and the fix; `--json` is an array, `[]` when empty; the columns are the docs';
- `check-config` refuses what `serve` refuses, in the same line, and what keeps `serve` from
  being ready (the core, its token, Slack's auth.test); `--offline` keeps the static checks.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from aiohttp import web
from click.testing import CliRunner, Result
from slack_sdk.oauth.installation_store import Installation

from adapters.slack import schema
from adapters.slack.installations import InstallationDB
from adapters.slack.sealing import Sealer
from clarify_bot.cli import main
from clarify_bot.slack_cli import COLUMNS
from tests.cli.conftest import LiveCore
from tests.slack.distributed import (
    ADMIN_URL,
    LINK_KEY,
    TOKEN_KEY,
    _with_database,
    database_url,  # noqa: F401 (a fixture)
)

pytestmark = pytest.mark.full_contract  # the tenant check reads the baseline's own list
ROOT = Path(__file__).resolve().parents[2]
CLIENT_ID = "1111111111.2222222222"
GOOD_TOKEN = "xoxb-good-0000"
NOW = datetime(2026, 7, 4, 9, 0, tzinfo=UTC)


@dataclass
class SlackDouble:
    """Slack's Web API for the commands: auth.test accepts GOOD_TOKEN only, auth.revoke
    records the token it revoked. Runs on a thread (the commands run their own loops)."""

    url: str = ""
    revoked: list[str] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)

    async def handle(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        token = request.headers.get("Authorization", "").removeprefix("Bearer ")
        self.calls.append(method)
        if method == "auth.revoke":
            self.revoked.append(token)
            return web.json_response({"ok": True, "revoked": True})
        if method == "auth.test" and token == GOOD_TOKEN:
            return web.json_response({"ok": True, "team_id": "T0ACME", "user_id": "U0BOT"})
        return web.json_response({"ok": False, "error": "invalid_auth"})


@pytest.fixture
def slack_api() -> Iterator[SlackDouble]:
    double = SlackDouble()
    ready = threading.Event()
    held: list[Any] = []

    async def run() -> None:
        app = web.Application()
        app.router.add_route("*", "/api/{method}", double.handle)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        double.url = f"http://127.0.0.1:{runner.addresses[0][1]}/api/"
        done = asyncio.Event()
        held.append((asyncio.get_running_loop(), done))
        ready.set()
        await done.wait()
        await runner.cleanup()

    thread = threading.Thread(target=lambda: asyncio.run(run()), daemon=True)
    thread.start()
    assert ready.wait(10)
    yield double
    loop, done = held[0]
    loop.call_soon_threadsafe(done.set)
    thread.join(10)


def _distributed_env(core_url: str, *, database: str = "", api_url: str = "",
                     audit: Path | None = None) -> dict[str, str]:
    env = {"CLARIFY_BOT_CONFIG": "", "CLARIFY_BOT_CLARIFY__CHANNELS": "slack",
           "CLARIFY_BOT_SLACK__OAUTH__ENABLED": "true",
           "CLARIFY_BOT_SLACK__OAUTH__CLIENT_ID": CLIENT_ID,
           "CLARIFY_BOT_SLACK__OAUTH__PUBLIC_URL": "https://clarify.example.com",
           "CLARIFY_BOT_CORE__URL": core_url, "CLARIFY_BOT_CORE_TOKEN": "dev-clarify-token-acme",
           "CLARIFY_BOT_INSTALL_LINK_KEY": LINK_KEY, "CLARIFY_BOT_DATABASE_URL": database,
           "CLARIFY_BOT_SLACK_TOKEN_KEY": TOKEN_KEY,
           "SLACK_CLIENT_SECRET": "client-secret-0123456789", "SLACK_SIGNING_SECRET": "s" * 32,
           "CLARIFY_BOT_ACTION_SIGNING_KEY": "k" * 40, "SLACK_BOT_TOKEN": "",
           "CLARIFY_BOT_STORE__BACKEND": "memory"}
    if api_url:
        env["CLARIFY_BOT_SLACK__API_URL"] = api_url
    if audit is not None:
        env["CLARIFY_BOT_AUDIT__SINK"] = "jsonl"
        env["CLARIFY_BOT_AUDIT__PATH"] = str(audit)
    return env


def run(env: dict[str, str], *args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(main, list(args), env=env, input=input)


def _one_line_error(result: Result) -> str:
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    (line,) = [x for x in result.stderr.splitlines() if x.startswith("Error: ")]
    return line


# ---------------------------------------------------------------- install-link --tenant


def test_install_link_asks_the_core_whether_the_tenant_is_served(live: LiveCore) -> None:
    env = _distributed_env(live.url)
    made = run(env, "slack", "install-link", "--tenant", "globex")
    assert made.exit_code == 0, made.output
    assert made.stdout.startswith("https://clarify.example.com/slack/install?")
    typo = _one_line_error(run(env, "slack", "install-link", "--tenant", "acmee"))
    assert "--tenant = acmee" in typo and "not one the bot's token" in typo
    assert "https://" not in typo  # no link was made
    rejected = _one_line_error(run({**env, "CLARIFY_BOT_CORE_TOKEN": "wrong-token"},
                                   "slack", "install-link", "--tenant", "acme"))
    assert "CLARIFY_BOT_CORE_TOKEN: the core at" in rejected and "rejects this token" in rejected


def test_install_link_says_when_the_core_cannot_be_asked_and_no_check_skips_it() -> None:
    env = _distributed_env("http://127.0.0.1:9")
    down = _one_line_error(run(env, "slack", "install-link", "--tenant", "acme"))
    assert "core.url = http://127.0.0.1:9: cannot reach the core" in down
    assert "--no-check" in down
    skipped = run(env, "slack", "install-link", "--tenant", "acme", "--no-check")
    assert skipped.exit_code == 0, skipped.output
    assert skipped.stdout.startswith("https://clarify.example.com/slack/install?")
    assert "--no-check: tenant acme was not checked against the core" in skipped.stderr
    malformed = _one_line_error(run(env, "slack", "install-link", "--tenant", "a b"))
    assert malformed.startswith("Error: --tenant:")  # its form, before any core is asked


# ---------------------------------------------------------------- installations


def _installation(team: str, *, token: str, org: str | None = None,
                  org_wide: bool = False) -> Installation:
    return Installation(app_id="A0FAKEAPP", enterprise_id=org,
                        team_id=None if org_wide else team, team_name=team,
                        enterprise_name=org, is_enterprise_install=org_wide, bot_token=token,
                        bot_id="B0", bot_user_id="U0BOT", bot_scopes="chat:write",
                        user_id="U0INSTALLER", installed_at=NOW.timestamp())


def _save(url: str, installation: Installation, tenant: str) -> None:
    async def save() -> None:
        engine = schema.open_engine(url, pool_size=1)
        try:
            await InstallationDB(engine=engine, client_id=CLIENT_ID,
                                 sealer=Sealer.from_setting(TOKEN_KEY)).save(
                installation, tenant=tenant, link_id=uuid.uuid4().hex, now=NOW)
        finally:
            await engine.dispose()

    asyncio.run(save())


def _listed(env: dict[str, str]) -> list[dict[str, Any]]:
    shown = run(env, "slack", "installations", "--json")
    assert shown.exit_code == 0, shown.output
    rows: list[dict[str, Any]] = json.loads(shown.stdout)
    return rows


def _audit(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_remove_and_rebind_fix_an_installation_confirmed_and_audited(
        live: LiveCore, database_url: str, slack_api: SlackDouble,  # noqa: F811
        tmp_path: Path) -> None:
    audit = tmp_path / "audit.jsonl"
    env = _distributed_env(live.url, database=database_url, api_url=slack_api.url, audit=audit)
    assert run(env, "slack", "installations", "--json").stdout.strip() == "[]"
    _save(database_url, _installation("T0ACME", token="xoxb-acme-1"), "acmee")  # the typo
    table = run(env, "slack", "installations")
    assert table.stdout.splitlines()[0].split() == list(COLUMNS)
    assert "acmee" in table.stdout and "xoxb" not in table.stdout

    # rebind: the tenant checked with the core first, then a confirmation
    refused = _one_line_error(run(env, "slack", "installations", "rebind", "T0ACME",
                                  "--tenant", "acmeee"))
    assert "--tenant = acmeee" in refused
    kept = run(env, "slack", "installations", "rebind", "T0ACME", "--tenant", "acme", input="n\n")
    assert kept.exit_code == 1 and "nothing changed" in kept.stderr
    assert [r["tenant"] for r in _listed(env)] == ["acmee"]
    assert not audit.exists()
    moved = run(env, "slack", "installations", "rebind", "T0ACME", "--tenant", "acme",
                input="y\n")
    assert moved.exit_code == 0, moved.output
    assert "T0ACME now serves tenant acme (was acmee)" in moved.stdout
    assert [r["tenant"] for r in _listed(env)] == ["acme"]
    (event,) = _audit(audit)
    assert event["type"] == "slack_installation_rebound"
    assert event["extra"] == {"installation": "T0ACME", "tenant": "acme",
                              "from_tenant": "acmee", "by": "cli",
                              "operation": event["extra"]["operation"]}

    # remove: the token revoked at Slack, the rows and the binding gone
    removed = run(env, "slack", "installations", "remove", "T0ACME", "--yes")
    assert removed.exit_code == 0, removed.stderr
    assert "its token revoked at Slack and deleted" in removed.stdout
    assert slack_api.revoked == ["xoxb-acme-1"]
    assert _listed(env) == []
    events = _audit(audit)
    assert [e["type"] for e in events] == ["slack_installation_rebound",
                                           "slack_installation_removed"]
    assert events[1]["extra"]["token"] == "revoked"
    assert len({e["extra"]["operation"] for e in events}) == 2
    assert "xoxb" not in audit.read_text()
    # unbound: a link of another tenant installs the workspace again
    _save(database_url, _installation("T0ACME", token="xoxb-acme-2"), "globex")
    assert [r["tenant"] for r in _listed(env)] == ["globex"]
    gone = _one_line_error(run(env, "slack", "installations", "remove", "T0NOSUCH", "--yes"))
    assert "no installation T0NOSUCH" in gone


def test_an_org_moves_with_its_workspaces_and_one_of_them_alone_is_refused(
        live: LiveCore, database_url: str, tmp_path: Path) -> None:  # noqa: F811
    env = _distributed_env(live.url, database=database_url, audit=tmp_path / "audit.jsonl")
    _save(database_url, _installation("E0GRID", token="xoxb-org", org="E0GRID", org_wide=True),
          "acme")
    _save(database_url, _installation("T0MEMBER", token="xoxb-member", org="E0GRID"), "acme")
    alone = _one_line_error(run(env, "slack", "installations", "rebind", "T0MEMBER",
                                "--tenant", "globex", "--yes"))
    assert "org-wide installation serves tenant acme" in alone and "Rebind E0GRID" in alone
    both = run(env, "slack", "installations", "rebind", "E0GRID", "--tenant", "globex", "--yes")
    assert both.exit_code == 0, both.output
    assert {r["key"]: r["tenant"] for r in _listed(env)} == {"E0GRID": "globex",
                                                            "T0MEMBER": "globex"}


async def _empty_database() -> str:
    name = f"clarify_ops_{uuid.uuid4().hex[:12]}"
    admin = await asyncpg.connect(ADMIN_URL)
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    return name


@pytest.fixture
async def fresh_database() -> AsyncIterator[str]:
    """A database with no schema yet: before `clarify-bot db upgrade`."""
    name = await _empty_database()
    yield _with_database(name)
    admin = await asyncpg.connect(ADMIN_URL)
    try:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await admin.close()


def test_before_db_upgrade_every_command_and_serve_name_the_upgrade(
        live: LiveCore, fresh_database: str) -> None:
    env = _distributed_env(live.url, database=fresh_database)
    listing = _one_line_error(run(env, "slack", "installations"))
    assert "run `clarify-bot db upgrade`" in listing and "SchemaOutdated" not in listing
    checked = _one_line_error(run(env, "check-config"))
    served = _one_line_error(run(env, "serve", "--role", "web"))
    assert checked == served
    assert "CLARIFY_BOT_DATABASE_URL: the installation database is at schema version 0" in served
    assert "clarify-bot db upgrade" in served
    upgraded = run(env, "db", "upgrade")
    assert upgraded.exit_code == 0, upgraded.output
    assert run(env, "slack", "installations", "--json").stdout.strip() == "[]"


@pytest.mark.parametrize(("url", "said"), [
    ("postgresql://postgres@127.0.0.1:1/clarify",
     "cannot connect to the installation database at 127.0.0.1:1/clarify (connection "
     "refused): is PostgreSQL running there? check CLARIFY_BOT_DATABASE_URL"),
    ("postgresql://postgres@127.0.0.1:5432/clarify_nosuch_db",
     "the installation database at 127.0.0.1:5432/clarify_nosuch_db: the database does not "
     "exist: create it (`createdb`), then run `clarify-bot db upgrade`"),
    ("postgresql://clarify_nosuch_user@127.0.0.1:5432/postgres",
     "PostgreSQL refuses the user in CLARIFY_BOT_DATABASE_URL"),
])
@pytest.mark.slow
def test_database_failures_name_what_failed_and_the_fix(url: str, said: str) -> None:
    env = _distributed_env("http://127.0.0.1:9", database=url)
    for command in (("db", "status"), ("slack", "installations"), ("db", "upgrade")):
        line = _one_line_error(run(env, *command))
        assert said in line, (command, line)
        assert "DBAPIError" not in line and "clarify_nosuch_user@" not in line
    checked = run(env, "check-config")  # the database's line among the others (the core's)
    assert checked.exit_code == 1
    (line,) = [x for x in checked.stderr.splitlines() if "CLARIFY_BOT_DATABASE_URL: " in x]
    assert said in line


def test_the_installations_columns_are_the_docs() -> None:
    """docs/operations.md and docs/slack.md list the columns `slack installations` prints."""
    for doc in ("docs/operations.md", "docs/slack.md"):
        text = (ROOT / doc).read_text()
        found = re.search(r"columns: (`[a-z_]+`(?:,\s+`[a-z_]+`)*)", text)
        assert found is not None, doc
        assert tuple(re.findall(r"`([a-z_]+)`", found[1])) == COLUMNS, doc


# ---------------------------------------------------------------- check-config's promise


def _single_env(core_url: str, api_url: str, **more: str) -> dict[str, str]:
    return {"CLARIFY_BOT_CONFIG": "", "CLARIFY_BOT_CLARIFY__CHANNELS": "slack",
            "CLARIFY_BOT_CORE__URL": core_url, "CLARIFY_BOT_CORE_TOKEN": "dev-clarify-token-acme",
            "SLACK_BOT_TOKEN": GOOD_TOKEN, "SLACK_SIGNING_SECRET": "s" * 32,
            "CLARIFY_BOT_ACTION_SIGNING_KEY": "k" * 40, "CLARIFY_BOT_SLACK__API_URL": api_url,
            "CLARIFY_BOT_STORE__BACKEND": "memory", **more}


def test_check_config_passes_only_when_every_dependency_answers(
        live: LiveCore, slack_api: SlackDouble) -> None:
    env = _single_env(live.url, slack_api.url)
    good = run(env, "check-config")
    assert good.exit_code == 0, good.output
    assert "live checks passed: core reachable, token accepted; Slack auth.test" in good.stdout
    assert "auth.test" in slack_api.calls
    cases = {
        "CLARIFY_BOT_CORE_TOKEN: the core at": {"CLARIFY_BOT_CORE_TOKEN": "not-a-token"},
        "core.url = http://127.0.0.1:9: cannot reach the core (cannot connect)":
            {"CLARIFY_BOT_CORE__URL": "http://127.0.0.1:9"},
        "SLACK_BOT_TOKEN: Slack refuses this token (invalid_auth)":
            {"SLACK_BOT_TOKEN": "xoxb-revoked"},
        "slack.api_url = http://127.0.0.1:9/api/: cannot reach Slack":
            {"CLARIFY_BOT_SLACK__API_URL": "http://127.0.0.1:9/api/"},
    }
    for said, change in cases.items():
        line = _one_line_error(run({**env, **change}, "check-config"))
        assert said in line, line
        offline = run({**env, **change}, "check-config", "--offline")
        assert offline.exit_code == 0, offline.output  # static checks only
        assert "live checks: skipped (--offline)" in offline.stdout


def test_check_config_refuses_teams_without_an_app_id_as_serve_does(live: LiveCore) -> None:
    """No settings file: the default channels include Teams, which needs an app id."""
    env = {"CLARIFY_BOT_CONFIG": "", "CLARIFY_BOT_CORE__URL": live.url,
           "CLARIFY_BOT_CORE_TOKEN": "dev-clarify-token-acme", "SLACK_BOT_TOKEN": GOOD_TOKEN,
           "SLACK_SIGNING_SECRET": "s" * 32, "CLARIFY_BOT_ACTION_SIGNING_KEY": "k" * 40,
           "CLARIFY_BOT_STORE__BACKEND": "memory"}
    for flags in ((), ("--offline",)):
        checked = _one_line_error(run(env, "check-config", *flags))
        assert checked == _one_line_error(run(env, "serve"))
        assert "teams.app_id" in checked


def test_check_config_asks_the_identity_platform_for_a_teams_token(
        live: LiveCore, monkeypatch: pytest.MonkeyPatch) -> None:
    """Teams with a client secret: a connector token is asked for (MSAL's own client; here its
    answer is stood in for, as Microsoft cannot be reached from the tests)."""
    from microsoft_agents.authentication.msal import MsalAuth

    asked: list[str] = []

    async def refused(self: Any, resource: str, scopes: list[str], **_: Any) -> str:
        asked.append(resource)
        raise ValueError("AADSTS7000215: invalid client secret")  # MSAL's wording, not shown

    env = {"CLARIFY_BOT_CONFIG": "", "CLARIFY_BOT_CLARIFY__CHANNELS": "teams",
           "CLARIFY_BOT_CORE__URL": live.url, "CLARIFY_BOT_CORE_TOKEN": "dev-clarify-token-acme",
           "CLARIFY_BOT_ACTION_SIGNING_KEY": "k" * 40, "CLARIFY_BOT_STORE__BACKEND": "memory",
           "CLARIFY_BOT_TEAMS__APP_ID": "00000000-0000-0000-0000-000000000001",
           "CLARIFY_BOT_TEAMS__APP_TENANT_ID": "00000000-0000-0000-0000-000000000002",
           "TEAMS_APP_PASSWORD": "not-the-secret"}
    monkeypatch.setattr(MsalAuth, "get_access_token", refused)
    line = _one_line_error(run(env, "check-config"))
    assert line.startswith("Error: invalid clarify-bot settings: TEAMS_APP_PASSWORD: the "
                           "identity platform gives no connector token")
    assert "AADSTS" not in line and "not-the-secret" not in line
    assert asked == ["https://api.botframework.com"]

    async def granted(self: Any, resource: str, scopes: list[str], **_: Any) -> str:
        return "a-connector-token"

    monkeypatch.setattr(MsalAuth, "get_access_token", granted)
    good = run(env, "check-config")
    assert good.exit_code == 0, good.output
    assert "Teams connector token" in good.stdout
