"""What an answer invoke waits for, over real HTTP (docs/teams.md, "Answer invokes" and
"Tokens"): it is answered at the edge by the answer handler, without the SDK's turn (every other
invoke still takes it); a token verified whole is taken again for a minute without its
signature checked anew, never past its expiry, and any other text is verified from the start;
the answer's outbox entry is settled after the response, and an entry never settled (the
process killed first) is forwarded again after its lease and is at the core once."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta
from typing import Any

from adapters.teams.auth import EXPIRY_LEEWAY_SECONDS, VERIFIED_SECONDS
from bot.store.errors import StoreUnavailable
from cards.actions import ActionKind
from tests.engine.conftest import new_clarification
from tests.teams.inbound import TeamsStack, action_data, invoke
from tests.teams.tokens import claims, sign

CARD = "application/vnd.microsoft.card.adaptive"


def _turns(teams: TeamsStack) -> list[str]:
    """Counts the SDK's turns: the verb of each invoke that took one."""
    taken: list[str] = []
    process = teams.adapter.cloud.process_activity

    async def counted(claims: Any, activity: Any, logic: Any) -> Any:
        taken.append(str((activity.value or {}).get("action", {}).get("verb")))
        return await process(claims, activity, logic)

    teams.adapter.cloud.process_activity = counted  # type: ignore[method-assign]
    return taken


async def test_an_answer_invoke_is_answered_without_the_sdks_turn(teams: TeamsStack) -> None:
    """The answer: the outcome card, as the SDK's route would send it (HTTP 200, the invoke
    response's statusCode, type and card), no turn; a refresh takes the SDK's turn, and so does
    an answer whose action is not an ``Action.Execute`` (refused there, nothing recorded)."""
    cid = await new_clarification(teams.dev, authority={"named": ["p-sarah"]})
    turns = _turns(teams)
    token = sign(claims())
    answered = await teams.post(invoke(action_data(teams.codec, cid)), token)
    assert answered.status == 200
    body = await answered.json()
    assert (body["statusCode"], body["type"]) == (200, CARD)
    assert body["value"]["type"] == "AdaptiveCard"
    assert turns == []
    await teams.settle()
    assert await teams.responses(cid) == [("p-sarah", 0)]

    other = await new_clarification(teams.dev, authority={"named": ["p-sarah"]})
    refresh = invoke(action_data(teams.codec, other, candidate=None, kind=ActionKind.REFRESH),
                     verb="clarify.refresh")
    assert (await teams.post(refresh, token)).status == 200
    submitted = invoke(action_data(teams.codec, other))
    submitted["value"]["action"]["type"] = "Action.Submit"
    refused = await teams.post(submitted, token)
    assert refused.status == 200 and (await refused.json())["statusCode"] != 200
    assert turns == ["clarify.refresh", "clarify.answer"]
    await teams.settle()
    assert await teams.responses(other) == []


async def test_a_verified_token_is_taken_again_until_a_minute_or_its_expiry(
        teams: TeamsStack) -> None:
    """The same token twice: its key looked up once. One character of the signature changed:
    verified from the start, and refused. A token remembered past its expiry and the leeway, or
    past a minute, is verified again."""
    gate = teams.adapter.gate
    lookups: list[str] = []
    find = gate.keys.get_signing_key

    async def counted(jwks_uri: str, header: dict[str, Any]) -> Any:
        lookups.append(header["kid"])
        return await find(jwks_uri, header)

    gate.keys.get_signing_key = counted  # type: ignore[method-assign]
    cid = await new_clarification(teams.dev, authority={"named": ["p-sarah"]})
    token = sign(claims())
    for candidate in (0, 1):
        assert (await teams.post(invoke(action_data(teams.codec, cid, candidate=candidate)),
                                 token)).status == 200
    assert len(lookups) == 1
    # one character of the signature's middle (the last one carries padding bits, which
    # some changes leave undecodable: refused before any key is looked up)
    at = len(token) - 20
    forged = token[:at] + ("A" if token[at] != "A" else "B") + token[at + 1:]
    assert (await teams.post(invoke(action_data(teams.codec, cid)), forged)).status == 401

    now = time.time()
    gate.now = lambda: now + VERIFIED_SECONDS + 1  # a minute on: verified again
    assert (await teams.post(invoke(action_data(teams.codec, cid)), token)).status == 200
    assert len(lookups) == 3  # the forged one's, and this one's

    # about to expire: remembered only until its expiry and the validator's leeway
    expiring = sign(claims(exp=int(now) - int(EXPIRY_LEEWAY_SECONDS) + 5,
                           nbf=int(now) - 3600))
    gate.now = time.time
    assert (await teams.post(invoke(action_data(teams.codec, cid)), expiring)).status == 200
    gate.now = lambda: now + 6
    assert gate._known(expiring) is None
    await teams.settle()


async def test_the_entry_is_settled_after_the_response(teams: TeamsStack) -> None:
    """The invoke is answered while its entry's settling is still held; then it settles."""
    cid = await new_clarification(teams.dev, authority={"named": ["p-sarah"]})
    release = asyncio.Event()
    done = teams.store.outbox_done

    async def held(*args: Any, **kwargs: Any) -> None:
        await release.wait()
        await done(*args, **kwargs)

    teams.store.outbox_done = held  # type: ignore[method-assign]
    response = await teams.post(invoke(action_data(teams.codec, cid)), sign(claims()))
    assert response.status == 200 and (await response.json())["type"] == CARD
    assert await teams.store.outbox_size() == 1
    release.set()
    await teams.settle()
    assert await teams.store.outbox_size() == 0
    assert await teams.responses(cid) == [("p-sarah", 0)]


async def test_an_entry_never_settled_is_forwarded_again_and_at_the_core_once(
        teams: TeamsStack) -> None:
    """The process dies after the response, before its entry settled: after the lease a
    consumer forwards it again, with its idempotency key, and the core holds one response."""
    cid = await new_clarification(teams.dev, authority={"named": ["p-sarah"]})
    done = teams.store.outbox_done

    async def killed(*args: Any, **kwargs: Any) -> None:
        raise StoreUnavailable()

    teams.store.outbox_done = killed  # type: ignore[method-assign]
    response = await teams.post(invoke(action_data(teams.codec, cid)), sign(claims()))
    assert response.status == 200 and (await response.json())["type"] == CARD
    await teams.adapter.drain()
    assert await teams.store.outbox_size() == 1
    teams.store.outbox_done = done  # type: ignore[method-assign]
    await teams.consumers.run_burst()
    assert await teams.store.outbox_size() == 1  # leased still
    policy = teams.engine.answers.policy  # the invoke's own claim: due then, leased from then
    teams.clock.advance(timedelta(seconds=policy.own_forward_seconds + policy.lease_seconds + 1))
    await teams.settle()
    assert await teams.store.outbox_size() == 0
    assert await teams.responses(cid) == [("p-sarah", 0)]
