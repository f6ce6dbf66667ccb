"""The sandbox as a person starts it (``clarify-bot demo --web``, ``clarify-bot sandbox``) and
its page's API as an attacker or a hurried person would use it: bad requests are one clear 400
that names the field and never echoes the value, and a burst of people answering together is
recorded once each."""

from __future__ import annotations

import asyncio
import json
import signal
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import aiohttp
import pytest

from clarify_bot.sandbox.run import open_sandbox
from clarify_bot.sandbox.world import Sandbox
from tests.support.processes import CLARIFY_BOT, Processes, free_port

pytestmark = pytest.mark.slow

SECRET = "s3cr3t-value-never-echoed"


async def test_demo_web_serves_the_page_and_stops_on_sigterm(processes: Processes) -> None:
    port = free_port()
    process = await processes.spawn(CLARIFY_BOT, "demo", "--web", "--port", str(port),
                                    stdout=asyncio.subprocess.PIPE)
    assert process.stdout is not None
    first = (await asyncio.wait_for(process.stdout.readline(), 60)).decode()
    assert first.strip() == f"clarify-bot sandbox: http://127.0.0.1:{port}/"
    async with aiohttp.ClientSession() as http:
        async with http.get(f"http://127.0.0.1:{port}/") as page:
            assert page.status == 200 and "clarify-bot sandbox" in await page.text()
            assert "default-src 'self'" in page.headers["Content-Security-Policy"]
        for name in ("sandbox.js", "blockkit.js", "sandbox.css"):
            async with http.get(f"http://127.0.0.1:{port}/static/{name}") as asset:
                assert asset.status == 200
        async with http.get(f"http://127.0.0.1:{port}/api/state") as state:
            people = (await state.json())["people"]
    assert {p["slackId"] for p in people} >= {"U0SARAH", "U0TOM", "U0MARIA"}
    process.send_signal(signal.SIGTERM)
    assert await asyncio.wait_for(process.wait(), 20) == 0


async def test_a_taken_port_is_one_line_and_a_failure(processes: Processes) -> None:
    port = free_port()
    holder = await asyncio.start_server(lambda r, w: None, "127.0.0.1", port)
    try:
        process = await processes.spawn(CLARIFY_BOT, "sandbox", "--port", str(port),
                                        stdout=asyncio.subprocess.PIPE,
                                        stderr=asyncio.subprocess.PIPE)
        _, err = await asyncio.wait_for(process.communicate(), 60)
    finally:
        holder.close()
    assert process.returncode == 1
    assert err.decode().strip().splitlines()[-1] == (
        f"Error: cannot listen on 127.0.0.1:{port}: address already in use (choose another "
        "--port)")


@pytest.fixture
async def served() -> AsyncIterator[tuple[str, Sandbox, aiohttp.ClientSession]]:
    async with open_sandbox(port=0) as (url, box), aiohttp.ClientSession() as http:
        yield url, box, http


async def _post(http: aiohttp.ClientSession, url: str, body: Any, *,
                raw: bytes | None = None) -> tuple[int, dict[str, Any]]:
    data = raw if raw is not None else json.dumps(body).encode()
    async with http.post(url, data=data, headers={"Content-Type": "application/json"}) as r:
        text = await r.text()
        return r.status, json.loads(text) if text.startswith("{") else {"text": text}


@pytest.mark.parametrize(("path", "body", "field"), [
    ("api/click", None, "body"),
    ("api/click", ["not", "an", "object"], "body"),
    ("api/click", {"user": SECRET, "channel": "D", "ts": "1", "actionId": "a"}, "user"),
    ("api/click", {"user": "U0SARAH", "ts": "1", "actionId": "a"}, "channel"),
    ("api/submit", {"user": "U0SARAH", "viewId": "V1", "values": SECRET}, "values"),
    ("api/clock", {"step": SECRET}, "unknown clock step"),
    ("api/questions", {"workspace": "acme-legal", "severity": "normal", "question": SECRET,
                       "candidates": [{"date": SECRET}], "authors": ["p-sarah"]},
     "candidates.0.date"),
])
async def test_bad_page_requests_are_a_400_naming_the_field_not_the_value(
        served: tuple[str, Sandbox, aiohttp.ClientSession], path: str, body: Any,
        field: str) -> None:
    url, _, http = served
    raw = b"{not json" if body is None else None
    status, answer = await _post(http, url + path, body, raw=raw)
    assert status == 400 and answer["error"].startswith(field)
    assert SECRET not in answer["error"]


async def test_an_unknown_file_or_a_huge_body_is_refused(
        served: tuple[str, Sandbox, aiohttp.ClientSession]) -> None:
    url, _, http = served
    async with http.get(url + "static/../world.py") as r:
        assert r.status == 404
    async with http.get(url + "static/world.py") as r:
        assert r.status == 404
    status, _ = await _post(http, url + "api/questions", None, raw=b"x" * (200 * 1024))
    assert status == 413


async def test_a_burst_of_people_answering_together_is_recorded_once_each(
        served: tuple[str, Sandbox, aiohttp.ClientSession]) -> None:
    """Sarah and Ahmed confirm the critical question at the same moment, each pressing twice
    (a double tap): two responses at the core, the fact bound once by the quorum."""
    url, box, http = served
    cards: dict[str, dict[str, Any]] = {}
    for _ in range(200):  # the worker sends the first cards within a poll or two
        async with http.get(url + "api/state") as r:
            people = {p["slackId"]: p for p in (await r.json())["people"]}
        cards = {who: m for who in ("U0SARAH", "U0AHMED")
                 for m in people[who]["sees"]["messages"]
                 if str(((m["metadata"] or {}).get("event_payload") or {}).get("delivery", ""))
                 .startswith("clr-00001")}
        if len(cards) == 2:
            break
        await asyncio.sleep(0.1)
    presses = []
    for who, card in cards.items():
        button = next(e for b in card["blocks"] if b["type"] == "actions"
                      for e in b["elements"] if e["action_id"] == "clarify.answer.1")
        press = {"user": who, "channel": card["channel"], "ts": card["ts"],
                 "actionId": button["action_id"], "value": button["value"]}
        presses += [press, press]
    answers = await asyncio.gather(*(_post(http, url + "api/click", p) for p in presses))
    assert all(status == 200 and answer["status"] == 200 for status, answer in answers)
    for _ in range(200):
        at_core = await box.core.get_clarification(clarification_id="clr-00001")
        if at_core.model_dump(mode="json")["state"] == "answered":
            break
        await asyncio.sleep(0.1)
    assert at_core.model_dump(mode="json")["state"] == "answered"
    assert sorted(r.responder for r in at_core.responses) == ["p-ahmed", "p-sarah"]
    history = await box.core.get_fact_history(logical_id=at_core.target, tenant_id="acme")
    assert [v.provenance.clarification_id for v in history.versions].count("clr-00001") == 1


async def test_slack_rate_limits_on_demand_and_the_bot_waits_it_out(
        served: tuple[str, Sandbox, aiohttp.ClientSession]) -> None:
    url, box, http = served
    for seconds in (0, 61, "5", True):
        status, answer = await _post(http, url + "api/slack", {"retryAfter": seconds})
        assert status == 400 and answer["error"].startswith("retryAfter")
    for _ in range(200):  # the scenario's first cards are out: the fault meets a new one
        if box.slack.calls_to("chat.postMessage"):
            break
        await asyncio.sleep(0.1)
    await asyncio.sleep(1)
    status, answer = await _post(http, url + "api/slack", {"retryAfter": 1})
    assert status == 200 and answer == {"method": "chat.postMessage", "retryAfter": 1}
    status, made = await _post(http, url + "api/questions", {
        "workspace": "acme-legal", "severity": "normal", "question": "When?",
        "candidates": [{"date": "2027-01-01"}], "authors": ["p-sarah"]})
    assert status == 201
    for _ in range(300):
        if any(str(((m["metadata"] or {}).get("event_payload") or {}).get("delivery", ""))
               .startswith(made["id"]) for m in box.slack.seen_by("U0SARAH")["messages"]):
            break
        await asyncio.sleep(0.1)
    else:
        raise AssertionError("the card never arrived after the rate limit")
    gaps = box.slack.retry_gaps("chat.postMessage")
    assert gaps and all(gap.honoured for gap in gaps)


async def test_another_sites_page_cannot_drive_the_sandbox(
        served: tuple[str, Sandbox, aiohttp.ClientSession]) -> None:
    """A form post from another site (no JSON content type) and a request under another host
    name (DNS rebinding) are refused before anything acts."""
    url, box, http = served
    start = box.clock.now()
    body = json.dumps({"step": "day"}).encode()
    async with http.post(url + "api/clock", data=body,
                         headers={"Content-Type": "text/plain"}) as r:
        assert r.status == 415
    async with http.get(url + "api/state", headers={"Host": "attacker.example:8780"}) as r:
        assert r.status == 403 and "attacker" not in await r.text()
    async with http.post(url + "api/clock", data=body, headers={
            "Content-Type": "application/json", "Host": "attacker.example"}) as r:
        assert r.status == 403
    assert box.clock.now() - start < timedelta(hours=1)  # neither moved the clock a day
    async with http.post(url + "api/clock", data=body,
                         headers={"Content-Type": "application/json"}) as r:
        assert r.status == 200  # the page itself still can
    assert box.clock.now() - start >= timedelta(days=1)


async def test_a_week_later_the_steward_gets_the_reach_report_and_opens_its_detail(
        served: tuple[str, Sandbox, aiohttp.ClientSession]) -> None:
    """A question on a document only stewards may read, to Tom and Sarah, then "+1 week":
    Maria, Legal's steward, finds the weekly reach report in her DM (counts only); its button
    puts the Reach tab on her Home, which names Tom under the cause that kept him from being
    reached."""
    url, box, http = served
    status, made = await _post(http, url + "api/questions", {
        "workspace": "acme-legal", "severity": "normal", "question": "When?",
        "candidates": [{"date": "2027-01-01"}], "authors": ["p-tom", "p-sarah"],
        "restricted": True})
    assert status == 201
    for _ in range(300):  # the worker's next pass skips them, on record
        c = await box.core.get_clarification(clarification_id=made["id"])
        if {e.person_id for e in c.events if e.type == "skipped"} >= {"p-tom"}:
            break
        await asyncio.sleep(0.1)
    status, _ = await _post(http, url + "api/clock", {"step": "week", "user": "U0MARIA"})
    assert status == 200
    report = None
    for _ in range(300):
        report = next((m for m in box.slack.seen_by("U0MARIA")["messages"]
                       if any(b.get("block_id", "").startswith("reach")
                              for b in m["blocks"])), None)
        if report is not None:
            break
        await asyncio.sleep(0.1)
    assert report is not None, "no weekly reach report"
    assert "Tom" not in json.dumps(report, ensure_ascii=False)
    button = next(e for b in report["blocks"] if b["type"] == "actions"
                  for e in b["elements"] if e["action_id"] == "reach.open")
    status, answer = await _post(http, url + "api/click", {
        "user": "U0MARIA", "channel": report["channel"], "ts": report["ts"],
        "actionId": button["action_id"], "value": button["value"]})
    assert (status, answer["status"]) == (200, 200)
    for _ in range(200):
        home = json.dumps(box.slack.seen_by("U0MARIA")["home"], ensure_ascii=False)
        if "Tom Becker" in home:
            break
        await asyncio.sleep(0.1)
    assert "Tom Becker" in home
