"""Teams activities and ``Action.Execute`` invokes under hypothesis.

In process, thousands of activity bodies go through the edge's reading (``_activity``,
``references.actor``, ``references.clicked``) and thousands of action data of any shape through
the codec: only the refusals they document come out. Tokens of any shape (and valid ones with
claims changed) reach ``TokenGate.claims``: a 401 reason or the claims, nothing else. Over real
HTTP, a few hundred activities and invokes signed with the local key the bot trusts
(``tests/teams/tokens.py``), ``value`` of any shape: never a 5xx, nothing recorded for a refused
token, an answer recorded only as the verified person's with the option of the signed action,
and no log line holding the question's text or the canary put in every free-text field.
"""

from __future__ import annotations

import copy
import json
import time
from typing import Any

import pytest
from hypothesis import event, given
from hypothesis import strategies as st
from jwt.api_jws import PyJWS
from microsoft_agents.activity import ResourceResponse

from adapters.teams import references
from adapters.teams.app import _activity
from adapters.teams.auth import KeyDirectory, TokenGate, Unauthorized
from cards.actions import ActionCodec, ActionKind, ActionRef, InvalidActionPayload
from tests.engine.conftest import new_clarification
from tests.fuzz.budget import CANARY, fuzz, json_values, mutated
from tests.fuzz.conftest import Logs
from tests.teams.inbound import (
    ACME_AAD,
    CODEC_KEY,
    GLOBEX_AAD,
    SARAH_AAD,
    STRANGER_AAD,
    TEAMS,
    TeamsStack,
    action_data,
    activity,
    invoke,
)
from tests.teams.tokens import APP_ID, KEY, KID, OTHER_KEY, claims, sign

pytestmark = pytest.mark.slow  # property-based: a few hundred generated examples

CODEC = ActionCodec(CODEC_KEY)
WORDS = ("Harbor Street", "effective next quarter", "next calendar quarter",
         "next quarter after signing", CANARY)
USERS = [SARAH_AAD, STRANGER_AAD, None, "", "not-a-guid"]
TENANTS = [ACME_AAD, GLOBEX_AAD, ""]


def _data(kind: ActionKind, **fields: Any) -> dict[str, Any]:
    return CODEC.teams_data(ActionRef(kind=kind, card_ref="card-1", **fields))


DATA = [_data(ActionKind.ANSWER, clarification_id="clar-1", candidate=0),
        _data(ActionKind.CUSTOM_SUBMIT, clarification_id="clar-1"),
        _data(ActionKind.DECLINE, clarification_id="clar-1"),
        _data(ActionKind.REFRESH, clarification_id="clar-1"),
        _data(ActionKind.DIGEST_NEXT, offset=2),
        _data(ActionKind.OVERRIDE_OPEN, clarification_id="clar-1", candidate=1),
        _data(ActionKind.OVERRIDE_SUBMIT, clarification_id="clar-1", candidate=1),
        {"t": CANARY}, {}]
VERBS = ["clarify.answer", "clarify.custom", "clarify.digest.next", "clarify.refresh",
         "clarify.decline", "clarify.override", "clarify.override.submit", "other"]


def _with_inputs(data: dict[str, Any]) -> dict[str, Any]:
    """Teams merges the card's input values beside the token."""
    return {**data, "custom.start.0": "2026-07-01", "custom.end.0": "2026-09-30",
            "custom.note.0": CANARY, "override.note": CANARY}


templates = st.one_of(
    st.builds(lambda d, v, u, t: invoke(_with_inputs(d), verb=v, user=u, tenant=t),
              st.sampled_from(DATA), st.sampled_from(VERBS), st.sampled_from(USERS),
              st.sampled_from(TENANTS)),
    st.builds(lambda k, u, t: activity(k, user=u, tenant=t, text=CANARY),
              st.sampled_from(["message", "conversationUpdate", "installationUpdate",
                               "messageReaction", "event", "invoke", "typing"]),
              st.sampled_from(USERS), st.sampled_from(TENANTS)),
    st.builds(lambda c: activity("message", conversation_type=c, text="queue"),
              st.sampled_from(["personal", "channel", "groupChat", CANARY])),
    st.builds(lambda a: activity("installationUpdate", action=a),
              st.sampled_from(["add", "remove", "add-upgrade", "remove-upgrade", CANARY])),
    st.builds(lambda c, e: activity("message", channelId=c, entities=[{"type": "ProductInfo",
                                                                       "id": e}]),
              st.sampled_from(["msteams", "msteams:one", "msteams:"]),
              st.sampled_from(["one", "other", ""])),
)
bodies = templates.flatmap(mutated) | json_values


# ---------------------------------------------------------------- in process


@fuzz(quick=400, full=10000)
@given(body=bodies)
def test_any_body_is_an_activity_with_its_actor_or_refused(body: Any) -> None:
    try:
        read = _activity(json.dumps(body).encode())
        who = references.actor(read)
        references.clicked(read, who.aad_tenant_id)
        references.personal(read)
    except ValueError as exc:
        assert CANARY not in str(exc)
        return
    except references.NoTenant:
        return
    assert who.aad_tenant_id  # an actor always acts in a tenant
    sender = body.get("from")
    if who.aad_object_id is not None:
        assert isinstance(sender, dict) and sender.get("aadObjectId") == who.aad_object_id


@fuzz(quick=400, full=10000)
@given(data=st.sampled_from(DATA).flatmap(lambda d: mutated(_with_inputs(d))) | json_values)
def test_any_action_data_is_a_signed_reference_or_refused(data: Any) -> None:
    try:
        ref = CODEC.decode_teams_data(data)
    except InvalidActionPayload as exc:
        assert CANARY not in str(exc)
        return
    assert isinstance(data, dict) and CODEC.encode(ref) == data["t"] or ref == CODEC.decode(
        data["t"])


def _raw_token(changes: dict[str, Any], other_key: bool) -> str:
    """A token signed as the tests' keys sign, with claims of any JSON type (pyjwt's own encoder
    refuses some)."""
    body = json.dumps(claims(**changes)).encode()
    return PyJWS().encode(body, OTHER_KEY if other_key else KEY, algorithm="RS256",
                          headers={"kid": KID})


def _tokens() -> st.SearchStrategy[list[str]]:
    now = int(time.time())
    changed = st.fixed_dictionaries({}, optional={
        "aud": st.sampled_from([APP_ID, "api://other", CANARY]) | json_values,
        "iss": st.sampled_from(["https://api.botframework.com", "https://x"]) | json_values,
        "exp": st.sampled_from([now + 600, now - 600]) | json_values,
        "nbf": st.sampled_from([now - 60, now + 600]) | json_values,
        "serviceurl": json_values, "tid": json_values, "appid": json_values})
    token = st.builds(_raw_token, changed, st.booleans())
    header = st.one_of(token.map("Bearer {}".format), token, st.text(max_size=60),
                       st.text(max_size=200).map("Bearer {}".format),
                       st.just("Bearer " + "a" * 5000),
                       st.builds(lambda t: "Bearer " + t.replace(".", ".x", 1), token))
    return st.lists(header, max_size=2)


@fuzz(quick=200, full=3000)
@given(headers=_tokens())
async def test_any_authorization_header_is_claims_or_a_401_reason(jwks_url: str,
                                                                  headers: list[str]) -> None:
    gate = TokenGate.build(TEAMS, keys=KeyDirectory(lambda _: jwks_url))
    try:
        await gate.claims(headers)
    except Unauthorized as exc:
        assert exc.reason.replace("_", "").isalpha(), exc.reason
        assert CANARY not in exc.reason


# ---------------------------------------------------------------- over HTTP


async def _questions(teams: TeamsStack, size: int = 8) -> list[str]:
    """Critical questions Sarah may answer (nothing binds on her answer alone); what the turn
    sends back to Teams (a reply to a message) is kept here, not sent to Microsoft."""
    made = getattr(teams, "_fuzz_questions", None)
    if made is None:
        _offline(teams)
        made = [await new_clarification(teams.dev, authority={"named": ["p-sarah"]},
                                        severity="critical") for _ in range(size)]
        teams._fuzz_questions = made  # type: ignore[attr-defined]
    return made


def _offline(teams: TeamsStack) -> None:
    """Replies and typing indicators stop here; an invoke's answer goes where the SDK keeps it."""
    send = teams.adapter.cloud.send_activities

    async def sent(context: Any, activities: list[Any]) -> list[ResourceResponse]:
        if all(a.type == "invokeResponse" for a in activities):
            return await send(context, activities)
        return [ResourceResponse(id=f"sent-{i}") for i, _ in enumerate(activities)]

    teams.adapter.cloud.send_activities = sent  # type: ignore[method-assign]


async def _answers(teams: TeamsStack, cid: str) -> list[tuple[str, int | None]]:
    await teams.settle()
    return await teams.responses(cid)


def _signed_ref(body: Any) -> ActionRef | None:
    try:
        return CODEC.decode_teams_data(body["value"]["action"]["data"])
    except (KeyError, TypeError, InvalidActionPayload):
        return None


TOKEN_KINDS = ["valid"] * 6 + ["none", "other_key", "expired", "other_audience"]


@fuzz(quick=80, full=1000)
@given(data=st.data())
async def test_an_invoke_forwards_only_the_verified_persons_own_answer(
        teams: TeamsStack, logs: Logs, data: st.DataObject) -> None:
    cid = data.draw(st.sampled_from(await _questions(teams)))
    candidate = data.draw(st.sampled_from([0, 1]))
    user = data.draw(st.sampled_from([SARAH_AAD, SARAH_AAD, STRANGER_AAD, None]))
    body = invoke(action_data(teams.codec, cid, candidate=candidate), user=user)
    body["timestamp"] = _now_stamp()  # each click newer than the last
    if data.draw(st.booleans()):
        body = data.draw(mutated(body))
    kind = data.draw(st.sampled_from(TOKEN_KINDS))
    token = {"valid": lambda: sign(claims()), "none": lambda: None,
             "other_key": lambda: sign(claims(), key=OTHER_KEY),
             "expired": lambda: sign(claims(exp=int(time.time()) - 3600)),
             "other_audience": lambda: sign(claims(aud="api://other"))}[kind]()
    before = await _answers(teams, cid)

    response = await teams.post(body, token)

    _no_5xx(body, response.status)
    new = (await _answers(teams, cid))[len(before):]
    event("recorded" if new else f"not recorded ({response.status})")
    if kind != "valid":
        assert response.status == 401 and new == []
        return
    ref = _signed_ref(body)
    sender = body.get("from") if isinstance(body, dict) else None
    for responder, index in new:
        assert isinstance(sender, dict) and sender.get("aadObjectId") == SARAH_AAD
        assert responder == "p-sarah"
        assert ref is not None and ref.clarification_id == cid and index == ref.candidate
    logs.assert_free_of(*WORDS)


def _no_5xx(body: Any, status: int) -> None:
    """Never a 5xx; an invoke no handler takes (another name, another verb) is answered with
    Bot Framework's 501, "not implemented", as the protocol has it."""
    unhandled = isinstance(body, dict) and body.get("type") == "invoke" and status == 501
    assert status < 500 or unhandled, (status, json.dumps(body)[:3000])


_LAST = [0.0]


def _now_stamp() -> str:
    """A timestamp strictly after the previous one (an invoke's time orders its answers)."""
    _LAST[0] = max(time.time(), _LAST[0] + 0.001)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(_LAST[0])) + \
        f".{int(_LAST[0] * 1000) % 1000:03d}Z"


@fuzz(quick=120, full=2000)
@given(body=bodies)
async def test_any_signed_activity_is_answered_without_a_5xx(teams: TeamsStack, logs: Logs,
                                                             body: Any) -> None:
    await _questions(teams, size=0)  # the stack's replies kept here
    response = await teams.post(copy.deepcopy(body) if isinstance(body, dict) else
                                json.dumps(body).encode(), sign(claims()))
    _no_5xx(body, response.status)
    await teams.settle()
    logs.assert_free_of(*WORDS)
