"""Token rotation across real processes: two web and two worker ``clarify-bot serve`` processes
on one installation database and one Redis, the reference core (``clarify-bot devcore``) and
the fake Slack issuing rotating tokens that live 64 seconds (refreshed once they have less than
a minute left: 4 s after they are issued). While cards go out, each token is refreshed once
across the four processes (a refresh token is spent when used, so a second refresh of the same
token would fail at the fake), and no call is ever made with an expired token."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from bot.clock import SystemClock
from bot.core.client import RetryPolicy
from devcore.client import DevCoreClient
from devslack import LocalSlack
from tests.bot.test_service import SECRETS
from tests.conftest import DEV_TOKEN
from tests.engine.conftest import new_clarification
from tests.slack.distributed import (
    Installer,
    database_url,  # noqa: F401 (a fixture)
    link_for,
    oauth_config,
    oauth_secrets,
    process_settings,
)
from tests.support.processes import Processes, free_port, healthy, plain_env, wait_until

# slow: four bot processes and `devcore`
# about token rotation, not the core's contract
pytestmark = [pytest.mark.full_contract, pytest.mark.slow]

@pytest.fixture
async def slack() -> AsyncIterator[LocalSlack]:
    async with LocalSlack(rotation=True, token_seconds=64) as fake:
        fake.add_workspace("T0ACME", enterprise_id="E0ACME", name="Acme")
        for user in ("U0SARAH", "U0AHMED", "U0MARIA", "U0TOM", "U0JONAS", "U0PRIYA", "U0LEE"):
            fake.add_user(user, team="T0ACME")
        yield fake


async def test_rotation_across_two_web_and_two_worker_processes(
        processes: Processes, slack: LocalSlack, database_url: str,  # noqa: F811
        devcore_url: str) -> None:  # noqa: F811
    ports = [free_port(), free_port(), 0, 0]
    public = f"http://127.0.0.1:{ports[0]}"
    prefix = f"clarify-rot-{uuid.uuid4().hex[:8]}:"
    env = plain_env(**{k: v for k, v in SECRETS.items() if k != "SLACK_BOT_TOKEN"},
                    **oauth_secrets(database_url, slack))
    oauth = oauth_config(public_url=public, slack=slack, refresh_before_minutes=1,
                         refresh_check_seconds=1, directory_seconds=1)
    stderrs: list[Path] = []
    try:
        for i, (role, port) in enumerate(zip(("web", "web", "worker", "worker"), ports,
                                             strict=True)):
            bot = await processes.serve(
                process_settings(core=devcore_url, port=port or free_port(), prefix=prefix,
                                 slack=slack, oauth=oauth),
                role=role, name=f"bot-{i}", env=env, stdout=True)
            stderrs.append(bot.stderr)
        async with aiohttp.ClientSession() as http, DevCoreClient(
                base_url=devcore_url, token=DEV_TOKEN, retry=RetryPolicy(max_attempts=1)) as dev:
            for port in ports[:2]:
                await wait_until(lambda p=port: healthy(f"http://127.0.0.1:{p}", http),
                                 "a web process")
            status, _ = await Installer(http, slack).install(
                link_for("acme", clock=SystemClock(), public_url=public), "T0ACME")
            assert status == 200
            started = time.monotonic()
            asked = 0
            # a question a second until the third refresh: each of the first two tokens then
            # had a whole token's refresh period for a second, wrong refresh to show up
            while len(slack.refreshes) < 3 and time.monotonic() - started < 60:
                await new_clarification(dev, authority={"authored_by": ["p-sarah"]},
                                        severity="high")
                asked += 1
                await asyncio.sleep(1)
            await wait_until(lambda: len(slack.dm_of("U0SARAH")) >= asked // 2, "cards")
            assert len(slack.refreshes) >= 3, slack.refreshes
    finally:
        await processes.close(gently=True)
    assert slack.calls_with_expired_tokens() == []
    assert not [c for c in slack.calls if c.error in ("invalid_refresh_token", "token_expired")]
    # each refresh spent the refresh token the last one issued: one per token, all processes
    assert len(slack.refreshes) == len(slack.issued) - 1
    posts = [m for m in slack.messages if m.channel == slack.dm_channel("U0SARAH")]
    assert posts and {m.team for m in posts} == {"T0ACME"}
    logs = "".join(stderr.read_text() for stderr in stderrs)
    refreshed = [json.loads(line) for line in logs.splitlines()
                 if '"slack.token_refreshed"' in line]
    assert len(refreshed) == len(slack.refreshes)
    assert not [t for t in (*slack.issued, slack.client_secret) if t in logs]

