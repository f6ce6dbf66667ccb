"""What a newcomer sees in the first hour, as processes: signals that tell the truth.

`clarify-bot serve` against the fake Slack and the reference core (tests/bot/test_serve.py's
fixtures). Socket Mode with a wrong app-level token is one log line naming SLACK_APP_TOKEN and a
503 from /readyz, not a retried traceback behind a 200; a working Socket Mode connection makes
the check `ok`; a core that cannot be reached is named by its setting and address; an audit event
is written once (the sink), not once more as a log line; bolt's warning about the token it does
not use never appears; a worker with `worker.health_port` serves probes and metrics, and nothing
else, there.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from devslack import APP_TOKEN, LocalSlack
from tests.bot.test_serve import (
    EXIT_WITHIN,
    healthy,
    on_a_taken_port,
    slack,
    start,
)
from tests.slack.conftest import fake_slack
from tests.support.processes import free_port, wait_until

pytestmark = pytest.mark.slow  # `clarify-bot serve` and `devcore` processes

FIXTURES = (start, slack, fake_slack)  # test_serve's, shared (fake_slack: slack's)


async def readiness(url: str) -> tuple[int, dict[str, str]]:
    async with aiohttp.ClientSession() as http, http.get(f"{url}/readyz") as ready:
        return ready.status, (await ready.json())["checks"]


@pytest.fixture
async def socket_server() -> AsyncIterator[tuple[str, list[web.WebSocketResponse]]]:
    """A WebSocket endpoint as Slack's Socket Mode is: it says hello and stays open."""
    opened: list[web.WebSocketResponse] = []

    async def link(request: web.Request) -> web.StreamResponse:
        if opened and opened[0].closed:  # once dropped, Slack is away: reconnecting fails
            return web.Response(status=503)
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        opened.append(ws)
        await ws.send_str(json.dumps({"type": "hello", "num_connections": 1}))
        async for _ in ws:
            pass
        return ws

    app = web.Application()
    app.router.add_get("/link", link)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        yield f"ws://127.0.0.1:{runner.addresses[0][1]}/link", opened
    finally:
        for ws in opened:
            await ws.close()
        await runner.cleanup()


async def test_a_wrong_app_token_is_one_line_and_an_unready_bot(
        start: Any, slack: LocalSlack, devcore_url: str,
        socket_server: tuple[str, list[web.WebSocketResponse]]) -> None:
    slack.socket_url = socket_server[0]
    bot = await start(core=devcore_url, slack=slack, mode="socket",
                      env={"SLACK_APP_TOKEN": "xapp-1-A0FAKEAPP-not-the-token"})
    await wait_until(lambda: healthy(bot), "the bot to listen")

    async def rejected() -> bool:
        status, checks = await readiness(bot.url)
        return status == 503 and checks.get("slack_socket") == "rejected: SLACK_APP_TOKEN"

    await wait_until(rejected, "/readyz to name SLACK_APP_TOKEN")
    assert (await readiness(bot.url))[1]["slack"] == "ok"  # the bot token itself is fine
    code, took = await bot.terminate()
    assert code == 0 and took < EXIT_WITHIN
    lines = bot.lines()
    said = [line for line in lines if line["event"] == "slack.socket_token_rejected"]
    assert [(x["setting"], x["error"], x["level"]) for x in said] == [
        ("SLACK_APP_TOKEN", "invalid_auth", "error")]
    assert not socket_server[1]  # nothing ever connected
    assert len(slack.calls_to("apps.connections.open")) == 1  # not retried
    assert not [line for line in lines if "exception" in line], "a traceback was logged"
    text = bot.stderr.read_text()
    assert "not-the-token" not in text and "Traceback" not in text
    assert "will be unused" not in text  # bolt's warning about the token it does not use


async def test_socket_mode_is_ready_once_connected(
        start: Any, slack: LocalSlack, devcore_url: str,
        socket_server: tuple[str, list[web.WebSocketResponse]]) -> None:
    slack.socket_url = socket_server[0]
    bot = await start(core=devcore_url, slack=slack, mode="socket")
    await wait_until(lambda: healthy(bot), "the bot to listen")

    async def ready() -> bool:
        status, checks = await readiness(bot.url)
        return status == 200 and checks.get("slack_socket") == "ok"

    # asked before the connection is open, /readyz would keep "unavailable" for 5 s
    await wait_until(lambda: socket_server[1], "the Socket Mode connection")
    await wait_until(ready, "the Socket Mode check to pass")
    assert socket_server[1]
    await socket_server[1][0].close()  # Slack drops the connection: not ready until back

    async def dropped() -> bool:
        return (await readiness(bot.url))[1].get("slack_socket") != "ok"

    await wait_until(dropped, "the check to notice the dropped connection", 15)
    code, _ = await bot.terminate()
    assert code == 0
    assert slack.calls_to("apps.connections.open")
    assert APP_TOKEN not in bot.stderr.read_text()


async def test_an_unreachable_core_is_named_by_setting_and_address(
        start: Any, slack: LocalSlack) -> None:
    away = f"http://127.0.0.1:{free_port()}"
    bot = await start(core=away, slack=slack)
    await wait_until(lambda: "worker.poll_failed" in bot.events(), "the worker's poll to fail")
    code, _ = await bot.terminate()
    assert code == 0
    lines = bot.lines()
    check = next(x for x in lines if x["event"] == "service.check_failed" and x["check"] == "core")
    assert (check["setting"], check["address"]) == ("core.url", away)
    assert check["result"] in ("unavailable", "timeout")  # refused, then retried past 1.5 s
    polls = [x for x in lines if x["event"] == "worker.poll_failed"]
    assert (polls[0]["setting"], polls[0]["url"], polls[0]["failures"]) == ("core.url", away, 1)


async def test_an_audit_event_is_written_once(start: Any, slack: LocalSlack,
                                              devcore_url: str) -> None:
    """The audit sink (stdout) has each event; the log (stderr) does not repeat it."""
    bot = await start(core=devcore_url, slack=slack)
    await wait_until(lambda: slack.dm_of("U0SARAH"), "the first card")
    code, _ = await bot.terminate()
    assert code == 0
    audit = [json.loads(x) for x in bot.stderr.with_suffix(".stdout").read_text().splitlines()]
    assert any(x["type"] == "delivery" for x in audit), [x["type"] for x in audit]
    assert len({x["event_id"] for x in audit}) == len(audit)
    assert "audit" not in bot.events()
    assert "will be unused" not in bot.stderr.read_text()


async def test_a_worker_health_port_serves_probes_and_metrics_only(
        start: Any, slack: LocalSlack, devcore_url: str) -> None:
    health = free_port()
    bot = await start(core=devcore_url, slack=slack, role="worker",
                      env={"CLARIFY_BOT_WORKER__HEALTH_PORT": str(health),
                           "CLARIFY_BOT_COMMIT": "feedc0ffee12"})
    url = f"http://127.0.0.1:{health}"
    bot.url = url
    await wait_until(lambda: healthy(bot), "the worker's health port")
    await wait_until(lambda: slack.dm_of("U0SARAH"), "the worker's first card")
    async with aiohttp.ClientSession() as http:
        async with http.get(f"{url}/readyz") as ready:
            assert ready.status == 200 and (await ready.json())["status"] == "ok"
        async with http.get(f"{url}/metrics") as metrics:
            text = await metrics.text()
        async with http.post(f"{url}/slack/events", data=b"payload=%7B%7D") as callback:
            assert callback.status == 404  # callbacks are the web role's
    assert 'clarify_build_info{commit="feedc0ffee12",version="' in text
    assert "clarify_deliveries_total" in text
    listening = [x for x in bot.lines() if x["event"] == "service.listening"]
    assert [(x["port"], x["role"]) for x in listening] == [(health, "worker")]
    code, took = await bot.terminate()
    assert code == 0 and took < EXIT_WITHIN


async def test_a_busy_worker_health_port_is_one_line_naming_the_setting(
        start: Any, slack: LocalSlack, devcore_url: str) -> None:
    error, _ = await on_a_taken_port(lambda port: start(
        core=devcore_url, slack=slack, role="worker",
        env={"CLARIFY_BOT_WORKER__HEALTH_PORT": str(port)}))
    assert "(set worker.health_port)" in error["error"]
