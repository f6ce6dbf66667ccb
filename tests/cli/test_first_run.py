"""`clarify-bot init`: what it writes for every platform choice, and what it never does.

The written settings must pass `clarify-bot check-config --offline` (its static checks: no core,
Slack or Teams is running here) once the named secrets are set (and
fail naming exactly the ones init said were still to fill in); the env file is 0600 and holds the
reference core's tokens; no token is ever printed; existing files are never overwritten without
--force.
"""

from __future__ import annotations

import itertools
import os
import shlex
import stat
import tomllib
from datetime import time
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from bot.engine.hours import WorkingHours, of_tenant
from bot.settings import load_settings
from bot.settings.clarify import HoursSettings
from clarify_bot.cli import main
from devcore.scenario import read_scenario

SCENARIO_TOKENS = [t["token"] for t in read_scenario("acme")["tokens"]] + \
    read_scenario("acme")["dev"]["tokens"]
FILLED = {"SLACK_BOT_TOKEN": "xoxb-0000-first-hour", "SLACK_SIGNING_SECRET": "first-hour-secret",
          "SLACK_APP_TOKEN": "xapp-1-first-hour", "CLARIFY_BOT_CORE_TOKEN": "a-core-token",
          "CLARIFY_BOT_ACTION_SIGNING_KEY": "k" * 40}
SECRET_VARS = ("CLARIFY_BOT_CORE_TOKEN", "CLARIFY_BOT_ACTION_SIGNING_KEY", "SLACK_BOT_TOKEN",
               "SLACK_SIGNING_SECRET", "SLACK_APP_TOKEN", "TEAMS_APP_PASSWORD", "REDIS_PASSWORD",
               "REDIS_SENTINEL_PASSWORD", "CLARIFY_BOT_CONFIG")


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """check-config reads os.environ: nothing of the developer's own may leak in."""
    for name in list(os.environ):
        if name.startswith("CLARIFY_BOT_") or name in SECRET_VARS:
            monkeypatch.delenv(name)


def run(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, list(args), env=env)


def read_env(path: Path) -> dict[str, str]:
    pairs = {}
    for line in path.read_text().splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.partition("=")
            pairs[name] = shlex.split(value)[0] if value else ""
    return pairs


COMBINATIONS = list(itertools.product(("slack", "teams", "both"), ("http", "socket"),
                                      ("memory", "redis"), (False, True)))


@pytest.mark.parametrize(("platform", "mode", "store", "devcore"), COMBINATIONS)
def test_init_writes_settings_that_pass_check_config(
        tmp_path: Path, platform: str, mode: str, store: str, devcore: bool) -> None:
    config, env_file = tmp_path / "clarify-bot.toml", tmp_path / "clarify-bot.env"
    args = ["init", "--platform", platform, "--slack-mode", mode, "--store", store,
            "--out", str(config), "--env-file", str(env_file), "--slack-team", "T07REALWS",
            "--teams-tenant", "9d2f1e0c-2222-4b3c-8d4e-0123456789cd"]
    result = run(*args, *(["--devcore"] if devcore else []))
    assert result.exit_code == 0, result.output
    written = tomllib.loads(config.read_text())
    chosen = ["slack", "teams"] if platform == "both" else [platform]
    assert written["clarify"]["channels"] == ",".join(chosen)
    assert written["clarify"]["enabled"] is True
    assert written["clarify"]["per_person_daily_cap"] == 50
    assert written["store"]["backend"] == store
    assert ("slack" in written) == ("slack" in chosen) and ("teams" in written) == (
        "teams" in chosen)
    assert env_file.exists() == devcore

    still = [line.split(":")[0].strip() for line in result.output.splitlines()
             if line.startswith("  ") and ":" in line and not line.strip().startswith("[")]
    secrets = read_env(env_file) if devcore else {}
    needed = {"CLARIFY_BOT_CORE_TOKEN", "CLARIFY_BOT_ACTION_SIGNING_KEY"}
    if "slack" in chosen:
        needed |= {"SLACK_BOT_TOKEN",
                   "SLACK_APP_TOKEN" if mode == "socket" else "SLACK_SIGNING_SECRET"}
    expected_still = needed - ({"CLARIFY_BOT_CORE_TOKEN", "CLARIFY_BOT_ACTION_SIGNING_KEY"}
                               if devcore else set())
    assert set(still) == expected_still
    for name in needed:
        assert name in config.read_text()  # every required secret named in the file

    given = {k: v for k, v in secrets.items() if v}
    refused = run("check-config", "--offline", "--config", str(config), env=given)
    if expected_still:
        assert refused.exit_code == 1
        problems = refused.output.removeprefix("Error: invalid clarify-bot settings: ")
        assert {p.split(":")[0].strip(" -") for p in problems.splitlines()
                if not p.startswith("Error:")} == expected_still
    filled = given | {name: FILLED[name] for name in expected_still}
    checked = run("check-config", "--offline", "--config", str(config), env=filled)
    assert checked.exit_code == 0, checked.output
    for name, value in filled.items():
        if name == "CLARIFY_BOT_CONFIG":
            continue
        assert value not in result.output and value not in checked.output


def test_init_writes_the_working_hours_as_the_defaults_with_a_tenant_of_its_own_to_copy(
        tmp_path: Path) -> None:
    """The written [clarify.hours] is Monday-Friday 08:00-18:00, UTC for whoever has no zone,
    on (the defaults, as the loader reads them); its commented tenant example, uncommented,
    gives that tenant its own hours and zone; init says how to try at night."""
    config = tmp_path / "clarify-bot.toml"
    result = run("init", "--out", str(config), "--slack-team", "T07REALWS", "--tenant", "globex")
    assert result.exit_code == 0, result.output
    text = config.read_text()
    assert tomllib.loads(text)["clarify"]["hours"] == {
        "enabled": True, "days": "mon-fri", "start": "08:00", "end": "18:00",
        "time_zone": "UTC"}
    hours = load_settings(config, environ={}).clarify.hours
    assert hours == HoursSettings()
    rules, zone = of_tenant(hours, "globex")
    assert (rules, zone) == (WorkingHours(frozenset(range(5)), time(8), time(18)), "UTC")
    assert "set [clarify.hours] enabled = false in" in result.output

    lines = text.splitlines()
    first = lines.index("# [[clarify.hours.tenants]]")
    last = lines.index("", first)
    copied = tmp_path / "copied.toml"
    copied.write_text("\n".join(lines[:first] + [line.removeprefix("# ")
                                                  for line in lines[first:last]]
                                 + lines[last:]))
    hours = load_settings(copied, environ={}).clarify.hours
    assert [t.tenant for t in hours.tenants] == ["globex"]
    assert of_tenant(hours, "globex") == (
        WorkingHours(frozenset(range(5)), time(9), time(17, 30)), "Europe/Berlin")
    assert of_tenant(hours, "acme") == (rules, "UTC")  # every other tenant: the table's own


@pytest.mark.parametrize(("hours", "said"), [
    ("", "mon-fri 08:00-18:00 in each person's zone (else UTC); normal and high cards wait"),
    ('enabled = false', "off (clarify.hours.enabled = false): cards go out at any hour"),
    ('days = "mon-thu"\nstart = "07:30"\ntime_zone = "Europe/Paris"\n'
     '[[clarify.hours.tenants]]\ntenant = "globex"',
     "mon-thu 07:30-18:00 in each person's zone (else Europe/Paris), tenants' own for globex;"),
])
def test_check_config_says_when_cards_go_out(tmp_path: Path, hours: str, said: str) -> None:
    config = tmp_path / "bot.toml"
    config.write_text('[clarify]\nchannels = "slack"\n[clarify.hours]\n' + hours
                      + '\n[slack]\nmode = "socket"\n[store]\nbackend = "memory"\n')
    checked = run("check-config", "--offline", "--config", str(config), env=FILLED)
    assert checked.exit_code == 0, checked.output
    [line] = [x for x in checked.output.splitlines() if x.startswith("  working hours: ")]
    assert line.removeprefix("  working hours: ").startswith(said)


def test_every_key_written_is_commented(tmp_path: Path) -> None:
    config = tmp_path / "clarify-bot.toml"
    assert run("init", "--platform", "both", "--store", "redis", "--out", str(config),
               "--slack-team", "T07REALWS").exit_code == 0
    paragraph: list[str] = []
    for line in config.read_text().splitlines():
        if not line.strip() or line.startswith("["):
            paragraph = []
            continue
        if not line.startswith("#"):
            assert any(p.startswith("#") for p in paragraph), f"no comment above {line!r}"
        paragraph.append(line)


def test_init_devcore_env_file_is_private_and_nothing_prints_a_token(tmp_path: Path) -> None:
    config, env_file = tmp_path / "clarify-bot.toml", tmp_path / "clarify-bot.env"
    old = os.umask(0)
    try:
        result = run("init", "--devcore", "--out", str(config), "--env-file", str(env_file))
    finally:
        os.umask(old)
    assert result.exit_code == 0, result.output
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    values = read_env(env_file)
    assert values["CLARIFY_BOT_CORE_TOKEN"] == "dev-clarify-token-acme"
    assert values["CLARIFY_DEVCORE_DEV_TOKEN"] == "dev-admin-token-local"
    assert len(values["CLARIFY_BOT_ACTION_SIGNING_KEY"]) >= 32
    assert Path(values["CLARIFY_BOT_CONFIG"]) == config.resolve()
    printed = result.output
    for token in [*SCENARIO_TOKENS, values["CLARIFY_BOT_ACTION_SIGNING_KEY"]]:
        assert token not in printed and token not in config.read_text()
    assert str(config) in printed and str(env_file) in printed
    # Socket Mode by default: the shortest first try needs no public address
    assert "SLACK_BOT_TOKEN" in printed and "SLACK_APP_TOKEN" in printed
    assert "SLACK_SIGNING_SECRET" not in printed
    assert 'mode = "socket"' in config.read_text()
    # --force over a world-readable file still leaves it private
    env_file.chmod(0o644)
    forced = run("init", "--devcore", "--force", "--out", str(config), "--env-file",
                 str(env_file))
    assert forced.exit_code == 0 and stat.S_IMODE(env_file.stat().st_mode) == 0o600


def test_init_refuses_to_overwrite_without_force(tmp_path: Path) -> None:
    config, env_file = tmp_path / "clarify-bot.toml", tmp_path / "clarify-bot.env"
    config.write_text("# mine\n")
    refused = run("init", "--out", str(config))
    assert refused.exit_code == 1 and "exists" in refused.output and "--force" in refused.output
    assert config.read_text() == "# mine\n"
    # an existing env file stops init before the settings file is written
    config.unlink()
    env_file.write_text("MINE=1\n")
    refused = run("init", "--devcore", "--out", str(config), "--env-file", str(env_file))
    assert refused.exit_code == 1 and not config.exists()
    assert env_file.read_text() == "MINE=1\n"
    assert run("init", "--devcore", "--force", "--out", str(config), "--env-file",
               str(env_file)).exit_code == 0
    assert "MINE" not in env_file.read_text()


def test_init_default_is_slack_socket_memory_with_the_workspace_left_to_fill(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["init"])
    assert result.exit_code == 0, result.output
    written = tomllib.loads(Path("clarify-bot.toml").read_text())
    assert not Path("clarify-bot.env").exists()
    assert written["slack"]["mode"] == "socket" and "workspaces" not in written["slack"]
    assert written["store"]["backend"] == "memory"
    assert "[[slack.workspaces]]" in result.output and "--slack-team" in result.output


@pytest.mark.parametrize(("args", "expected"), [
    (["--slack-team", "myworkspace"],
     'Error: --slack-team "myworkspace": expected a Slack team id such as T0123ABCD\n'),
    (["--slack-team", "T07REALWS", "--slack-enterprise", "grid"],
     'Error: --slack-enterprise "grid": expected a Slack enterprise id such as E0123ABCD\n'),
    (["--core", "ftp://core"], 'Error: --core "ftp://core": expected an http(s) URL'),
    (["--teams-tenant", "nope", "--platform", "teams"], 'Error: --teams-tenant "nope": '),
    (["--devcore", "--tenant", "initech"], "Error: the scenario has no tenant 'initech'"),
])
def test_init_refuses_bad_choices_and_writes_nothing(tmp_path: Path, args: list[str],
                                                     expected: str) -> None:
    """A bad option is named as the option the person typed, in one line: not as a settings
    key, and never as the scratch file init checks its output in."""
    config = tmp_path / "clarify-bot.toml"
    result = run("init", "--out", str(config), "--env-file", str(tmp_path / "e.env"), *args)
    assert result.exit_code == 1 and result.output.startswith(expected), result.output
    assert len(result.output.splitlines()) == 1
    assert ".check" not in result.output and "settings.toml" not in result.output
    assert list(tmp_path.iterdir()) == []
