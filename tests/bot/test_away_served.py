"""Away over real processes (docs/delivery.md, "Away"): `clarify-bot serve` (memory store) against
the reference core (`clarify-bot devcore`, with acme's sample questions) and the local Slack
stand-in, for each source Slack gives: a status with an expiry, one without, Do Not Disturb.

Sarah is first in the ranking of the sample critical question (clr-00001) and of a normal one each
test creates. Away beyond the window she is passed over at once (the core's trail holds
PERSON_AWAY, the spec's DAILY_CAP_EXCEEDED at a baseline core, its words true either way) and
Ahmed gets the cards; back within the window, the normal question is held for her (nobody is
asked meanwhile), the critical one never waits. Nothing of her status reaches a log line, the
audit sink or a metric.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import aiohttp
import pytest

from bot.core.client import CoreClient
from bot.core.models import Clarification, ReasonCode
from devcore.client import DevCoreClient
from devslack import APP_TOKEN, LocalSlack
from tests.bot.test_service import SECRETS, settings
from tests.conftest import CLARIFY_TOKEN, DEV_TOKEN
from tests.slack.conftest import fake_slack  # noqa: F401 (a fixture)
from tests.support.processes import (
    BotProcess,
    Processes,
    free_port,
    healthy,
    plain_env,
    wait_until,
)
from tests.support.rigs import new_clarification

pytestmark = pytest.mark.slow  # `clarify-bot serve` and `devcore` processes

MARK = "zqawaymark"  # in the status text, and nowhere the bot writes


def question_cards(slack: LocalSlack, user: str) -> list[str]:
    """The clarifications of the question cards in a person's DM."""
    found = []
    for message in slack.dm_of(user):
        delivery = str(((message.metadata or {}).get("event_payload") or {}).get("delivery", ""))
        parts = delivery.split("|")
        if len(parts) >= 4 and parts[3] == "question":
            found.append(parts[0])
    return found


async def serve(processes: Processes, core: str, slack: LocalSlack) -> BotProcess:
    bot = await processes.serve(
        settings(core=core, port=free_port(), slack_api=slack.url, slack={"mode": "http"}),
        stdout=True,  # the audit sink's lines
        env=plain_env(**{**SECRETS, "SLACK_APP_TOKEN": APP_TOKEN}))
    await wait_until(lambda: healthy(bot.url), "the bot to listen", seconds=30)
    return bot


async def record(core: str, cid: str) -> Clarification:
    async with CoreClient(base_url=core, token=CLARIFY_TOKEN) as client:
        return await client.get_clarification(clarification_id=cid)


async def skip_of(core: str, cid: str, person: str) -> Any:
    """The skip of ``person`` on the core's trail, once it is there."""
    async def found() -> Any:
        c = await record(core, cid)
        return next((ev for ev in c.events if ev.type == "skipped" and ev.person_id == person),
                    None)

    return await wait_until(found, f"the skip of {person} at the core", seconds=30)


async def create(core: str) -> str:
    async with DevCoreClient(base_url=core, token=DEV_TOKEN) as dev:
        return await new_clarification(dev, authority={"authored_by": ["p-sarah", "p-ahmed"]})


def nothing_of_the_status(bot: BotProcess, metrics: str) -> None:
    """Her status's words are in no log line, no audit line and no metric."""
    stdout = bot.stderr.with_suffix(".stdout").read_text()
    assert MARK not in bot.stderr.read_text() and MARK not in stdout and MARK not in metrics
    assert "Urlaub" not in bot.stderr.read_text() and "Urlaub" not in metrics


async def metrics_of(bot: BotProcess) -> str:
    async with aiohttp.ClientSession() as http, http.get(f"{bot.url}/metrics") as got:
        return await got.text()


@pytest.mark.parametrize("expiry", [True, False], ids=["until_a_date", "no_expiry"])
async def test_a_slack_status_passes_her_over_at_once(
        processes: Processes, devcore_url: str, fake_slack: LocalSlack,  # noqa: F811
        contract: str, expiry: bool) -> None:
    slack = fake_slack
    back = datetime.now(UTC) + timedelta(days=14)
    slack.set_status("U0SARAH", f"Urlaub {MARK}", ":palm_tree:",
                     until=back if expiry else None)
    bot = await serve(processes, devcore_url, slack)
    cid = await create(devcore_url)
    await wait_until(lambda: cid in question_cards(slack, "U0AHMED") and "clr-00001"
                     in question_cards(slack, "U0AHMED"), "Ahmed's cards", seconds=30)
    assert question_cards(slack, "U0SARAH") == []
    skip = await skip_of(devcore_url, cid, "p-sarah")
    assert skip.reason_code is (ReasonCode.PERSON_AWAY if contract == "full"
                                else ReasonCode.DAILY_CAP_EXCEEDED)
    said = (f"was away until {back.day} {back:%B} {back.year}" if expiry
            else "was away with no return date")
    assert said in skip.message and "Slack status" in skip.message
    critical = await skip_of(devcore_url, "clr-00001", "p-sarah")
    assert "a critical question never waits" in critical.message
    metrics = await metrics_of(bot)
    assert 'clarify_away_total{action="passed_over",source="slack_status"} 2.0' in metrics
    lines = [json.loads(line) for line in
             bot.stderr.with_suffix(".stdout").read_text().splitlines() if line.strip()]
    audited = [line for line in lines if line.get("type") == "skipped"
               and line.get("person_id") == "p-sarah"]
    assert {line["reason_code"] for line in audited} == {"PERSON_AWAY"}
    nothing_of_the_status(bot, metrics)
    code, _ = await bot.terminate()
    assert code == 0


async def test_do_not_disturb_for_an_hour_holds_a_question_and_never_a_critical_one(
        processes: Processes, devcore_url: str, fake_slack: LocalSlack,  # noqa: F811
        contract: str) -> None:
    """Do Not Disturb for the next hour: back within the window, so the normal question waits
    for her (held: no card to anyone for it, no skip); the critical one passes her over."""
    slack = fake_slack
    now = datetime.now(UTC)
    slack.set_dnd("U0SARAH", now - timedelta(minutes=10), now + timedelta(hours=1))
    bot = await serve(processes, devcore_url, slack)
    held = await create(devcore_url)
    await wait_until(lambda: bot.metric(
        'clarify_away_total{action="held",source="slack_dnd"}'), "the question held for her",
        seconds=30)
    critical = await skip_of(devcore_url, "clr-00001", "p-sarah")
    assert "Slack Do Not Disturb; a critical question never waits" in critical.message
    await wait_until(lambda: "clr-00001" in question_cards(slack, "U0AHMED"),
                     "Ahmed's critical card", seconds=30)
    assert held not in question_cards(slack, "U0AHMED")
    assert question_cards(slack, "U0SARAH") == []
    assert not [ev for ev in (await record(devcore_url, held)).events if ev.type == "skipped"]
    nothing_of_the_status(bot, await metrics_of(bot))
    code, _ = await bot.terminate()
    assert code == 0


async def test_do_not_disturb_for_days_passes_her_over(
        processes: Processes, devcore_url: str, fake_slack: LocalSlack,  # noqa: F811
        contract: str) -> None:
    slack = fake_slack
    now = datetime.now(UTC)
    end = now + timedelta(days=3)
    slack.set_dnd("U0SARAH", now - timedelta(minutes=10), end)
    bot = await serve(processes, devcore_url, slack)
    cid = await create(devcore_url)
    await wait_until(lambda: cid in question_cards(slack, "U0AHMED"), "Ahmed's card",
                     seconds=30)
    skip = await skip_of(devcore_url, cid, "p-sarah")
    assert f"was away until {end.day} {end:%B} {end.year} (Slack Do Not Disturb; back after " \
           "the question would move on)" in skip.message
    assert question_cards(slack, "U0SARAH") == []
    code, _ = await bot.terminate()
    assert code == 0
