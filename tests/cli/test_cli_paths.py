"""Every subcommand against the ways a newcomer's paths and ports go wrong: a busy port, a port
out of range, a missing folder, a file in the way, a path that cannot be written. Each ends with a
non-zero exit and an error that names the option or the path, in a line or two (click's usage
errors add their usage line), never a traceback.

`demo` takes no path and listens on a port it picks, `clarify …` writes nothing but the audit
file, which `serve` checks too; both are covered where they can go wrong (the audit file here,
`demo` in tests/bot/test_demo.py).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from bot.settings import SettingsError, load_settings
from clarify_bot import preflight
from clarify_bot.cli import main

SECRETS = {"CLARIFY_BOT_CORE_TOKEN": "core-Zq", "CLARIFY_BOT_ACTION_SIGNING_KEY": "k" * 40,
           "SLACK_BOT_TOKEN": "xoxb-Zq", "SLACK_APP_TOKEN": "xapp-Zq"}


@pytest.fixture
def busy_port() -> Iterator[int]:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        yield taken.getsockname()[1]


@pytest.fixture
def unwritable(tmp_path: Path) -> Path:
    """A folder this process cannot create files in: read-only for an ordinary user; as root
    (CI, these machines) /sys, which refuses new files even to root."""
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o555)
    for candidate in (folder, Path("/sys")):
        try:
            (candidate / "probe").touch()
        except OSError:
            return candidate
        (candidate / "probe").unlink()
    pytest.skip("no folder here refuses writes to this user")


@pytest.fixture
def file_in_the_way(tmp_path: Path) -> Path:
    """A plain file where a folder is expected."""
    path = tmp_path / "a-file"
    path.write_text("in the way\n")
    return path


def invoke(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, list(args), env={**SECRETS, **(env or {})})


def refused(result: Result, *named: str) -> str:
    """The command failed in at most a few lines, each name in ``named`` among them, without a
    traceback or a secret."""
    text = result.output
    assert result.exit_code != 0, text
    assert result.exception is None or isinstance(result.exception, SystemExit), \
        repr(result.exception)
    assert "Traceback" not in text and "Zq" not in text, text
    assert len([line for line in text.splitlines() if line.strip()]) <= 3, text
    for name in named:
        assert name in text, (name, text)
    return text


# ---------------------------------------------------------------- ports


def test_devcore_on_a_busy_port(busy_port: int) -> None:
    text = refused(invoke("devcore", "--port", str(busy_port)), f"127.0.0.1:{busy_port}")
    assert text == (f"Error: cannot listen on 127.0.0.1:{busy_port}: address already in use "
                    "(choose another --port or --host)\n")


@pytest.mark.parametrize("port", ["70000", "-1", "http"])
def test_devcore_on_a_port_out_of_range(port: str) -> None:
    refused(invoke("devcore", "--port", port), "--port")


def test_devcore_on_an_address_not_of_this_machine() -> None:
    refused(invoke("devcore", "--host", "192.0.2.1", "--port", "0"), "192.0.2.1",
            "cannot listen")


def test_serve_on_a_busy_port_and_an_unwritable_audit_file(
        tmp_path: Path, busy_port: int, unwritable: Path) -> None:
    """serve's busy port is a JSON log line (tests/bot/test_serve.py); an audit file it cannot
    append to stops it before anything listens, naming audit.path."""
    config = tmp_path / "bot.toml"
    config.write_text('[clarify]\nchannels = "slack"\n[slack]\nmode = "socket"\n'
                      '[store]\nbackend = "memory"\n'
                      f'[server]\nport = {busy_port}\n[audit]\nsink = "jsonl"\n'
                      f'path = "{unwritable / "audit.jsonl"}"\n')
    text = refused(invoke("serve", "--config", str(config)), "audit.path",
                   str(unwritable / "audit.jsonl"))
    assert "cannot be appended to" in text


# ---------------------------------------------------------------- settings files


@pytest.mark.parametrize("command", [["serve"], ["check-config"], ["teams-package"],
                                     ["clarify", "ls"]])
def test_a_settings_file_that_is_missing_or_a_folder(tmp_path: Path, command: list[str]) -> None:
    where = ["clarify", "--config"] if command[0] == "clarify" else [command[0], "--config"]
    rest = command[1:]
    refused(invoke(*where, str(tmp_path / "absent.toml"), *rest), "absent.toml")
    text = refused(invoke(*where, str(tmp_path), *rest), str(tmp_path))
    assert "cannot be read" in text


def test_a_secret_file_that_is_missing_or_in_a_file(tmp_path: Path,
                                                    file_in_the_way: Path) -> None:
    text = refused(invoke("check-config", env={"SLACK_BOT_TOKEN": "",
                                               "SLACK_BOT_TOKEN_FILE": str(tmp_path / "nope")}),
                   "SLACK_BOT_TOKEN", str(tmp_path / "nope"))
    assert "no such file or directory" in text
    text = refused(invoke("check-config", env={"SLACK_BOT_TOKEN": "", "SLACK_BOT_TOKEN_FILE":
                                               str(file_in_the_way / "token")}),
                   str(file_in_the_way / "token"))
    assert "not a directory" in text


@pytest.mark.parametrize("written", ['"sms"', '"slak"', '"teams,email"', '"slack,pigeon"'])
def test_a_channel_no_platform_is_named_is_refused_before_serving(tmp_path: Path,
                                                                  written: str) -> None:
    """Which platforms there are is the assembly's word (``clarify_bot.platforms``): a name
    none answers to loads, and what ``serve`` and ``check-config`` check first refuses it,
    saying what is allowed."""
    file = tmp_path / "clarify-bot.toml"
    file.write_text(f"[clarify]\nchannels = {written}\n", encoding="utf-8")
    settings = load_settings(file, {})
    with pytest.raises(SettingsError) as caught:
        preflight.static(settings)
    assert caught.value.problems[0].key == "clarify.channels"
    assert "one or more of: slack, teams" in str(caught.value)


def test_check_config_refuses_a_platform_name_nobody_mounts(tmp_path: Path) -> None:
    """A typo in clarify.channels is refused by check-config, naming the key and the names
    allowed."""
    config = tmp_path / "bot.toml"
    config.write_text('[clarify]\nchannels = "slak"\n[store]\nbackend = "memory"\n')
    text = refused(invoke("check-config", "--offline", "--config", str(config)),
                   "clarify.channels", "slak")
    assert "one or more of: slack, teams" in text


# ---------------------------------------------------------------- files written


def test_init_into_a_missing_folder_a_file_or_an_unwritable_one(
        tmp_path: Path, file_in_the_way: Path, unwritable: Path) -> None:
    missing = tmp_path / "no" / "such" / "clarify-bot.toml"
    text = refused(invoke("init", "--out", str(missing)), "--out", str(missing.parent))
    assert "does not exist" in text
    refused(invoke("init", "--out", str(file_in_the_way / "clarify-bot.toml")), "--out")
    text = refused(invoke("init", "--out", str(unwritable / "clarify-bot.toml")), "--out",
                   str(unwritable / "clarify-bot.toml"))
    assert "cannot write it" in text
    refused(invoke("init", "--devcore", "--out", str(tmp_path / "ok.toml"),
                   "--env-file", str(tmp_path / "none" / "clarify-bot.env")), "--env-file")
    refused(invoke("init", "--out", str(tmp_path)), "--out")  # a folder, not a file
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file", "read-only"]


def test_preview_onto_a_file_or_an_unwritable_folder(
        tmp_path: Path, file_in_the_way: Path, unwritable: Path) -> None:
    text = refused(invoke("preview", "--out", str(file_in_the_way)), "--out",
                   str(file_in_the_way))
    assert text.endswith(": cannot write it: a file is in the way\n"), text
    refused(invoke("preview", "--out", str(file_in_the_way / "below")), "--out")
    refused(invoke("preview", "--out", str(unwritable / "gallery")), "--out",
            str(unwritable / "gallery"))
    written = invoke("preview", "--out", str(tmp_path / "new" / "folder"))  # made as needed
    assert written.exit_code == 0 and (tmp_path / "new" / "folder" / "gallery.html").is_file()


def test_teams_package_onto_a_file_or_an_unwritable_folder(
        tmp_path: Path, file_in_the_way: Path, unwritable: Path) -> None:
    from tests.teams.test_teams_package import COMPLETE

    config = tmp_path / "teams.toml"
    config.write_text(COMPLETE)
    env: dict[str, str] = {}
    for out in (file_in_the_way / "app.zip", unwritable / "app.zip"):
        text = refused(invoke("teams-package", "--config", str(config), "--out", str(out),
                              env=env), "--out", str(out))
        assert "cannot write" in text
    refused(invoke("teams-package", "--config", str(config), "--out", str(tmp_path), env=env),
            "--out")
    made = invoke("teams-package", "--config", str(config), "--out",
                  str(tmp_path / "none" / "app.zip"), env=env)  # a missing folder is made
    assert made.exit_code == 0 and (tmp_path / "none" / "app.zip").is_file()


def test_the_tests_paths_are_what_they_claim(unwritable: Path, file_in_the_way: Path) -> None:
    """The fixtures above really refuse: otherwise every test here would pass for nothing."""
    with pytest.raises(OSError):
        (unwritable / "x").touch()
    with pytest.raises(NotADirectoryError):
        (file_in_the_way / "x").touch()
    assert not os.access(unwritable, os.W_OK) or unwritable == Path("/sys")
