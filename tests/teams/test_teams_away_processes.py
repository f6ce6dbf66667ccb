"""Who is away, through ``clarify-bot serve`` with Teams as a real process: its Graph token
asked of a fake identity platform and its reads of a fake Microsoft Graph
(tests/teams/fakegraph.py), both over real HTTP on 127.0.0.1 (``teams.login_url``,
``teams.graph_url``); the reference core served from the test's event loop. Only msal's
connector token is stood in for (tests/teams/away_serve.py): login.microsoftonline.com is out
of the tests' reach. The bot's connector is out of reach too (``teams.service_url`` names no
connector host): nothing is ever sent to anyone here.

docs/teams.md, "Who is away", names these tests.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import aiohttp
import pytest

from bot.clock import ManualClock
from devcore.client import DevCoreClient
from devcore.core import ReferenceCore, load_scenario
from devcore.scenario import read_scenario
from devcore.server import serve
from tests.conftest import CLARIFY_TOKEN
from tests.support.processes import (
    ROOT,
    BotProcess,
    Processes,
    free_port,
    healthy,
    merged,
    plain_env,
    serve_settings,
    toml,
    wait_until,
)
from tests.support.rigs import new_clarification
from tests.teams.fakegraph import MAILBOX_PERMISSION, MESSAGE, SECRET, FakeGraph, dt

APP_ID = "0c5e8a1d-7b7e-4f3a-9d3c-2b9a1f000001"
ACME_AAD = "5f3c1a2b-7d4e-4c1a-9b2e-0a11ce000001"
SARAH = "8f1c2d3e-0000-4000-8000-00000000a001"  # her Teams identity in the acme scenario
DEV_TOKEN = "dev-admin-token-local"
ACTION_KEY = "teams away processes: action signing key"

pytestmark = pytest.mark.slow  # `clarify-bot serve` processes


@dataclass
class Served:
    bot: BotProcess
    graph: FakeGraph
    dev: DevCoreClient

    async def readyz(self) -> tuple[int, dict[str, Any]]:
        async with aiohttp.ClientSession() as http, http.get(f"{self.bot.url}/readyz") as got:
            return got.status, await got.json()


def bot_settings(*, core: str, port: int, graph: FakeGraph) -> dict[str, Any]:
    """The bot on Teams alone with an app id (not anonymous: Graph needs the app's token)."""
    return merged(serve_settings(core=core, port=port, slack_api="", workspaces=False), {
        "slack": None,
        "clarify": {"channels": "teams"},
        "worker": {"poll_interval_seconds": 0.05},
        "log": {"level": "info"},
        "teams": {"app_id": APP_ID, "app_tenant_id": ACME_AAD,
                  # no connector host: whatever the worker would send is refused unsent
                  "service_url": "https://127.0.0.1:9/teams/",
                  "graph_url": graph.graph_url, "login_url": graph.login_url,
                  "tenants": [{"aad_tenant_id": ACME_AAD, "tenant": "acme"}]},
    })


@pytest.fixture
async def served(processes: Processes) -> AsyncIterator[Any]:
    """Start core, fake Graph and the bot; the test sets the fake up first (``prepare``)."""
    data = read_scenario("acme")
    data["clarifications"] = []
    core = ReferenceCore(clock=ManualClock(datetime.now(UTC)))
    load_scenario(core, data)
    async with serve(core) as core_url, FakeGraph(app_id=APP_ID) as graph, \
            DevCoreClient(base_url=core_url, token=DEV_TOKEN) as dev:
        async def start() -> Served:
            port = free_port()
            config = processes.tmp_path / "serve.toml"
            config.write_text(toml(bot_settings(core=core_url, port=port, graph=graph)))
            stderr = processes.tmp_path / "serve.stderr"
            process = await processes.spawn(
                sys.executable, "-m", "tests.teams.away_serve", "serve", "--config",
                str(config), "--role", "all", stderr=stderr.open("wb"), cwd=ROOT,
                env=plain_env(PYTHONPATH=str(ROOT), CLARIFY_BOT_CORE_TOKEN=CLARIFY_TOKEN,
                              CLARIFY_BOT_ACTION_SIGNING_KEY=ACTION_KEY,
                              TEAMS_APP_PASSWORD=SECRET))
            bot = BotProcess(process, port, stderr)

            def died() -> str | None:
                code = process.returncode
                return None if code is None else f"serve exited {code}: {stderr.read_text()}"

            await wait_until(lambda: healthy(bot.url), "the bot to listen", 30, unless=died)
            return Served(bot=bot, graph=graph, dev=dev)

        yield graph, start


async def test_serve_says_a_missing_graph_permission_once_and_stays_ready(served: Any) -> None:
    """acme's admin consented MailboxSettings.Read but not Presence.Read.All: at start-up the
    bot asks the tenant's Graph token once, logs one error naming Presence.Read.All (value-free)
    and shows it in /readyz, which stays ready (200)."""
    graph, start = served
    graph.grant(ACME_AAD, MAILBOX_PERMISSION)
    it = await start()
    await wait_until(lambda: it.bot.logged("teams.away_permission_missing"),
                     "the start-up check of the Graph permissions", 30)
    status, body = await it.readyz()
    assert status == 200, body
    assert body["teams_away"] == {"acme": {"presence": "missing: Presence.Read.All",
                                           "auto_reply": "ok"}}
    [line] = it.bot.logged("teams.away_permission_missing")
    assert (line["level"], line["permission"], line["tenant"]) == (
        "error", "Presence.Read.All", "acme")
    assert [(c.tenant, c.status) for c in graph.of("token")] == [(ACME_AAD, 200)]
    assert SECRET not in it.bot.stderr.read_text()


async def test_serve_says_a_tenant_that_gives_the_app_no_graph_token(served: Any) -> None:
    """The identity platform refuses the app in acme (not consented, or a wrong secret): one
    error naming TEAMS_APP_PASSWORD and the AADSTS number; /readyz says no_token, still
    ready."""
    graph, start = served
    graph.refused.add(ACME_AAD)
    it = await start()
    await wait_until(lambda: it.bot.logged("teams.graph_token_refused"), "the refusal", 30)
    status, body = await it.readyz()
    assert status == 200, body
    assert body["teams_away"] == {"acme": {"presence": "no_token", "auto_reply": "no_token"}}
    [line] = it.bot.logged("teams.graph_token_refused")
    assert (line["level"], line["code"], line["setting"]) == (
        "error", "invalid_client AADSTS7000215", "TEAMS_APP_PASSWORD")


ENGINE_ASKS = importlib.util.find_spec("bot.engine.away") is not None


@pytest.mark.skipif(not ENGINE_ASKS, reason="the engine's side of away-aware asking "
                    "(bot.engine.away) is not merged yet: nothing asks the channel until it is")
async def test_serve_reads_from_graph_that_a_person_asked_is_away_until_their_replies_end(
        served: Any) -> None:
    """Sarah's automatic replies run from yesterday to a week from now (Pacific time, as
    Outlook names it): when the engine asks about her for a question, the served process reads
    it from Graph and says so value-free (``teams.away_read source=teams_auto_reply
    until_known=true``); her message text is in no log line."""
    graph, start = served
    now = datetime.now(UTC)
    graph.set_presence(SARAH, "OutOfOffice", availability="Offline", out_of_office=True)
    graph.set_replies(SARAH, "scheduled",
                      start=dt(f"{(now - timedelta(days=1)):%Y-%m-%dT%H:%M:%S}",
                               "Pacific Standard Time"),
                      end=dt(f"{(now + timedelta(days=7)):%Y-%m-%dT%H:%M:%S}",
                             "Pacific Standard Time"))
    it = await start()
    await new_clarification(it.dev, authority={"authored_by": ["p-sarah"]})

    def read_away() -> list[dict[str, Any]]:
        return [line for line in it.bot.logged("teams.away_read")
                if line.get("source") == "teams_auto_reply"]

    [line] = (await wait_until(read_away, "the bot to read that Sarah is away", 30))[:1]
    assert line["until_known"] is True
    assert graph.of("auto_replies", SARAH) and graph.of("presence", SARAH)
    assert MESSAGE not in it.bot.stderr.read_text()
