"""Tenant policy checks (spec §3.7): critical never binds on one response without explicit consent.

A policy reaches the reference core by loading a scenario (the start-up file or
``POST /dev/v1/scenario``, which is how its policy changes); both paths refuse a breaking policy
with the setting named, and the core keeps its previous state.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from bot.core.client import CoreClient
from bot.core.models import AnswerOutcome, AnswerRequest, Role, Severity
from bot.core.models import Channel as ContractChannel
from clarify_bot.cli import main
from devcore.directory import PolicyRefused, TenantPolicy
from devcore.scenario import ScenarioError, parse_scenario, read_scenario
from tests.conftest import DEV_TOKEN

QUORUM = ["tenants", 0, "clarify", "quorum"]


def acme_with(**quorum: Any) -> dict[str, Any]:
    data = read_scenario("acme")
    data["tenants"][0]["clarify"]["quorum"] = quorum
    return data


@pytest.mark.parametrize(("quorum", "field"), [
    ({"critical_required_confirmations": 1, "allow_steward_override": False},
     "critical_required_confirmations"),
    ({"critical_required_confirmations": 1}, "critical_required_confirmations"),
    ({"enabled": False}, "enabled"),
    ({"enabled": False, "allow_steward_override": False}, "enabled"),
])
async def test_a_policy_change_that_binds_critical_on_one_answer_is_refused(
    core_url: str, bot_client: CoreClient, quorum: dict[str, Any], field: str
) -> None:
    """422 naming the setting (schema path, rule "policy"); the previous state stays loaded."""
    before = await bot_client.list_clarifications()
    async with httpx.AsyncClient(base_url=core_url) as http:
        response = await http.post("/dev/v1/scenario", json=acme_with(**quorum),
                                   headers={"Authorization": f"Bearer {DEV_TOKEN}"})
    assert response.status_code == 422
    [detail] = response.json()["details"]
    assert detail["loc"] == [*QUORUM, field] and detail["rule"] == "policy"
    assert "§3.7" in detail["msg"] and "allow_steward_override = true" in detail["msg"]
    assert await bot_client.list_clarifications() == before


async def test_an_explicit_steward_override_permission_allows_single_confirmation(
    core_url: str, bot_client: CoreClient
) -> None:
    """With allow_steward_override = true written out, one editor binds a critical clarification."""
    async with httpx.AsyncClient(base_url=core_url) as http:
        loaded = await http.post(
            "/dev/v1/scenario", headers={"Authorization": f"Bearer {DEV_TOKEN}"},
            json=acme_with(critical_required_confirmations=1, allow_steward_override=True))
    assert loaded.status_code == 200
    c = await bot_client.get_clarification(clarification_id="clr-00001")
    assert c.severity is Severity.CRITICAL and c.quorum_policy.required_confirmations == 1
    receipt = await bot_client.answer_clarification(clarification_id=c.id, request=AnswerRequest(
        answer_index=0, responder="p-sarah", rights=Role.EDITOR, channel=ContractChannel.SLACK))
    assert receipt.result.outcome is AnswerOutcome.BOUND


async def test_under_the_default_policy_one_editor_never_binds_critical(
    bot_client: CoreClient,
) -> None:
    """The bundled policy (two confirmations) keeps one editor's answer at partially confirmed."""
    receipt = await bot_client.answer_clarification(
        clarification_id="clr-00001", request=AnswerRequest(
            answer_index=0, responder="p-sarah", rights=Role.EDITOR, channel=ContractChannel.SLACK))
    assert receipt.result.outcome is AnswerOutcome.PARTIALLY_CONFIRMED
    history = await bot_client.get_fact_history(logical_id="fact-northwind-msa-termination")
    assert len(history.versions) == 1


def test_a_scenario_file_with_such_a_policy_names_the_setting(tmp_path: Path) -> None:
    """`clarify-bot devcore --scenario` refuses the file before listening, naming the key."""
    path = tmp_path / "one.toml"
    path.write_text('[[tenants]]\nid = "t"\nname = "T"\n[tenants.clarify.quorum]\n'
                    "critical_required_confirmations = 1\n")
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(read_scenario(path))
    assert "tenants.0.clarify.quorum.critical_required_confirmations" in str(caught.value)
    result = CliRunner().invoke(main, ["devcore", "--scenario", str(path)])
    assert result.exit_code != 0 and "critical_required_confirmations" in result.output


def test_every_policy_the_core_holds_is_checked_when_made_or_changed() -> None:
    """TenantPolicy checks itself on construction, so a replace() cannot slip past §3.7."""
    good = TenantPolicy()
    with pytest.raises(PolicyRefused):
        dataclasses.replace(good, critical_required_confirmations=1)
    with pytest.raises(PolicyRefused):
        TenantPolicy(quorum_enabled=False, override_set_explicitly=False)
    with pytest.raises(PolicyRefused):
        TenantPolicy(critical_required_confirmations=1, allow_steward_override=False,
                     override_set_explicitly=True)
    assert dataclasses.replace(good, critical_required_confirmations=1,
                               override_set_explicitly=True).critical_required_confirmations == 1
