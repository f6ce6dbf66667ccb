"""The reference core's HTTP layer: every failure leaves as a documented, value-free error body."""

from __future__ import annotations

import httpx
import pytest
from structlog.testing import capture_logs

from devcore.app import MAX_BODY
from devcore.core import ReferenceCore
from tests.conftest import CLARIFY_TOKEN, DEV_TOKEN

BOT = {"Authorization": f"Bearer {CLARIFY_TOKEN}"}
DEV = {"Authorization": f"Bearer {DEV_TOKEN}"}


@pytest.mark.parametrize(("method", "path", "kwargs", "status", "code"), [
    ("POST", "/v1/jobs/poll", {"content": b"{not json", "headers": BOT}, 400, "MALFORMED_BODY"),
    ("POST", "/v1/jobs/poll", {"json": [1, 2], "headers": BOT}, 422, "VALIDATION_FAILED"),
    ("POST", "/v1/jobs/poll", {"json": {"kinds": ["clarify:"], "x": 1}, "headers": BOT}, 422,
     "VALIDATION_FAILED"),
    # the smallest body over the limit: refused once the core has read nearly all of it, so no
    # large unread rest keeps the connection lingering (aiohttp drains one for up to 10 s)
    ("POST", "/v1/jobs/poll", {"content": b"{" + b" " * MAX_BODY + b"}", "headers": BOT},
     413, "PAYLOAD_TOO_LARGE"),
    ("GET", "/v1/nothing-here", {"headers": BOT}, 404, "ROUTE_NOT_FOUND"),
    ("DELETE", "/v1/clarifications", {"headers": BOT}, 405, "METHOD_NOT_ALLOWED"),
    ("GET", "/v1/clarifications", {}, 401, "UNAUTHENTICATED"),
    ("GET", "/v1/clarifications?limit=0", {"headers": BOT}, 422, "VALIDATION_FAILED"),
    ("GET", "/v1/clarifications?cursor=%%%", {"headers": BOT}, 422, "VALIDATION_FAILED"),
    ("POST", "/dev/v1/clock", {"json": {"set": "9999-01-01T00:00:00Z"}, "headers": DEV}, 422,
     "VALIDATION_FAILED"),
    ("POST", "/dev/v1/clock", {"json": {"advanceSeconds": 60}, "headers": BOT}, 401,
     "UNAUTHENTICATED"),
])
@pytest.mark.slow
async def test_bad_requests_get_documented_codes(
    core_url: str, method: str, path: str, kwargs: dict, status: int, code: str
) -> None:
    """Malformed, oversized, unknown, unauthenticated or out-of-range requests: a coded body."""
    async with httpx.AsyncClient(base_url=core_url) as http:
        response = await http.request(method, path, **kwargs)
    assert response.status_code == status
    body = response.json()
    assert body["code"] == code and body["status"] == status and body["message"]


async def test_validation_details_never_echo_the_input(core_url: str) -> None:
    """A rejected value is located, never repeated back (it could be span or answer text)."""
    secret = "the secret launch is on Friday"
    async with httpx.AsyncClient(base_url=core_url) as http:
        response = await http.post("/v1/clarifications/clr-00001/answer", headers=BOT,
                                   json={"answerIndex": secret, "channel": "slack"})
    assert response.status_code == 422
    assert secret not in response.text and response.json()["details"]


async def test_a_crash_is_a_500_body_and_a_log_line_without_values(
    core: ReferenceCore, core_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An unexpected error answers INTERNAL and logs its type only: no traceback locals."""
    def explode(*_: object, **__: object) -> None:
        raise RuntimeError("boom near span text")

    monkeypatch.setattr(core, "list_clarifications", explode)
    with capture_logs() as logs:
        async with httpx.AsyncClient(base_url=core_url) as http:
            response = await http.get("/v1/clarifications", headers=BOT)
    assert response.status_code == 500 and response.json()["code"] == "INTERNAL"
    crash = [entry for entry in logs if entry["event"] == "core.crash"]
    assert crash and crash[0]["error"] == "RuntimeError"
    assert "boom" not in repr(logs) and "boom" not in response.text
