"""The core's answers read: each error code as its own class, an unknown code by its status, an
error without a body's code, a success body off the contract or a status the route never uses
(``bot.core.decoding``); every message value-free."""

from __future__ import annotations

import pytest

from bot.core.client import RetryPolicy, UnexpectedResponse
from bot.core.errors import (
    ERROR_TABLE,
    EXCEPTION_FOR_CODE,
    AuthenticationFailed,
    Conflict,
    CoreAPIError,
    InvalidRequest,
    MethodNotAllowed,
    NotFound,
    PermissionDenied,
    RateLimited,
    ServerError,
)

from .conftest import clarification, error_body, respond


@pytest.mark.parametrize("code", list(ERROR_TABLE), ids=str)
async def test_every_error_code_maps_to_its_exception(code, core, make_client):
    """Each documented code raises its own class with status, code and the body's message."""
    status = ERROR_TABLE[code][0]
    core.script(respond(status, json=error_body(code, status)))
    async with make_client(retry=RetryPolicy(max_attempts=1)) as client:
        with pytest.raises(CoreAPIError) as info:
            await client.get_clarification(clarification_id="clar-1")  # a baseline route
    assert type(info.value) is EXCEPTION_FOR_CODE[code]
    assert (info.value.status, info.value.code) == (status, code)
    assert info.value.message == "Value-free message."


@pytest.mark.parametrize(("status", "cls"), [
    (400, InvalidRequest), (401, AuthenticationFailed), (403, PermissionDenied),
    (404, NotFound), (405, MethodNotAllowed), (409, Conflict), (413, InvalidRequest),
    (422, InvalidRequest), (429, RateLimited), (500, ServerError), (503, ServerError),
    (418, CoreAPIError),
])
async def test_unknown_code_falls_back_by_status(status, cls, core, make_client):
    """An undocumented code raises the class for its HTTP status and keeps the code."""
    core.script(respond(status, json=error_body("SOMETHING_NEW", status)))
    async with make_client(retry=RetryPolicy(max_attempts=1)) as client:
        with pytest.raises(CoreAPIError) as info:
            await client.get_clarification(clarification_id="clar-1")
    assert type(info.value) is cls
    assert info.value.code == "SOMETHING_NEW"


@pytest.mark.parametrize("reply", [
    respond(502, text="<html>Bad gateway</html>"),
    respond(502, json={"error": "upstream"}),
    respond(502, json=["not", "an", "object"]),
])
async def test_error_without_code_uses_status_class_and_generic_message(reply, core, client):
    """A non-JSON or code-less error body raises the status class, code "" and a generic text."""
    core.script(reply)
    with pytest.raises(ServerError) as info:
        await client.fail_job(job_id="job-1", lease_token="lease-1")
    assert info.value.code == ""
    assert info.value.message == "The core answered HTTP 502 without an error body."
    assert "upstream" not in str(info.value) and "html" not in str(info.value)


async def test_success_body_off_contract_raises_value_free_error(core, client):
    """A 200 whose body breaks the contract raises UnexpectedResponse naming fields, not values."""
    bad = clarification() | {"candidates": "span text: ship on Friday", "quorum": None}
    core.script(respond(200, json=bad))
    with pytest.raises(UnexpectedResponse) as info:
        await client.get_clarification(clarification_id="clar-1")
    assert "candidates" in info.value.message and "quorum" in info.value.message
    assert "Friday" not in str(info.value)
    assert info.value.__cause__ is None and info.value.__suppress_context__


async def test_unused_success_status_raises_unexpected_response(core, client):
    """A 2xx status the route never answers with is not parsed as a success."""
    core.script(respond(204))
    with pytest.raises(UnexpectedResponse) as info:
        await client.get_job(job_id="job-1")
    assert info.value.status == 204


