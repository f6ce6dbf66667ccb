"""Durable before acknowledged, with real processes: `clarify-bot serve` killed right after the 200.

The reference core and a fake Slack run in the test; the bot runs as its own process on the Redis
store. The web process is killed (SIGKILL, no shutdown) the moment its 200 arrives; the answer is
then in Redis, and a freshly started process forwards it to the core exactly once.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
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
from tests.bot.test_service import _free_port
from tests.engine.conftest import acme_core, new_clarification
from tests.redis_url import TEST_REDIS
from tests.slack.fakeslack import BOT_TOKEN, FakeSlack

REDIS_URL = f"{TEST_REDIS}/14"
SIGNING_SECRET = "durable-ack-test-signing-secret"
ACTION_KEY = "durable-ack-test-action-key-0123456789"
CONFIG = """
[clarify]
enabled = false
channels = "slack"
[core]
url = "{core}"
[server]
host = "127.0.0.1"
port = {port}
[store]
backend = "redis"
[redis]
url = "{redis}"
key_prefix = "{prefix}"
[slack]
api_url = "{slack}"
[[slack.workspaces]]
team_id = "T0ACME"
enterprise_id = "E0ACME"
tenant = "acme"
[answers]
poll_seconds = 0.1
"""


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
async def slack() -> AsyncIterator[FakeSlack]:
    async with FakeSlack() as fake:
        fake.add_user("U0AHMED")
        yield fake


def _start(config: Path, role: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "CLARIFY_BOT_CORE_TOKEN": "dev-clarify-token-acme",
           "SLACK_BOT_TOKEN": BOT_TOKEN, "SLACK_SIGNING_SECRET": SIGNING_SECRET,
           "CLARIFY_BOT_ACTION_SIGNING_KEY": ACTION_KEY}
    command = [str(Path(sys.executable).parent / "clarify-bot"), "serve", "--config",
               str(config), "--role", role]
    return subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


async def _until_listening(http: aiohttp.ClientSession, port: int) -> None:
    for _ in range(300):  # a bounded wait for the process to start, not a timing assertion
        try:
            async with http.get(f"http://127.0.0.1:{port}/healthz") as response:
                if response.status == 200:
                    return
        except aiohttp.ClientError:
            pass
        await asyncio.sleep(0.05)
    raise AssertionError("clarify-bot serve did not start")


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
        tmp_path: Path, core_url: str, dev_client: DevCoreClient, bot_client: CoreClient,
        truth: CoreClient,
        slack: FakeSlack, prefix: str) -> None:
    """The web process is killed as soon as its 200 arrives: the answer is in Redis, and a new
    process forwards it to the core exactly once."""
    cid = await new_clarification(dev_client, authority={"authored_by": ["p-ahmed"]})
    port = _free_port()
    config = tmp_path / "bot.toml"
    config.write_text(CONFIG.format(core=core_url, port=port, redis=REDIS_URL, prefix=prefix,
                                    slack=slack.url))
    body, headers = _signed_click(cid)
    web = _start(config, "web")
    try:
        async with aiohttp.ClientSession() as http:
            await _until_listening(http, port)
            async with http.post(f"http://127.0.0.1:{port}/slack/events", data=body,
                                 headers=headers) as response:
                status = response.status
                web.send_signal(signal.SIGKILL)  # no shutdown, no flush: gone
    finally:
        web.kill()
        web.wait(10)
    assert status == 200
    async with RedisStore.from_url(REDIS_URL, prefix=prefix) as store:
        assert await store.outbox_size() == 1
        assert (await truth.get_clarification(clarification_id=cid)).responses == []

        fresh = _start(config, "all")
        try:
            for _ in range(400):  # bounded wait for the new process to forward it
                if await store.outbox_size() == 0:
                    break
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.3)  # room for a second, wrong forward to show up
        finally:
            fresh.send_signal(signal.SIGTERM)
            try:
                fresh.wait(15)
            except subprocess.TimeoutExpired:
                fresh.kill()
        c = await truth.get_clarification(clarification_id=cid)
        assert [(r.responder, r.answer_index) for r in c.responses] == [("p-ahmed", 0)]
        assert await store.outbox_size() == 0
