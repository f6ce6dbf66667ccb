"""Many workspaces through real processes: ``clarify-bot serve`` web and worker processes on one
installation database (PostgreSQL) and one Redis, the reference core (``clarify-bot devcore``) in
its own process and the fake Slack speaking ``oauth.v2.access`` (org-wide Grid installs, a token
reaching only its own workspace or org). Installs go through the bot's own pages.

- One tenant per workspace across install levels, in both orders: a workspace-level install into
  a workspace an org-wide install of another tenant serves is refused, and so is an org-wide
  install of an org with a workspace bound to another tenant; same-tenant installs at the other
  level are kept; two web processes finishing clashing installs at the same moment: one wins.
- A question created within a second of an install is delivered by workers whose view of the
  installations was read before it (and is not read again for minutes).
- A token Slack revokes while cards go out: the person is skipped NO_DELIVERY_ALIAS with the
  cause, at once (no 30-s pause, never the "mid-send" wording).
- Events from a workspace no install serves: 200, a quiet info line, counted; no error line.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from html import unescape
from pathlib import Path
from typing import Any

import aiohttp
import asyncpg
import pytest
from slack_sdk.signature import SignatureVerifier

from bot.clock import SystemClock
from bot.core.client import CoreClient, RetryPolicy
from bot.core.models import ClarificationEvent, ReasonCode
from devcore.client import DevCoreClient
from devslack import LocalSlack
from tests.bot.test_service import SECRETS
from tests.conftest import CLARIFY_TOKEN, DEV_TOKEN
from tests.engine.conftest import new_clarification
from tests.slack.conftest import SlackPeople
from tests.slack.distributed import (
    STATE_COOKIE,
    Installer,
    database_url,  # noqa: F401 (a fixture)
    link_for,
    oauth_config,
    oauth_secrets,
    process_settings,
)
from tests.support.processes import Processes, free_port, healthy, plain_env, wait_until

# slow: bot processes and `devcore`
# about installations, not the core's contract
pytestmark = [pytest.mark.full_contract, pytest.mark.slow]

ORG_TEXT = "org-wide installation of Clarify for another organisation"
WORKSPACES_TEXT = "A workspace of this Enterprise Grid org already has Clarify installed"


@pytest.fixture
async def slack() -> AsyncIterator[LocalSlack]:
    async with LocalSlack() as fake:
        fake.add_workspace("T0ACME", enterprise_id="E0ACME", name="Acme Legal")
        fake.add_workspace("T0ACME2", enterprise_id="E0ACME", name="Acme Sales")
        fake.add_workspace(None, enterprise_id="E0ACME", name="Acme Grid", org_wide=True)
        fake.add_workspace("T0INI", enterprise_id="E0INI", name="Initech Ops")
        fake.add_workspace(None, enterprise_id="E0INI", name="Initech Grid", org_wide=True)
        fake.add_workspace("T0RACE", enterprise_id="E0RACE", name="Race Team")
        fake.add_workspace(None, enterprise_id="E0RACE", name="Race Grid", org_wide=True)
        fake.add_workspace("T0GLOBEX", name="Globex")
        for user in ("U0SARAH", "U0AHMED", "U0MARIA"):
            fake.add_user(user, team="T0ACME")
        fake.add_user("U0GINA", team="T0GLOBEX")
        yield fake


@dataclass
class Grid(SlackPeople):
    """The processes, and what a test asks of them; people press buttons through ``url``."""

    slack: LocalSlack
    http: aiohttp.ClientSession
    dev: DevCoreClient
    core: CoreClient
    database_url: str
    webs: list[str]
    url: str = ""
    signing_secret: str = SECRETS["SLACK_SIGNING_SECRET"]
    logs: dict[str, list[Path]] = field(default_factory=dict)  # role -> stderr files
    audits: list[Path] = field(default_factory=list)

    async def install(self, tenant: str, into: str, *, web: int = 0) -> tuple[int, str]:
        link = link_for(tenant, clock=SystemClock(), public_url=self.webs[web])
        return await Installer(self.http, self.slack).install(link, into)

    async def started(self, tenant: str, into: str, *, web: int) -> tuple[str, str, str]:
        """An install begun in a browser and approved at Slack: the redirect URL (with its
        code and state) and the state cookie, not yet followed."""
        link = link_for(tenant, clock=SystemClock(), public_url=self.webs[web])
        async with self.http.get(link) as page:
            body = await page.text()
            assert page.status == 200, body
            cookie = page.cookies[STATE_COOKIE].value
        found = re.search(r'href="([^"]+/oauth/v2/authorize[^"]*)"', body)
        assert found is not None, body
        self.slack.installing = into
        async with self.http.get(unescape(found[1]), allow_redirects=False) as approved:
            back = approved.headers["Location"]
        return back, cookie, into

    async def finish(self, back: str, cookie: str) -> tuple[int, str]:
        async with aiohttp.ClientSession() as browser, browser.get(
                back, headers={"Cookie": f"{STATE_COOKIE}={cookie}"}) as done:
            return done.status, await done.text()

    def lines(self, role: str) -> list[dict[str, Any]]:
        found = []
        for path in self.logs.get(role, []):
            for line in path.read_text().splitlines():
                with contextlib.suppress(ValueError):
                    found.append(json.loads(line))
        return found

    def audited(self, kind: str) -> list[dict[str, Any]]:
        return [json.loads(line) for path in self.audits if path.exists()
                for line in path.read_text().splitlines() if f'"{kind}"' in line]

    async def metric(self, name: str, **labels: str) -> float:
        """The metric summed over the web processes."""
        total = 0.0
        for url in self.webs:
            async with self.http.get(f"{url}/metrics") as got:
                text = await got.text()
            for line in text.splitlines():
                if line.startswith(name + ("{" if labels else " ")) and \
                        (not labels or all(f'{k}="{v}"' in line for k, v in labels.items())):
                    total += float(line.rsplit(" ", 1)[1])
        return total

    async def events(self, cid: str, person: str) -> list[ClarificationEvent]:
        c = await self.core.get_clarification(clarification_id=cid)
        return [e for e in c.events if e.person_id == person and e.reason_code]

    async def post_event(self, body: dict[str, Any], *, web: int = 0) -> int:
        raw = json.dumps(body).encode()
        stamp = str(int(time.time()))
        signature = SignatureVerifier(SECRETS["SLACK_SIGNING_SECRET"]).generate_signature(
            timestamp=stamp, body=raw)
        async with self.http.post(f"{self.webs[web]}/slack/events", data=raw, headers={
                "Content-Type": "application/json", "X-Slack-Request-Timestamp": stamp,
                "X-Slack-Signature": signature or ""}) as got:
            await got.read()
            return got.status


async def polled(url: str, http: aiohttp.ClientSession) -> bool:
    """The process at ``url`` has polled the core for jobs at least once."""
    async with http.get(f"{url}/metrics") as got:
        text = await got.text()
    return any(line.startswith("clarify_core_request_seconds_count{")
               and 'operation="pollJobs"' in line and float(line.rsplit(" ", 1)[1]) > 0
               for line in text.splitlines())


@contextlib.asynccontextmanager
async def grid(tmp_path: Path, slack: LocalSlack, database_url: str,  # noqa: F811
               devcore_url: str, *, webs: int, workers: int,  # noqa: F811
               directory_seconds: float) -> AsyncIterator[Grid]:
    roles = ["web"] * webs + ["worker"] * workers
    ports = [free_port() for _ in roles]
    public = [f"http://127.0.0.1:{p}" for p in ports[:webs]]
    prefix = f"clarify-grid-{uuid.uuid4().hex[:8]}:"
    env = plain_env(**{k: v for k, v in SECRETS.items() if k != "SLACK_BOT_TOKEN"},
                    **oauth_secrets(database_url, slack))
    oauth = oauth_config(public_url=public[0], slack=slack, directory_seconds=directory_seconds,
                         # the token-refresh pass re-reads the installations too: never
                         # sooner than the view
                         refresh_check_seconds=max(60, directory_seconds))
    processes = Processes(tmp_path)
    logs: dict[str, list[Path]] = {}
    audits = []
    try:
        for i, (role, port) in enumerate(zip(roles, ports, strict=True)):
            audit = tmp_path / f"audit-{i}.jsonl"
            audits.append(audit)
            bot = await processes.serve(
                process_settings(core=devcore_url, port=port, prefix=prefix, slack=slack,
                                 oauth=oauth, audit={"sink": "jsonl", "path": audit},
                                 worker={"health_port": port} if role == "worker" else {}),
                role=role, name=f"bot-{i}", env=env, stdout=True)
            logs.setdefault(role, []).append(bot.stderr)
        async with aiohttp.ClientSession() as http, DevCoreClient(
                base_url=devcore_url, token=DEV_TOKEN,
                retry=RetryPolicy(max_attempts=1)) as dev, CoreClient(
                base_url=devcore_url, token=CLARIFY_TOKEN,
                retry=RetryPolicy(max_attempts=1)) as core:
            for port in ports:  # every process listening: its installations were read
                await wait_until(lambda p=port: healthy(f"http://127.0.0.1:{p}", http),
                                 "a process", seconds=60)
            # a worker answers /healthz before its start-up checks, which read the
            # installations again; once it has polled the core they are behind it, so an install
            # after this is news to it (the reread the tests look for)
            for port, role in zip(ports, roles, strict=True):
                if role == "worker":
                    await wait_until(lambda p=port: polled(f"http://127.0.0.1:{p}", http),
                                     "a worker's first poll", seconds=60)
            yield Grid(slack=slack, http=http, dev=dev, core=core, database_url=database_url,
                       webs=public, url=public[0], logs=logs, audits=audits)
    finally:
        await processes.close(gently=True)


async def _tenants_by_org(url: str) -> dict[str, set[str]]:
    conn = await asyncpg.connect(url)
    try:
        rows = await conn.fetch("SELECT key, enterprise_id, tenant FROM "
                                "clarify_slack_installations")
    finally:
        await conn.close()
    orgs: dict[str, set[str]] = {}
    for row in rows:
        orgs.setdefault(row["enterprise_id"] or row["key"], set()).add(row["tenant"])
    return orgs


async def test_grid_installs_keep_one_tenant_per_workspace_in_either_order(
        tmp_path: Path, slack: LocalSlack, database_url: str,  # noqa: F811
        devcore_url: str) -> None:  # noqa: F811
    async with grid(tmp_path, slack, database_url, devcore_url, webs=2, workers=2,
                    directory_seconds=10) as g:
        # org-wide first: acme's org-wide install serves every workspace of E0ACME
        assert (await g.install("acme", "E0ACME", web=0))[0] == 200
        for workspace in ("T0ACME", "T0ACME2"):  # globex's link in one of them: refused
            status, page = await g.install("globex", workspace, web=1)
            assert status == 403 and ORG_TEXT in page, page
            assert "acme" not in page.lower() and "E0ACME" not in page  # nothing of acme's
        # the same tenant at workspace level: kept
        assert (await g.install("acme", "T0ACME2", web=1))[0] == 200
        # workspace first: globex's workspace in the Initech org; acme's org-wide: refused
        assert (await g.install("globex", "T0INI", web=0))[0] == 200
        status, page = await g.install("acme", "E0INI", web=1)
        assert status == 403 and WORKSPACES_TEXT in page, page
        assert "globex" not in page.lower() and "T0INI" not in page
        assert (await g.install("globex", "E0INI", web=0))[0] == 200  # same tenant: kept
        # two web processes finishing clashing installs of one org at the same moment
        org = await g.started("acme", "E0RACE", web=0)
        team = await g.started("globex", "T0RACE", web=1)
        raced = await asyncio.gather(g.finish(org[0], org[1]), g.finish(team[0], team[1]))
        assert sorted(status for status, _ in raced) == [200, 403], raced

        orgs = await _tenants_by_org(database_url)
        assert orgs["E0ACME"] == {"acme"} and orgs["E0INI"] == {"globex"}
        assert all(len(tenants) == 1 for tenants in orgs.values()), orgs
        refused = g.audited("slack_install_refused")
        reasons = sorted(e["extra"]["reason"] for e in refused)
        assert all("second tenant" in e["message"] for e in refused), refused
        assert not [e for e in refused if "acme" in e["message"] or "globex" in e["message"]]
        assert reasons.count("org_of_another_tenant") == 2 + (raced[1][0] == 403)
        assert reasons.count("org_has_workspaces_of_another_tenant") == 1 + (raced[0][0] == 403)
        assert await g.metric("clarify_slack_binding_refusals_total",
                              reason="org_of_another_tenant") >= 2
        logged = [line for line in g.lines("web") if line.get("event") == "slack.install_refused"]
        assert {line["reason"] for line in logged} >= {"org_of_another_tenant",
                                                       "org_has_workspaces_of_another_tenant"}

        # acme's question to Sarah (T0ACME, in E0ACME) goes out with the org-wide token
        cid = await new_clarification(g.dev, authority={"authored_by": ["p-sarah"]})
        await wait_until(lambda: slack.dm_of("U0SARAH"), "Sarah's card", seconds=30)
        assert {msg.team for msg in slack.dm_of("U0SARAH")} == {"E0ACME"}
        assert not [e for e in await g.events(cid, "p-sarah")
                    if e.reason_code is ReasonCode.TENANT_SCOPE_MISMATCH]
    secrets = [*slack.issued, slack.client_secret]
    text = "".join(p.read_text() for paths in g.logs.values() for p in paths)
    assert not [s for s in secrets if s in text]


async def test_a_question_created_within_a_second_of_an_install_is_delivered(
        tmp_path: Path, slack: LocalSlack, database_url: str,  # noqa: F811
        devcore_url: str) -> None:  # noqa: F811
    """The workers and the second web process read the installations when they started (none)
    and not again for ten minutes: the install through the first web process, then at once a
    question, is delivered, and Sarah's answer through the second web process is taken."""
    async with grid(tmp_path, slack, database_url, devcore_url, webs=2, workers=2,
                    directory_seconds=600) as g:
        status, page = await g.install("acme", "E0ACME", web=0)
        assert status == 200 and "Clarify is installed" in page
        installed = time.monotonic()
        cid = await new_clarification(g.dev, authority={"authored_by": ["p-sarah"]})
        assert time.monotonic() - installed < 1.0
        await wait_until(lambda: g.cards_of("U0SARAH", cid), "Sarah's card", seconds=30)
        assert not await g.events(cid, "p-sarah")  # nobody skipped
        g.url = g.webs[1]  # a web process whose view is older than the install
        answered = await g.click("U0SARAH", g.card("U0SARAH", cid), "clarify.answer.0")
        assert answered.status == 200

        async def taken() -> bool:
            c = await g.core.get_clarification(clarification_id=cid)
            return bool(c.responses)
        await wait_until(taken, "Sarah's answer at the core", seconds=30)
        # the worker that sent the card reread the installations to find the new one; its log
        # line may reach the file a moment after the card reached Slack
        await wait_until(lambda: [line for line in g.lines("worker")
                                  if line.get("event") == "slack.installations_reread"],
                         "the worker's reread of the installations, logged", seconds=10)
        # tenants stay apart: globex's Gina (T0GLOBEX, installed for nobody) is not reached
        # through acme's install, however fresh the view
        gcid = await new_clarification(g.dev, authority={"authored_by": ["p-gina"]},
                                       workspace="globex-legal", tenant="globex")
        skips = await until_events(g, gcid, "p-gina")
        assert {e.reason_code for e in skips} == {ReasonCode.TENANT_SCOPE_MISMATCH}
        assert slack.dm_of("U0GINA") == []


async def until_events(g: Grid, cid: str, person: str, seconds: float = 30
                       ) -> list[ClarificationEvent]:
    found: list[ClarificationEvent] = []

    async def skipped() -> bool:
        found[:] = await g.events(cid, person)
        return bool(found)
    await wait_until(skipped, f"{person} skipped", seconds=seconds)
    return found


async def test_a_token_revoked_during_sends_skips_no_delivery_alias_at_once(
        tmp_path: Path, slack: LocalSlack, database_url: str,  # noqa: F811
        devcore_url: str) -> None:  # noqa: F811
    async with grid(tmp_path, slack, database_url, devcore_url, webs=1, workers=1,
                    directory_seconds=10) as g:
        assert (await g.install("globex", "T0GLOBEX"))[0] == 200
        first = await new_clarification(g.dev, authority={"authored_by": ["p-gina"]},
                                        workspace="globex-legal", tenant="globex")
        await wait_until(lambda: slack.dm_of("U0GINA"), "Gina's first card", seconds=30)
        assert not await g.events(first, "p-gina")
        # Slack revokes the installation's tokens: the worker still holds the token, so its
        # next post is answered token_revoked
        slack.revoke("T0GLOBEX")
        second = await new_clarification(g.dev, authority={"authored_by": ["p-gina"]},
                                         workspace="globex-legal", tenant="globex")
        # the old behaviour paused 30 s, then skipped DELIVERY_FAILED: bounded well below
        found = await until_events(g, second, "p-gina", seconds=20)
        skips = [e for e in found if e.type == "skipped"]  # (Gina is the steward too)
        assert {e.reason_code for e in skips} == {ReasonCode.NO_DELIVERY_ALIAS}, [
            (e.type, e.reason_code, e.message) for e in found]
        assert any("uninstalled" in e.message and "token_revoked" in e.message for e in skips)
        assert not any("mid-send" in e.message for e in skips)
        # Gina is the workspace's steward too: her escalation fails for the same true reason
        failed: list[ClarificationEvent] = []

        async def escalation_failed() -> bool:
            failed[:] = [e for e in await g.events(second, "p-gina")
                         if e.type == "escalation_failed"]
            return bool(failed)
        await wait_until(escalation_failed, "the failed escalation", seconds=20)
        assert {e.reason_code for e in failed} == {ReasonCode.NO_DELIVERY_ALIAS}
        assert all("token_revoked" in e.message for e in failed)
        assert len(slack.dm_of("U0GINA")) == 1
        assert [c for c in slack.calls_to("chat.postMessage") if c.error == "token_revoked"]
    worker = g.lines("worker")
    assert not [line for line in worker if line.get("event") == "worker.delivery_paused"]
    assert [line for line in worker if line.get("event") == "slack.installation_removed"
            and line.get("reason") == "token_revoked"]


async def test_events_from_a_workspace_no_install_serves_are_quiet_and_counted(
        tmp_path: Path, slack: LocalSlack, database_url: str,  # noqa: F811
        devcore_url: str) -> None:  # noqa: F811
    slack.add_workspace("T0NOBODY", name="Nobody")
    async with grid(tmp_path, slack, database_url, devcore_url, webs=1, workers=0,
                    directory_seconds=10) as g:
        assert (await g.install("acme", "E0ACME"))[0] == 200
        home = slack.event("app_home_opened", "T0NOBODY")
        home["event"].update(user="U0NOBODY", tab="home", channel="D0NOBODY")
        message = slack.event("message", "T0NOBODY")
        message["event"].update(user="U0NOBODY", text="hello", channel="D0NOBODY",
                                channel_type="im", ts="1700000000.000100")
        assert await g.post_event(home) == 200
        assert await g.post_event(message) == 200
        assert await g.metric("clarify_slack_unserved_total", kind="app_home_opened") == 1
        assert await g.metric("clarify_slack_unserved_total", kind="message") == 1
        assert await g.metric("clarify_slack_home_total", outcome="not_served") == 1
        # a served workspace's Home is not skipped
        served = slack.event("app_home_opened", "E0ACME")
        served["event"].update(user="U0SARAH", tab="home", channel="D0SARAH")
        assert await g.post_event(served) == 200
        assert await g.metric("clarify_slack_unserved_total", kind="app_home_opened") == 1
    lines = g.lines("web")
    skipped = [line for line in lines if line.get("event") in ("slack.home_skipped",
                                                              "slack.unserved_skipped")]
    assert len(skipped) == 2 and {line["level"] for line in skipped} == {"info"}
    assert not [line for line in lines if line.get("level") in ("error", "critical")]
    said = "".join(json.dumps(line) for line in skipped)
    assert "T0NOBODY" not in said and "U0NOBODY" not in said and "hello" not in said
