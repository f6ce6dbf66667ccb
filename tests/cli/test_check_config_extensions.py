"""`clarify-bot check-config` names the contract extensions the configured core offers, found
the way the service finds them; a core it cannot reach is refused, naming `core.url`, and
`--offline` says the core was not asked."""

from __future__ import annotations

import json

from click.testing import CliRunner

from clarify_bot.cli import main
from tests.cli.conftest import LiveCore

# Teams for a local run (no app id, nothing of a platform's to ask): the core is the one
# dependency asked (tests/cli/test_operator_path.py checks Slack's and the database's)
SECRETS = {"CLARIFY_BOT_CORE_TOKEN": "dev-clarify-token-acme",
           "CLARIFY_BOT_ACTION_SIGNING_KEY": "k" * 40, "CLARIFY_BOT_CONFIG": "",
           "CLARIFY_BOT_CLARIFY__CHANNELS": "teams", "CLARIFY_BOT_TEAMS__ANONYMOUS": "true"}


def _checked(url: str, *flags: str) -> dict[str, object]:
    env = {**SECRETS, "CLARIFY_BOT_CORE__URL": url}
    result = CliRunner().invoke(main, ["check-config", "--json", *flags], env=env)
    assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)  # stdout is the JSON alone
    found = shown["core_extensions"]
    assert isinstance(found, dict)
    summary = CliRunner().invoke(main, ["check-config", *flags], env=env)  # the same
    offered = found["extensions"]
    named = ", ".join(offered) if offered else "none" if offered is not None else "unknown"
    assert f"  core extensions: {named} ({found['source']})" in summary.stdout.splitlines()
    return found


def test_check_config_names_the_extensions_in_use(live: LiveCore) -> None:
    found = _checked(live.url)
    offered = found["extensions"]
    assert isinstance(offered, list)
    if live.contract == "full":
        assert found["source"] == "openapi" and "people-batch" in offered
    else:
        assert found["source"] == "probes" and "people-batch" not in offered


def test_check_config_refuses_a_core_it_cannot_reach_and_offline_does_not_ask() -> None:
    env = {**SECRETS, "CLARIFY_BOT_CORE__URL": "http://127.0.0.1:9"}
    refused = CliRunner().invoke(main, ["check-config", "--json"], env=env)
    assert refused.exit_code == 1 and refused.stdout == ""
    assert refused.stderr.startswith("Error: invalid clarify-bot settings: core.url = "
                                     "http://127.0.0.1:9: cannot reach the core")
    found = _checked("http://127.0.0.1:9", "--offline")
    assert found == {"extensions": None, "source": "not asked (--offline)"}
