"""Creating clarifications in the reference core: severity policy, ranking, jobs, pending fact."""

from __future__ import annotations

import hashlib

import pytest

from bot.core import errors as e
from bot.core.client import CoreClient
from bot.core.models import CreateClarificationRequest
from devcore.client import DevCoreClient
from devcore.scenario import read_scenario


def _request(**changes: object) -> CreateClarificationRequest:
    spec = read_scenario("acme")["clarifications"][1]
    digest = hashlib.sha256(repr(changes).encode()).hexdigest()
    spec["document"]["content_hash"] = f"sha256:{digest}"  # a new source version each time
    spec.update(changes)
    return CreateClarificationRequest.model_validate(spec)


@pytest.mark.parametrize(("kind", "hint", "severity"), [
    ("relative_date", None, "normal"),  # the tenant's default
    ("conflicting_dates", None, "high"),  # the tenant's kind elevation
    ("conflicting_dates", "low", "high"),  # a hint never lowers below the elevation
    ("relative_date", "critical", "critical"),
    ("undated", "low", "low"),
])
async def test_severity_comes_from_tenant_policy_and_kind_elevation(
    dev_client: DevCoreClient, bot_client: CoreClient, kind: str, hint: str | None, severity: str
) -> None:
    """Severity = the worker's hint or the tenant default, raised to the kind's minimum."""
    created = await dev_client.create_clarification(
        request=_request(kind=kind, severity_hint=hint))
    c = await bot_client.get_clarification(clarification_id=created.clarification.id)
    assert c.severity == severity
    required = 2 if severity == "critical" else 1
    assert c.quorum_policy.required_confirmations == required
    assert (c.job_id is None) == (severity == "low")  # low is stored pending, never asked


async def test_ranking_is_author_then_named_then_owner_capped(
    dev_client: DevCoreClient, bot_client: CoreClient
) -> None:
    """Depth-1 authority in rank order, first seen wins, other tenants' people dropped, capped."""
    created = await dev_client.create_clarification(request=_request(authority={
        "authored_by": ["p-priya", "p-gina"], "named": ["p-priya", "p-sarah"],
        "owned_by": ["p-ahmed", "p-maria"]}))
    c = await bot_client.get_clarification(clarification_id=created.clarification.id)
    assert c.ranking == ["p-priya", "p-sarah", "p-ahmed"]  # max_candidates = 3
    job = await bot_client.get_job(job_id=c.job_id or "")
    assert job.max_attempts == 4 and job.payload.ranking == c.ranking


async def test_creation_applies_the_best_guess_as_a_pending_version(
    dev_client: DevCoreClient, bot_client: CoreClient
) -> None:
    """Ambiguity never blocks ingestion: candidate 0 is applied at reduced confidence, pending."""
    created = await dev_client.create_clarification(request=_request())
    c = await bot_client.get_clarification(clarification_id=created.clarification.id)
    fact = await bot_client.get_fact(logical_id=c.target)
    assert fact.valid_from == c.candidates[0].valid_from
    assert fact.pending_clarification_id == c.id
    assert fact.confidence == pytest.approx(c.applied_candidate_confidence)
    assert [ev.type for ev in c.events] == ["created"]


async def test_another_tenants_token_sees_nothing(
    dev_client: DevCoreClient, client_for
) -> None:
    """Tenant scope: a Globex key gets 404 for an Acme clarification, not a hint it exists."""
    created = await dev_client.create_clarification(request=_request())
    globex = client_for("globex-key-gina-steward")
    with pytest.raises(e.ClarificationNotFound):
        await globex.get_clarification(clarification_id=created.clarification.id)
    assert (await globex.list_clarifications()).items == []
