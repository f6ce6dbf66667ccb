"""Action payloads: opaque, signed references carried by buttons and Action.Execute data.

A payload names a clarification, a candidate index (or the free-form path) and the delivery
it came from, never who answers or with what rights: the adapters take those from the
verified callback. The token is ``v1.<base64url JSON>.<base64url HMAC-SHA256/128>``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
from dataclasses import dataclass
from datetime import date
from enum import StrEnum

from cards.views import CustomError

VERSION = "v1"
MAX_TOKEN_CHARS = 1024  # well under Slack's 2000-char button value and private_metadata
MIN_KEY_BYTES = 16
_MAC_BYTES = 16
_REF = re.compile(r"^[A-Za-z0-9._:@-]{1,200}$")
_B64 = re.compile(r"^[A-Za-z0-9_-]+$")
_MAX_SMALL_INT = 100_000
MAX_NOTE_CHARS = 2000
MAX_OVERRIDE_NOTE_CHARS = 500  # the core keeps 1-500 characters as an answer's ``note``
OVERRIDE_NOTE_ID = "override.note"  # the note's input id (Teams input, Slack block)
TEAMS_TOKEN_KEY = "t"


class InvalidActionPayload(ValueError):
    """A callback payload is malformed, oversized or tampered with (answer HTTP 400)."""


class ActionKind(StrEnum):
    ANSWER = "a"  # one tap on a candidate
    CUSTOM_OPEN = "o"  # Slack: open the "Something else…" modal
    CUSTOM_SUBMIT = "s"  # submit a free-form interval
    REFRESH = "r"  # Teams Universal Actions refresh
    DIGEST_NEXT = "n"  # show the next page of a digest
    DECLINE = "d"  # "Not the right person": pass the question on to the next candidate
    OVERRIDE_OPEN = "v"  # a steward card: open the override confirmation for one candidate
    OVERRIDE_SUBMIT = "w"  # submit the confirmed override with its required note


# kinds that name one candidate of the clarification
_WITH_CANDIDATE = frozenset({ActionKind.ANSWER, ActionKind.OVERRIDE_OPEN,
                             ActionKind.OVERRIDE_SUBMIT})


@dataclass(frozen=True)
class ActionRef:
    """What a callback refers to; every field is a reference, none is authority."""

    kind: ActionKind
    card_ref: str
    clarification_id: str | None = None
    candidate: int | None = None
    slot: int = 0
    offset: int | None = None

    def __post_init__(self) -> None:
        _check_ref(self)


def _check_ref(ref: ActionRef) -> None:
    if not _REF.match(ref.card_ref):
        raise InvalidActionPayload("bad card reference")
    needs_clarification = ref.kind is not ActionKind.DIGEST_NEXT
    if needs_clarification != (ref.clarification_id is not None):
        raise InvalidActionPayload("clarification reference does not fit the action")
    if ref.clarification_id is not None and not _REF.match(ref.clarification_id):
        raise InvalidActionPayload("bad clarification reference")
    if (ref.kind in _WITH_CANDIDATE) != (ref.candidate is not None):
        raise InvalidActionPayload("candidate index does not fit the action")
    if (ref.kind is ActionKind.DIGEST_NEXT) != (ref.offset is not None):
        raise InvalidActionPayload("offset does not fit the action")
    for number in (ref.candidate, ref.offset, ref.slot):
        if number is not None and not (_is_int(number) and 0 <= number <= _MAX_SMALL_INT):
            raise InvalidActionPayload("number out of range")


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


_FIELDS = {"k": "kind", "r": "card_ref", "c": "clarification_id", "i": "candidate",
           "s": "slot", "o": "offset"}


class ActionCodec:
    """Signs and verifies action tokens with a key the caller supplies (never the environment)."""

    def __init__(self, key: bytes) -> None:
        if len(key) < MIN_KEY_BYTES:
            raise ValueError(f"the action signing key must have at least {MIN_KEY_BYTES} bytes")
        self._key = key

    def encode(self, ref: ActionRef) -> str:
        body = {"k": ref.kind.value, "r": ref.card_ref, "c": ref.clarification_id,
                "i": ref.candidate, "s": ref.slot or None, "o": ref.offset}
        compact = json.dumps({k: v for k, v in body.items() if v is not None},
                             separators=(",", ":"), sort_keys=True)
        signed = f"{VERSION}.{_b64(compact.encode())}"
        return f"{signed}.{_b64(self._mac(signed))}"

    def decode(self, token: object) -> ActionRef:
        """The reference in ``token``; raises InvalidActionPayload for anything not ours."""
        if not isinstance(token, str) or not 0 < len(token) <= MAX_TOKEN_CHARS:
            raise InvalidActionPayload("payload missing or oversized")
        parts = token.split(".")
        if len(parts) != 3 or parts[0] != VERSION or not all(_B64.match(p) for p in parts[1:]):
            raise InvalidActionPayload("payload is not a v1 token")
        signed = f"{parts[0]}.{parts[1]}"
        if not hmac.compare_digest(_unb64(parts[2]), self._mac(signed)):
            raise InvalidActionPayload("payload signature does not match")
        return _ref_from_body(_json_object(_unb64(parts[1])))

    def _mac(self, signed: str) -> bytes:
        return hmac.new(self._key, signed.encode(), hashlib.sha256).digest()[:_MAC_BYTES]

    def teams_data(self, ref: ActionRef) -> dict[str, str]:
        """Action.Execute ``data``: the token alone; Teams merges input values beside it."""
        return {TEAMS_TOKEN_KEY: self.encode(ref)}

    def decode_teams_data(self, data: object) -> ActionRef:
        if not isinstance(data, dict):
            raise InvalidActionPayload("action data is not an object")
        return self.decode(data.get(TEAMS_TOKEN_KEY))


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError) as exc:
        raise InvalidActionPayload("payload is not base64url") from exc


def _json_object(raw: bytes) -> dict[str, object]:
    try:
        body = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidActionPayload("payload is not JSON") from exc
    if not isinstance(body, dict) or not set(body) <= set(_FIELDS):
        raise InvalidActionPayload("payload has unexpected fields")
    return body


def _ref_from_body(body: dict[str, object]) -> ActionRef:
    raw_kind = body.get("k")
    try:
        kind = ActionKind(raw_kind if isinstance(raw_kind, str) else "")
    except ValueError as exc:
        raise InvalidActionPayload("unknown action kind") from exc
    values = {_FIELDS[k]: v for k, v in body.items() if k != "k"}
    values.setdefault("slot", 0)
    for name in ("card_ref", "clarification_id"):
        if name in values and not isinstance(values[name], str):
            raise InvalidActionPayload("reference is not a string")
    if "card_ref" not in values:
        raise InvalidActionPayload("card reference missing")
    return ActionRef(kind=kind, **values)  # type: ignore[arg-type]  # checked in __post_init__


# ---------------------------------------------------------------- free-form answers


@dataclass(frozen=True)
class CustomInputIds:
    """Input ids of the free-form fields for one question slot (Teams inputs, Slack blocks)."""

    start: str
    end: str
    note: str


def custom_input_ids(slot: int) -> CustomInputIds:
    return CustomInputIds(start=f"custom.{slot}.from", end=f"custom.{slot}.to",
                          note=f"custom.{slot}.note")


@dataclass(frozen=True)
class CustomAnswer:
    start: date
    end: date | None
    note: str


def read_custom_answer(*, start: object, end: object, note: object) -> CustomAnswer | CustomError:
    """Checks the submitted free-form fields; an error maps to an inline field message."""
    if start in (None, ""):
        return CustomError.START_REQUIRED
    start_day, end_day = _iso_day(start), _iso_day(end) if end not in (None, "") else None
    if start_day is None or (end not in (None, "") and end_day is None):
        return CustomError.UNPARSEABLE
    if end_day is not None and end_day < start_day:
        return CustomError.END_BEFORE_START
    text = note if isinstance(note, str) else ""
    return CustomAnswer(start=start_day, end=end_day, note=text[:MAX_NOTE_CHARS])


def _iso_day(value: object) -> date | None:
    if not isinstance(value, str) or not re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        return None


# ---------------------------------------------------------------- steward overrides


def read_override_note(note: object) -> str | None:
    """The steward's reason for an override, trimmed; None when missing or blank (the form
    refuses it: an override is never recorded without a note)."""
    if not isinstance(note, str) or not note.strip():
        return None
    return note.strip()[:MAX_OVERRIDE_NOTE_CHARS]
