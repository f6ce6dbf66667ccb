"""Every rule Microsoft publishes for a token on a request to the bot (docs/teams.md, "Tokens"),
each broken by a forged token, over real HTTP with the local key set (which, like Bot
Framework's, carries ``endorsements``): the forged one is a 401 and nothing is stored or
forwarded, the control beside it passes. The rules' names are the docs' list."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization

from tests.engine.conftest import new_clarification
from tests.teams.inbound import ACME_AAD, GLOBEX_AAD, SARAH_AAD, TeamsStack, activity, invoke
from tests.teams.inbound import action_data as data_of
from tests.teams.tokens import (
    BARE_KEY,
    BARE_KID,
    KEY,
    OTHER_KEY,
    SKYPE_KEY,
    SKYPE_KID,
    claims,
    jwks,
    sign,
)

ENTRA_V1 = "https://sts.windows.net/{}/"
ENTRA_V2 = "https://login.microsoftonline.com/{}/v2.0"


def _now() -> int:
    return int(time.time())


def _alg_none() -> str:
    head = base64.urlsafe_b64encode(json.dumps({"alg": "none", "kid": "local-key-1"}).encode())
    body = base64.urlsafe_b64encode(json.dumps(claims()).encode())
    return f"{head.decode().rstrip('=')}.{body.decode().rstrip('=')}."


def _hs256_with_the_public_key() -> str:
    public = KEY.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo)
    header = {"alg": "HS256", "kid": "local-key-1"}
    # PyJWT refuses an asymmetric key as an HMAC secret; forge it the long way
    signing = jwt.api_jws.PyJWS()
    signing._algorithms["HS256"].prepare_key = lambda key: key  # type: ignore[method-assign]
    return signing.encode(json.dumps(claims()).encode(), public, algorithm="HS256",
                          headers=header)


def _tampered(token: str) -> str:
    head, body, signature = token.split(".")
    changed = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    changed["aud"] = changed["aud"]  # same claims, re-encoded: the signature no longer fits
    changed["name"] = "mallory"
    raw = base64.urlsafe_b64encode(json.dumps(changed).encode()).decode().rstrip("=")
    return f"{head}.{raw}.{signature}"


Forged = Callable[[], str]
# rule -> (forged tokens breaking it, the control that keeps it)
RULES: dict[str, tuple[dict[str, Forged], Forged]] = {
    "issuer_is_bot_framework": ({
        "another_issuer": lambda: sign(claims(iss="https://issuer.example.com")),
        "bot_framework_lookalike": lambda: sign(claims(iss="https://api.botframework.com.evil")),
    }, lambda: sign(claims())),
    "audience_is_the_app_id": ({
        "another_audience": lambda: sign(claims(aud="api://somebody-else")),
        "no_audience": lambda: sign(claims(aud=None)),
    }, lambda: sign(claims())),
    "signed_by_a_published_key": ({
        "another_key": lambda: sign(claims(), key=OTHER_KEY),
        "unknown_kid": lambda: sign(claims(), kid="someone-elses-key"),
        "no_kid": lambda: sign(claims(), kid=None),
        "tampered": lambda: _tampered(sign(claims())),
    }, lambda: sign(claims())),
    "rs256_only": ({
        "alg_none": _alg_none,
        "hs256_with_the_public_key": _hs256_with_the_public_key,
    }, lambda: sign(claims())),
    "expiry_within_five_minutes_skew": ({
        "expired_six_minutes_ago": lambda: sign(claims(exp=_now() - 360, nbf=_now() - 3600)),
        "no_expiry": lambda: sign(claims(exp=None)),
    }, lambda: sign(claims(exp=_now() - 240, nbf=_now() - 3600))),
    "not_before_within_five_minutes_skew": ({
        "valid_from_in_six_minutes": lambda: sign(claims(nbf=_now() + 360)),
    }, lambda: sign(claims(nbf=_now() + 240))),
    "key_endorses_the_channel": ({
        "key_endorsed_for_skype_only": lambda: sign(claims(), kid=SKYPE_KID, key=SKYPE_KEY),
        "key_without_endorsements": lambda: sign(claims(), kid=BARE_KID, key=BARE_KEY),
    }, lambda: sign(claims())),
    "service_url_claim_is_the_activitys": ({
        "another_service_url": lambda: sign(claims(
            serviceurl="https://smba.trafficmanager.net/emea/")),
        "no_service_url_claim": lambda: sign(claims(serviceurl=None)),
    }, lambda: sign(claims(serviceurl="HTTPS://smba.trafficmanager.net/amer"))),
    "entra_token_of_a_served_tenant": ({
        "unserved_tenant_v2": lambda: sign(claims(iss=ENTRA_V2.format(GLOBEX_AAD),
                                                  tid=GLOBEX_AAD, serviceurl=None)),
        "unserved_tenant_v1": lambda: sign(claims(iss=ENTRA_V1.format(GLOBEX_AAD),
                                                  tid=GLOBEX_AAD, serviceurl=None)),
        "tid_of_another_tenant": lambda: sign(claims(iss=ENTRA_V2.format(ACME_AAD),
                                                     tid=GLOBEX_AAD, serviceurl=None)),
        "entra_audience_of_another_app": lambda: sign(claims(
            iss=ENTRA_V2.format(ACME_AAD), tid=ACME_AAD, aud="api://another-app",
            serviceurl=None)),
    }, lambda: sign(claims(iss=ENTRA_V1.format(ACME_AAD), tid=ACME_AAD, serviceurl=None))),
}


def test_the_key_set_served_carries_endorsements() -> None:
    """The tests' key set is shaped as Bot Framework's: endorsements per key, one key for
    another channel, one without any."""
    keys = {k["kid"]: k.get("endorsements") for k in jwks()["keys"]}
    assert keys == {"local-key-1": ["msteams", "webchat"], SKYPE_KID: ["skype"], BARE_KID: None}


@pytest.mark.parametrize("rule", sorted(RULES))
async def test_each_published_token_rule_refuses_a_forged_token(teams: TeamsStack,
                                                               rule: str) -> None:
    """A forged token breaking the rule: 401 on a click and on a message, nothing stored or
    forwarded, no token of the bot's asked for; the control keeping it is accepted."""
    forged, control = RULES[rule]
    cid = await new_clarification(teams.dev, authority={"named": ["p-sarah"]})
    click = invoke(data_of(teams.codec, cid))
    for name, token in forged.items():
        for body in (click, activity("message")):
            response = await teams.post(body, token())
            assert response.status == 401, (rule, name, response.status)
    await teams.settle()
    assert await teams.store.outbox_size() == 0
    assert await teams.responses(cid) == []
    assert await teams.store.conversation_get("acme", SARAH_AAD) is None
    assert teams.tokens.asked == []
    assert (await teams.post(activity("message"), control())).status == 202, rule


async def test_a_key_endorsed_for_another_channel_is_refused_for_this_one(
        teams: TeamsStack) -> None:
    """The endorsement follows the activity's channel, not the key: the key endorsed for
    ``msteams`` and ``webchat`` signs a Teams activity, not a Skype one; the Skype-only key
    signs neither a Teams click nor a message."""
    cid = await new_clarification(teams.dev, authority={"named": ["p-sarah"]})
    skype_only = sign(claims(), kid=SKYPE_KID, key=SKYPE_KEY)
    response = await teams.post(invoke(data_of(teams.codec, cid)), skype_only)
    assert response.status == 401
    assert (await response.json()) == {"error": "channel_not_endorsed"}
    as_skype: dict[str, Any] = {**activity("message"), "channelId": "skype"}
    assert (await teams.post(as_skype, sign(claims()))).status == 401
    await teams.settle()
    assert await teams.responses(cid) == []
    response = await teams.post(invoke(data_of(teams.codec, cid)), sign(claims()))
    assert response.status == 200
    await teams.settle()
    assert await teams.responses(cid) == [("p-sarah", 0)]


async def test_the_token_comes_as_one_bearer_header(teams: TeamsStack) -> None:
    """``Authorization: Bearer <JWT>``, once: none, two, another scheme, a bearer with no token
    or one that is not a JWT are each a 401; the same token as one bearer header passes."""
    cid = await new_clarification(teams.dev, authority={"named": ["p-sarah"]})
    click = json.dumps(invoke(data_of(teams.codec, cid))).encode()
    good = sign(claims())
    url = f"{teams.url}/api/messages"
    for headers in ([], [("Authorization", f"Bearer {good}")] * 2,
                    [("Authorization", f"Basic {good}")], [("Authorization", "Bearer ")],
                    [("Authorization", "Bearer not.a.jwt")], [("Authorization", good)]):
        async with teams.http.post(url, data=click, headers=[
                ("Content-Type", "application/json"), *headers]) as response:
            assert response.status == 401, headers
    await teams.settle()
    assert await teams.responses(cid) == []
    assert (await teams.post(activity("message"), good)).status == 202
