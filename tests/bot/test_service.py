"""The production wiring: the `serve` service against a reference core and a fake Slack."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from bot.settings import SettingsError, load_settings
from clarify_bot.app import open_service
from devcore.core import ReferenceCore
from devslack import BOT_TOKEN, LocalSlack
from tests.conftest import CLARIFY_TOKEN
from tests.support.processes import free_port, merged, serve_settings, toml, wait_until

WORKER = {"poll_interval_seconds": 0.05, "lease_seconds": 60, "heartbeat_seconds": 20}
SECRETS = {"CLARIFY_BOT_CORE_TOKEN": CLARIFY_TOKEN, "SLACK_BOT_TOKEN": BOT_TOKEN,
           "SLACK_SIGNING_SECRET": "service-test-signing-secret",
           "CLARIFY_BOT_ACTION_SIGNING_KEY": "service-test-action-key-0123456789abcdef"}


def settings(*, core: str, port: int, slack_api: str, workspaces: bool = True,
             oauth: dict[str, Any] | None = None, **tables: Any) -> dict[str, Any]:
    """The service's settings in these tests: acme's workspace on the memory store, a quick
    worker, working hours off; ``tables`` merged in (tests/support/processes.py)."""
    return merged(serve_settings(core=core, port=port, slack_api=slack_api, worker=WORKER,
                                 workspaces=workspaces, oauth=oauth), tables)


def config_text(**given: Any) -> str:
    return toml(settings(**given))


async def test_service_serves_health_metrics_and_delivers(
    tmp_path: Path, core: ReferenceCore, core_url: str
) -> None:
    """The assembled service answers /healthz and /readyz; its worker DMs the first candidate."""
    async with LocalSlack() as slack:
        for user in ("U0SARAH", "U0AHMED", "U0MARIA", "U0TOM", "U0JONAS", "U0PRIYA"):
            slack.add_user(user)
        port = free_port()
        config = tmp_path / "clarify-bot.toml"
        config.write_text(config_text(core=core_url, port=port, slack_api=slack.url))
        settings = load_settings(config, environ=SECRETS)
        async with open_service(settings) as service:
            running = asyncio.create_task(service.run(role="all"))
            try:
                async with aiohttp.ClientSession() as http:
                    with contextlib.suppress(AssertionError):  # asserted below
                        await wait_until(lambda: slack.dm_of("U0SARAH"), "the first card", 5)
                    health = await http.get(f"http://127.0.0.1:{port}/healthz")
                    ready = await http.get(f"http://127.0.0.1:{port}/readyz")
                    scraped = await http.get(f"http://127.0.0.1:{port}/metrics")
                    metrics, metrics_type = await scraped.text(), scraped.headers["Content-Type"]
                    unsigned = await http.post(f"http://127.0.0.1:{port}/slack/events",
                                               data=b"payload=%7B%7D")
            finally:
                service.stop()
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(running, 10)
        assert health.status == 200 and ready.status == 200
        assert unsigned.status == 401
        assert slack.dm_of("U0SARAH"), "the critical question reached its first candidate"
        families = {f.name: f for f in text_string_to_metric_families(metrics)}
        sent = {tuple(sorted(s.labels.items())): s.value
                for s in families["clarify_deliveries"].samples}
        assert sent[(("kind", "question"), ("platform", "slack"))] >= 1
        assert families["clarify_dependency_up"].type == "gauge"
        assert {s.labels["dependency"]: s.value for s in families["clarify_dependency_up"].samples
                } == {"store": 1, "core": 1, "slack": 1}
        assert metrics_type.startswith("text/plain; version=0.0.4")
        assert CLARIFY_TOKEN not in metrics and BOT_TOKEN not in metrics


def test_service_refuses_to_start_without_its_secrets(tmp_path: Path) -> None:
    """Missing secrets fail start-up naming each variable, before anything is opened."""
    config = tmp_path / "c.toml"
    config.write_text('[store]\nbackend = "memory"\n[clarify]\nchannels = "slack"\n')
    settings = load_settings(config, environ={})

    async def start() -> None:
        async with open_service(settings):
            pass

    with pytest.raises(SettingsError) as caught:
        asyncio.run(start())
    assert "SLACK_SIGNING_SECRET" in str(caught.value)
    assert "CLARIFY_BOT_CORE_TOKEN" in str(caught.value)


async def test_socket_mode_is_chosen_by_configuration(tmp_path: Path, core_url: str) -> None:
    """slack.mode = "socket": no /slack/events route, a Socket Mode handler with the app token."""
    from slack_bolt.adapter.socket_mode.aiohttp import AsyncSocketModeHandler

    config = tmp_path / "socket.toml"
    config.write_text(config_text(core=core_url, port=free_port(), slack_api="http://127.0.0.1:9/api/",
                                  slack={"mode": "socket"}))
    environ = {k: v for k, v in SECRETS.items() if k != "SLACK_SIGNING_SECRET"}
    environ["SLACK_APP_TOKEN"] = "xapp-1-A0CLARIFY-test-token"
    settings = load_settings(config, environ=environ)
    async with open_service(settings) as service:
        assert isinstance(service.hosted[0].socket, AsyncSocketModeHandler)  # type: ignore[attr-defined]
        paths = {r.resource.canonical for r in service.web_app.router.routes() if r.resource}
        assert "/slack/events" not in paths and "/healthz" in paths
