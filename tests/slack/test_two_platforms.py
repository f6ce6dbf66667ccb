"""One person on two platforms, through real HTTP: the Slack adapter (signed block_actions) and
the Teams adapter (Bot Framework tokens against a local JWKS) on one engine, one store (memory,
and Redis) and the reference core. Their answers to one clarification are one stream, ordered
by each platform's own time of the action (Slack's action_ts, the Teams activity's timestamp),
never by arrival; the same answer on both is one response (spec §6)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
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
from bot.core.errors import ErrorCode
from bot.core.models import AnswerRequest
from bot.process.runtime import Engine, EngineParts, build_engine
from bot.process.worker import WorkerConfig
from bot.settings import ClarifySettings
from bot.store.base import Store
from bot.store.memory import MemoryStore
from bot.store.redis import RedisStore
from cards.actions import ActionCodec, ActionKind, ActionRef
from devcore.client import DevCoreClient
from devcore.core import ReferenceCore
from devcore.faults import CoreFault
from devslack import BOT_TOKEN, LocalSlack
from tests.engine.conftest import (
    ACME_SLACK,
    new_clarification,
    no_sleep,
    redis_store,  # noqa: F401  (the fixture)
)
from tests.slack.conftest import CODEC_KEY, SIGNING_SECRET
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


# repr=False: on Python 3.12, asyncio's runner formats the task that made this fixture (its
# value included) as it restores the SIGINT handler; a generated repr walks every part (~30 ms)
@dataclass(repr=False)
class Both:
    engine: Engine
    store: Store
    consumers: OutboxConsumers
    teams_channel: RecordingChannel
    slack: LocalSlack
    codec: ActionCodec
    slack_url: str
    teams_url: str
    http: aiohttp.ClientSession
    dev: DevCoreClient
    reader: CoreClient
    sink: MemorySink
    adapters: tuple[Any, Any]
    teams_shown: list[dict[str, Any]] = field(default_factory=list)  # the invokes' answers

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
            self.teams_shown.append(await response.json())
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


@pytest.fixture(params=["memory", "redis"])
async def both(request: pytest.FixtureRequest, clock: ManualClock, bot_client: CoreClient,
               truth: CoreClient, dev_client: DevCoreClient, fake_slack: LocalSlack,
               jwks_url: str, redis_store: Callable[[], RedisStore]  # noqa: F811
               ) -> AsyncIterator[Both]:
    """Both platforms on one engine over the store named by the parameter."""
    store: Store = redis_store() if request.param == "redis" else MemoryStore(clock=clock)
    sink, codec = MemorySink(), ActionCodec(CODEC_KEY)
    web_client = AsyncWebClient(token=BOT_TOKEN, base_url=fake_slack.url)
    slack_channel = SlackChannel(client=web_client, codec=codec, store=store, clock=clock,
                                 sleep=no_sleep)
    teams_channel = RecordingChannel(platform="teams")
    engine = build_engine(EngineParts(
        core=bot_client, store=store, channels={"slack": slack_channel, "teams": teams_channel},
        # (every question on a card of its own: a burst asks Sarah many in a row)
        clarify=ClarifySettings(channels=("slack", "teams"), hours={"enabled": False},
                                per_person_daily_cap=100, digest_threshold=100),
        clock=clock, audit_sink=sink,
        slack=ACME_SLACK, teams=TEAMS, sleep=no_sleep,
        worker=WorkerConfig(concurrency=4, heartbeat_seconds=3600)))
    slack_adapter = build_slack_adapter(
        signing_secret=SIGNING_SECRET, client=web_client, answers=engine.answers,
        interactions=engine.interactions, channel=slack_channel, codec=codec,
        audit=engine.audit, clock=clock, refusals=engine.refusals,
        signature_clock=SystemClock())
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
    for message in both.slack.messages:
        for element in (e for b in message.blocks for e in b.get("elements", [])):
            if str(element.get("action_id", "")).startswith("clarify.answer."):
                ref = both.codec.decode(element["value"])
                if ref.clarification_id == cid:
                    return cid, ref.card_ref
    raise AssertionError("no card for Sarah")


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


# ---------------------------------------------------------------- one person, one answer


@contextlib.asynccontextmanager
async def _consuming(both: Both) -> AsyncIterator[None]:
    """The outbox's consumers running in the background (as ``serve`` runs them) while the
    block sends clicks; when it ends, every answer is forwarded and its outcome shown."""
    consumers = asyncio.create_task(both.consumers.run())
    try:
        yield
        await _forwarded(both)
    finally:
        both.consumers.stop()
        await consumers


async def _forwarded(both: Both) -> None:
    """Every click made durable is forwarded and its outcome shown (a bounded wait on the
    background consumers and the Teams invokes' own forwards, not a timing assertion)."""
    for _ in range(1000):
        for adapter in both.adapters:
            await adapter.drain()
        if await both.store.outbox_size() == 0:
            break
        await asyncio.sleep(0.005)
    assert await both.store.outbox_size() == 0
    await both.engine.answers.followups.drain()


def _her_card(both: Both, cid: str) -> str:
    """Everything Sarah reads on her Slack card of ``cid`` now."""
    for message in both.slack.messages:
        if cid in json.dumps(message.blocks) or cid in json.dumps(message.metadata or {}):
            return message.text + json.dumps(message.blocks, ensure_ascii=False)
    raise AssertionError("no card")


async def test_the_same_answer_on_both_platforms_at_once_is_one_response(
        both: Both, contract: str) -> None:
    """Sarah taps the same date on Slack and on Teams 1-5 ms apart, both requests sent at
    once, eight times (either platform first, the outbox's consumers running): each question
    has exactly one response record at the core, and her Slack card shows its outcome."""
    asked = [await _asked(both) for _ in range(8)]
    async with _consuming(both):
        for n, (cid, card_ref) in enumerate(asked):
            gap = timedelta(milliseconds=(1, 3, 5)[n % 3])
            slack_at, teams_at = (T0, T0 + gap) if n % 2 else (T0 + gap, T0)
            assert await asyncio.gather(both.slack_click(card_ref, cid, 0, slack_at),
                                        both.teams_click(card_ref, cid, 0, teams_at)) == [200,
                                                                                          200]
    for cid, _ in asked:
        c = await both.reader.get_clarification(clarification_id=cid)
        assert [(r.responder, r.answer_index) for r in c.responses] == [("p-sarah", 0)], cid
        assert c.state.value == "answered"
        assert "Recorded as evidence" in _her_card(both, cid)


@pytest.mark.parametrize("first", ["teams", "slack"])
async def test_a_click_given_before_the_recorded_one_on_the_other_platform_is_its_resend(
        both: Both, contract: str, core: ReferenceCore, monkeypatch: pytest.MonkeyPatch,
        first: str) -> None:
    """One platform's tap (3 ms later by the platforms' clocks) is recorded before the other's
    tap of the same date arrives: that one goes to the core as a resend of the first (its
    requestId, where the core takes one), one response is recorded, and both the Slack card and
    the Teams invoke's answer say what it did."""
    seen: list[AnswerRequest] = []
    answer = core.answer

    def recording(token: Any, clarification_id: str, req: AnswerRequest) -> Any:
        seen.append(req)
        return answer(token, clarification_id, req)

    monkeypatch.setattr(core, "answer", recording)
    cid, card_ref = await _asked(both)
    clicks = {"slack": both.slack_click, "teams": both.teams_click}
    later = T0 + timedelta(milliseconds=3)
    assert await clicks[first](card_ref, cid, 0, later) == 200
    await both.settle()
    second = "slack" if first == "teams" else "teams"
    assert await clicks[second](card_ref, cid, 0, T0) == 200
    await both.settle()
    c = await both.reader.get_clarification(clarification_id=cid)
    assert [(r.channel.value, r.superseded_by) for r in c.responses] == [(first, None)]
    assert [r.channel.value for r in seen] == [first, second]
    if contract == "full":
        assert seen[0].request_id is not None and seen[1].request_id == seen[0].request_id
    assert "Recorded as evidence" in _her_card(both, cid)
    assert [shown for shown in both.teams_shown if "Recorded as evidence" in json.dumps(shown)]


async def test_the_same_answer_while_the_first_waits_for_the_core_is_one_response(
        both: Both, core: ReferenceCore, clock: ManualClock,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Sarah taps a date on Teams while the core is down (her answer waits in the outbox),
    then the same date on Slack 3 ms later: once the core is back, both are forwarded in her
    order and the core records one response; her Slack card shows what it did."""
    answer = core.answer

    def down(*_: Any) -> Any:
        raise CoreFault(ErrorCode.UNAVAILABLE)

    cid, card_ref = await _asked(both)
    monkeypatch.setattr(core, "answer", down)
    assert await both.teams_click(card_ref, cid, 0, T0) == 200
    await both.settle()
    assert await both.slack_click(card_ref, cid, 0, T0 + timedelta(milliseconds=3)) == 200
    await both.settle()
    assert await both.store.outbox_size() == 2  # both wait: the Slack one behind Teams'
    monkeypatch.setattr(core, "answer", answer)
    clock.advance(timedelta(minutes=10))
    await both.settle()
    await both.settle()
    assert await both.store.outbox_size() == 0
    c = await both.reader.get_clarification(clarification_id=cid)
    assert [(r.channel.value, r.superseded_by) for r in c.responses] == [("teams", None)]
    assert c.state.value == "answered" and "Recorded as evidence" in _her_card(both, cid)


@pytest.mark.full_contract
async def test_changes_of_mind_on_both_platforms_at_once_stay_in_her_order(
        both: Both) -> None:
    """A on Slack, B on Teams, A on Slack, 5 ms apart, the three requests sent at once, six
    times, on critical questions (two confirmations: Sarah's own answers never bind one, so
    the order alone decides): three responses each time, in Sarah's order, the last A her
    active, counted answer, and no conflict with herself, whatever order they arrived in."""
    asked = [await _asked(both, severity="critical") for _ in range(6)]
    ms = timedelta(milliseconds=5)
    async with _consuming(both):
        for cid, card_ref in asked:
            assert await asyncio.gather(
                both.slack_click(card_ref, cid, 0, T0), both.teams_click(card_ref, cid, 1, T0 + ms),
                both.slack_click(card_ref, cid, 0, T0 + 2 * ms)) == [200, 200, 200]
    for cid, _ in asked:
        c = await both.reader.get_clarification(clarification_id=cid)
        given = sorted(c.responses, key=lambda r: r.responded_at or T0)
        assert [(r.answer_index, r.channel.value) for r in given] == [
            (0, "slack"), (1, "teams"), (0, "slack")], cid
        assert [r.superseded_by is not None for r in given] == [True, True, False]
        assert c.state.value == "partially_confirmed" and c.quorum.confirmed_by == ["p-sarah"]
        assert not any(ev.type == "conflict_entered" for ev in c.events)


async def test_a_then_b_then_a_one_at_a_time_are_three_responses(both: Both) -> None:
    """A on Slack (it binds), B on Teams, A on Slack again, each forwarded before the next:
    three responses in Sarah's order, and the last A is her active, bound answer again."""
    cid, card_ref = await _asked(both)
    for at, (platform, index) in enumerate((("slack", 0), ("teams", 1), ("slack", 0))):
        click = both.slack_click if platform == "slack" else both.teams_click
        assert await click(card_ref, cid, index, T0 + timedelta(milliseconds=5 * at)) == 200
        await both.settle()
    c = await both.reader.get_clarification(clarification_id=cid)
    assert [(r.answer_index, r.channel.value) for r in c.responses] == [
        (0, "slack"), (1, "teams"), (0, "slack")]
    first, changed, back = c.responses
    assert back.binding_status.value == "bound" and back.supersedes == changed.response_id
    assert changed.superseded_by == back.response_id
    assert c.state.value == "answered" and "Recorded as evidence" in _her_card(both, cid)
