"""Secrets from files: ``<NAME>_FILE`` (the convention of official images) and a secrets folder
(``CLARIFY_BOT_SECRETS_DIR``: a Kubernetes Secret or Docker secrets mounted as files named like the
variables). A secret given twice is refused in one line; a file that cannot be used is named with
its variable and path, and no error ever repeats a value or a file's contents."""

from __future__ import annotations

import json
from importlib import metadata
from pathlib import Path

import pytest
from click.testing import CliRunner

from bot.settings import SECRET_ENV, SettingsError, load_settings
from clarify_bot.cli import main

LEAK = "Zq-secret-value-9"


def failure(**env: str) -> SettingsError:
    with pytest.raises(SettingsError) as caught:
        load_settings(None, environ=env)
    assert LEAK not in str(caught.value)
    return caught.value


def test_every_secret_can_come_from_its_file(tmp_path: Path) -> None:
    """Each variable's ``_FILE`` names a file whose text (less its line break) is the secret;
    the origin says which variable named it, never the value."""
    env, given = {}, {}
    for name, var in SECRET_ENV.items():
        value = ("xoxb-" if var == "SLACK_BOT_TOKEN" else "xapp-" if var == "SLACK_APP_TOKEN"
                 else "postgresql://bot@db.internal:5432/" if var == "CLARIFY_BOT_DATABASE_URL"
                 else "") + f"{name}-{'k' * 32}"
        if var == "CLARIFY_BOT_SLACK_TOKEN_KEY":  # base64 keys of 32 bytes, newest first
            value = "QUJD" * 10 + "QUI=, " + "a2tr" * 10 + "a2s="
        (tmp_path / name).write_text(value + "\n")
        env[var + "_FILE"], given[name] = str(tmp_path / name), value
    secrets = load_settings(None, environ=env).secrets
    for name, var in SECRET_ENV.items():
        assert secrets.require(name) == given[name]
        assert secrets.origin(name) == var + "_FILE"


def test_a_secrets_folder_holds_files_named_like_the_variables(tmp_path: Path) -> None:
    """Kubernetes mounts a Secret with its ``..data`` link beside the keys: only the keys named
    like variables are read, CRLF endings are dropped, other files are left alone."""
    (tmp_path / "SLACK_BOT_TOKEN").write_text("xoxb-from-the-folder\r\n")
    (tmp_path / "CLARIFY_BOT_CORE_TOKEN").write_text("core-from-the-folder")
    (tmp_path / "..data").mkdir()
    (tmp_path / "postgres-password").write_text("another program's")
    secrets = load_settings(None, environ={"CLARIFY_BOT_SECRETS_DIR": str(tmp_path)}).secrets
    assert secrets.require("slack_bot_token") == "xoxb-from-the-folder"
    assert secrets.require("core_token") == "core-from-the-folder"
    assert secrets.origin("core_token") == "CLARIFY_BOT_CORE_TOKEN in CLARIFY_BOT_SECRETS_DIR"
    assert secrets.value("slack_app_token") is None and secrets.origin("slack_app_token") is None


@pytest.mark.parametrize("sources", [("env", "file"), ("env", "folder"), ("file", "folder"),
                                     ("env", "file", "folder")])
def test_a_secret_given_twice_is_refused_in_one_line(tmp_path: Path,
                                                     sources: tuple[str, ...]) -> None:
    folder = tmp_path / "secrets"
    folder.mkdir()
    (folder / "SLACK_BOT_TOKEN").write_text("xoxb-" + LEAK)
    (tmp_path / "token").write_text("xoxb-" + LEAK)
    env = {"env": {"SLACK_BOT_TOKEN": "xoxb-" + LEAK},
           "file": {"SLACK_BOT_TOKEN_FILE": str(tmp_path / "token")},
           "folder": {"CLARIFY_BOT_SECRETS_DIR": str(folder)}}
    given = {k: v for source in sources for k, v in env[source].items()}
    error = failure(**given)
    assert len(str(error).splitlines()) == 1, str(error)
    assert str(error).startswith("invalid clarify-bot settings: SLACK_BOT_TOKEN: given more "
                                 "than once (")
    assert str(error).endswith("; keep one")
    named = {"env": "SLACK_BOT_TOKEN and", "file": "SLACK_BOT_TOKEN_FILE",
             "folder": "CLARIFY_BOT_SECRETS_DIR"}
    for source in sources:
        assert named[source] in str(error)


def test_files_that_cannot_be_used_are_named_never_shown(tmp_path: Path) -> None:
    """Missing, a folder, empty, not UTF-8, too large: each names its variable and path; the
    contents never appear, nor does the value of a secret that fails its own check."""
    (tmp_path / "empty").write_text("\n")
    (tmp_path / "binary").write_bytes(b"\xff\xfe" + LEAK.encode())
    (tmp_path / "huge").write_text(LEAK * 10_000)
    (tmp_path / "wrong-prefix").write_text(LEAK)
    error = failure(CLARIFY_BOT_CORE_TOKEN_FILE=str(tmp_path / "missing"),
                    CLARIFY_BOT_ACTION_SIGNING_KEY_FILE=str(tmp_path),
                    SLACK_SIGNING_SECRET_FILE=str(tmp_path / "empty"),
                    REDIS_PASSWORD_FILE=str(tmp_path / "binary"),
                    TEAMS_APP_PASSWORD_FILE=str(tmp_path / "huge"),
                    SLACK_BOT_TOKEN_FILE=str(tmp_path / "wrong-prefix"))
    said = {p.key: (p.reason, p.source) for p in error.problems}
    assert said["CLARIFY_BOT_CORE_TOKEN"] == (
        "the file cannot be read (no such file or directory)",
        f"CLARIFY_BOT_CORE_TOKEN_FILE={tmp_path / 'missing'}")
    assert said["CLARIFY_BOT_ACTION_SIGNING_KEY"][0] == "the file cannot be read (is a directory)"
    assert said["SLACK_SIGNING_SECRET"][0] == "the file is empty"
    assert said["REDIS_PASSWORD"][0] == "the file is not UTF-8 text"
    assert said["TEAMS_APP_PASSWORD"][0] == "the file is larger than 64 KiB"
    assert said["SLACK_BOT_TOKEN"][0] == "expected a bot token starting with xoxb-"
    assert all(p.value is None for p in error.problems)


def test_the_secrets_folder_must_exist_and_near_misses_are_named(tmp_path: Path) -> None:
    error = failure(CLARIFY_BOT_SECRETS_DIR=str(tmp_path / "absent"))
    assert str(error) == ("invalid clarify-bot settings: CLARIFY_BOT_SECRETS_DIR = "
                          f"{tmp_path / 'absent'}: expected a folder that exists")
    (tmp_path / "slack_bot_token").write_text(LEAK)  # the right name in the wrong case
    error = failure(CLARIFY_BOT_SECRETS_DIR=str(tmp_path))
    assert str(error) == (f"invalid clarify-bot settings: {tmp_path / 'slack_bot_token'}: not a "
                          "secret's name; did you mean SLACK_BOT_TOKEN? (from "
                          "CLARIFY_BOT_SECRETS_DIR)")


def test_check_config_says_where_each_secret_came_from(tmp_path: Path) -> None:
    """`check-config`: a `valid:` line, then each needed or set secret and its origin, never a
    value; `--json` still prints the effective settings."""
    config = tmp_path / "bot.toml"
    config.write_text('[clarify]\nchannels = "slack"\n[slack]\nmode = "socket"\n'
                      '[store]\nbackend = "memory"\n')
    folder = tmp_path / "secrets"
    folder.mkdir()
    (folder / "SLACK_APP_TOKEN").write_text("xapp-" + LEAK)
    (tmp_path / "bot-token").write_text("xoxb-" + LEAK)
    env = {"CLARIFY_BOT_SECRETS_DIR": str(folder),
           "SLACK_BOT_TOKEN_FILE": str(tmp_path / "bot-token"),
           "CLARIFY_BOT_CORE_TOKEN": LEAK, "CLARIFY_BOT_ACTION_SIGNING_KEY": LEAK * 4,
           "REDIS_PASSWORD": LEAK}
    # --offline: the static checks (no core or Slack runs here; tests/cli/test_operator_path.py
    # holds the live ones)
    result = CliRunner().invoke(main, ["check-config", "--offline", "--config", str(config)],
                                env=env)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == f"valid: {config}"
    assert "slack (socket mode)" in lines[1] and "store: memory" in lines[1]
    assert lines[1].endswith("slack: single workspace: one bot token (SLACK_BOT_TOKEN)")
    assert lines[2].startswith("  live checks: skipped (--offline)")
    assert lines[3] == "  core extensions: unknown (not asked (--offline))"
    assert lines[4] == ("  working hours: mon-fri 08:00-18:00 in each person's zone (else UTC);"
                        " normal and high cards wait for them")
    assert lines[5] == "secrets (values never shown):"
    shown = {line.split()[0]: " ".join(line.split()[1:]) for line in lines[6:-1]}
    assert shown == {
        "CLARIFY_BOT_CORE_TOKEN": "needed, set from CLARIFY_BOT_CORE_TOKEN",
        "SLACK_BOT_TOKEN": "needed, set from SLACK_BOT_TOKEN_FILE",
        "SLACK_APP_TOKEN": "needed, set from SLACK_APP_TOKEN in CLARIFY_BOT_SECRETS_DIR",
        "REDIS_PASSWORD": "set from REDIS_PASSWORD",
        "CLARIFY_BOT_ACTION_SIGNING_KEY": "needed, set from CLARIFY_BOT_ACTION_SIGNING_KEY",
    }
    assert LEAK not in result.output
    as_json = CliRunner().invoke(main, ["check-config", "--offline", "--config", str(config),
                                        "--json"], env=env)
    assert as_json.exit_code == 0, as_json.output
    shown = json.loads(as_json.stdout)  # only the JSON: the core client's lines go elsewhere
    assert shown["store"]["backend"] == "memory" and "secrets" not in shown
    assert set(shown["core_extensions"]) == {"extensions", "source"}
    assert LEAK not in as_json.output


def test_version_names_the_release_and_the_commit() -> None:
    result = CliRunner().invoke(main, ["--version"], env={"CLARIFY_BOT_COMMIT": "0123abcd4567"})
    assert result.exit_code == 0
    assert result.output == f"clarify-bot {metadata.version('clarify-bot')} (commit 0123abcd4567)\n"
