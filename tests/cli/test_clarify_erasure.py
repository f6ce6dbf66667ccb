"""`clarify-bot clarify erase-attribution` end to end: the core's tombstone and the bot's own data.

The bot's Redis store and JSON-lines audit file hold what a real run leaves for Sarah (delivery
slots, an admission, her cap counter, a digest window and batch, a card's message reference,
forwarded answers' order markers by chat user and by her cards' order token, a parked answer,
her Teams conversation reference with her AAD object id, Teams user id and display name, a
steward's queued notices naming her, rate and abuse-limit buckets of her chat ids, a decline
marker; audit lines naming her id and her Slack user). After the command no Redis key, field or
value names her (SCAN over every key); the core keeps the evidence: her answer's value, her
rights at answer time and the binding.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from uuid import uuid4

import jsonschema
import pytest
import redis.asyncio as aioredis

from bot.audit import AuditEvent, JsonLinesSink, SkipPair
from bot.chat import person_order_token
from bot.core.models import (
    AnswerRequest,
    Audience,
    BindingStatus,
    ClarificationState,
    ReasonCode,
    Role,
)
from bot.core.models import (
    Channel as ContractChannel,
)
from bot.store.base import CardRecord, DeliveryKey, DigestItem, NoticeItem
from bot.store.keys import PROFILES, profile_key
from bot.store.redis import RedisStore
from clarify_bot import steward_output
from devcore.directory import Token
from tests.cli.conftest import Cli, LiveCore
from tests.conftest import START
from tests.redis_url import TEST_REDIS
from tests.support.redis_dump import every_key_and_value

URL = f"{TEST_REDIS}/13"
CRITICAL, NORMAL = "clr-00001", "clr-00002"
SARAH_AAD = "8f1c2d3e-0000-4000-8000-00000000a001"
SARAH_TEAMS = "29:1sarahTeamsUserId"
NAMES = ("p-sarah", "U0SARAH", SARAH_AAD, SARAH_TEAMS, "Sarah Chen")


@pytest.fixture
def prefix() -> Iterator[str]:
    name = f"erase-{uuid4().hex[:8]}"
    yield name
    asyncio.run(_drop(name))


async def _drop(prefix: str) -> None:
    client = aioredis.from_url(URL, decode_responses=True)
    found = [k async for k in client.scan_iter(match=f"{prefix}:*")]
    if found:
        await client.delete(*found)
    await client.aclose()


async def _fill(prefix: str) -> None:
    """What deliveries, a digest and answers leave in the store for Sarah (and Ahmed)."""
    async with RedisStore.from_url(URL, prefix=prefix) as store:
        for person in ("p-sarah", "p-ahmed"):
            key = DeliveryKey(CRITICAL, person, 0, "question")
            await store.reserve(key, worker_id="w1", now=START)
            await store.mark_sent(key, message_ref=f"slack:T0ACME:D0{person}:1.0")
            await store.add_card(CardRecord(key, "slack", f"slack:T0ACME:D0{person}:1.0"))
            for n, cid in enumerate((NORMAL, "clr-00005", "clr-00006", "clr-00007")):
                item = DigestItem(cid, person, 0, f"job-{n}")
                await store.admit(DeliveryKey(cid, person, 0, "question"), item=item,
                                  day="2026-07-06", now=START, cap=5, threshold=3,
                                  window_seconds=1800, batched=True)
        for user, acted in (("U0SARAH", 1), ("U0AHMED", 2)):
            order = f"{CRITICAL}|slack|acme|{user}"
            await store.outbox_accept(f"{order}|{acted}|f", "{}", order_key=order,
                                      acted_at=acted, now=START)
        claimed = await store.outbox_claim(now=START, lease_seconds=60, limit=10)
        for entry in claimed:
            await store.outbox_done(entry)
        parked = f"{NORMAL}|slack|acme|U0SARAH"
        await store.outbox_accept(f"{parked}|3|g", "{}", order_key=parked, acted_at=3,
                                  now=START)
        [entry] = await store.outbox_claim(now=START + timedelta(seconds=1), lease_seconds=60,
                                           limit=10)
        await store.outbox_park(entry, reason="REFUSED", now=START)
        # a card's order token names her answers on both platforms (Callback.order_key)
        for person in ("p-sarah", "p-ahmed"):
            order = f"clr-00005|p|{person_order_token(person)}"
            await store.outbox_accept(f"{order}|4|h", "{}", order_key=order, acted_at=4,
                                      now=START)
        for entry in await store.outbox_claim(now=START + timedelta(seconds=2),
                                              lease_seconds=60, limit=10):
            await store.outbox_done(entry)
        # the platform profiles working hours and locales keep a day (bot.engine.zones): her
        # Slack and Teams ones, and Ahmed's
        for platform, user in (("slack", "U0SARAH"), ("teams", SARAH_AAD), ("slack", "U0AHMED")):
            await store.kv_put(PROFILES, profile_key(platform, user),
                               '{"tz": "Europe/Berlin", "locale": "de-DE"}', ttl_seconds=600)
        # the Slack directories of people (bot.store.directory): her entries in two workspaces'
        # and Ahmed's
        await store.directory_put("inst-a|T0ACME", {"U0SARAH": '{"tz": "Europe/Berlin"}',
                                                    "U0AHMED": '{"tz": "Europe/Berlin"}'},
                                  ttl_seconds=600)
        await store.directory_put("inst-b|T0OTHER", {"U0SARAH": '{"tz": "Europe/Berlin"}'},
                                  ttl_seconds=600)
        # her Teams conversation (what the Agents SDK's reference holds: ids and her name)
        await store.conversation_put("acme", SARAH_AAD, json.dumps({
            "user": {"id": SARAH_TEAMS, "name": "Sarah Chen", "aadObjectId": SARAH_AAD},
            "conversation": {"id": "a:1sarah", "tenantId": "5f3c1a2b"},
            "serviceUrl": "https://smba.trafficmanager.net/emea/"}), now=START)
        # the steward's queued notices: one naming Sarah and Ahmed, one naming Sarah alone
        for cid, asked in (("clr-00008", ("p-sarah", "p-ahmed")), ("clr-00009", ("p-sarah",))):
            await store.notice_add("acme", "p-maria", NoticeItem(cid, "job-9", 0, asked),
                                   now=START, window_seconds=60)
        await store.rate_take("slack:T0ACME:chat.postMessage:D0p-sarah", rate_per_second=1,
                              burst=3, now=START)
        await store.limit_admit("slack:T0ACME:U0SARAH", per_second=1, burst=5, ttl_seconds=60,
                                now=START)
        await store.mark_once("declining", f"{CRITICAL}|p-sarah", ttl_seconds=600)
        await store.kv_put("declining", f"{CRITICAL}|p-sarah", "later", ttl_seconds=600)
    # a bucket as a store before hashed key names kept it: her Slack id in its name
    client = aioredis.from_url(URL, decode_responses=True)
    await client.hset(f"{prefix}:rate:slack:T0ACME:users.info:U0SARAH",
                      mapping={"tokens": "1", "at": "0"})
    await client.aclose()


async def _everything(prefix: str) -> str:
    """Every key, hash field, set member and value under the prefix, as one text."""
    client = aioredis.from_url(URL, decode_responses=True)
    try:
        return await every_key_and_value(client, prefix)
    finally:
        await client.aclose()


async def _kept_profiles(prefix: str) -> list[str]:
    """The chat identities' profile keys still in the store (of those ``_fill`` wrote)."""
    async with RedisStore.from_url(URL, prefix=prefix) as store:
        return [key for key in (profile_key("slack", "U0SARAH"), profile_key("teams", SARAH_AAD),
                                profile_key("slack", "U0AHMED"))
                if await store.kv_get(PROFILES, key) is not None]


async def _listed(prefix: str) -> list[tuple[str, str]]:
    """The directory entries still in the store (of those ``_fill`` wrote)."""
    async with RedisStore.from_url(URL, prefix=prefix) as store:
        return [(scope, user) for scope in ("inst-a|T0ACME", "inst-b|T0OTHER")
                for user in ("U0SARAH", "U0AHMED")
                if await store.directory_get(scope, user) is not None]


def _audit(path: Path) -> None:
    sink = JsonLinesSink(path=path)
    sink.write(AuditEvent(type="delivered", at=START, clarification_id=CRITICAL,
                          message="Question delivered.", person_id="p-sarah", attempt=0,
                          channel="slack"))
    sink.write(AuditEvent(type="escalated", at=START, clarification_id=NORMAL,
                          message="Escalated.", person_id="p-maria", attempt=3,
                          reason_code=ReasonCode.NO_READ_PERMISSION,
                          skips=(SkipPair("p-sarah", ReasonCode.NO_READ_PERMISSION),),
                          extra={"unanswered": "p-ahmed,p-sarah"}))
    sink.write(AuditEvent(type="answer_refused", at=START, clarification_id=CRITICAL,
                          message="Unverified.", channel="slack",
                          extra={"chat_user": "U0SARAH"}))
    sink.write(AuditEvent(type="delivered", at=START, clarification_id=CRITICAL,
                          message="Question delivered.", person_id="p-ahmed", attempt=1))


def _answered(live: LiveCore) -> None:
    bot = Token(value="t", audience=Audience.CLARIFY, tenants=frozenset({"acme"}))
    for who in ("p-sarah", "p-ahmed"):
        live.core.answer(bot, CRITICAL, AnswerRequest(
            answer_index=0, responder=who, rights=Role.EDITOR, channel=ContractChannel.SLACK,
            message_ref=f"slack:T0ACME:D0{who}:1.0"))


@pytest.mark.full_contract  # the erasure extension (the baseline: the test below)
def test_erase_attribution_leaves_no_trace_of_the_person_and_keeps_the_evidence(
    cli: Cli, live: LiveCore, prefix: str, tmp_path: Path
) -> None:
    asyncio.run(_fill(prefix))
    audit = tmp_path / "audit.jsonl"
    _audit(audit)
    _answered(live)
    assert all(name in asyncio.run(_everything(prefix)) for name in NAMES)
    env = {"CLARIFY_BOT_STORE__BACKEND": "redis", "CLARIFY_BOT_REDIS__URL": URL,
           "CLARIFY_BOT_REDIS__KEY_PREFIX": prefix, "CLARIFY_BOT_AUDIT__SINK": "jsonl",
           "CLARIFY_BOT_AUDIT__PATH": str(audit)}
    result = cli("acme-key-maria-steward", "erase-attribution", "--person", "p-sarah", "--yes",
                 env=env, json_out=True)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    jsonschema.validate(doc, json.loads(steward_output.SCHEMA_PATH.read_text()))
    store = doc["store"]
    assert (store["delivery_slots"], store["admissions"], store["cap_counters"]) == (1, 4, 1)
    assert (store["digest_windows"], store["digest_batches"], store["parked_answers"]) == (1, 1, 1)
    assert store["message_refs"] == 1 and store["answer_order_markers"] == 3  # three questions
    assert (store["conversation_refs"], store["rate_keys"]) == (1, 1)
    assert store["platform_profiles"] == 2  # her Slack and Teams ones, not Ahmed's
    assert store["directory_entries"] == 2  # hers in both workspaces, not Ahmed's
    assert asyncio.run(_listed(prefix)) == [("inst-a|T0ACME", "U0AHMED")]
    assert asyncio.run(_kept_profiles(prefix)) == [profile_key("slack", "U0AHMED")]
    assert (store["notices_rewritten"], store["notices_dropped"]) == (1, 1)
    assert store["answers_waiting_kept"] == 0
    assert doc["auditLines"] == 3 and doc["core"]["responses"] == 1

    left = asyncio.run(_everything(prefix))
    assert not any(name in left for name in NAMES), [
        line for line in left.splitlines() if any(n in line for n in NAMES)]
    assert "p-ahmed" in left and "U0AHMED" in left  # nobody else's data went
    lines = audit.read_text().splitlines()
    assert len(lines) == 4 and not any(n in line for line in lines for n in NAMES)
    assert "p-ahmed" in lines[3]

    c = live.core.records[CRITICAL].model
    assert "p-sarah" not in c.model_dump_json()
    erased = c.responses[0]
    assert (erased.answer_index, erased.rights_at_answer_time, erased.binding_status) == (
        0, Role.EDITOR, BindingStatus.BOUND)
    assert c.state is ClarificationState.ANSWERED and c.bound_fact_version_tx is not None

    text = cli("acme-key-maria-steward", "erase-attribution", "--person", "p-sarah", "--yes",
               env=env)
    assert text.exit_code == 0 and "0 clarifications changed" in text.output


@pytest.mark.baseline_contract
def test_without_the_erasure_extension_the_bots_own_data_still_goes(
    cli: Cli, live: LiveCore, prefix: str, tmp_path: Path
) -> None:
    """A core that cannot tombstone: the bot still erases everything it holds about Sarah,
    found from her aliases read with the service token, and says the core's part is the core's
    own tooling's; the core's record is left as it was."""
    asyncio.run(_fill(prefix))
    audit = tmp_path / "audit.jsonl"
    _audit(audit)
    _answered(live)
    env = {"CLARIFY_BOT_STORE__BACKEND": "redis", "CLARIFY_BOT_REDIS__URL": URL,
           "CLARIFY_BOT_REDIS__KEY_PREFIX": prefix, "CLARIFY_BOT_AUDIT__SINK": "jsonl",
           "CLARIFY_BOT_AUDIT__PATH": str(audit),
           "CLARIFY_BOT_CORE_TOKEN": "dev-clarify-token-acme"}
    result = cli("acme-key-maria-steward", "erase-attribution", "--person", "p-sarah", "--yes",
                 env=env, json_out=True)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    jsonschema.validate(doc, json.loads(steward_output.SCHEMA_PATH.read_text()))
    assert doc.get("core") is None and doc["aliasesFound"] is True
    assert doc["store"]["delivery_slots"] == 1 and doc["auditLines"] == 3
    assert doc["store"]["platform_profiles"] == 2
    assert asyncio.run(_kept_profiles(prefix)) == [profile_key("slack", "U0AHMED")]
    left = asyncio.run(_everything(prefix))
    assert not any(name in left for name in NAMES)
    assert "p-ahmed" in left and "U0AHMED" in left
    text = cli("acme-key-maria-steward", "erase-attribution", "--person", "p-sarah", "--yes",
               env=env)
    assert "does not offer erase-attribution" in text.output
    assert "p-sarah" in live.core.records[CRITICAL].model.model_dump_json()  # the core's part
