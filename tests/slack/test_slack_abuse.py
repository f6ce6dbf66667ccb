"""Abuse limits on ``POST /slack/events`` through real HTTP and hand-signed payloads: one person's
flood never starves another's clicks, an address sending junk is cut off unread, bodies are
bounded however they are framed, and work after acknowledgements is capped (docs/reliability.md,
"Abuse limits"). The limits' clock is the stack's manual one: nothing here sleeps."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlencode

import pytest
from slack_sdk.signature import SignatureVerifier

from bot.abuse_limits import OFF, Bucket, Limits
from bot.answering.answers import Receipt
from bot.chat import Callback
from bot.metrics import REGISTRY
from bot.settings import LimitsSettings
from tests.slack.conftest import Stack, payload_of, responders

REFUSED = "clarify_requests_refused_total"
TASKS = "clarify_outstanding_tasks"


def limits(stack: Stack, *, per_ip: Bucket = OFF, per_user: Bucket = OFF,
           max_tasks: int = 0, hops: int = 0) -> Limits:
    made = Limits(clock=stack.clock, per_ip=per_ip, per_user=per_user, max_tasks=max_tasks,
                  proxy_hops=hops)
    stack.adapter.limits = made
    return made


def defaults(stack: Stack) -> Limits:
    """The limits as shipped (``LimitsSettings()``), as the composition builds them."""
    table = LimitsSettings()
    return limits(stack, per_ip=Bucket(table.ip_refusals_per_second, table.ip_refusal_burst),
                  per_user=Bucket(table.user_per_second, table.user_burst),
                  max_tasks=table.max_outstanding_tasks)


def accepted_by(stack: Stack) -> list[str]:
    """Spy on ``answers.take``: the user of every answer that reached the store."""
    seen: list[str] = []
    take = stack.answers.take

    async def spy(cb: Callback, **kwargs: Any) -> Receipt:
        seen.append(cb.user_id)
        return await take(cb, **kwargs)

    stack.answers.take = spy  # type: ignore[method-assign]
    return seen


async def critical_card(stack: Stack) -> tuple[str, Any, Any]:
    """A critical question for Ahmed and Sarah (each answer counts), and both their cards."""
    cid = await stack.create(authority={"authored_by": ["p-ahmed", "p-sarah"]},
                             severity="critical")
    await stack.burst()
    return cid, stack.card("U0AHMED", cid), stack.card("U0SARAH", cid)


@pytest.mark.slow
async def test_one_user_flooding_a_thousand_clicks_cannot_starve_another(stack: Stack) -> None:
    """Sarah's 1,000 signed clicks and Ahmed's 20 arrive together: Sarah gets her 30 (the
    bucket) and 970 refusals, 429 with Retry-After and a value-free body, none reaching the
    store; every one of Ahmed's is acknowledged; each answer is recorded once."""
    limits(stack, per_user=Bucket(0.1, 30))
    cid, ahmed, sarah = await critical_card(stack)
    flood = await payload_of(stack, "U0SARAH", sarah, "clarify.answer.0")
    own = await payload_of(stack, "U0AHMED", ahmed, "clarify.answer.0")
    accepted = accepted_by(stack)
    before = REGISTRY.value(REFUSED, limit="user", platform="slack")

    async def post(payload: dict[str, Any]) -> tuple[int, str | None, bytes]:
        response = await stack.post_payload(payload)
        return response.status, response.headers.get("Retry-After"), await response.read()

    sent = [flood] * 1000
    for i in range(20):
        sent.insert(i * 50, own)
    results = await asyncio.gather(*(post(p) for p in sent))
    by_ahmed = [r for r, p in zip(results, sent, strict=True) if p is own]
    by_sarah = [r for r, p in zip(results, sent, strict=True) if p is flood]
    assert [status for status, _, _ in by_ahmed] == [200] * 20
    assert sorted(status for status, _, _ in by_sarah) == [200] * 30 + [429] * 970
    refused = {(status, after, body) for status, after, body in by_sarah if status == 429}
    assert refused == {(429, "10", b'{"ok": false, "error": "rate_limited"}')}
    assert accepted.count("U0SARAH") == 30 and accepted.count("U0AHMED") == 20
    assert REGISTRY.value(REFUSED, limit="user", platform="slack") - before == 970
    await stack.settle()
    assert sorted(await responders(stack.bot, cid)) == [("p-ahmed", 0), ("p-sarah", 0)]

    stack.clock.advance(10)  # the bucket refills at its rate: one more click is taken
    assert (await stack.post_payload(flood)).status == 200
    assert (await stack.post_payload(flood)).status == 429


async def test_slack_retry_of_a_durable_answer_is_acknowledged_over_the_limit(stack: Stack
                                                                              ) -> None:
    """Sarah's bucket is empty; Slack resends her answer click (X-Slack-Retry-Num): accepting
    it again is idempotent, so it is acknowledged, and her answer is still recorded once. The
    same body without the header is refused."""
    limits(stack, per_user=Bucket(0.01, 1))
    cid, _, sarah = await critical_card(stack)
    payload = await payload_of(stack, "U0SARAH", sarah, "clarify.answer.1")
    assert (await stack.post_payload(payload)).status == 200
    body = urlencode({"payload": json.dumps(payload)}).encode()
    assert (await stack.post_signed(body)).status == 429
    retried = await stack.post_signed(body, headers={"X-Slack-Retry-Num": "1",
                                                     "X-Slack-Retry-Reason": "http_timeout"})
    assert retried.status == 200
    await stack.settle()
    assert await responders(stack.bot, cid) == [("p-sarah", 1)]


@pytest.mark.slow
async def test_a_burst_of_250_people_from_one_address_passes_the_defaults(stack: Stack) -> None:
    """Slack sends everyone's clicks from a few addresses: 250 different people at once from
    127.0.0.1, under the shipped limits, are all acknowledged."""
    defaults(stack)
    _, _, sarah = await critical_card(stack)
    payload = await payload_of(stack, "U0SARAH", sarah, "clarify.answer.0")
    people = [json.loads(json.dumps(payload)) for _ in range(250)]
    for n, person in enumerate(people):
        person["user"]["id"] = f"U0P{n:04d}"
    statuses = await asyncio.gather(*(stack.post_payload(p) for p in people))
    assert [r.status for r in statuses] == [200] * 250


async def test_an_address_sending_junk_is_refused_unread(stack: Stack) -> None:
    """Five bad signatures from one address use up its refusals: its next request, even a good
    one, is refused (429, before its body is read or checked) until the bucket refills; behind
    a trusted proxy the address is X-Forwarded-For's, so another client is not affected."""
    limits(stack, per_ip=Bucket(0.5, 5))
    _, _, sarah = await critical_card(stack)
    good = urlencode({"payload": json.dumps(
        await payload_of(stack, "U0SARAH", sarah, "clarify.answer.0"))}).encode()
    before = REGISTRY.value(REFUSED, limit="ip", platform="slack")
    for _ in range(5):
        assert (await stack.post_signed(good, secret="not the signing secret")).status == 401
    refused = await stack.post_signed(good)
    assert (refused.status, refused.headers["Retry-After"]) == (429, "2")
    assert REGISTRY.value(REFUSED, limit="ip", platform="slack") - before == 1
    stack.clock.advance(2)
    assert (await stack.post_signed(good)).status == 200  # good requests spend nothing
    assert (await stack.post_signed(good)).status == 200

    limits(stack, per_ip=Bucket(0.5, 5), hops=1)
    junk = {"X-Forwarded-For": "203.0.113.9"}
    for _ in range(5):
        assert (await stack.post_signed(good, secret="wrong", headers=junk)).status == 401
    assert (await stack.post_signed(good, headers=junk)).status == 429
    spoofed = {"X-Forwarded-For": "203.0.113.9, 198.51.100.7"}  # the proxy saw .7
    assert (await stack.post_signed(good, headers=spoofed)).status == 200


async def test_bodies_are_bounded_however_framed(stack: Stack) -> None:
    """Over 64 KiB: 413 whether declared or chunked, without reading it all; a signed body
    sent in several chunks is read whole and taken; each 413 is counted."""
    limits(stack)
    _, _, sarah = await critical_card(stack)
    body = urlencode({"payload": json.dumps(
        await payload_of(stack, "U0SARAH", sarah, "clarify.answer.0"))}).encode()
    before = REGISTRY.value(REFUSED, limit="body", platform="slack")

    async def chunks(data: bytes, size: int) -> AsyncIterator[bytes]:
        for start in range(0, len(data), size):
            yield data[start:start + size]

    split = await stack.http.post(f"{stack.url}/slack/events", data=chunks(body, 97),
                                  headers=signed_headers(stack, body))
    assert split.status == 200 and split.headers.get("Transfer-Encoding") is None
    big = b"payload=" + b"x" * (65 * 1024)
    chunked = await stack.http.post(f"{stack.url}/slack/events", data=chunks(big, 8192),
                                    headers=signed_headers(stack, big))
    declared = await stack.post_signed(big)
    assert (chunked.status, declared.status) == (413, 413)
    assert await chunked.json() == {"ok": False, "error": "too_large"}
    assert REGISTRY.value(REFUSED, limit="body", platform="slack") - before == 2


def signed_headers(stack: Stack, body: bytes) -> dict[str, str]:
    stamp = str(int(time.time()))
    return {"Content-Type": "application/x-www-form-urlencoded",
            "X-Slack-Request-Timestamp": stamp,
            "X-Slack-Signature": SignatureVerifier(stack.signing_secret).generate_signature(
                timestamp=stamp, body=body) or ""}


async def test_work_after_acknowledgements_is_capped(stack: Stack) -> None:
    """Two declines whose work is still running fill a cap of two: a third is refused (503,
    Retry-After, nothing started); an answer click, which starts no task, is still made
    durable and acknowledged; once the work is done, declines are taken again. The gauge
    follows the tasks."""
    limits(stack, max_tasks=2)
    cid = await stack.create(authority={"authored_by": ["p-ahmed"], "named": ["p-sarah"]})
    await stack.burst()
    ahmed = stack.card("U0AHMED", cid)
    declines = await payload_of(stack, "U0AHMED", ahmed, "clarify.decline")
    release = asyncio.Event()
    started: list[str] = []
    decline = stack.adapter.kit.interactions.decline

    async def held(user: Any, **kwargs: Any) -> Any:
        started.append(user.user_id)
        await release.wait()
        return await decline(user, **kwargs)

    stack.adapter.kit.interactions.decline = held  # type: ignore[method-assign]
    before = REGISTRY.value(REFUSED, limit="tasks", platform="slack")
    for _ in range(2):
        assert (await stack.post_payload(declines)).status == 200
    assert REGISTRY.value(TASKS, platform="slack") == 2  # spawned before the ack was sent
    third = await stack.post_payload(declines)
    assert (third.status, third.headers["Retry-After"]) == (503, "5")
    assert await third.json() == {"ok": False, "error": "busy"}
    assert started == ["U0AHMED", "U0AHMED"]
    assert REGISTRY.value(REFUSED, limit="tasks", platform="slack") - before == 1

    accepted = accepted_by(stack)
    assert (await stack.click("U0AHMED", ahmed, "clarify.answer.0")).status == 200
    assert accepted == ["U0AHMED"]

    release.set()
    await stack.settle()
    assert REGISTRY.value(TASKS, platform="slack") == 0
    assert (await stack.post_payload(declines)).status == 200
    await stack.settle()
    assert len(started) == 3


async def test_socket_mode_callbacks_get_the_same_person_limit(stack: Stack) -> None:
    """Through bolt's Socket Mode path a person over their rate is not acknowledged (429, so
    Slack tells them, as in HTTP mode) and nothing reaches the store."""
    from slack_bolt.request.async_request import AsyncBoltRequest

    limits(stack, per_user=Bucket(0.1, 2))
    cid, _, sarah = await critical_card(stack)
    payload = await payload_of(stack, "U0SARAH", sarah, "clarify.answer.1")
    accepted = accepted_by(stack)
    statuses = [(await stack.adapter.kit.app.async_dispatch(
        AsyncBoltRequest(body=payload, mode="socket_mode"))).status for _ in range(3)]
    assert statuses == [200, 200, 429]
    assert accepted == ["U0SARAH", "U0SARAH"]
    await stack.settle()
    assert await responders(stack.bot, cid) == [("p-sarah", 1)]
