"""Arbitrary settings files and variables: ``load_settings`` (and ``check-config``) end in valid
settings or one ``SettingsError`` that names keys, never a traceback, and no secret's value ever
appears in what they print.

Documents are written from the real key list (``setting_keys``) with values of every TOML type,
unknown and secret-named keys among them, plus raw text and bytes; secrets come from their
variables with values that are sometimes refused (short, wrong prefix).
"""

from __future__ import annotations

import json
import math
from datetime import UTC, date, datetime, time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from bot.settings import SettingsError, load_settings
from bot.settings.loader import setting_keys
from bot.settings.secrets import SECRET_ENV
from clarify_bot.cli import main
from tests.fuzz.budget import fuzz

pytestmark = pytest.mark.slow  # property-based: a few hundred generated examples

SECRET = "SeCrEtCaNaRy"  # every secret value contains it; no message may
KEYS = setting_keys()
SECRET_KEYS = ["core.token", "slack.bot_token", "slack.signing_secret", "teams.app_password",
               "redis.password", "action_signing_key", "teams.client_secret", "api_key"]

toml_scalars = (st.booleans() | st.integers(-(2**63), 2**63 - 1)
                | st.floats(allow_nan=True, allow_infinity=True)
                | st.text(max_size=30) | st.sampled_from(
                    ["http", "socket", "redis", "memory", "teams,slack", "slack", "info",
                     "json", "single-tenant", "multi-tenant", "T0ACME", "redis://u:p@h:1/0",
                     "https://smba.trafficmanager.net/amer/", "0", "-1", ""])
                | st.dates() | st.datetimes(timezones=st.none() | st.just(UTC)) | st.times())
toml_values = st.recursive(
    toml_scalars, lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.sampled_from(["team_id", "tenant", "aad_tenant_id", "enterprise_id",
                                       "x"]), inner, max_size=3), max_leaves=8)


def _key_path(dotted: str) -> tuple[str, ...]:
    return tuple(dotted.replace("[]", "").split("."))


@st.composite
def documents(draw: st.DrawFn) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    chosen = draw(st.lists(st.sampled_from(KEYS), max_size=8))
    extra = draw(st.lists(st.text("abcdefgz_.", min_size=1, max_size=12), max_size=2))
    secrets = draw(st.lists(st.sampled_from(SECRET_KEYS), max_size=2))
    for dotted in [*chosen, *extra, *secrets]:
        path = tuple(p for p in _key_path(dotted) if p)
        if not path:
            continue
        value = draw(toml_values) if dotted not in secrets else SECRET + draw(st.text(max_size=5))
        if "[]" in dotted:  # a list of tables
            value = draw(st.lists(st.fixed_dictionaries({path[-1]: toml_values}), max_size=2))
            path = path[:-1]
        node = tree
        for part in path[:-1]:
            if not isinstance(node.get(part), dict):
                node[part] = {}
            node = node[part]
        node[path[-1]] = value
    return tree


def toml(tree: dict[str, Any]) -> str:
    """The tree as TOML: one dotted key per leaf, inline arrays and tables."""
    lines: list[str] = []

    def walk(node: dict[str, Any], at: tuple[str, ...]) -> None:
        for key, value in node.items():
            if isinstance(value, dict) and value:
                walk(value, (*at, key))
            else:
                lines.append(".".join(map(_string, (*at, key))) + " = " + _value(value))

    walk(tree, ())
    return "\n".join(lines) + "\n"


def _string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "nan" if math.isnan(value) else repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, list):
        return "[" + ", ".join(map(_value, value)) + "]"
    return "{" + ", ".join(f"{_string(k)} = {_value(v)}" for k, v in value.items()) + "}"


env_values = st.sampled_from(["", "x", "xoxb-" + SECRET, "xapp-" + SECRET, SECRET,
                              SECRET * 3, "xoxp-" + SECRET])
environments = st.dictionaries(st.sampled_from(list(SECRET_ENV.values())), env_values,
                               max_size=4) | st.dictionaries(
    st.sampled_from(["CLARIFY_BOT_SERVER__PORT", "CLARIFY_BOT_SLACK__WORKSPACES", "PORT",
                     "CLARIFY_BOT_CORE__URL", "CLARIFY_BOT_WORKER__CONCURRENCY",
                     "CLARIFY_BOT_CORE__TOKEN", "CLARIFY_BOT_TEAMS__TENANTS"]),
    st.text(st.characters(blacklist_characters="\x00"), max_size=20)  # no NUL in a variable
    | st.just('[{"team_id": "T0X"}]')
    | st.just("https://u:" + SECRET + "@h/"), max_size=3)
files = (documents().map(toml) | st.text(max_size=200)
         | st.binary(max_size=200).map(lambda b: b.decode("latin-1"))
         | st.integers(1, 3000).map(lambda n: "x = " + "[" * n + "]" * n)  # nested too deep
         | st.integers(1, 3000).map(lambda n: "x = " + "{a = " * n + "1" + "}" * n))


def _loaded(path: Path, text: str | bytes, env: dict[str, str]) -> str | None:
    """Load; the error's text, or None for valid settings (with their secrets required)."""
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    try:
        settings = load_settings(path, env)
        settings.require_secrets()
    except SettingsError as exc:
        return str(exc)
    return None


@fuzz(quick=300, full=5000)
@given(text=files, env=environments)
def test_any_settings_file_loads_or_names_its_problems(tmp_path: Path, text: str,
                                                       env: dict[str, str]) -> None:
    told = _loaded(tmp_path / "clarify-bot.toml", text, env)
    if told is not None:
        assert SECRET not in told, told
        assert "Traceback" not in told


@fuzz(quick=40, full=600)
@given(text=files | st.binary(max_size=100), env=environments)
def test_check_config_never_prints_a_traceback_or_a_secret(tmp_path: Path, text: str | bytes,
                                                           env: dict[str, str]) -> None:
    config = tmp_path / "clarify-bot.toml"
    _loaded(config, text, env)  # writes the file
    result = CliRunner().invoke(main, ["check-config", "--config", str(config)], env=env)
    assert result.exit_code in (0, 1), (result.exit_code, result.output, result.exception)
    assert result.exception is None or isinstance(result.exception, SystemExit), \
        repr(result.exception)
    assert SECRET not in result.output
    assert "Traceback" not in result.output
