"""Failures an operator meets at the console, each through the console script: one line that
names what failed and what to do, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from bot.settings import SettingsError, load_settings
from clarify_bot.cli import main
from tests.cli.conftest import Cli, LiveCore
from tests.support.processes import free_port

pytestmark = pytest.mark.full_contract


def run(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, list(args), env={"CLARIFY_BOT_CONFIG": "", **(env or {})})


def _error(result: Result) -> str:
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    return result.stderr


def test_init_with_an_unknown_scenario_is_one_line_and_writes_nothing(tmp_path: Path) -> None:
    out, env_file = tmp_path / "bot.toml", tmp_path / "bot.env"
    said = _error(run("init", "--devcore", "--scenario", "nosuch", "--out", str(out),
                      "--env-file", str(env_file)))
    assert said == ("Error: --scenario nosuch: no bundled scenario named 'nosuch'; bundled: "
                    "acme, sandbox (or give the path of a .toml file)\n")
    assert not out.exists() and not env_file.exists()
    broken = tmp_path / "broken.toml"
    broken.write_text("people = [\n")
    said = _error(run("init", "--devcore", "--scenario", str(broken), "--out", str(out),
                      "--env-file", str(env_file)))
    assert said.startswith(f"Error: --scenario {broken}: not valid TOML")


def test_erase_attribution_with_redis_down_says_the_core_ran_and_how_to_rerun(
        cli: Cli, live: LiveCore) -> None:
    env = {"CLARIFY_BOT_STORE__BACKEND": "redis",
           "CLARIFY_BOT_REDIS__URL": f"redis://127.0.0.1:{free_port()}/0"}
    result = cli("acme-key-maria-steward", "erase-attribution", "--person", "p-sarah", "--yes",
                 env=env)
    said = _error(result)
    assert "the core's part ran (its attribution of p-sarah is erased)" in said
    assert "the bot's part did not: the store at redis.url" in said
    assert "run this command again" in said and "retry-safe" in said
    assert len(said.strip().splitlines()) == 1
    doc = json.loads(cli("acme-key-maria-steward", "erase-attribution", "--person", "p-sarah",
                         "--yes", env=env, json_out=True).stdout)
    assert doc["command"] == "erase-attribution" and "run this command again" in \
        doc["error"]["message"]


def test_review_as_a_non_steward_names_review(cli: Cli) -> None:
    said = _error(cli("acme-key-sarah-editor", "review"))
    assert said.startswith("Error: clarify review needs steward scope")
    doc = json.loads(cli("acme-key-sarah-editor", "review", json_out=True).stdout)
    assert doc["command"] == "review" and doc["error"]["code"] == "STEWARD_REQUIRED"
    assert "queue" not in doc["error"]["message"].split("`")[0]


def test_teams_package_names_every_key_it_needs_at_once(tmp_path: Path) -> None:
    first = _error(run("teams-package", "--out", str(tmp_path / "p.zip")))
    for key in ("teams.app_id", "teams.app_tenant_id", "teams.package.website_url",
                "teams.package.privacy_url", "teams.package.terms_url",
                "teams.package.public_url"):
        assert f"set {key} (" in first, key
    # only the app id set: the settings' own refusal, and what the package still needs
    second = _error(run("teams-package", "--out", str(tmp_path / "p.zip"), env={
        "CLARIFY_BOT_TEAMS__APP_ID": "00000000-0000-0000-0000-000000000001",
        "CLARIFY_BOT_TEAMS__PACKAGE__TERMS_URL": "https://clarify.example.com/terms"}))
    assert "teams.app_tenant_id" in second and "and, for the package:" in second
    for key in ("website_url", "privacy_url", "public_url"):
        assert f"set teams.package.{key} (" in second, key
    assert "terms_url" not in second.split("and, for the package:")[1]


def test_a_bot_token_beside_a_distributed_app_reads_as_set_not_missing() -> None:
    env = {"SLACK_BOT_TOKEN": "xoxb-left-over", "CLARIFY_BOT_CLARIFY__CHANNELS": "slack",
           "CLARIFY_BOT_SLACK__OAUTH__ENABLED": "true",
           "CLARIFY_BOT_SLACK__OAUTH__CLIENT_ID": "1111.2222",
           "CLARIFY_BOT_SLACK__OAUTH__PUBLIC_URL": "https://clarify.example.com"}
    with pytest.raises(SettingsError) as refused:
        load_settings(None, environ=env).require_secrets()
    (line,) = [str(p) for p in refused.value.problems if p.key == "SLACK_BOT_TOKEN"]
    assert line.startswith("SLACK_BOT_TOKEN: is set (from SLACK_BOT_TOKEN) but must be removed "
                           "while slack.oauth.enabled")
    assert "unset while" not in line and "xoxb-left-over" not in line
