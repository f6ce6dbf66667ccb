"""A core that answers garbage: every call of the bot's core client ends in a valid model or a
``CoreError`` whose text repeats nothing of the body, never another exception.

The client runs over its own wire and a ``MockTransport``: each example picks a route
(``tests/core``'s table of every call) and an answer: a valid body with one part dropped or
replaced, any JSON, bytes, a truncated or deeply nested body, a huge number, any status, any
content type, any Retry-After.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.core.client import CoreClient, RetryPolicy
from bot.core.errors import CoreError, ErrorCode
from bot.core.http import MockTransport, WireRequest, WireResponse
from bot.core.models import ClarificationSummary
from bot.core.routes import route
from tests.core.conftest import respond
from tests.core.test_client import CASES, Case
from tests.fuzz.budget import CANARY, fuzz, json_values, mutated

pytestmark = pytest.mark.slow  # property-based: a few hundred generated examples

CALLS = [c for c in CASES if not c.dev]
TOKEN = "tok-fuzz-secret-bearer"


async def _no_sleep(_: float) -> None:
    return None


def _bodies(case: Case) -> st.SearchStrategy[bytes]:
    valid = json.dumps(case.reply).encode()
    as_json = (mutated(case.reply) | json_values).map(lambda v: json.dumps(v).encode())
    error = st.fixed_dictionaries({"code": st.sampled_from([*ErrorCode]) | st.text(max_size=70)
                                   | json_values,
                                   "message": st.just(CANARY) | json_values}
                                  ).map(lambda v: json.dumps(v).encode())
    return st.one_of(
        st.just(valid), as_json, error, st.binary(max_size=64),
        st.integers(0, len(valid)).map(lambda n: valid[:n]),  # truncated
        st.integers(1, 5000).map(lambda n: b"[" * n + b"]" * n),  # nested past any limit
        st.integers(1, 5000).map(lambda n: b"[" * n),
        st.integers(10, 6000).map(lambda n: b"1" * n),  # past int's digit limit
        st.just(b'{"items": [], "nextCursor": 1e999}'),
        st.just(valid.decode().encode("utf-16")),
    )


@st.composite
def answers(draw: st.DrawFn) -> tuple[Case, int, bytes, dict[str, str]]:
    case = draw(st.sampled_from(CALLS))
    success = sorted(route(case.operation_id).success)
    status = draw(st.sampled_from(success) | st.sampled_from([400, 404, 409, 429, 500, 503])
                  | st.integers(100, 599))
    body = draw(_bodies(case))
    headers = {"Content-Type": draw(st.sampled_from(
        ["application/json", "text/html", "application/json; charset=latin-1", ""]))}
    retry_after = draw(st.none() | st.sampled_from(["1e999", "nan", "-5", "Tue, 99 Xyz",
                                                    "Mon, 01 Jan 0001 00:00:00 GMT"])
                       | st.text(max_size=30))
    if retry_after is not None and retry_after.isprintable() and retry_after.isascii():
        headers["Retry-After"] = retry_after
    return case, status, body, headers


async def _call(client: CoreClient, case: Case) -> Any:
    return await getattr(client, case.method)(**case.kwargs)


@fuzz(quick=400, full=6000)
@given(answer=answers())
async def test_a_core_answering_garbage_never_breaks_a_call(answer: Any) -> None:
    case, status, body, headers = answer

    def core(_: WireRequest) -> WireResponse:
        return respond(status, content=body, headers=headers)

    async with CoreClient(base_url="http://core.test", token=TOKEN,
                          transport=MockTransport(core),
                          retry=RetryPolicy(max_attempts=2), sleep=_no_sleep) as client:
        try:
            result = await _call(client, case)
        except CoreError as exc:
            told = str(exc) + repr(exc.__dict__)
            assert TOKEN not in told
            # the core's own error message is passed on (it promises value-free ones); nothing
            # of any other body is repeated
            if status < 400 or b'"message"' not in body:
                assert CANARY not in told, told
            return
    if case.operation_id in ACKNOWLEDGEMENTS:
        # a lease operation or a report: any 2xx is success, and an unreadable body is not a
        # failure (the job's handling does not depend on it); a readable one is parsed
        assert 200 <= status < 300
        if result is None:
            return
    assert status in route(case.operation_id).success
    assert result is not None


# the calls whose answer the bot only needs to be a success (``BaseCoreClient._ack``)
ACKNOWLEDGEMENTS = frozenset({"heartbeatJob", "advanceJob", "completeJob", "failJob",
                              "expediteJob", "reportDelivery", "reportEvent", "reportBatch"})


@fuzz(quick=100, full=2000)
@given(pages=st.lists(mutated({"items": [], "nextCursor": "c1"}) | json_values, min_size=1,
                      max_size=5))
async def test_paging_through_garbage_ends(pages: list[Any]) -> None:
    """``iter_clarifications`` follows cursors: pages of junk (a cursor repeated, of the wrong
    type) end in items or a CoreError, and never loop."""
    served = iter(pages)

    def core(_: WireRequest) -> WireResponse:
        return respond(200, json=next(served, {"items": []}))

    async with CoreClient(base_url="http://core.test", token=TOKEN,
                          transport=MockTransport(core),
                          retry=RetryPolicy(max_attempts=1), sleep=_no_sleep) as client:
        try:
            items = [i async for i in client.iter_clarifications()]
        except CoreError:
            return
    assert all(isinstance(i, ClarificationSummary) for i in items)
