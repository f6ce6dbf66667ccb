"""Property-based contract test: generated requests to every endpoint of the reference core.

Schemathesis reads the project's OpenAPI document and sends generated bodies, paths and query
parameters over real HTTP. Whatever it sends, the core never answers 5xx and every error answer
is a documented body whose code matches its status.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import pytest
import schemathesis
from hypothesis import HealthCheck, settings

from bot.clock import ManualClock
from bot.core.errors import ERROR_TABLE, ErrorCode
from bot.core.openapi import build_openapi
from bot.core.routes import ROUTES
from devcore.server import build_core, serve
from tests.conftest import CLARIFY_TOKEN, DEV_TOKEN, START

schema = schemathesis.openapi.from_dict(build_openapi())
AUTH_OF = {(r.method, r.path): r.auth for r in ROUTES}


@pytest.fixture(scope="module")
def live_core() -> Iterator[str]:
    """A reference core served from a thread of its own, for schemathesis' blocking calls."""
    ready = threading.Event()
    found: list[tuple[str, asyncio.AbstractEventLoop, asyncio.Event]] = []

    async def main() -> None:
        done = asyncio.Event()
        async with serve(build_core("acme", clock=ManualClock(START))) as url:
            found.append((url, asyncio.get_running_loop(), done))
            ready.set()
            await done.wait()

    thread = threading.Thread(target=lambda: asyncio.run(main()), daemon=True)
    thread.start()
    assert ready.wait(10)
    url, loop, done = found[0]
    yield url
    loop.call_soon_threadsafe(done.set)
    thread.join(10)


def _token(method: str, path: str) -> str:
    return DEV_TOKEN if AUTH_OF.get((method, path)) == "dev" else CLARIFY_TOKEN


@schema.parametrize()
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_generated_request_breaks_the_core(case: schemathesis.Case, live_core: str) -> None:
    """No generated request gets a 5xx; every error answer is a documented, coded body."""
    headers = {"Authorization": f"Bearer {_token(case.method, case.path)}"}
    response = case.call(base_url=live_core, headers=headers, timeout=10)
    assert response.status_code < 500, response.text[:300]
    if response.status_code >= 400:
        body = response.json()
        code = ErrorCode(body["code"])
        assert body["status"] == response.status_code == ERROR_TABLE[code][0]
        assert body["message"]
