"""Scenario files: the bundled one loads; a bad one fails with a message naming the place."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from bot.clock import ManualClock
from bot.core.client import CoreClient
from clarify_bot.cli import main
from devcore.core import ReferenceCore, load_scenario
from devcore.scenario import ScenarioError, read_scenario
from tests.conftest import DEV_TOKEN


def test_the_bundled_scenario_loads_every_kind_of_record() -> None:
    """acme: two tenants, people with aliases and roles, tokens, four clarifications."""
    core = ReferenceCore(clock=ManualClock())
    loaded = load_scenario(core, read_scenario("acme"))
    assert (loaded.tenants, loaded.clarifications) == (2, 4)
    assert core.directory.people[("acme", "p-lee")].verified_enterprise_identity is False
    assert core.directory.tokens["acme-key-unbound"].principal is None


@pytest.mark.parametrize(("content", "words"), [
    ('[[tenants]]\nid = 3\n', "tenants.0.id"),
    ('[[workspaces]]\nid = "w"\ntenant = "ghost"\nname = "W"\n', "unknown tenant"),
    ('name = \n', "not valid TOML"),
    ('colour = "red"\n', "colour"),
])
def test_a_bad_scenario_names_what_is_wrong(tmp_path: Path, content: str, words: str) -> None:
    """Unknown keys, wrong types, dangling references and bad TOML: one clear sentence."""
    path = tmp_path / "bad.toml"
    path.write_text(content)
    with pytest.raises(ScenarioError) as caught:
        load_scenario(ReferenceCore(clock=ManualClock()), read_scenario(path))
    assert words in str(caught.value)


def test_devcore_refuses_a_missing_scenario_before_listening() -> None:
    """`clarify-bot devcore --scenario` with an unknown name exits with the bundled names."""
    result = CliRunner().invoke(main, ["devcore", "--scenario", "nope"])
    assert result.exit_code != 0 and "bundled: acme" in result.output


async def test_a_scenario_refused_over_http_leaves_the_previous_state(
    core_url: str, bot_client: CoreClient
) -> None:
    """A clarification that cannot be created refuses the whole scenario; nothing is replaced."""
    before = await bot_client.list_clarifications()
    data = read_scenario("acme")
    data["clarifications"][2]["document"]["acl"]["workspace_id"] = "acme-legal"  # not its own
    async with httpx.AsyncClient(base_url=core_url) as http:
        response = await http.post("/dev/v1/scenario", json=data,
                                   headers={"Authorization": f"Bearer {DEV_TOKEN}"})
    assert response.status_code == 422
    assert [d["loc"] for d in response.json()["details"]] == [["clarifications", 2]]
    assert await bot_client.list_clarifications() == before
    history = await bot_client.get_fact_history(logical_id="fact-invoice-7731-date")
    assert len(history.versions) == 1
