"""Slack callbacks under hypothesis: interaction payloads (block_actions, view_submission,
shortcuts) and Events API callbacks (app_home_opened, message, url_verification, retries).

In process, thousands of bodies go through the edge's own functions (``signed``,
``form_or_json``, ``read_callback``, ``log_ids``, ``home_opener``): only ``MalformedPayload``
may come out, and what is read is exactly what the body says. Over real HTTP, a few hundred
signed (and unsigned, mis-signed, stale, tampered) clicks and events reach the running adapter
with a real core behind it: never a 5xx; a refused signature is a 401 that records nothing; an
answer reaches the core only as the verified clicker's and with the option clicked (the core
decides who may answer: a person with the rights, also on a card sent to someone else, as the spec
says; nobody it does not know); no log line holds span, question, answer text or the secret.
"""

from __future__ import annotations

import copy
import json
import re
import time
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import event, given
from hypothesis import strategies as st
from multidict import CIMultiDict, CIMultiDictProxy
from slack_sdk.signature import Clock as SignatureClock
from slack_sdk.signature import SignatureVerifier

from adapters.slack import payloads
from adapters.slack.edge import Read, form_or_json, log_ids, read_callback, signed
from cards.actions import ActionCodec, ActionKind, ActionRef, InvalidActionPayload
from tests.engine.conftest import clarify_settings
from tests.fuzz.budget import CANARY, fuzz, json_values, mutated
from tests.fuzz.conftest import Logs
from tests.slack.conftest import CODEC_KEY, PEOPLE, SIGNING_SECRET, Stack, payload_of
from tests.slack.test_slack_security import form, post_raw, sign

pytestmark = pytest.mark.slow  # property-based: a few hundred generated examples

CODEC = ActionCodec(CODEC_KEY)
STAMP = "1783330000"
# what the acme question says: no log line may repeat any of it
WORDS = ("Harbor Street", "effective next quarter", "next calendar quarter",
         "next quarter after signing", CANARY, SIGNING_SECRET)
USERS = ["U0SARAH", "U0AHMED", "U0PRIYA", "U0TOM", "U0NOBODY1", "W0GRID", "u0sarah", ""]


def _token(kind: ActionKind, **fields: Any) -> str:
    return CODEC.encode(ActionRef(kind=kind, card_ref="card-1", **fields))


TOKENS = [_token(ActionKind.ANSWER, clarification_id="clar-1", candidate=0),
          _token(ActionKind.ANSWER, clarification_id="clar-1", candidate=7),
          _token(ActionKind.CUSTOM_OPEN, clarification_id="clar-1"),
          _token(ActionKind.DECLINE, clarification_id="clar-1"),
          _token(ActionKind.DIGEST_NEXT, offset=3),
          _token(ActionKind.CUSTOM_SUBMIT, clarification_id="clar-1"),
          _token(ActionKind.OVERRIDE_SUBMIT, clarification_id="clar-1", candidate=1),
          "v1.e30.AAAA", CANARY]


def _who(user: str) -> dict[str, Any]:
    return {"user": {"id": user, "team_id": "T0ACME", "username": CANARY},
            "team": {"id": "T0ACME", "enterprise_id": "E0ACME"},
            "enterprise": {"id": "E0ACME"}, "api_app_id": "A0CLARIFY", "token": "legacy"}


def _click(user: str, action_id: str, value: str) -> dict[str, Any]:
    return {"type": "block_actions", **_who(user), "trigger_id": "1.2.abc",
            "container": {"type": "message", "channel_id": "D0SARAH",
                          "message_ts": "1783330000.000100"},
            "channel": {"id": "D0SARAH"}, "message": {"text": CANARY, "blocks": []},
            "actions": [{"type": "button", "action_id": action_id, "block_id": "b",
                         "value": value, "text": {"type": "plain_text", "text": CANARY},
                         "action_ts": "1783330000.000200"}]}


def _submission(user: str, callback: str, token: str) -> dict[str, Any]:
    return {"type": "view_submission", **_who(user), "view": {
        "id": "V1", "callback_id": callback, "team_id": "T0ACME",
        "private_metadata": json.dumps({"t": token, "m": "D0SARAH:1783330000.000100"}),
        "state": {"values": {"b": {"value": {"type": "plain_text_input", "value": CANARY}}}}}}


def _event(user: str, kind: str) -> dict[str, Any]:
    return {"type": "event_callback", "team_id": "T0ACME", "enterprise_id": "E0ACME",
            "api_app_id": "A0CLARIFY", "event_id": "Ev1", "event_time": 1783330000,
            "event": {"type": kind, "user": user, "tab": "home", "channel": "D0SARAH",
                      "text": CANARY, "ts": "1783330000.000100"}}


templates = st.one_of(
    st.builds(_click, st.sampled_from(USERS),
              st.sampled_from(["clarify.answer.0", "clarify.answer.1", "clarify.custom",
                               "clarify.decline", "clarify.digest.next", "clarify.open",
                               "other.action"]), st.sampled_from(TOKENS)),
    st.builds(_submission, st.sampled_from(USERS),
              st.sampled_from([payloads.MODAL_CALLBACK, payloads.OVERRIDE_CALLBACK, "x"]),
              st.sampled_from(TOKENS)),
    st.builds(_event, st.sampled_from(USERS),
              st.sampled_from(["app_home_opened", "message", "app_mention"])),
    st.just({"type": "url_verification", "challenge": CANARY, "token": "legacy"}),
    st.builds(lambda u: {"type": "shortcut", "callback_id": "clarify.queue", **_who(u),
                         "trigger_id": "1.2.abc"}, st.sampled_from(USERS)),
    st.builds(lambda u: {"type": "message_action", "callback_id": "x", **_who(u)},
              st.sampled_from(USERS)),
    st.builds(lambda u: {"type": "view_closed", **_who(u), "view": {"id": "V1"}},
              st.sampled_from(USERS)),
)
bodies = templates.flatmap(mutated) | json_values


# ---------------------------------------------------------------- in process


def _headers(*pairs: tuple[str, str]) -> CIMultiDictProxy[str]:
    return CIMultiDictProxy(CIMultiDict(pairs))


class _Fixed(SignatureClock):
    def now(self) -> float:
        return float(STAMP)


VERIFIER = SignatureVerifier(SIGNING_SECRET, clock=_Fixed())


@fuzz(quick=300, full=10000)
@given(body=st.text(max_size=200) | bodies.map(form).map(bytes.decode),
       stamp=st.just(STAMP) | st.text(max_size=14)
       | st.integers(-400, 400).map(lambda d: str(int(STAMP) + d)),
       signature=st.sampled_from(["good", "other"]) | st.text(max_size=70),
       doubled=st.booleans())
def test_signed_is_true_only_for_slacks_own_signature(body: str, stamp: str, signature: str,
                                                      doubled: bool) -> None:
    good = sign(body.encode(), secret=SIGNING_SECRET, stamp=stamp)
    sent = {"good": good, "other": sign(body.encode(), secret="x" * 32, stamp=stamp)}.get(
        signature, signature)
    pairs = [("X-Slack-Request-Timestamp", stamp), ("X-Slack-Signature", sent)]
    if doubled:
        pairs.append(pairs[1])
    verdict = signed(VERIFIER, body, _headers(*pairs))
    fresh = re.fullmatch(r"[0-9]{1,12}", stamp) is not None \
        and abs(int(stamp) - int(STAMP)) <= 300  # Slack's five minutes either way
    assert verdict == (not doubled and fresh and sent == good)


def _checked(read: Read, body: dict[str, Any]) -> None:
    """What the edge read is what the body says, in Slack's shapes."""
    if read.who is not None:
        assert read.who.user_id == body["user"]["id"]
        assert payloads.USER_ID.fullmatch(read.who.user_id)
        assert read.who.team_id is None or payloads.TEAM_ID.fullmatch(read.who.team_id)
    if read.click is not None:
        value = body["actions"][0]["value"]
        assert read.click.ref == CODEC.decode(value)  # only a token the bot signed
        assert read.click.action_id == body["actions"][0]["action_id"]
    if read.submission is not None:
        meta = json.loads(body["view"]["private_metadata"])
        assert read.submission.ref == CODEC.decode(meta["t"])


@fuzz(quick=500, full=10000)
@given(body=bodies, as_json=st.booleans())
def test_the_edge_reads_any_body_or_refuses_it(body: Any, as_json: bool) -> None:
    text = json.dumps(body) if as_json else form(body).decode()
    try:
        parsed = form_or_json(text, "application/json" if as_json else "")
        ids = log_ids(parsed, CODEC)
        read = read_callback(parsed, CODEC)
        home = payloads.home_opener(parsed)
    except payloads.MalformedPayload as exc:
        assert exc.field is None or CANARY not in exc.field
        assert CANARY not in str(exc)
        return
    assert CANARY not in json.dumps(ids)
    _checked(read, parsed)
    if home is not None:
        assert home.user_id == parsed["event"]["user"]


@fuzz(quick=200, full=5000)
@given(raw=st.binary(max_size=300) | st.text(max_size=300).map(str.encode))
def test_any_form_body_is_an_interaction_or_malformed(raw: bytes) -> None:
    try:
        payloads.interaction(raw)
    except payloads.MalformedPayload:
        pass
    except UnicodeDecodeError:
        pass  # the route refuses bytes that are not UTF-8 before parsing (400 not_utf8)


# ---------------------------------------------------------------- over HTTP


@dataclass
class World:
    """Critical questions (nothing binds on one answer), each with its cards to Ahmed and Sarah:
    examples spread over several, so that most clicks find a question still open."""

    clicks: dict[tuple[str, str, str, str], dict[str, Any]]  # cid, clicker, owner, action

    @property
    def questions(self) -> list[str]:
        return sorted({key[0] for key in self.clicks})


async def _many_cards_stack(make_stack: Any) -> Stack:
    """One stack for every example of a test (made on the first), where every question is a
    card of its own (no digest, no daily cap)."""
    global _STACK
    if _STACK is None or _STACK[0] is not make_stack:
        settings = clarify_settings(digest_threshold=100, per_person_daily_cap=1000)
        _STACK = (make_stack, await make_stack(clarify=settings))
    return _STACK[1]


_STACK: tuple[Any, Stack] | None = None


async def _world(stack: Stack, size: int = 12) -> World:
    found = getattr(stack, "_fuzz_world", None)
    if found is None:
        made = [await stack.create(authority={"authored_by": ["p-ahmed", "p-sarah"]},
                                   severity="critical") for _ in range(size)]
        await stack.burst()
        clicks = {}
        for cid in made:
            for owner in OWNERS:
                card = copy.deepcopy(stack.card(owner, cid))  # as first sent, with its buttons
                for clicker in CLICKERS:
                    for action in ACTIONS:
                        clicks[cid, clicker, owner, action] = await payload_of(
                            stack, clicker, card, action, seen=card)
        found = World(clicks)
        stack._fuzz_world = found  # type: ignore[attr-defined]
    return found


async def _answers(stack: Stack, cid: str) -> list[tuple[str, int | None]]:
    await stack.settle()
    c = await stack.bot.get_clarification(clarification_id=cid)
    return [(r.responder, r.answer_index) for r in c.responses]


def _clicked(payload: Any) -> tuple[str | None, ActionRef | None]:
    """The user id and the decoded reference the payload carries, where it carries them."""
    try:
        user = payload["user"]["id"]
        ref = CODEC.decode(payload["actions"][0]["value"])
    except (KeyError, IndexError, TypeError, InvalidActionPayload):
        return None, None
    return (user if isinstance(user, str) else None), ref


OWNERS = ("U0AHMED", "U0SARAH")  # the question's cards went to them
CLICKERS = ("U0AHMED", "U0SARAH", "U0PRIYA", "U0NOBODY1")
ACTIONS = ("clarify.answer.0", "clarify.answer.1")
SIGNING = ["signed"] * 6 + ["unsigned", "other_secret", "stale", "tampered"]


@fuzz(quick=60, full=1000)
@given(data=st.data())
async def test_a_click_forwards_only_the_verified_persons_own_answer(
        make_stack: Any, logs: Logs, data: st.DataObject) -> None:
    stack = await _many_cards_stack(make_stack)
    world = await _world(stack)
    cid = data.draw(st.sampled_from(world.questions))
    payload = world.clicks[cid, data.draw(st.sampled_from(CLICKERS)), data.draw(
        st.sampled_from(OWNERS)), data.draw(st.sampled_from(ACTIONS))]
    payload = copy.deepcopy(payload)
    payload["actions"][0]["action_ts"] = f"{time.time():.6f}"  # newer than any earlier click
    if data.draw(st.booleans()):
        payload = data.draw(mutated(payload))
    how = data.draw(st.sampled_from(SIGNING))
    as_json = data.draw(st.booleans())
    body = json.dumps(payload).encode() if as_json else form(payload)
    stamp = str(int(time.time()) - (600 if how == "stale" else 0))
    signature = sign(body, secret="0" * 32 if how == "other_secret" else SIGNING_SECRET,
                     stamp=stamp)
    headers = {} if how == "unsigned" else {"X-Slack-Request-Timestamp": stamp,
                                            "X-Slack-Signature": signature}
    sent = body + b"&x=1" if how == "tampered" else body
    before, audited = await _answers(stack, cid), len(stack.sink.events)

    response = await post_raw(stack, sent, headers=headers, content_type=(
        "application/json" if as_json else "application/x-www-form-urlencoded"))

    assert response.status < 500, response.status
    new = (await _answers(stack, cid))[len(before):]
    if how != "signed":
        assert response.status == 401
        assert new == [] and len(stack.sink.events) == audited
        return
    user, ref = _clicked(payload)
    event("recorded" if new else f"not recorded ({response.status})")
    for responder, index in new:
        assert response.status == 200
        assert user in PEOPLE, "an answer of someone who is nobody the core knows"
        assert responder == PEOPLE[user]  # as the verified clicker, never the card's owner
        assert ref is not None and index == ref.candidate
    logs.assert_free_of(*WORDS)


@fuzz(quick=120, full=1500)
@given(body=bodies, as_json=st.booleans(),
       retry=st.none() | st.tuples(st.sampled_from(["1", "2", "x", ""]),
                                   st.sampled_from(["http_timeout", "http_error", CANARY])))
async def test_any_signed_callback_or_event_is_answered_without_a_5xx(
        stack: Stack, logs: Logs, body: Any, as_json: bool, retry: tuple[str, str] | None
        ) -> None:
    raw = json.dumps(body).encode() if as_json else form(body)
    stamp = str(int(time.time()))
    headers = {"X-Slack-Request-Timestamp": stamp,
               "X-Slack-Signature": sign(raw, secret=SIGNING_SECRET, stamp=stamp)}
    if retry is not None:
        headers |= {"X-Slack-Retry-Num": retry[0], "X-Slack-Retry-Reason": retry[1]}
    response = await post_raw(stack, raw, headers=headers, content_type=(
        "application/json" if as_json else "application/x-www-form-urlencoded"))
    assert response.status in (200, 400, 403), (response.status, json.dumps(body))
    await stack.settle()
    logs.assert_free_of(*WORDS)
