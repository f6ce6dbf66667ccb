"""Action payloads: opaque signed references that reject anything malformed or tampered."""

from __future__ import annotations

import base64
import json
from datetime import date

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cards.actions import (
    MAX_TOKEN_CHARS,
    ActionCodec,
    ActionKind,
    ActionRef,
    CustomAnswer,
    InvalidActionPayload,
    read_custom_answer,
)
from cards.views import CustomError

ANSWER = ActionRef(kind=ActionKind.ANSWER, card_ref="dlv_1", clarification_id="clr_1",
                   candidate=2, slot=3)


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def test_round_trip_and_teams_data(codec: ActionCodec) -> None:
    """A reference survives encode/decode, also as Action.Execute data with inputs beside it."""
    assert codec.decode(codec.encode(ANSWER)) == ANSWER
    data = {**codec.teams_data(ANSWER), "custom.0.from": "2026-06-12"}
    assert codec.decode_teams_data(data) == ANSWER


def test_payload_carries_no_authority(codec: ActionCodec) -> None:
    """The token's body holds only references: no responder, role, tenant or answer text."""
    body = json.loads(base64.urlsafe_b64decode(codec.encode(ANSWER).split(".")[1] + "=="))
    assert set(body) <= {"k", "r", "c", "i", "s", "o"}


def test_tampering_is_rejected(codec: ActionCodec) -> None:
    """A changed body, a changed signature or another key's token is refused."""
    token = codec.encode(ANSWER)
    version, body, mac = token.split(".")
    forged = json.loads(base64.urlsafe_b64decode(body + "=="))
    forged["i"] = 0
    for bad in (f"{version}.{_b64(json.dumps(forged).encode())}.{mac}",
                f"{version}.{body}.{mac[:-2]}AA",
                ActionCodec(b"another key of 32 bytes........").encode(ANSWER)):
        with pytest.raises(InvalidActionPayload):
            codec.decode(bad)


def _signed(codec: ActionCodec, body: object) -> str:
    signed = f"v1.{_b64(json.dumps(body).encode())}"
    return f"{signed}.{_b64(codec._mac(signed))}"


@pytest.mark.parametrize("body", [
    {"k": "a", "r": "d", "c": "c"},  # answer without a candidate
    {"k": "a", "r": "d", "c": "c", "i": True},  # a bool is not an index
    {"k": "a", "r": "d", "c": "c", "i": -1},
    {"k": "a", "r": "d", "c": "c", "i": 0, "responder": "U1"},  # unknown field
    {"k": "z", "r": "d", "c": "c"},
    {"k": ["a"], "r": "d"},
    {"k": "o", "r": "d"},  # no clarification
    {"k": "n", "r": "d", "c": "c", "o": 1},  # digest page names no clarification
    {"k": "n", "r": "d"},  # digest page without offset
    {"k": "o", "r": "bad ref!", "c": "c"},
    {"k": "o", "r": 5, "c": "c"},
    {"k": "o", "c": "c"},
    ["k", "a"],
])
def test_signed_but_malformed_bodies_are_rejected(codec: ActionCodec, body: object) -> None:
    """Even with a valid signature, a body that is not a well-formed reference is refused."""
    with pytest.raises(InvalidActionPayload):
        codec.decode(_signed(codec, body))


@pytest.mark.parametrize("token", [
    None, 7, "", "v1", "v1.a.b.c", "v2.eyJ9.AAAA", "v1.!!!.AAAA", "v1.eyJ9", "x" * 5000,
    "v1." + "A" * MAX_TOKEN_CHARS + ".AAAA",
])
def test_malformed_tokens_are_rejected(codec: ActionCodec, token: object) -> None:
    """Non-strings, wrong shapes, bad base64 and oversized input raise InvalidActionPayload."""
    with pytest.raises(InvalidActionPayload):
        codec.decode(token)


def test_teams_data_must_be_an_object(codec: ActionCodec) -> None:
    """Action.Execute data that is not an object, or lacks the token, is refused."""
    for data in ([], "v1.x.y", {"x": 1}):
        with pytest.raises(InvalidActionPayload):
            codec.decode_teams_data(data)


def test_errors_do_not_echo_the_payload(codec: ActionCodec) -> None:
    """The exception message is value-free: it never repeats the submitted token."""
    secret = "v1.c2VjcmV0LXNwYW4tdGV4dA.AAAA"
    with pytest.raises(InvalidActionPayload) as caught:
        codec.decode(secret)
    assert "c2VjcmV0" not in str(caught.value)


def test_short_keys_are_refused() -> None:
    """A signing key under 16 bytes is a configuration error."""
    with pytest.raises(ValueError):
        ActionCodec(b"short")


refs = st.builds(
    ActionRef, kind=st.just(ActionKind.ANSWER),
    card_ref=st.from_regex(r"[A-Za-z0-9._:@-]{1,200}", fullmatch=True),
    clarification_id=st.from_regex(r"[A-Za-z0-9._:@-]{1,200}", fullmatch=True),
    candidate=st.integers(0, 100_000), slot=st.integers(0, 100_000))


@settings(max_examples=60, deadline=None)
@given(ref=refs)
def test_any_reference_round_trips_within_slack_limits(ref: ActionRef) -> None:
    """Every valid reference round-trips and its token fits a button value and private_metadata."""
    codec = ActionCodec(b"property test key, 32 bytes long")
    token = codec.encode(ref)
    assert len(token) <= MAX_TOKEN_CHARS
    assert codec.decode(token) == ref


@settings(max_examples=60, deadline=None)
@given(token=st.text(max_size=300))
def test_arbitrary_text_never_decodes(token: str) -> None:
    """Random text is rejected with the one exception type, never another error."""
    codec = ActionCodec(b"property test key, 32 bytes long")
    with pytest.raises(InvalidActionPayload):
        codec.decode(token)


def test_custom_answers_are_checked() -> None:
    """Free-form fields map to an answer or to the inline error to show."""
    assert read_custom_answer(start="2026-06-12", end="", note="n") == CustomAnswer(
        start=date(2026, 6, 12), end=None, note="n")
    assert read_custom_answer(start=None, end=None, note=None) is CustomError.START_REQUIRED
    assert read_custom_answer(start="12/06/2026", end=None, note=None) is CustomError.UNPARSEABLE
    assert read_custom_answer(start="2026-02-30", end=None, note=None) is CustomError.UNPARSEABLE
    assert read_custom_answer(start="2026-06-12", end="2026-06-01",
                              note=None) is CustomError.END_BEFORE_START
