"""Value-free errors over HTTP: details carry schema paths and rule codes, never what was sent.

Every string the caller chooses here carries a marker; whatever the request, an error body never
contains it: not in ``message``, not in ``details[].msg``, not as a key in ``details[].loc``.
"""

from __future__ import annotations

import copy
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.core.routes import ROUTES, Route
from devcore.scenario import read_scenario
from tests.conftest import CLARIFY_TOKEN, DEV_TOKEN

MARK = "Qx7mark"
STEWARD_KEY = "acme-key-maria-steward"  # the API-key-only routes (erasure) get past the audience
RULES = {"required", "unknown_field", "type", "format", "enum", "pattern", "too_small",
         "too_large", "too_short", "too_long", "exactly_one", "policy", "reference", "invalid"}
CREATE = read_scenario("acme")["clarifications"][1]

# a body each POST route accepts (or refuses for a reason other than its shape)
VALID: dict[str, dict[str, Any]] = {
    "pollJobs": {"kinds": ["clarify:"], "maxJobs": 1, "leaseSeconds": 60},
    "heartbeatJob": {"leaseToken": "lease", "leaseSeconds": 60},
    "advanceJob": {"leaseToken": "lease", "attempt": 1, "reasonCode": "NO_READ_PERMISSION"},
    "expediteJob": {"attempt": 0, "reasonCode": "CANDIDATE_DECLINED"},
    "completeJob": {"leaseToken": "lease"},
    "failJob": {"leaseToken": "lease", "retryable": True, "reason": "DELIVERY_FAILED"},
    "answerClarification": {"answerCustom": {"validFrom": "2026-09-01", "sourceText": "n"},
                            "responder": "p-ahmed", "rights": "editor", "channel": "slack"},
    "reportDelivery": {"deliveryId": "d-1", "personId": "p-sarah", "channel": "slack",
                       "kind": "question", "attempt": 0, "messageRef": "m"},
    "reportEvent": {"eventId": "e-1", "type": "skipped", "message": "m"},
    "reportBatch": {"deliveries": [{"clarificationId": "clr-00001", "report": {
        "deliveryId": "d-1", "personId": "p-sarah", "channel": "slack", "kind": "question",
        "attempt": 0}}], "events": [{"clarificationId": "clr-00001", "report": {
            "eventId": "e-1", "type": "skipped", "message": "m"}}]},
    "getPeople": {"tenantId": "acme", "personIds": ["p-sarah"], "resolveAliases": True},
    "resolvePerson": {"tenantId": "acme", "identity": {"platform": "slack", "userId": "U0SARAH",
                                                       "teamId": "T0ACME"}},
    "eraseAttribution": {"tenantId": "acme"},
    "devCreateClarification": CREATE,  # snake_case is accepted as well
    "devMoveClock": {"advanceSeconds": 1},
    "devLoadScenario": read_scenario("acme"),
}
POSTS = [r for r in ROUTES if r.method == "POST"]
GETS = [r for r in ROUTES if r.method == "GET"]

def _headers(route: Route) -> dict[str, str]:
    token = {"dev": DEV_TOKEN, "apikey": STEWARD_KEY}.get(route.auth, CLARIFY_TOKEN)
    return {"Authorization": f"Bearer {token}"}


def _path(route: Route, value: str = "clr-00001") -> str:
    names = [p[1:-1] for p in route.path.split("/") if p.startswith("{")]
    return route.path.format(**dict.fromkeys(names, quote(value, safe="")))


def _assert_value_free(response: httpx.Response) -> None:
    assert response.status_code < 500, response.text[:200]
    if response.status_code < 400:
        return
    assert MARK.lower() not in response.text.lower(), response.text[:300]
    for detail in response.json().get("details", []):
        assert detail["rule"] in RULES and isinstance(detail["loc"], list)


marked = st.builds(lambda a, b: f"{a}{MARK}{b}", st.text(max_size=4), st.text(max_size=4))
leaf = st.one_of(st.none(), st.booleans(), st.integers(-5, 10**12), marked,
                 st.floats(allow_nan=False, allow_infinity=False))
json_value = st.recursive(
    leaf, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(marked, inner, max_size=3),
    max_leaves=6)


@st.composite
def marked_body(draw: st.DrawFn, base: dict[str, Any]) -> dict[str, Any]:
    """The base body with markers: an unknown key somewhere, or a field given a marked value."""
    body = copy.deepcopy(base)
    node = body
    while True:  # go down into a nested object now and then
        nested = [k for k, v in node.items() if isinstance(v, dict)]
        if not nested or not draw(st.booleans()):
            break
        node = node[draw(st.sampled_from(sorted(nested)))]
    if node and draw(st.booleans()):
        node[draw(st.sampled_from(sorted(node)))] = draw(json_value)
    else:
        node[draw(marked)] = draw(json_value)
    return body


@pytest.mark.slow
@pytest.mark.parametrize("route", POSTS, ids=lambda r: r.operation_id)
def test_no_marked_body_is_echoed_in_an_error(live_core: str, route: Route) -> None:
    """Unknown keys and wrong values carrying a marker, at any depth: no error repeats it."""
    base = VALID[route.operation_id]  # a new POST route fails here until it has a valid body

    @settings(max_examples=30, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(marked_body(base))
    def check(body: dict[str, Any]) -> None:
        with httpx.Client(base_url=live_core, timeout=10) as http:
            _assert_value_free(http.post(_path(route), json=body, headers=_headers(route)))

    check()


@pytest.mark.slow
@pytest.mark.parametrize("route", GETS, ids=lambda r: r.operation_id)
def test_no_marked_path_or_query_value_is_echoed(live_core: str, route: Route) -> None:
    """Marked ids in the path and marked query values come back as codes, never as text."""

    @settings(max_examples=20, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(marked, st.data())
    def check(value: str, data: st.DataObject) -> None:
        names = data.draw(st.lists(st.sampled_from(route.query), unique=True)) \
            if route.query else []
        with httpx.Client(base_url=live_core, timeout=10) as http:
            response = http.get(_path(route, value), params=dict.fromkeys(names, value),
                                headers=_headers(route))
        _assert_value_free(response)

    check()


@pytest.mark.parametrize(("path", "body", "loc", "rule"), [
    ("/v1/jobs/poll", {"kinds": ["clarify:"], f"{MARK}-key": 1}, [], "unknown_field"),
    ("/v1/clarifications/clr-00001/answer",
     {"answerCustom": {"validFrom": "2026-09-01", MARK: "x"}, "responder": "p-sarah",
      "rights": "editor"}, ["answerCustom"], "unknown_field"),
    ("/v1/people/resolve", {"tenantId": "acme", "identity": {"platform": MARK, "userId": "U"}},
     ["identity"], "enum"),
    ("/v1/people/resolve", {"tenantId": "acme", "identity": {"platform": "slack",
                                                             "userId": f"{MARK} x"}},
     ["identity", "userId"], "pattern"),
    ("/v1/jobs/poll", {"kinds": ["clarify:"], "maxJobs": MARK}, ["maxJobs"], "type"),
    ("/v1/jobs/poll", {"kinds": ["clarify:"], "maxJobs": 1000}, ["maxJobs"], "too_large"),
    ("/v1/clarifications/clr-00001/answer", {"responder": "p-sarah", "rights": "editor"}, [],
     "exactly_one"),
])
async def test_details_name_the_schema_path_and_rule(
    core_url: str, path: str, body: dict[str, Any], loc: list[Any], rule: str
) -> None:
    """An unknown field shows at its parent, a bad value by its path and rule, never itself."""
    async with httpx.AsyncClient(base_url=core_url) as http:
        response = await http.post(path, json=body,
                                   headers={"Authorization": f"Bearer {CLARIFY_TOKEN}"})
    assert response.status_code == 422 and MARK not in response.text
    assert {"loc": loc, "rule": rule} in [
        {"loc": d["loc"], "rule": d["rule"]} for d in response.json()["details"]]


async def test_a_scenario_with_a_chosen_key_is_refused_without_naming_it(core_url: str) -> None:
    """POST /dev/v1/scenario: the unknown key is reported at its parent, never repeated."""
    data = read_scenario("acme")
    data["tenants"][0][f"{MARK}_colour"] = "red"
    data["people"][0]["tenant"] = f"{MARK}-tenant"
    async with httpx.AsyncClient(base_url=core_url) as http:
        response = await http.post("/dev/v1/scenario", json=data,
                                   headers={"Authorization": f"Bearer {DEV_TOKEN}"})
    assert response.status_code == 422 and MARK not in response.text
    assert response.json()["details"] == [
        {"loc": ["tenants", 0], "rule": "unknown_field", "msg": "unknown field"}]


async def test_a_query_as_long_as_the_contract_allows_gets_a_coded_answer(core_url: str) -> None:
    """The longest cursor the contract allows, percent-encoded from 4-byte characters and then
    doubled past its maxLength, reaches the app: a coded 422 body, never aiohttp's text 400."""
    cursor = "\U0001f600" * 1000  # 12 KB once percent-encoded, over the 8 KiB aiohttp default
    async with httpx.AsyncClient(base_url=core_url) as http:
        response = await http.get("/v1/clarifications", params={"cursor": cursor},
                                  headers={"Authorization": f"Bearer {CLARIFY_TOKEN}"})
    assert response.status_code == 422
    assert response.json()["code"] and "\U0001f600" not in response.text
