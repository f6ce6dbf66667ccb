"""The first hour, end to end, as processes: `clarify-bot init --devcore` writes the files, the
reference core runs with `--people` mapping Sarah to a "real" Slack user, and `clarify-bot serve`
started from nothing but the env file (which names the settings file) delivers her card to that
user in the fake Slack; her tap is recorded by the core as Sarah's, and a clarification created
through the dev endpoint (docs/quickstart.md, step 6) reaches her too.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlencode

import aiohttp
import pytest
from slack_sdk.signature import SignatureVerifier

from devslack import BOT_TOKEN, LocalSlack
from tests.bot.test_serve import clarification_of, responses_at_core
from tests.cli.test_first_run import read_env
from tests.support.processes import BIN, Processes, free_port, wait_until

pytestmark = pytest.mark.slow  # `clarify-bot init`, `serve` and `devcore` processes

REAL_USER, REAL_TEAM = "U07REALME", "T07REALWS"
SIGNING_SECRET = "first-hour-signing-secret"


@pytest.fixture
async def people_core(tmp_path: Path) -> AsyncIterator[str]:
    people = tmp_path / "people.toml"
    people.write_text(f'[p-sarah.slack]\nuser_id = "{REAL_USER}"\nteam_id = "{REAL_TEAM}"\n')
    own = Processes(tmp_path)
    try:
        url, process = await own.devcore("--people", str(people))
        assert process.stdout is not None
        mapped = (await asyncio.wait_for(process.stdout.readline(), 30)).decode()
        assert "p-sarah" in mapped
        yield url
    finally:
        await own.close()


def tap(slack: LocalSlack, user_id: str) -> tuple[bytes, dict[str, str]]:
    """The first answer button of the newest card in the DM, signed as Slack would send it."""
    card = slack.dm_of(user_id)[-1]
    button = next(e for b in card.blocks if b.get("type") == "actions"
                  for e in b["elements"] if e["action_id"] == "clarify.answer.0")
    payload = {
        "type": "block_actions", "user": {"id": user_id, "team_id": REAL_TEAM},
        "team": {"id": REAL_TEAM}, "api_app_id": "A0CLARIFY",
        "trigger_id": slack.new_trigger_id(),
        "container": {"type": "message", "channel_id": card.channel, "message_ts": card.ts},
        "channel": {"id": card.channel}, "message": {"ts": card.ts, "blocks": card.blocks},
        "actions": [{"type": "button", "action_id": "clarify.answer.0", "value": button["value"],
                     "block_id": "answers", "action_ts": f"{time.time():.6f}"}],
    }
    body = urlencode({"payload": json.dumps(payload)}).encode()
    stamp = str(int(time.time()))
    signature = SignatureVerifier(SIGNING_SECRET).generate_signature(timestamp=stamp, body=body)
    return body, {"X-Slack-Request-Timestamp": stamp, "X-Slack-Signature": signature or "",
                  "Content-Type": "application/x-www-form-urlencoded"}


async def test_init_files_let_serve_deliver_to_the_mapped_user(
        tmp_path: Path, people_core: str) -> None:
    config, env_file = tmp_path / "clarify-bot.toml", tmp_path / "clarify-bot.env"
    init = await asyncio.create_subprocess_exec(
        str(BIN / "clarify-bot"), "init", "--devcore", "--platform", "slack",
        "--slack-mode", "http", "--store", "memory", "--slack-team", REAL_TEAM,
        "--core", people_core, "--out", str(config), "--env-file", str(env_file),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    printed = (await init.communicate())[0].decode()
    assert init.returncode == 0, printed
    values = read_env(env_file)
    assert "dev-clarify-token-acme" not in printed

    async with LocalSlack() as slack:
        slack.add_user(REAL_USER)
        port = free_port()
        env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), **values,
               "SLACK_BOT_TOKEN": BOT_TOKEN, "SLACK_SIGNING_SECRET": SIGNING_SECRET,
               # the test's own plumbing: the fake Slack, a free port, a quick poll
               "CLARIFY_BOT_SLACK__API_URL": slack.url, "CLARIFY_BOT_SERVER__PORT": str(port),
               "CLARIFY_BOT_WORKER__POLL_INTERVAL_SECONDS": "0.1",
               # the test runs at any real hour: a normal question would otherwise wait for
               # the person's working hours (docs/delivery.md, "Working hours")
               "CLARIFY_BOT_CLARIFY__HOURS__ENABLED": "false"}
        stderr = tmp_path / "serve.stderr"
        own = Processes(tmp_path)
        await own.spawn(str(BIN / "clarify-bot"), "serve", stderr=stderr.open("wb"), env=env)
        try:
            await wait_until(lambda: slack.dm_of(REAL_USER), "a card in the mapped user's DM", 30)
            url = f"http://127.0.0.1:{port}"
            async with aiohttp.ClientSession() as http:
                async with http.get(f"{url}/readyz") as ready:
                    assert ready.status == 200, await ready.text()
                # the card tapped is the newest now (no await in between: a later card may
                # arrive while the tap is on its way)
                first = clarification_of(slack, REAL_USER)
                body, headers = tap(slack, REAL_USER)
                async with http.post(f"{url}/slack/events", data=body, headers=headers) as acked:
                    assert acked.status == 200
                await wait_until(lambda: _answered(people_core, first), "the core to record it", 30)

                created = await _create(http, people_core, values["CLARIFY_DEVCORE_DEV_TOKEN"])
            await wait_until(lambda: any(clarification_of_card(m) == created
                                    for m in slack.dm_of(REAL_USER)),
                        "the new clarification's card", 30)
            assert not slack.dm_of("U0SARAH")  # her made-up id is nobody's now
        finally:
            await own.close(gently=True)
    log = stderr.read_text()
    for name in ("CLARIFY_BOT_CORE_TOKEN", "CLARIFY_BOT_ACTION_SIGNING_KEY",
                 "CLARIFY_DEVCORE_DEV_TOKEN"):
        assert values[name] not in log
    assert BOT_TOKEN not in log and SIGNING_SECRET not in log


async def _answered(core: str, clarification_id: str) -> bool:
    return ("p-sarah", 0) in await responses_at_core(core, clarification_id)


def clarification_of_card(message: object) -> str | None:
    metadata = getattr(message, "metadata", None) or {}
    delivery = metadata.get("event_payload", {}).get("delivery")
    return str(delivery).split("|")[0] if delivery else None


async def _create(http: aiohttp.ClientSession, core: str, dev_token: str) -> str:
    """docs/quickstart.md's example request, as curl would send it."""
    quickstart = Path(__file__).parents[2] / "docs" / "quickstart.md"
    text = quickstart.read_text()
    example = text.split("```json first-clarification\n")[1].split("```")[0]
    async with http.post(f"{core}/dev/v1/clarifications", data=example,
                         headers={"Authorization": f"Bearer {dev_token}",
                                  "Content-Type": "application/json"}) as made:
        assert made.status == 201, await made.text()
        return str((await made.json())["clarification"]["id"])
