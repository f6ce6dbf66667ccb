"""The core's response read: an error status as the client's error (code, value-free message,
rules, Retry-After), a success body as the route's model through the tolerant reader."""

from __future__ import annotations

import json
from datetime import datetime

import structlog
from pydantic import BaseModel, ValidationError

from bot.core import tolerance
from bot.core.errors import CoreAPIError, ErrorCode, UnexpectedResponse, exception_for, message_of
from bot.core.http import WireResponse
from bot.core.instruments import INSTRUMENTS
from bot.core.routes import Route
from bot.retry import retry_after_seconds

log = structlog.get_logger("bot.core.client")

_MAX_MESSAGE = 300


def retry_after(response: WireResponse, now: datetime) -> float | None:
    """Seconds from a Retry-After header (``bot.retry.retry_after_seconds``), or None."""
    return retry_after_seconds(response.headers.get("Retry-After"), now)


def api_error(response: WireResponse, *, now: datetime, operation: str = "") -> CoreAPIError:
    status = response.status_code
    wait = retry_after(response, now)
    if status < 400:
        message = f"The core answered HTTP {status}, which this call never uses."
        return UnexpectedResponse(status=status, code="", message=message, operation=operation)
    code, message = error_fields(response)
    cls = exception_for(status=status, code=code)
    error = cls(status=status, code=code, message=message, retry_after=wait,
                rules=rules(response) if status == 422 else ())
    error.operation = operation
    return error


def rules(response: WireResponse) -> tuple[str, ...]:
    """The rule codes of a validation error's details (a closed list; anything else dropped)."""
    try:
        details = response.json().get("details")
    except (ValueError, RecursionError, AttributeError):
        return ()
    if not isinstance(details, list):
        return ()
    return tuple(d["rule"] for d in details[:20] if isinstance(d, dict)
                 and isinstance(d.get("rule"), str) and d["rule"] in _RULES)


_RULES = frozenset({"required", "unknown_field", "type", "format", "enum", "pattern", "too_small",
                    "too_large", "too_short", "too_long", "exactly_one", "policy", "reference",
                    "invalid"})


def error_fields(response: WireResponse) -> tuple[str, str]:
    """The body's code and value-free message, or ("", a generic message) without a JSON body."""
    generic = f"The core answered HTTP {response.status_code} without an error body."
    try:
        body = response.json()
    except (ValueError, RecursionError):  # RecursionError: nested too deep to decode
        return "", generic
    code = body.get("code") if isinstance(body, dict) else None
    if not isinstance(code, str) or not code:
        return "", generic
    message = body.get("message")
    if not isinstance(message, str) or not message:
        message = message_of(ErrorCode(code)) if code in ErrorCode else generic
    # the core promises value-free messages; trimming keeps a misbehaving one from flooding logs
    return code[:64], " ".join(message.split())[:_MAX_MESSAGE]


def parse[T: BaseModel](r: Route, response: WireResponse, model: type[T],
                         dropped: list[tolerance.Dropped] | None = None) -> T:
    try:  # pydantic parses the bytes itself; only an answer that fails is repaired
        return tolerance.read_json(model, response.content, dropped=dropped)
    except (ValueError, RecursionError) as exc:  # ValidationError, for bad JSON too; too deep
        fields: tuple[str, ...] = ()
        if isinstance(exc, ValidationError):
            fields = tolerance.fields_of(e["loc"] for e in exc.errors(include_input=False))
        elif not isinstance(exc, RecursionError) and _is_json(response.content):
            fields = ("(body)",)  # valid JSON of another shape altogether
        where = " at " + ", ".join(fields[:5]) if fields else ""
        # nothing unreadable is silent: logged (the places, never a value) and counted
        log.warning("core.answer_unreadable", operation=r.operation_id,
                    status=response.status_code, fields=list(fields))
        INSTRUMENTS.unreadable(r.operation_id)
        # `from None`: a ValidationError's text repeats the input, which may hold span text
        raise UnexpectedResponse(
            status=response.status_code,
            code="",
            message=f"The core's {r.operation_id} response does not match the contract{where}.",
            operation=r.operation_id,
            fields=fields,
        ) from None


def _is_json(content: bytes) -> bool:
    try:
        json.loads(content)
    except (ValueError, RecursionError):
        return False
    return True
