"""The Teams app installed through Microsoft Graph, in ``clarify-bot serve`` as a real process:
the reference core served from the test's event loop, the fake Bot Connector (which opens no
chat with Sarah until the app is installed for her) and the fake Graph (whose install marks it
installed at the connector), both over real HTTP on 127.0.0.1. Only msal's connector token is
stood in for (tests/teams/away_serve.py), and the fake connector's origin allowed beside
Microsoft's hosts.

docs/teams.md, "Installing the app for people", names this test.
"""

from __future__ import annotations

import asyncio
import sys
from datetime import UTC, datetime
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
from tests.teams.away_serve import CONNECTOR_TOKEN
from tests.teams.fakeconnector import FakeConnector
from tests.teams.fakegraph import SECRET, FakeGraph
from tests.teams.test_teams_away_processes import ACME_AAD, APP_ID, DEV_TOKEN, SARAH

CATALOG = "3e0d5a7c-1b2f-4c3d-8e9f-0a1b2c3d4e5f"
ACTION_KEY = "teams installs processes: action signing key"

pytestmark = pytest.mark.slow  # `clarify-bot serve` processes


async def test_serve_installs_the_app_for_a_person_with_no_conversation_and_asks_once(
        processes: Processes) -> None:
    data = read_scenario("acme")
    data["clarifications"] = []
    core = ReferenceCore(clock=ManualClock(datetime.now(UTC)))
    load_scenario(core, data)
    async with serve(core) as core_url, FakeGraph(app_id=APP_ID) as graph, \
            FakeConnector(token=CONNECTOR_TOKEN, bot_id=f"28:{APP_ID}") as connector, \
            DevCoreClient(base_url=core_url, token=DEV_TOKEN) as dev:
        graph.on_install = connector.install  # the install reaches Teams at once
        port = free_port()
        config = processes.tmp_path / "serve.toml"
        config.write_text(toml(merged(
            serve_settings(core=core_url, port=port, slack_api="", workspaces=False), {
                "slack": None,
                "clarify": {"channels": "teams"},
                "worker": {"poll_interval_seconds": 0.05},
                "log": {"level": "info"},
                "teams": {"app_id": APP_ID, "app_tenant_id": ACME_AAD,
                          "service_url": connector.url, "read_away": False,
                          "catalog_app_id": CATALOG, "graph_url": graph.graph_url,
                          "login_url": graph.login_url,
                          "tenants": [{"aad_tenant_id": ACME_AAD, "tenant": "acme"}]}})))
        stderr = processes.tmp_path / "serve.stderr"
        process = await processes.spawn(
            sys.executable, "-m", "tests.teams.away_serve", "serve", "--config", str(config),
            "--role", "all", stderr=stderr.open("wb"), cwd=ROOT,
            env=plain_env(PYTHONPATH=str(ROOT), CLARIFY_BOT_CORE_TOKEN=CLARIFY_TOKEN,
                          CLARIFY_BOT_ACTION_SIGNING_KEY=ACTION_KEY,
                          TEAMS_APP_PASSWORD=SECRET, CLARIFY_TEST_CONNECTOR=connector.origin))
        bot = BotProcess(process, port, stderr)

        def died() -> str | None:
            code = process.returncode
            return None if code is None else f"serve exited {code}: {stderr.read_text()}"

        await wait_until(lambda: healthy(bot.url), "the bot to listen", 30, unless=died)
        async with aiohttp.ClientSession() as http, http.get(f"{bot.url}/readyz") as got:
            ready: dict[str, Any] = await got.json()
        assert ready["teams_install"] in ({"acme": "ok"}, {"acme": "unchecked"}), ready

        await new_clarification(dev, authority={"authored_by": ["p-sarah"]})
        await wait_until(lambda: connector.to(SARAH), "Sarah's card", 30, unless=died)
        # a few more polls of the worker: still one card, one install
        await wait_until(lambda: bot.logged("teams.app_installed"), "the install's log", 10)
        await asyncio.sleep(1.0)  # real time: the worker process polls on its own meanwhile
        assert len(connector.to(SARAH)) == 1
        assert [c.status for c in graph.of("install", SARAH)] == [201]
        assert [c.status for c in connector.of("create")][:1] == [403]
        assert SECRET not in stderr.read_text()

