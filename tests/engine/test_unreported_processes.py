"""A worker SIGKILLed after sending a card and before its job's reports reached the core, as real
processes: `clarify-bot serve --role worker` and `--role web` on one Redis prefix, the reference
core behind a proxy (in the test's event loop) that holds every delivery report the first worker
sends, and the local Slack stand-in. Ahmed answers the card; a second worker forwards his
answer and, a lease after the card was sent, reports the card the first one never did (its
report was under way when the worker died): the core's trail shows him asked once,
beside his answer, on the full contract and on the baseline's (which cannot deduplicate
reports). docs/delivery.md, "Crash recovery: nobody vanishes"."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from bot.core.client import CoreClient
from bot.core.models import DeliveryKind
from bot.store.redis import RedisStore
from devcore.client import DevCoreClient
from devslack import APP_TOKEN, LocalSlack
from tests.bot.test_durable_ack import REDIS_URL, core, prefix  # noqa: F401 (fixtures)
from tests.bot.test_serve import SECRETS, signed_click
from tests.bot.test_service import WORKER
from tests.slack.conftest import fake_slack  # noqa: F401 (a fixture, used by `slack`)
from tests.support.processes import (
    Processes,
    free_port,
    healthy,
    plain_env,
    serve_settings,
    toml,
    wait_until,
)
from tests.support.rigs import new_clarification

pytestmark = pytest.mark.slow  # `clarify-bot serve` processes

REPORTS = ("/v1/reports", "/deliveries")  # the batch route and the baseline's single one


@pytest.fixture
def slack(fake_slack: LocalSlack) -> LocalSlack:  # noqa: F811
    return fake_slack  # acme's workspace, in its Grid org, with its people


@dataclass
class Holding:
    """A proxy to the core that, while ``holding``, answers no delivery report until the test
    ends (the worker waits on it until it is killed; nothing of it reaches the core)."""

    url: str = ""
    holding: bool = True
    held: int = 0
    forwarded: list[str] = field(default_factory=list)


@pytest.fixture
async def proxy(core_url: str) -> AsyncIterator[Holding]:
    state = Holding()
    released = asyncio.Event()

    async with aiohttp.ClientSession() as http:
        async def forward(request: web.Request) -> web.StreamResponse:
            if request.method == "POST" and request.path.endswith(REPORTS):
                if state.holding:
                    state.held += 1
                    await released.wait()  # the worker dies first; never forwarded
                    return web.Response(status=503)
                state.forwarded.append(request.path)
            body = await request.read()
            headers = {k: v for k, v in request.headers.items()
                       if k.lower() not in ("host", "content-length", "transfer-encoding")}
            async with http.request(request.method, f"{core_url}{request.path_qs}",
                                    data=body, headers=headers) as got:
                payload = await got.read()
                kept = {k: v for k, v in got.headers.items()
                        if k.lower() not in ("content-length", "transfer-encoding",
                                             "content-encoding", "connection")}
                return web.Response(status=got.status, body=payload, headers=kept)

        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", forward)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        state.url = f"http://127.0.0.1:{runner.addresses[0][1]}"
        try:
            yield state
        finally:
            released.set()
            await runner.cleanup()


def settings(core_url: str, port: int, key_prefix: str, slack: str) -> dict[str, Any]:
    """A short lease: a card still marked unreported is looked at a lease after it was sent."""
    return serve_settings(core=core_url, port=port, slack_api=slack, redis=REDIS_URL,
                          prefix=key_prefix,
                          worker={**WORKER, "lease_seconds": 10, "heartbeat_seconds": 5,
                                  "health_port": free_port()},
                          answers={"poll_seconds": 0.1})


def question_cards(slack: LocalSlack, user: str) -> int:
    return sum(1 for m in slack.dm_of(user)
               if str(((m.metadata or {}).get("event_payload") or {}).get(
                   "delivery", "")).endswith("|question"))


async def test_an_answer_reports_the_card_a_killed_worker_never_reported(
        processes: Processes, proxy: Holding, dev_client: DevCoreClient, truth: CoreClient,
        slack: LocalSlack, prefix: str) -> None:  # noqa: F811
    cid = await new_clarification(dev_client, authority={"authored_by": ["p-ahmed"]},
                                  severity="high")
    env = plain_env(**{**SECRETS, "SLACK_APP_TOKEN": APP_TOKEN})
    first = await processes.serve(toml(settings(proxy.url, free_port(), prefix, slack.url)),
                                  role="worker", name="worker-killed", env=env)
    await wait_until(lambda: question_cards(slack, "U0AHMED") == 1 and proxy.held > 0,
                     "the card sent and its report held", 30)
    await first.sigkill()  # no shutdown, no flush: its reports are gone
    assert proxy.forwarded == []
    c = await truth.get_clarification(clarification_id=cid)
    assert c.deliveries == []
    async with RedisStore.from_url(REDIS_URL, prefix=prefix) as store:
        assert [card.unreported for card in await store.cards(cid)] == [True]

    proxy.holding = False
    port = free_port()
    config = toml(settings(proxy.url, port, prefix, slack.url))
    web_ = await processes.serve(config, role="web", name="web", port=port, env=env)
    await wait_until(lambda: healthy(web_.url), "the web process to start", 20)
    body, headers = signed_click(slack, "U0AHMED")
    async with aiohttp.ClientSession() as http, http.post(
            f"{web_.url}/slack/events", data=body, headers=headers) as response:
        assert response.status == 200
    await processes.serve(toml(settings(proxy.url, free_port(), prefix, slack.url)),
                          role="worker", name="worker-fresh", env=env)

    async def on_trail() -> bool:
        c = await truth.get_clarification(clarification_id=cid)
        return bool(c.responses) and any(d.person_id == "p-ahmed" for d in c.deliveries)

    await wait_until(on_trail, "the answer and the card on the core's trail", 30)
    await asyncio.sleep(0.5)  # room for a second, wrong report to show up
    await processes.close(gently=True)
    c = await truth.get_clarification(clarification_id=cid)
    assert [r.responder for r in c.responses] == ["p-ahmed"]
    assert [(d.person_id, d.kind) for d in c.deliveries] == [("p-ahmed", DeliveryKind.QUESTION)]
    assert question_cards(slack, "U0AHMED") == 1  # not sent again
