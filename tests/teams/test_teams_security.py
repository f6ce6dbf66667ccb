"""Tokens and tenants on /api/messages, over real HTTP: every bad token is a 401 (never a 500),
an unserved tenant a 403 audited as TENANT_SCOPE_MISMATCH; nothing refused is forwarded or
stored, and the bot never asks for its own token for a host that is not Microsoft's connector."""

from __future__ import annotations

import time
from typing import Any

import pytest

from bot.core.models import ReasonCode
from bot.metrics import REGISTRY
from bot.store.memory import MemoryStore
from tests.engine.conftest import new_clarification
from tests.teams.inbound import (
    ACME_AAD,
    GLOBEX_AAD,
    OTHER_APP_ID,
    SARAH_AAD,
    TeamsStack,
    action_data,
    activity,
    invoke,
)
from tests.teams.tokens import OTHER_KEY, claims, sign

ENTRA_V2 = "https://login.microsoftonline.com/{}/v2.0"


async def _nothing_happened(teams: TeamsStack, cid: str | None = None) -> None:
    await teams.settle()
    assert await teams.store.conversation_get("acme", SARAH_AAD) is None
    assert await teams.store.outbox_size() == 0
    if cid is not None:
        assert await teams.responses(cid) == []


async def _click(teams: TeamsStack) -> tuple[str, dict[str, Any]]:
    cid = await new_clarification(teams.dev, authority={"named": ["p-sarah"]})
    return cid, invoke(action_data(teams.codec, cid))


def _tampered(token: str) -> str:
    head, body, signature = token.split(".")
    return f"{head}.{body}.{signature[:-4]}{'AAAA' if signature[-4:] != 'AAAA' else 'BBBB'}"


BAD_TOKENS = {
    "expired": lambda: sign(claims(exp=int(time.time()) - 3600, nbf=int(time.time()) - 7200)),
    "without_exp": lambda: sign(claims(exp=None)),
    "without_kid": lambda: sign(claims(), kid=None),
    "wrong_audience": lambda: sign(claims(aud="api://somebody-else")),
    "wrong_issuer": lambda: sign(claims(iss="https://issuer.example.com")),
    "entra_token_of_an_unserved_tenant": lambda: sign(claims(
        iss=ENTRA_V2.format(GLOBEX_AAD), tid=GLOBEX_AAD, serviceurl=None)),
    "another_apps_token": lambda: sign(claims(aud=OTHER_APP_ID, appid=OTHER_APP_ID)),
    "tampered_signature": lambda: _tampered(sign(claims())),
    "signed_by_another_key": lambda: sign(claims(), key=OTHER_KEY),
    "not_a_jwt": lambda: "not.a.jwt",
    "unknown_kid": lambda: sign(claims(), kid="someone-elses-key"),
}


async def test_no_token_is_401(teams: TeamsStack) -> None:
    """A request without Authorization never reaches a handler."""
    cid, click = await _click(teams)
    response = await teams.post(click)
    assert response.status == 401
    await _nothing_happened(teams, cid)


@pytest.mark.parametrize("name", sorted(BAD_TOKENS))
async def test_a_bad_token_is_401_and_nothing_happens(teams: TeamsStack, name: str) -> None:
    """Expired, without exp or kid, for another audience or app, from an unaccepted issuer or
    an unserved tenant, tampered or signed by another key: 401, never 500; nothing forwarded,
    nothing stored, no token of the bot's asked for."""
    cid, click = await _click(teams)
    for body in (click, activity("message")):
        response = await teams.post(body, BAD_TOKENS[name]())
        assert response.status == 401, name
    await _nothing_happened(teams, cid)
    assert teams.tokens.asked == []


async def test_a_service_url_claim_that_differs_is_401(teams: TeamsStack) -> None:
    """The token's serviceurl must name the activity's serviceUrl: a token lifted from one
    conversation cannot send the bot's replies somewhere else."""
    cid, click = await _click(teams)
    token = sign(claims(serviceurl="https://smba.trafficmanager.net/emea/"))
    assert (await teams.post(click, token)).status == 401
    bot_framework_without_claim = sign(claims(serviceurl=None))
    assert (await teams.post(click, bot_framework_without_claim)).status == 401
    await _nothing_happened(teams, cid)


async def test_the_bots_token_never_goes_to_a_host_that_is_not_allowed(
        teams: TeamsStack) -> None:
    """A validly signed activity naming a serviceUrl outside Microsoft's connector hosts (its
    claim agreeing) is refused before the bot asks for any token to send there."""
    for url in ("https://evil.example.com/", "http://smba.trafficmanager.net/amer/",
                "https://127.0.0.1/", "https://smba.trafficmanager.net.evil.example/"):
        token = sign(claims(serviceurl=url))
        response = await teams.post(activity("message", service_url=url), token)
        assert response.status == 401, url
    await _nothing_happened(teams)
    assert teams.tokens.asked == []


async def test_an_unserved_tenant_is_403_and_audited(teams: TeamsStack) -> None:
    """An activity from an Entra tenant no setting maps is refused before any handler runs,
    with TENANT_SCOPE_MISMATCH in the audit."""
    cid = await new_clarification(teams.dev, authority={"named": ["p-sarah"]})
    click = invoke(action_data(teams.codec, cid), tenant=GLOBEX_AAD)
    response = await teams.post(click, sign(claims()))
    assert response.status == 403
    refused = [e for e in teams.sink.events if e.type == "callback_refused"]
    assert [e.reason_code for e in refused] == [ReasonCode.TENANT_SCOPE_MISMATCH]
    await _nothing_happened(teams, cid)


async def test_conversation_and_channel_data_must_name_the_same_tenant(
        teams: TeamsStack) -> None:
    """A served tenant in one field and another in the other is not a served activity."""
    body = activity("message")
    body["channelData"] = {"tenant": {"id": GLOBEX_AAD}}
    assert (await teams.post(body, sign(claims()))).status == 403
    await _nothing_happened(teams)


async def test_an_entra_token_acts_only_in_its_own_tenant(teams: TeamsStack) -> None:
    """An Entra token of a served tenant cannot speak for another tenant's activity."""
    token = sign(claims(iss=ENTRA_V2.format(ACME_AAD), tid=ACME_AAD, serviceurl=None))
    assert (await teams.post(activity("message"), token)).status == 202
    other = activity("message", tenant=GLOBEX_AAD)
    assert (await teams.post(other, token)).status in (401, 403)


async def test_body_limits_and_shapes(teams: TeamsStack) -> None:
    """Too large: 413; not an activity: 400 (after the token, which comes first)."""
    token = sign(claims())
    assert (await teams.post(b"{" + b" " * (200 * 1024) + b"}", token)).status == 413
    assert (await teams.post(b"[1, 2]", token)).status == 400
    assert (await teams.post(b"{" * 5000, token)).status == 400
    assert (await teams.post({"type": "message"}, token)).status == 400
    assert (await teams.post(b"[1, 2]")).status == 401


async def test_a_valid_token_passes(teams: TeamsStack) -> None:
    """The control: a Bot Framework token for this app, for this serviceUrl, is accepted."""
    assert (await teams.post(activity("message"), sign(claims()))).status == 202
    assert await teams.store.conversation_get("acme", SARAH_AAD) is not None


async def test_a_full_outbox_is_a_503_with_retry_after_and_nothing_is_forwarded(
        teams: TeamsStack) -> None:
    """A full outbox takes no answer: over HTTP the invoke's error response says 503 (Teams
    shows its message on the card) with Retry-After, the refusal is counted, nothing is stored
    or forwarded."""
    cid, click = await _click(teams)
    assert isinstance(teams.store, MemoryStore)
    teams.store._outbox_max = 0
    before = REGISTRY.value("clarify_outbox_full_total")
    response = await teams.post(click, sign(claims()))
    assert response.headers["Retry-After"] == "30"
    assert (await response.json())["statusCode"] == 503
    assert REGISTRY.value("clarify_outbox_full_total") == before + 1
    await teams.settle()
    assert await teams.store.outbox_size() == 0
    assert await teams.responses(cid) == []
