"""One person on two platforms, through real HTTP: the Slack adapter (signed block_actions) and
the Teams adapter (Bot Framework tokens against a local JWKS) on one engine, one store and the
reference core. Their answers to one clarification are one stream, ordered by each platform's
own time of the action (Slack's action_ts, the Teams activity's timestamp), never by arrival."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlencode

import aiohttp
import pytest
from aiohttp import web
from slack_sdk.signature import SignatureVerifier
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.app import build_slack_adapter
from adapters.slack.channel import SlackChannel
from bot.answering.outbox import OutboxConsumers
from bot.audit import MemorySink
from bot.channels.recording import RecordingChannel
from bot.chat import base_ref, for_recipient
from bot.clock import ManualClock, SystemClock
from bot.core.client import CoreClient
from bot.process.runtime import Engine, EngineParts, build_engine
from bot.process.worker import WorkerConfig
from bot.settings import ClarifySettings
from bot.store.base import Store
from bot.store.memory import MemoryStore
from cards.actions import ActionCodec, ActionKind, ActionRef
from devcore.client import DevCoreClient
from tests.engine.conftest import ACME_SLACK, new_clarification, no_sleep
from tests.slack.conftest import CODEC_KEY, SIGNING_SECRET
from tests.slack.fakeslack import BOT_TOKEN, FakeSlack
from tests.teams.inbound import (
    SARAH_AAD,
    TEAMS,
    Tokens,
    activity,
    jwks_url,  # noqa: F401  (the fixture)
    teams_adapter,
)
from tests.teams.tokens import claims, sign

T0 = datetime(2026, 7, 6, 9, 0, 0, 123000, tzinfo=UTC)


@dataclass
class Both:
    engine: Engine
    store: Store
    consumers: OutboxConsumers
    teams_channel: RecordingChannel
    slack: FakeSlack
    codec: ActionCodec
    slack_url: str
    teams_url: str
    http: aiohttp.ClientSession
    dev: DevCoreClient
    reader: CoreClient
    sink: MemorySink
    adapters: tuple[Any, Any]

    async def slack_click(self, card_ref: str, cid: str, candidate: int, at: datetime
                          ) -> int:
        value = self.codec.encode(ActionRef(kind=ActionKind.ANSWER, card_ref=card_ref,
                                            clarification_id=cid, candidate=candidate))
        payload = {
            "type": "block_actions",
            "user": {"id": "U0SARAH", "username": "sarah", "team_id": "T0ACME"},
            "team": {"id": "T0ACME", "domain": "acme", "enterprise_id": "E0ACME"},
            "enterprise": {"id": "E0ACME"},
            "api_app_id": "A0CLARIFY", "token": "x", "trigger_id": "1.2.3",
            "container": {"type": "message", "message_ts": "1.1", "channel_id": "D0SARAH"},
            "channel": {"id": "D0SARAH"},
            "actions": [{"action_id": f"clarify.answer.{candidate}", "block_id": "b",
                         "type": "button", "value": value,
                         "action_ts": f"{at.timestamp():.6f}"}],
        }
        body = urlencode({"payload": json.dumps(payload)}).encode()
        stamp = str(int(SystemClock().now().timestamp()))
        signature = SignatureVerifier(SIGNING_SECRET).generate_signature(timestamp=stamp,
                                                                         body=body)
        async with self.http.post(f"{self.slack_url}/slack/events", data=body, headers={
                "Content-Type": "application/x-www-form-urlencoded",
                "X-Slack-Request-Timestamp": stamp, "X-Slack-Signature": signature or ""}
                ) as response:
            return response.status

    async def teams_click(self, card_ref: str, cid: str, candidate: int, at: datetime) -> int:
        """Sarah's click on her Teams card of the same delivery: its reference is the Slack
        card's, tagged for her Teams identity (``bot.chat.for_recipient``)."""
        card_ref = for_recipient(base_ref(card_ref), "teams", SARAH_AAD)
        data = self.codec.teams_data(ActionRef(kind=ActionKind.ANSWER, card_ref=card_ref,
                                               clarification_id=cid, candidate=candidate))
        body = activity("invoke", user=SARAH_AAD, name="adaptiveCard/action",
                        replyToId="1:card",
                        value={"action": {"type": "Action.Execute", "verb": "clarify.answer",
                                          "data": data}})
        body["timestamp"] = at.isoformat().replace("+00:00", "Z")
        async with self.http.post(f"{self.teams_url}/api/messages", data=json.dumps(body),
                                  headers={"Content-Type": "application/json",
                                           "Authorization": f"Bearer {sign(claims())}"}
                                  ) as response:
            await response.read()
            return response.status

    async def settle(self) -> None:
        for adapter in self.adapters:
            await adapter.drain()
        await self.consumers.run_burst()
        await self.engine.answers.followups.drain()


async def _serve(routes: Any, runners: list[web.AppRunner]) -> str:
    app = web.Application()
    app.add_routes(routes)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    runners.append(runner)
    return f"http://127.0.0.1:{runner.addresses[0][1]}"


@pytest.fixture
async def both(clock: ManualClock, bot_client: CoreClient, truth: CoreClient,
               dev_client: DevCoreClient, fake_slack: FakeSlack, jwks_url: str  # noqa: F811
               ) -> AsyncIterator[Both]:
    store = MemoryStore(clock=clock)
    sink, codec = MemorySink(), ActionCodec(CODEC_KEY)
    web_client = AsyncWebClient(token=BOT_TOKEN, base_url=fake_slack.url)
    slack_channel = SlackChannel(client=web_client, codec=codec, store=store, clock=clock,
                                 sleep=no_sleep)
    teams_channel = RecordingChannel(platform="teams")
    engine = build_engine(EngineParts(
        core=bot_client, store=store, channels={"slack": slack_channel, "teams": teams_channel},
        clarify=ClarifySettings(channels=("slack", "teams"), hours={"enabled": False}),
        clock=clock, audit_sink=sink,
        slack=ACME_SLACK, teams=TEAMS, sleep=no_sleep,
        worker=WorkerConfig(concurrency=4, heartbeat_seconds=3600)))
    slack_adapter = build_slack_adapter(
        signing_secret=SIGNING_SECRET, client=web_client, answers=engine.answers,
        interactions=engine.interactions, channel=slack_channel, codec=codec,
        audit=engine.audit, clock=clock, signature_clock=SystemClock())
    teams = teams_adapter(engine, store=store, clock=clock, codec=codec, jwks_url=jwks_url,
                          tokens=Tokens())
    runners: list[web.AppRunner] = []
    async with aiohttp.ClientSession() as http:
        yield Both(engine=engine, store=store, consumers=OutboxConsumers(engine.answers),
                   teams_channel=teams_channel, slack=fake_slack, codec=codec,
                   slack_url=await _serve(slack_adapter.routes(), runners),
                   teams_url=await _serve(teams.routes(), runners), http=http,
                   dev=dev_client, reader=truth, sink=sink, adapters=(slack_adapter, teams))
    for runner in runners:
        await runner.cleanup()


async def _asked(both: Both, **kwargs: Any) -> tuple[str, str]:
    """A clarification asked of Sarah (on Slack, the first platform here) and the reference her
    card carries: her card on Teams carries the same one (one delivery key)."""
    cid = await new_clarification(both.dev, authority={"authored_by": ["p-sarah"]}, **kwargs)
    await both.engine.worker.run_burst()
    [message] = [m for m in both.slack.messages if m.channel == "D0SARAH" or "U0SARAH" in
                 m.channel]
    value = next(e["value"] for b in message.blocks for e in b.get("elements", [])
                 if str(e.get("action_id", "")).startswith("clarify.answer."))
    return cid, both.codec.decode(value).card_ref


async def test_a_teams_click_arriving_after_a_newer_slack_click_is_recorded_as_the_earlier(
        both: Both, contract: str) -> None:
    """Sarah taps A on Teams, then B on Slack 5 ms later; Slack's request arrives first. Both
    reach the core, Teams' A first (the person's order), sent as superseded: B is her active
    answer and binds; A is on the record, superseded, and nothing conflicts."""
    cid, card_ref = await _asked(both)
    assert card_ref.count(".") == 3  # the reference names Sarah's order token, tagged
    assert await both.slack_click(card_ref, cid, 1, T0 + timedelta(milliseconds=5)) == 200
    assert await both.teams_click(card_ref, cid, 0, T0) == 200
    await both.settle()
    c = await both.reader.get_clarification(clarification_id=cid)
    assert [(r.responder, r.answer_index, r.channel.value) for r in c.responses] == [
        ("p-sarah", 0, "teams"), ("p-sarah", 1, "slack")]
    assert await both.store.outbox_size() == 0
    if contract == "full":
        first, latest = c.responses
        assert first.superseded_by == latest.response_id
        assert c.state.value == "answered" and latest.binding_status.value == "bound"
        assert c.bound_interval is not None
        assert c.bound_interval.valid_from == c.candidates[1].valid_from
        assert not any(ev.type == "conflict_entered" for ev in c.events)


@pytest.mark.full_contract
async def test_an_older_teams_click_after_the_slack_one_bound_never_becomes_active(
        both: Both) -> None:
    """B (Slack, later by the platforms' clocks) reached the core and bound before A (Teams,
    earlier) arrived at all: A is recorded as an earlier response, superseded by B, never the
    active one; the bound date and state stay, no conflict, no steward review."""
    cid, card_ref = await _asked(both)
    assert await both.slack_click(card_ref, cid, 1, T0 + timedelta(milliseconds=5)) == 200
    await both.settle()
    bound = await both.reader.get_clarification(clarification_id=cid)
    assert bound.state.value == "answered"
    assert await both.teams_click(card_ref, cid, 0, T0) == 200
    await both.settle()
    c = await both.reader.get_clarification(clarification_id=cid)
    assert [(r.answer_index, r.binding_status.value) for r in c.responses] == [
        (1, "bound"), (0, "binding_candidate")]
    assert c.responses[1].superseded_by == c.responses[0].response_id
    assert c.responses[1].responded_at is not None and c.responses[0].responded_at is not None
    assert c.responses[1].responded_at < c.responses[0].responded_at
    assert c.bound_interval == bound.bound_interval and c.state.value == "answered"
    assert not any(ev.type in ("post_binding_conflict", "steward_notified") for ev in c.events)
