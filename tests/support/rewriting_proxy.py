"""A reverse proxy in front of the reference core, over real HTTP on 127.0.0.1, that rewrites the
clarifications it answers: a core a version ahead (words the bot does not know) or one whose
record says more than its state word. Everything else passes through unchanged. It is the
general proxy of ``tests/support/core_proxy.py`` with one change on the clarification read.

``proxy.clarification`` is a function that changes a ``GET /v1/clarifications/{id}`` answer's
JSON in place (None: unchanged); a test sets and clears it while the bot runs.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import pytest

from devcore.core import ReferenceCore
from devcore.server import serve
from tests.support.core_proxy import CoreProxy, core_proxy

Body = dict[str, Any]
ONE_CLARIFICATION = "GET /v1/clarifications/{clarificationId}"


@dataclass
class RewritingProxy:
    inner: CoreProxy
    clarification: Callable[[Body], None] | None = None
    rewritten: int = 0  # answers changed so far

    @property
    def url(self) -> str:
        return self.inner.url

    def _rewrite(self, data: Any) -> None:
        if self.clarification is not None:
            self.clarification(data)
            self.rewritten += 1


@contextlib.asynccontextmanager
async def rewriting_proxy(upstream: str) -> AsyncIterator[RewritingProxy]:
    """Serve the proxy on a free port of 127.0.0.1 until the block ends."""
    async with core_proxy(upstream) as inner:
        proxy = RewritingProxy(inner)
        inner.alter(ONE_CLARIFICATION, proxy._rewrite)
        yield proxy


# Fixtures for a test module to import (``from tests.support.rewriting_proxy import
# proxy_fixture, core_url_fixture, truth_url_fixture``): the bot reads the core through the
# proxy (``proxy``, ``core_url``), the test reads what the core recorded directly, over the full
# contract (``truth_url``).


@pytest.fixture(name="proxy")
async def proxy_fixture(core: ReferenceCore, contract: str) -> AsyncIterator[RewritingProxy]:
    """The reference core, serving ``contract``, behind a rewriting proxy."""
    async with serve(core, contract=contract) as direct, rewriting_proxy(direct) as made:
        yield made


@pytest.fixture(name="core_url")
def core_url_fixture(proxy: RewritingProxy) -> str:
    """Where the bot's client reaches the core: through the proxy."""
    return proxy.url


@pytest.fixture(name="truth_url")
async def truth_url_fixture(core: ReferenceCore) -> AsyncIterator[str]:
    """The same core over the full contract, not rewritten: what it recorded."""
    async with serve(core, contract="full") as url:
        yield url
