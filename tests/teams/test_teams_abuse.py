"""Abuse limits on ``POST /api/messages`` through real HTTP and signed tokens: one person's flood
of invokes never starves another's, an address sending bad tokens is cut off unread, bodies are
bounded however framed, and invokes are refused at the cap of outstanding tasks
(docs/reliability.md, "Abuse limits"). The limits' clock is the stack's manual one."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from bot.abuse_limits import OFF, Bucket, Limits
from bot.aio import Tasks
from bot.answering.answers import Receipt
from bot.answering.waiting import Handover
from bot.chat import Callback
from bot.metrics import REGISTRY
from tests.engine.conftest import new_clarification
from tests.teams.inbound import STRANGER_AAD, TeamsStack, action_data, activity, invoke
from tests.teams.tokens import claims, sign

REFUSED = "clarify_requests_refused_total"


def limits(teams: TeamsStack, *, per_ip: Bucket = OFF,
           per_user: Bucket = OFF, max_tasks: int = 0) -> Limits:
    made = Limits(clock=teams.clock, per_ip=per_ip, per_user=per_user, max_tasks=max_tasks)
    teams.adapter.limits = made
    return made


def accepted_by(teams: TeamsStack) -> list[str]:
    seen: list[str] = []
    take = teams.engine.answers.take

    async def spy(cb: Callback, **kwargs: Any) -> Receipt:
        seen.append(cb.user_id)
        return await take(cb, **kwargs)

    teams.engine.answers.take = spy  # type: ignore[method-assign]
    return seen


async def test_one_person_flooding_invokes_cannot_starve_another(teams: TeamsStack) -> None:
    """300 of Sarah's invokes and 10 of someone else's arrive together: Sarah gets her 20 and
    280 refusals (429, Retry-After, value-free, nothing stored); every other invoke is answered;
    Sarah's answer is recorded once."""
    limits(teams, per_user=Bucket(0.25, 20))
    cid = await new_clarification(teams.dev, authority={"named": ["p-sarah"]})
    token = sign(claims())
    flood = invoke(action_data(teams.codec, cid))
    other = invoke(action_data(teams.codec, cid))
    other["from"] = {"id": f"29:{STRANGER_AAD}", "name": "Someone", "aadObjectId": STRANGER_AAD}
    accepted = accepted_by(teams)
    before = REGISTRY.value(REFUSED, limit="user", platform="teams")

    async def post(body: dict[str, Any]) -> tuple[int, str | None, str]:
        response = await teams.post(body, token)
        return response.status, response.headers.get("Retry-After"), await response.text()

    sent = [flood] * 300
    for i in range(10):
        sent.insert(i * 30, other)
    results = await asyncio.gather(*(post(b) for b in sent))
    others = [r for r, b in zip(results, sent, strict=True) if b is other]
    sarahs = [r for r, b in zip(results, sent, strict=True) if b is flood]
    assert [status for status, _, _ in others] == [200] * 10
    assert sorted(status for status, _, _ in sarahs) == [200] * 20 + [429] * 280
    assert {(after, text) for status, after, text in sarahs if status == 429} \
        == {("4", '{"ok": false, "error": "rate_limited"}')}
    assert accepted.count(STRANGER_AAD) == 10 and len(accepted) == 30
    assert REGISTRY.value(REFUSED, limit="user", platform="teams") - before == 280
    await teams.settle()
    assert await teams.responses(cid) == [("p-sarah", 0)]


async def test_an_address_sending_bad_tokens_is_refused_unread(teams: TeamsStack) -> None:
    """Three requests with no token use up the address's refusals: a good one is then refused
    (429) until the bucket refills; good requests spend nothing."""
    limits(teams, per_ip=Bucket(1, 3))
    body = activity("conversationUpdate")
    for _ in range(3):
        assert (await teams.post(body)).status == 401
    refused = await teams.post(body, sign(claims()))
    assert (refused.status, refused.headers["Retry-After"]) == (429, "1")
    teams.clock.advance(1)
    for _ in range(3):
        assert (await teams.post(body, sign(claims()))).status == 202


async def test_teams_bodies_are_bounded_however_framed(teams: TeamsStack) -> None:
    """Over 128 KiB, chunked: 413 and counted; a valid activity sent in small chunks is read
    whole."""
    limits(teams)
    before = REGISTRY.value(REFUSED, limit="body", platform="teams")

    async def chunks(data: bytes, size: int) -> AsyncIterator[bytes]:
        for start in range(0, len(data), size):
            yield data[start:start + size]

    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {sign(claims())}"}
    url = f"{teams.url}/api/messages"
    small = json.dumps(activity("conversationUpdate")).encode()
    split = await teams.http.post(url, data=chunks(small, 50), headers=headers)
    big = json.dumps(activity("conversationUpdate", text="x" * (130 * 1024))).encode()
    chunked = await teams.http.post(url, data=chunks(big, 4096), headers=headers)
    assert (split.status, chunked.status) == (202, 413)
    assert REGISTRY.value(REFUSED, limit="body", platform="teams") - before == 1


@pytest.mark.slow
async def test_invokes_are_refused_at_the_cap_of_outstanding_tasks(teams: TeamsStack) -> None:
    """One answer's forward still running fills a cap of one: the next invoke is refused (503,
    Retry-After) before anything is stored, a conversation update still passes; the held answer is
    recorded once it goes on, and invokes are taken again."""
    limits(teams, max_tasks=1)
    teams.adapter.invokes.decision_seconds = 0  # answer the invoke without waiting for the core
    cid = await new_clarification(teams.dev, authority={"named": ["p-sarah"]})
    release = asyncio.Event()
    forward = teams.engine.answers._forward_own

    async def held(cb: Callback, handover: Handover | None, tasks: Tasks) -> Receipt:
        await release.wait()
        return await forward(cb, handover, tasks)

    teams.engine.answers._forward_own = held  # type: ignore[method-assign]
    token = sign(claims())
    assert (await teams.post(invoke(action_data(teams.codec, cid)), token)).status == 200
    assert REGISTRY.value("clarify_outstanding_tasks", platform="teams") == 1
    accepted = accepted_by(teams)
    busy = await teams.post(invoke(action_data(teams.codec, cid, candidate=1)), token)
    assert (busy.status, busy.headers["Retry-After"]) == (503, "5")
    assert accepted == []
    assert (await teams.post(activity("conversationUpdate"), token)).status == 202

    release.set()
    await teams.settle()
    assert REGISTRY.value("clarify_outstanding_tasks", platform="teams") == 0
    assert await teams.responses(cid) == [("p-sarah", 0)]
    assert (await teams.post(invoke(action_data(teams.codec, cid)), token)).status == 200
