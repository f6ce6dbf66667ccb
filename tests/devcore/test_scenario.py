"""Scenario files: the bundled one loads; a bad one fails with a message naming the place."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from bot.cli import main
from bot.clock import ManualClock
from devcore.core import ReferenceCore, load_scenario
from devcore.scenario import ScenarioError, read_scenario


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
