"""Tenant scope over HTTP: a second tenant using the very same ids never reaches the first's data.

The scenario is acme plus "umbra", a twin tenant with the same workspace, person, document and
fact ids. Every endpoint of the route table is called with umbra's credentials and acme's ids.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from bot.core import errors as e
from bot.core.client import CoreClient
from bot.core.models import (
    AnswerRequest,
    Clarification,
    FactHistory,
    LeasedJob,
    Role,
)
from bot.core.models import (
    Channel as ContractChannel,
)
from bot.core.routes import ROUTES, Route
from devcore.client import DevCoreClient
from devcore.scenario import read_scenario

UMBRA_CLARIFY, UMBRA_SARAH, UMBRA_UNBOUND = "umbra-clarify-token", "umbra-key-sarah", "umbra-key-x"
UMBRA_MARIA = "umbra-key-maria-steward"  # a steward: erasure runs, on umbra's people only
ACME_ONLY, BOTH = "acme-only-clarify-token", "acme-and-umbra-clarify-token"
FACT = "fact-harbor-lease-renewal"  # acme's normal clarification's target; umbra has one too


def twin_scenario() -> dict[str, Any]:
    """acme, and umbra: the same ids for workspaces, people, documents and facts, its own text."""
    data = read_scenario("acme")
    for kind in ("workspaces", "people"):
        data[kind] += [{**copy.deepcopy(x), "tenant": "umbra"} for x in data[kind]
                       if x["tenant"] == "acme"]
    data["tenants"].append({"id": "umbra", "name": "Umbra"})
    twins = [copy.deepcopy(c) for c in data["clarifications"] if c["tenant_id"] == "acme"]
    for n, c in enumerate(twins):
        c.update(tenant_id="umbra", question=f"Umbra question {n}?")
        c["document"]["title"] = f"Umbra document {n}"
        c["span"]["text"] = f"Umbra span {n}"
    data["clarifications"] += twins
    data["tokens"] += [
        {"token": UMBRA_CLARIFY, "audience": "clarify", "tenants": ["umbra"]},
        {"token": ACME_ONLY, "audience": "clarify", "tenants": ["acme"]},
        {"token": BOTH, "audience": "clarify", "tenants": ["acme", "umbra"]},
        {"token": UMBRA_SARAH, "tenant": "umbra", "person": "p-sarah", "role": "editor"},
        {"token": UMBRA_UNBOUND, "tenant": "umbra"},
        {"token": UMBRA_MARIA, "tenant": "umbra", "person": "p-maria", "role": "steward"},
    ]
    return data


class Acme:
    """What acme holds after some activity, and the marks by which a leak would show."""

    def __init__(self) -> None:
        self.clarifications: dict[str, Clarification] = {}
        self.jobs: list[LeasedJob] = []
        self.history: FactHistory | None = None

    def marks(self) -> set[str]:
        found = {"acme"} | set(self.clarifications) | {j.id for j in self.jobs}
        for c in self.clarifications.values():
            found |= {c.question, c.span_excerpt, c.document.title}
        return found


@pytest.fixture
async def acme(dev_client: DevCoreClient, core_url: str) -> Acme:
    await dev_client.load_scenario(twin_scenario())
    seen = Acme()
    async with CoreClient(base_url=core_url, token=ACME_ONLY) as bot:
        await bot.answer_clarification(clarification_id="clr-00002", request=AnswerRequest(
            answer_index=1, responder="p-ahmed", rights=Role.EDITOR, channel=ContractChannel.SLACK,
            message_ref="D0AHMED:1.0"))
        async for item in bot.iter_clarifications():
            seen.clarifications[item.id] = await bot.get_clarification(clarification_id=item.id)
        seen.jobs = (await bot.poll_jobs(kinds=["clarify:"], max_jobs=10)).jobs
        seen.history = await bot.get_fact_history(logical_id=FACT)
    assert len(seen.clarifications) == 4 and len(seen.jobs) == 3  # clr-00004 (low) has none
    assert len(seen.history.versions) == 2
    return seen


def _strings(node: Any) -> Iterator[str]:
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for key, value in node.items():
            yield key
            yield from _strings(value)
    elif isinstance(node, list):
        for item in node:
            yield from _strings(item)


def _leaks(body: Any, marks: set[str]) -> list[str]:
    return [s for s in _strings(body) for mark in marks if mark == s or (len(mark) > 12
                                                                          and mark in s)]


def _body(route: Route, acme: Acme) -> dict[str, Any] | None:
    """A well-formed body naming acme's things; a new POST route fails here until it has one."""
    lease = acme.jobs[0].lease_token
    bodies: dict[str, dict[str, Any]] = {
        "pollJobs": {"kinds": ["clarify:"], "maxJobs": 100},
        "heartbeatJob": {"leaseToken": lease},
        "advanceJob": {"leaseToken": lease, "attempt": 1},
        "expediteJob": {"attempt": 0},
        "completeJob": {"leaseToken": lease},
        "failJob": {"leaseToken": lease},
        "answerClarification": {"answerIndex": 0, "responder": "p-sarah", "rights": "editor",
                                "channel": "slack"},
        "reportDelivery": {"deliveryId": "d-umbra", "personId": "p-sarah", "channel": "slack",
                           "kind": "question", "attempt": 0},
        "reportEvent": {"eventId": "e-umbra", "type": "skipped"},
        "reportBatch": {"deliveries": [{"clarificationId": "clr-00002", "report": {
            "deliveryId": "d-umbra", "personId": "p-sarah", "channel": "slack",
            "kind": "question", "attempt": 0}}],
            "events": [{"clarificationId": "clr-00002", "report": {
                "eventId": "e-umbra", "type": "skipped"}}]},
        "getPeople": {"tenantId": "umbra", "personIds": ["p-sarah", "p-ahmed"]},
        "resolvePerson": {"tenantId": "umbra", "identity": {
            "platform": "slack", "userId": "U0SARAH", "teamId": "T0ACME"}},
        "eraseAttribution": {},
    }
    return bodies[route.operation_id] if route.method == "POST" else None


def _path(route: Route, acme: Acme) -> str:
    """The route's path filled with acme's ids; a new path parameter fails here until named."""
    ids = {"clarificationId": "clr-00002", "jobId": acme.jobs[0].id, "personId": "p-sarah",
           "logicalId": FACT}
    names = [p[1:-1] for p in route.path.split("/") if p.startswith("{")]
    return route.path.format(**{name: ids[name] for name in names})


def _calls(route: Route, acme: Acme) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every credential of umbra that the route takes, with and without acme named as tenant."""
    keys = [UMBRA_SARAH, UMBRA_UNBOUND, UMBRA_MARIA] if "apikey" in route.auth else []
    tokens = ([UMBRA_CLARIFY] if "clarify" in route.auth else []) + keys
    for token in tokens:
        headers = {"Authorization": f"Bearer {token}"}
        yield token, {"headers": headers, "json": _body(route, acme)}
        if "tenantId" in route.query:
            yield token, {"headers": headers, "params": {"tenantId": "acme"}}


WALKED = [r for r in ROUTES if r.auth != "dev"]


async def test_every_endpoint_with_another_tenants_credentials_returns_nothing_of_the_first(
    acme: Acme, core_url: str
) -> None:
    """Each route, umbra's tokens, acme's ids: 404, 403 or umbra's own data, never acme's."""
    marks = acme.marks()
    walked: set[str] = set()
    async with httpx.AsyncClient(base_url=core_url) as http:
        for route in WALKED:
            for token, kwargs in _calls(route, acme):
                response = await http.request(route.method, _path(route, acme), **kwargs)
                where = (route.operation_id, token, kwargs.get("params"))
                assert response.status_code in (200, 201, 202, 403, 404), where
                body = response.json()
                assert _leaks(body, marks) == [], where  # "acme" itself is a mark
            walked.add(route.operation_id)
    assert walked == {r.operation_id for r in WALKED}


async def test_the_first_tenant_is_untouched_after_the_walk(
    acme: Acme, core_url: str, client_for: Callable[[str], CoreClient]
) -> None:
    """Writes with umbra's tokens on acme's ids change nothing of acme's: records, lease, facts."""
    async with httpx.AsyncClient(base_url=core_url) as http:
        for route in (r for r in WALKED if r.method == "POST"):
            for _, kwargs in _calls(route, acme):
                await http.request(route.method, _path(route, acme), **kwargs)
    bot = client_for(ACME_ONLY)
    for cid, before in acme.clarifications.items():
        assert (await bot.get_clarification(clarification_id=cid)) == before
    job = acme.jobs[0]
    held = await bot.heartbeat_job(job_id=job.id, lease_token=job.lease_token)
    assert held.attempts == job.attempts
    assert await bot.get_fact_history(logical_id=FACT) == acme.history


async def test_the_same_fact_id_in_two_tenants_is_two_histories(
    acme: Acme, client_for: Callable[[str], CoreClient]
) -> None:
    """Facts are keyed by (tenant, fact id): umbra's history of the same id is its own."""
    umbra = await client_for(UMBRA_CLARIFY).get_fact_history(logical_id=FACT)
    assert len(umbra.versions) == 1
    assert umbra.versions[0].pending_clarification_id not in acme.clarifications
    assert acme.history is not None
    assert acme.history.versions[-1].provenance.clarification_id == "clr-00002"
    key = await client_for(UMBRA_SARAH).get_fact(logical_id=FACT)
    assert key == umbra.versions[0]


async def test_an_id_in_two_tenants_of_one_scope_needs_the_tenant_named(
    acme: Acme, client_for: Callable[[str], CoreClient]
) -> None:
    """A token scoped to both twins must say which tenant's fact or person it means (422 if not)."""
    both = client_for(BOTH)
    with pytest.raises(e.ValidationFailed):
        await both.get_fact(logical_id=FACT)
    with pytest.raises(e.ValidationFailed):
        await both.get_person(person_id="p-sarah")
    fact = await both.get_fact(logical_id=FACT, tenant_id="acme")
    assert fact.provenance.clarification_id == "clr-00002"
    assert (await both.get_fact(logical_id=FACT, tenant_id="umbra")).pending_clarification_id
    assert (await both.get_person(person_id="p-sarah", tenant_id="umbra")).tenant_id == "umbra"
    with pytest.raises(e.TenantScopeMismatch):
        await client_for(ACME_ONLY).get_fact(logical_id=FACT, tenant_id="umbra")
