"""Durable before acknowledged, with real processes: `clarify-bot serve` killed right after the 200.

The reference core and a fake Slack run in the test; the bot runs as its own process on the Redis
store. The web process is killed (SIGKILL, no shutdown) the moment its 200 arrives; the answer is
then in Redis, and a freshly started process forwards it to the core exactly once.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import urlencode
from uuid import uuid4

import aiohttp
import pytest
import redis.asyncio as aioredis
from slack_sdk.signature import SignatureVerifier

from bot.core.client import CoreClient
from bot.store.redis import RedisStore
from cards.actions import ActionCodec, ActionKind, ActionRef
from devcore.client import DevCoreClient
from devslack import BOT_TOKEN, LocalSlack
from tests.engine.conftest import acme_core, new_clarification
from tests.redis_url import TEST_REDIS
from tests.support.processes import Processes, free_port, healthy, serve_settings, toml, wait_until

pytestmark = pytest.mark.slow  # `clarify-bot serve` processes

REDIS_URL = f"{TEST_REDIS}/14"
SIGNING_SECRET = "durable-ack-test-signing-secret"
ACTION_KEY = "durable-ack-test-action-key-0123456789"
SECRETS = {"CLARIFY_BOT_CORE_TOKEN": "dev-clarify-token-acme", "SLACK_BOT_TOKEN": BOT_TOKEN,
           "SLACK_SIGNING_SECRET": SIGNING_SECRET, "CLARIFY_BOT_ACTION_SIGNING_KEY": ACTION_KEY}


def settings(core: str, port: int, prefix: str, slack: str) -> dict[str, Any]:
    """Delivery off (only the answer path runs), the Redis store under ``prefix``."""
    return serve_settings(core=core, port=port, slack_api=slack, redis=REDIS_URL, prefix=prefix,
                          clarify={"enabled": False, "hours": None},
                          answers={"poll_seconds": 0.1})


@pytest.fixture
def core(clock):  # type: ignore[no-untyped-def]
    return acme_core(clock)


@pytest.fixture
def prefix() -> Iterator[str]:
    name = f"durable{uuid4().hex[:8]}"
    yield name
    asyncio.run(_forget(name))


async def _forget(prefix: str) -> None:
    client = aioredis.from_url(REDIS_URL, decode_responses=True)
    async for name in client.scan_iter(f"{prefix}:*"):
        await client.delete(name)
    await client.aclose()


@pytest.fixture
async def slack() -> AsyncIterator[LocalSlack]:
    async with LocalSlack() as fake:
        fake.add_user("U0AHMED")
        yield fake


def _signed_click(cid: str) -> tuple[bytes, dict[str, str]]:
    value = ActionCodec(ACTION_KEY.encode()).encode(ActionRef(
        kind=ActionKind.ANSWER, card_ref="d.durable", clarification_id=cid, candidate=0))
    payload = {
        "type": "block_actions", "user": {"id": "U0AHMED", "team_id": "T0ACME"},
        "team": {"id": "T0ACME", "enterprise_id": "E0ACME"}, "enterprise": {"id": "E0ACME"},
        "container": {"type": "message", "channel_id": "D0AHMED", "message_ts": "1.000100"},
        "channel": {"id": "D0AHMED"}, "trigger_id": "1.2.3",
        "actions": [{"type": "button", "action_id": "clarify.answer.0", "block_id": "answers",
                     "value": value, "action_ts": f"{time.time():.6f}"}],
    }
    body = urlencode({"payload": json.dumps(payload)}).encode()
    stamp = str(int(time.time()))
    signature = SignatureVerifier(SIGNING_SECRET).generate_signature(timestamp=stamp, body=body)
    return body, {"Content-Type": "application/x-www-form-urlencoded",
                  "X-Slack-Request-Timestamp": stamp, "X-Slack-Signature": signature or ""}


async def test_an_answer_acknowledged_just_before_a_crash_is_forwarded_once(
        processes: Processes, core_url: str, dev_client: DevCoreClient, bot_client: CoreClient,
        truth: CoreClient,
        slack: LocalSlack, prefix: str) -> None:
    """The web process is killed as soon as its 200 arrives: the answer is in Redis, and a new
    process forwards it to the core exactly once."""
    cid = await new_clarification(dev_client, authority={"authored_by": ["p-ahmed"]})
    port = free_port()
    config = toml(settings(core_url, port, prefix, slack.url))
    env = {**os.environ, **SECRETS}
    body, headers = _signed_click(cid)
    web = await processes.serve(config, role="web", name="web", port=port, env=env)
    # a bounded wait for the process to start, not a timing assertion
    await wait_until(lambda: healthy(web.url), "clarify-bot serve to start", 15)
    async with aiohttp.ClientSession() as http, http.post(
            f"{web.url}/slack/events", data=body, headers=headers) as response:
        status = response.status
        await web.sigkill()  # no shutdown, no flush: gone
    assert status == 200
    async with RedisStore.from_url(REDIS_URL, prefix=prefix) as store:
        assert await store.outbox_size() == 1
        assert (await truth.get_clarification(clarification_id=cid)).responses == []

        await processes.serve(config, role="all", name="fresh", port=port, env=env)

        async def forwarded() -> bool:
            return await store.outbox_size() == 0

        with contextlib.suppress(AssertionError):  # asserted below
            await wait_until(forwarded, "the new process to forward it", 20)
        await asyncio.sleep(0.3)  # room for a second, wrong forward to show up
        await processes.close(gently=True)
        c = await truth.get_clarification(clarification_id=cid)
        assert [(r.responder, r.answer_index) for r in c.responses] == [("p-ahmed", 0)]
        assert await store.outbox_size() == 0
