"""`clarify-bot serve` as a real process: SIGTERM, roles, ports, readiness and its logs.

Each test runs the reference core (`clarify-bot devcore`) and the bot (`clarify-bot serve`,
memory store) as subprocesses; the fake Slack Web API runs in the test's own event loop, and the
test signs clicks as Slack would. Every line the bot writes to stderr must parse as JSON.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from slack_sdk.signature import SignatureVerifier

from devslack import APP_TOKEN, BOT_TOKEN, LocalSlack
from devslack.payloads import form_body
from tests.bot.test_service import SECRETS, settings
from tests.conftest import CLARIFY_TOKEN
from tests.slack.conftest import fake_slack  # noqa: F401 (a fixture, used by `slack`)
from tests.support.processes import BotProcess as Bot
from tests.support.processes import Processes, free_port, plain_env, port_open, wait_until
from tests.support.processes import healthy as bot_healthy

pytestmark = pytest.mark.slow  # `clarify-bot serve` and `devcore` processes

SIGNING_SECRET = SECRETS["SLACK_SIGNING_SECRET"]
EXIT_WITHIN = 10.0  # seconds from SIGTERM to exit, as platforms allow before SIGKILL


@pytest.fixture
def slack(fake_slack: LocalSlack) -> LocalSlack:  # noqa: F811
    return fake_slack


@pytest.fixture
async def slow_core(devcore_url: str) -> AsyncIterator[str]:
    """A proxy to the core that holds every answer for 1.5 s (a slow core), so work is still
    in flight when SIGTERM arrives."""
    async def forward(request: web.Request) -> web.Response:
        if request.path.endswith("/answer"):
            await asyncio.sleep(1.5)
        async with aiohttp.ClientSession() as http, http.request(
                request.method, devcore_url + request.path_qs, data=await request.read(),
                headers={k: v for k, v in request.headers.items() if k.lower() != "host"}) as got:
            return web.Response(status=got.status, body=await got.read(),
                                content_type=got.content_type)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", forward)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


@pytest.fixture
async def start(processes: Processes) -> Any:
    """Start `clarify-bot serve` with settings made from the arguments; killed after the test."""
    async def run(*, core: str, slack: LocalSlack, role: str = "all", mode: str = "http",
                  port: int | None = None, level: str = "info", env: dict[str, str] | None = None
                  ) -> Bot:
        return await processes.serve(
            settings(core=core, port=port or free_port(), slack_api=slack.url,
                     log={"level": level}, slack={"mode": mode}),
            role=role, stdout=True,  # the audit sink's (stdout) lines
            env=plain_env(**{**SECRETS, "SLACK_APP_TOKEN": APP_TOKEN, **(env or {})}))

    return run


async def healthy(bot: Bot) -> bool:
    return await bot_healthy(bot.url)


def signed_click(slack: LocalSlack, user_id: str) -> tuple[bytes, dict[str, str]]:
    """The first answer button of the newest card in ``user_id``'s DM, as Slack would post it
    (the stand-in builds and signs it)."""
    card = slack.dm_of(user_id)[-1]
    payload = slack.block_actions(user_id, channel=card.channel, ts=card.ts,
                                  action_id="clarify.answer.0")
    body = form_body(payload)
    slack.signing_secret = SIGNING_SECRET
    return body, {**slack.signed_headers(body),
                  "Content-Type": "application/x-www-form-urlencoded"}


async def responses_at_core(core: str, clarification_id: str) -> list[tuple[str, int | None]]:
    from bot.core.client import CoreClient

    async with CoreClient(base_url=core, token=CLARIFY_TOKEN) as client:
        c = await client.get_clarification(clarification_id=clarification_id)
        return [(r.responder, r.answer_index) for r in c.responses]


def clarification_of(slack: LocalSlack, user_id: str) -> str:
    """The clarification of the newest card in the person's DM (from its message metadata)."""
    metadata = slack.dm_of(user_id)[-1].metadata or {}
    return str(metadata["event_payload"]["delivery"]).split("|")[0]


# ---------------------------------------------------------------- HTTP mode


async def test_sigterm_finishes_an_acknowledged_answer_and_exits_in_time(
        start: Any, slack: LocalSlack, slow_core: str, devcore_url: str) -> None:
    """SIGTERM right after a click was acknowledged (its answer still on its way to a slow
    core): the port closes, the answer reaches the core, the process exits 0 within 10 s, and
    every stderr line is one JSON object."""
    bot = await start(core=slow_core, slack=slack, level="debug")
    await wait_until(lambda: slack.dm_of("U0SARAH"), "the first card")
    body, headers = signed_click(slack, "U0SARAH")
    async with aiohttp.ClientSession() as http, http.post(
            f"{bot.url}/slack/events", data=body, headers=headers) as acked:
        assert acked.status == 200
    code, took = await bot.terminate()
    assert code == 0 and took < EXIT_WITHIN, (code, took)
    assert await responses_at_core(devcore_url, clarification_of(slack, "U0SARAH")) == [
        ("p-sarah", 0)]
    assert not port_open(bot.port)
    events = bot.events()
    assert events.index("service.stopping") < events.index("service.stopped")
    assert "worker.delivery_paused" not in events


async def test_serve_logs_only_json_lines_whatever_the_libraries_log(
        start: Any, slack: LocalSlack, devcore_url: str) -> None:
    """At debug level, bolt's unhandled-request warning, aiohttp's bad-request line, asyncio and
    refused requests all come out as one JSON object per line; aiohttp's is a refusal with
    status and kind, without the traceback whose message quotes the bytes it could not parse."""
    bot = await start(core=devcore_url, slack=slack, level="debug")
    await wait_until(lambda: healthy(bot), "the bot to listen")
    reader, writer = await asyncio.open_connection("127.0.0.1", bot.port)
    writer.write(b"NOT HTTP AT ALL\r\n\r\n")
    await writer.drain()
    await reader.read()
    writer.close()
    stamp = str(int(time.time()))
    closed = b"payload=" + json.dumps({"type": "view_closed", "user": {"id": "U0SARAH"}}).encode()
    signature = SignatureVerifier(SIGNING_SECRET).generate_signature(timestamp=stamp, body=closed)
    async with aiohttp.ClientSession() as http:
        async with http.post(f"{bot.url}/slack/events", data=b"payload=%7B%7D") as unsigned:
            assert unsigned.status == 401
        async with http.post(f"{bot.url}/slack/events", data=closed, headers={
                "X-Slack-Request-Timestamp": stamp, "X-Slack-Signature": signature or "",
                "Content-Type": "application/x-www-form-urlencoded"}) as acknowledged:
            assert acknowledged.status == 200
    code, _ = await bot.terminate()
    assert code == 0
    lines = bot.lines()  # raises if any line is not JSON
    loggers = {line.get("logger", "") for line in lines}
    assert {"asyncio", "aiohttp.server"} <= loggers and any(n.startswith("slack_bolt")
                                                            for n in loggers)
    unparsed = [line for line in lines if line["logger"] == "aiohttp.server"]
    assert [(x["event"], x["status"]) for x in unparsed] == [("http.request_refused", 400)]
    assert "exception" not in unparsed[0] and "NOT HTTP" not in json.dumps(lines)
    refused = [line for line in lines if line["event"] == "slack.request_refused"]
    assert [(r["status"], r["reason"]) for r in refused] == [(401, "invalid_signature")]
    text = bot.stderr.read_text()
    assert BOT_TOKEN not in text and SIGNING_SECRET not in text and CLARIFY_TOKEN not in text


async def test_worker_role_opens_no_port(start: Any, slack: LocalSlack, devcore_url: str
                                         ) -> None:
    """`--role worker` delivers cards but listens on nothing; SIGTERM still exits in time."""
    bot = await start(core=devcore_url, slack=slack, role="worker")
    await wait_until(lambda: slack.dm_of("U0SARAH"), "the worker's first card")
    assert not port_open(bot.port)
    assert "service.listening" not in bot.events()
    # worker.nice (default 10): background work yields CPU to a web process on the same host
    assert os.getpriority(os.PRIO_PROCESS, bot.process.pid) == min(19, os.nice(0) + 10)
    code, took = await bot.terminate()
    assert code == 0 and took < EXIT_WITHIN


async def on_a_taken_port(launch: Any) -> tuple[dict[str, Any], Bot]:
    """``launch(port)`` starts a bot told to listen on a port already taken: it must exit 1
    with one error line, service.cannot_listen naming that port; that line and the bot."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        bot = await launch(port)
        code = await asyncio.wait_for(bot.process.wait(), 30)
    assert code == 1
    errors = [line for line in bot.lines() if line["level"] in ("error", "critical")]
    assert [(e["event"], e["port"]) for e in errors] == [("service.cannot_listen", port)]
    return errors[0], bot


async def test_port_in_use_is_one_clear_line_and_a_failure_exit(
        start: Any, slack: LocalSlack, devcore_url: str) -> None:
    """A port already taken: exit code 1, one JSON error line naming the port, no traceback."""
    error, bot = await on_a_taken_port(
        lambda port: start(core=devcore_url, slack=slack, role="web", port=port))
    assert "in use" in error["error"] and "PORT" in error["error"]
    assert "Traceback" not in bot.stderr.read_text()


async def test_platform_port_is_honoured(start: Any, slack: LocalSlack, devcore_url: str
                                         ) -> None:
    """$PORT, as Heroku-like platforms set it, is the port the bot listens on."""
    port = free_port()
    bot = await start(core=devcore_url, slack=slack, role="web", env={"PORT": str(port)})
    bot.port, bot.url = port, f"http://127.0.0.1:{port}"
    await wait_until(lambda: healthy(bot), "the bot on $PORT")
    assert os.getpriority(os.PRIO_PROCESS, bot.process.pid) == os.nice(0)  # web: not lowered
    code, _ = await bot.terminate()
    assert code == 0


# ---------------------------------------------------------------- readiness and credentials


async def test_readyz_names_the_core_extensions_in_use(
        start: Any, slack: LocalSlack, devcore_url: str, contract: str) -> None:
    """/readyz says which extensions of the contract the bot found the core offering, and how
    it found out: every one from the full core's document, none of the service's from the
    baseline core's probes; the log says the same once."""
    bot = await start(core=devcore_url, slack=slack)
    await wait_until(lambda: healthy(bot), "the bot to listen")
    async with aiohttp.ClientSession() as http, http.get(f"{bot.url}/readyz") as ready:
        core = (await ready.json())["core"]
    if contract == "full":
        assert core["source"] == "openapi" and "expedite" in core["extensions"]
    else:
        assert core["source"] == "probes"
        assert not {"expedite", "people-batch", "reports", "attention"} & set(core["extensions"])
    found = [line for line in bot.lines() if line["event"] == "core.extensions"]
    assert found and found[0]["offered"] == core["extensions"]
    code, _ = await bot.terminate()
    assert code == 0


async def test_readyz_names_a_rejected_slack_token_and_the_worker_pauses(
        start: Any, slack: LocalSlack, devcore_url: str) -> None:
    """With Slack refusing the bot token, /readyz is 503 naming SLACK_BOT_TOKEN, the log says
    which setting to fix, and no card is attempted, so nobody is failed."""
    slack.tokens = frozenset({"xoxb-some-other-token"})
    bot = await start(core=devcore_url, slack=slack)
    await wait_until(lambda: healthy(bot), "the bot to listen")
    async with aiohttp.ClientSession() as http, http.get(f"{bot.url}/readyz") as ready:
        assert ready.status == 503
        assert (await ready.json())["checks"]["slack"] == "rejected: SLACK_BOT_TOKEN"
    await wait_until(lambda: "worker.delivery_paused" in bot.events(), "the worker to pause")
    assert not slack.calls_to("chat.postMessage") and not slack.calls_to("conversations.open")
    paused = next(line for line in bot.lines() if line["event"] == "worker.delivery_paused")
    assert paused["setting"] == "SLACK_BOT_TOKEN"
    code, took = await bot.terminate()
    assert code == 0 and took < EXIT_WITHIN


async def test_readyz_names_a_rejected_core_token(start: Any, slack: LocalSlack,
                                                  devcore_url: str) -> None:
    """A core token the core rejects (401) is named in /readyz and in the log."""
    bot = await start(core=devcore_url, slack=slack, env={"CLARIFY_BOT_CORE_TOKEN": "wrong"})
    await wait_until(lambda: healthy(bot), "the bot to listen")
    async with aiohttp.ClientSession() as http, http.get(f"{bot.url}/readyz") as ready:
        assert ready.status == 503
        assert (await ready.json())["checks"]["core"] == "rejected: CLARIFY_BOT_CORE_TOKEN"
    await wait_until(lambda: "worker.core_token_rejected" in bot.events(), "the worker's log")
    assert "wrong" not in bot.stderr.read_text().replace("wrong_", "")
    await bot.terminate()


# ---------------------------------------------------------------- Socket Mode


@pytest.fixture
async def silent_server() -> AsyncIterator[tuple[str, list[object]]]:
    """A TCP server that accepts connections and never answers (a WebSocket that hangs)."""
    accepted: list[object] = []

    async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(writer)
        await reader.read()

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    try:
        yield f"ws://127.0.0.1:{server.sockets[0].getsockname()[1]}/link", accepted
    finally:
        server.close()
        for writer in accepted:
            writer.close()  # type: ignore[attr-defined]


async def test_sigterm_while_socket_mode_hangs_connecting(
        start: Any, slack: LocalSlack, devcore_url: str,
        silent_server: tuple[str, list[object]]) -> None:
    """Socket Mode whose WebSocket never answers: SIGTERM still exits 0 within 10 s."""
    slack.socket_url, accepted = silent_server
    bot = await start(core=devcore_url, slack=slack, mode="socket")
    await wait_until(lambda: accepted, "the bot to try the WebSocket")
    code, took = await bot.terminate()
    assert code == 0 and took < EXIT_WITHIN, (code, took)
    bot.lines()


async def test_sigterm_while_socket_mode_is_refused_and_retrying(
        start: Any, slack: LocalSlack, devcore_url: str) -> None:
    """Socket Mode whose WebSocket URL refuses connections (slack_sdk retrying, logging each
    failure with its traceback): SIGTERM exits 0 within 10 s; the log stays JSON."""
    slack.socket_url = f"ws://127.0.0.1:{free_port()}/link"
    bot = await start(core=devcore_url, slack=slack, mode="socket")
    await wait_until(lambda: any("exception" in line for line in bot.lines()
                            if line.get("logger", "").startswith(("slack_sdk", "slack_bolt"))),
                "a logged connection failure")
    code, took = await bot.terminate()
    assert code == 0 and took < EXIT_WITHIN, (code, took)
    assert slack.calls_to("apps.connections.open")
