"""`clarify-bot check-config` names the contract extensions the configured core offers, found
the way the service finds them, and says so in one value when the core cannot be reached."""

from __future__ import annotations

import json

from click.testing import CliRunner

from clarify_bot.cli import main
from tests.cli.conftest import LiveCore

SECRETS = {"SLACK_BOT_TOKEN": "xoxb-0000-check", "SLACK_SIGNING_SECRET": "check-secret",
           "CLARIFY_BOT_CORE_TOKEN": "dev-clarify-token-acme",
           "CLARIFY_BOT_ACTION_SIGNING_KEY": "k" * 40, "CLARIFY_BOT_CONFIG": "",
           "CLARIFY_BOT_CLARIFY__CHANNELS": "slack"}


def _checked(url: str) -> dict[str, object]:
    env = {**SECRETS, "CLARIFY_BOT_CORE__URL": url}
    result = CliRunner().invoke(main, ["check-config", "--json"], env=env)
    assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)  # stdout is the JSON alone
    found = shown["core_extensions"]
    assert isinstance(found, dict)
    summary = CliRunner().invoke(main, ["check-config"], env=env)  # the summary says the same
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


def test_check_config_says_when_the_core_cannot_be_reached() -> None:
    found = _checked("http://127.0.0.1:9")
    assert found["extensions"] is None and "cannot reach the core" in str(found["source"])
