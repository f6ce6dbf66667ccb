"""Property-based contract test: generated requests to every endpoint of the reference core.

Schemathesis reads the project's OpenAPI document and sends generated bodies, paths and query
parameters over real HTTP. Whatever it sends, the core never answers 5xx, every error answer
is a documented body whose code matches its status, and no error body repeats a string the
request carried (other than the document's own words, such as an enum value).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis import GenerationMode

from bot.core.errors import ERROR_TABLE, ErrorCode
from bot.core.openapi import build_openapi
from bot.core.routes import ROUTES
from tests.conftest import CLARIFY_TOKEN, DEV_TOKEN

DOCUMENT = build_openapi()
schema = schemathesis.openapi.from_dict(DOCUMENT)
# invalid requests too (unknown fields, wrong types): what an error body could echo
schema.config.generation.update(modes=[GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
AUTH_OF = {(r.method, r.path): r.auth for r in ROUTES}


def _token(method: str, path: str) -> str:
    return DEV_TOKEN if AUTH_OF.get((method, path)) == "dev" else CLARIFY_TOKEN


@pytest.mark.slow
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
        answered = "\n".join(_strings(body))
        sent = [s for s in _strings([case.body, case.query, case.path_parameters]) if len(s) >= 6]
        echoed = [s for s in sent if s in answered and s not in DOCUMENT_TEXT]
        assert echoed == [], (case.method, case.path)


def _strings(node: Any) -> Iterator[str]:
    """Every string in a JSON-like value, keys included."""
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for key, value in node.items():
            yield from _strings(key)
            yield from _strings(value)
    elif isinstance(node, list | tuple):
        for item in node:
            yield from _strings(item)


# the contract's own words (enum values, examples, messages) may appear in any answer
DOCUMENT_TEXT = "\n".join(_strings(DOCUMENT))
