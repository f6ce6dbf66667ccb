"""Loading: defaults, then the TOML file, then ``CLARIFY_BOT_<TABLE>__<KEY>`` variables, validated
into ``Settings``, with every failure translated into a ``Problem`` that names the key to change.
Secrets come from their own variables, ``<NAME>_FILE`` files or a secrets folder, never from the
TOML file. The only module that reads ``os.environ``.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import tomllib
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path
from typing import Any, get_args

from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

from bot.settings.errors import Problem, SettingsError
from bot.settings.models import Settings
from bot.settings.secrets import SECRET_ENV

ENV_PREFIX = "CLARIFY_BOT_"
CONFIG_ENV = "CLARIFY_BOT_CONFIG"
# A TOML file of defaults read before everything else (the lowest precedence): the image points
# at one holding ``server.host = "0.0.0.0"``, so a mounted settings file's ``server.host`` (and
# any variable) still wins (docs/deploy.md)
DEFAULTS_ENV = "CLARIFY_BOT_DEFAULTS"
# A folder of secret files, each named like its variable (a Kubernetes Secret mounted as a volume,
# Docker's /run/secrets); and ``<NAME>_FILE``, the path of one secret's file (as official images do)
SECRETS_DIR_ENV = "CLARIFY_BOT_SECRETS_DIR"
FILE_SUFFIX = "_FILE"
MAX_SECRET_BYTES = 64 * 1024
# Set by platforms (Heroku, Cloud Run, Render…) to the port they route to: wins over the file,
# loses to an explicit CLARIFY_BOT_SERVER__PORT.
PLATFORM_PORT_ENV = "PORT"
# Where an operator would naturally write a secret in TOML, so the refusal names the right variable.
_SECRET_HINTS: dict[str, str] = {
    "core.token": "CLARIFY_BOT_CORE_TOKEN", "slack.bot_token": "SLACK_BOT_TOKEN",
    "slack.signing_secret": "SLACK_SIGNING_SECRET", "slack.app_token": "SLACK_APP_TOKEN",
    "teams.app_password": "TEAMS_APP_PASSWORD", "redis.password": "REDIS_PASSWORD",
    "redis.sentinel_password": "REDIS_SENTINEL_PASSWORD",
    "action_signing_key": "CLARIFY_BOT_ACTION_SIGNING_KEY", "bot_token": "SLACK_BOT_TOKEN",
    "signing_secret": "SLACK_SIGNING_SECRET", "app_token": "SLACK_APP_TOKEN",
    "app_password": "TEAMS_APP_PASSWORD", "microsoftapppassword": "TEAMS_APP_PASSWORD",
    "slack.oauth.client_secret": "SLACK_CLIENT_SECRET", "client_secret": "SLACK_CLIENT_SECRET",
    "slack.oauth.link_key": "CLARIFY_BOT_INSTALL_LINK_KEY",
    **SECRET_ENV,
}
_SECRET_NAME = re.compile(
    r"(^|_)(token|secret|secrets|password|passwd|api_?key|signing_key|private_key|credentials?)$"
    r"|^microsoftapppassword$",
    re.IGNORECASE,
)
# Spec §8 (and §5 for the conflict policy): behaviours v1 fixes; refused anywhere under [clarify].
_FIXED: dict[str, str] = {
    "rbac_gate": "the RBAC gate", "rbac": "the RBAC gate",
    "audience_fence": "the audience fence",
    "append_only": "append-only response and answer recording",
    "append_only_recording": "append-only response and answer recording",
    "tenant_scoped_identity": "tenant-scoped identity resolution",
    "audit": "audit event emission", "audit_events": "audit event emission",
    "pending_caveat": "the pending-caveat visibility rule (§3.9)",
    "history_preserving_correction": "history-preserving correction",
    "severity_behaviour": "the severity→behaviour mapping",
    "severity_behavior": "the severity→behaviour mapping",
    "conflict_policy": "the steward-only conflict policy",
}
_OWN_MESSAGES = frozenset({"cross_field", "url_password", "redis_url"})


def load_settings(path: Path | None = None, environ: Mapping[str, str] | None = None) -> Settings:
    """Defaults (the model's, then $CLARIFY_BOT_DEFAULTS's file), overridden by the TOML file
    (``path`` or $CLARIFY_BOT_CONFIG), overridden by ``CLARIFY_BOT_<TABLE>__<KEY>`` variables;
    secrets from their own variables only."""
    env = os.environ if environ is None else environ
    file = path or (Path(env[CONFIG_ENV]) if env.get(CONFIG_ENV) else None)
    raw: dict[str, Any] = {}
    sources: dict[tuple[str, ...], str] = {}
    if env.get(DEFAULTS_ENV):
        defaults = Path(env[DEFAULTS_ENV])
        _merge(raw, _read_toml(defaults), sources, str(defaults), ())
    if file is not None:
        _merge(raw, _read_toml(file), sources, str(file), ())
    if env.get(PLATFORM_PORT_ENV):
        _merge(raw, {"port": env[PLATFORM_PORT_ENV]}, sources, PLATFORM_PORT_ENV, ("server",))
    for var, keys, value in _env_settings(env):
        _merge(raw, {keys[-1]: value}, sources, var, keys[:-1])
    problems = _refuse_fixed_and_secret(raw, sources, ())
    raw["secrets"], origins, refused = read_secrets(env)
    problems += refused
    try:
        settings = Settings.model_validate(raw)
    except ValidationError as exc:
        problems += _translate(exc, raw, sources)
    if problems:
        # `from None`: pydantic's own error text would repeat the raw input values.
        raise SettingsError(_dedupe(problems)) from None
    settings.secrets._origins.update(origins)
    return settings


def read_secrets(env: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str], list[Problem]]:
    """Each secret from its variable, its ``<NAME>_FILE`` or the secrets folder: the values,
    where each came from, and the problems (a secret given more than once, a file that cannot
    be read). No problem ever quotes a value or a file's contents."""
    values: dict[str, str] = {}
    origins: dict[str, str] = {}
    problems: list[Problem] = []
    folder = _secrets_folder(env, problems)
    for name, var in SECRET_ENV.items():
        given: list[tuple[str, Path | None]] = []
        if env.get(var):
            given.append((var, None))
        if env.get(var + FILE_SUFFIX):
            given.append((var + FILE_SUFFIX, Path(env[var + FILE_SUFFIX])))
        if folder is not None and (folder / var).exists():
            given.append((f"{var} in {SECRETS_DIR_ENV}", folder / var))
        if len(given) > 1:
            places = " and ".join(label for label, _ in given)
            problems.append(Problem(var, None, f"given more than once ({places}); keep one"))
            continue
        for label, path in given:
            value = env[var] if path is None else _secret_file(path, label, var, problems)
            if value:
                values[name], origins[name] = value, label
    if folder is not None:
        problems += _misnamed_secret_files(folder)
    return values, origins, problems


def _secrets_folder(env: Mapping[str, str], problems: list[Problem]) -> Path | None:
    if not env.get(SECRETS_DIR_ENV):
        return None
    folder = Path(env[SECRETS_DIR_ENV])
    if not folder.is_dir():
        problems.append(Problem(SECRETS_DIR_ENV, str(folder), "expected a folder that exists"))
        return None
    return folder


def _secret_file(path: Path, label: str, var: str, problems: list[Problem]) -> str | None:
    """The secret in ``path`` without its trailing line break; None (and a problem naming the
    variable and the path, never the contents) when it cannot be used."""
    where = f"{label}={path}" if label.endswith(FILE_SUFFIX) else f"{path} in {SECRETS_DIR_ENV}"
    try:
        with path.open("rb") as file:
            data = file.read(MAX_SECRET_BYTES + 1)
    except OSError as exc:
        reason = f"the file cannot be read ({(exc.strerror or 'error').lower()})"
    else:
        if len(data) > MAX_SECRET_BYTES:
            reason = f"the file is larger than {MAX_SECRET_BYTES // 1024} KiB"
        else:
            try:
                text = data.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError:
                reason = "the file is not UTF-8 text"
            else:
                if text:
                    return text
                reason = "the file is empty"
    problems.append(Problem(var, None, reason, where))
    return None


def _misnamed_secret_files(folder: Path) -> list[Problem]:
    """A file in the secrets folder named nearly like a secret (other case, a typo) is refused,
    naming the right name; other files (another program's secrets) are left alone."""
    problems = []
    names = list(SECRET_ENV.values())
    for entry in sorted(p.name for p in folder.iterdir()):
        if entry.startswith(".") or entry in names:  # Kubernetes keeps ..data and the like
            continue
        near = difflib.get_close_matches(entry.upper().replace("-", "_"), names, n=1, cutoff=0.85)
        if near:
            problems.append(Problem(str(folder / entry), None,
                                    f"not a secret's name; did you mean {near[0]}?",
                                    SECRETS_DIR_ENV))
    return problems


def _read_toml(file: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(file.read_text(encoding="utf-8"))
    except OSError as exc:
        reason = f"the config file cannot be read ({exc.strerror})"
    except UnicodeDecodeError:
        reason = "the config file is not UTF-8 text"
    except tomllib.TOMLDecodeError as exc:
        reason = f"the config file is not valid TOML ({exc})"
    except RecursionError:  # tomllib parses nested arrays and tables recursively
        reason = "the config file is not valid TOML (nested too deeply)"
    raise SettingsError([Problem(str(file), None, reason)]) from None


def _env_settings(env: Mapping[str, str]) -> list[tuple[str, tuple[str, ...], Any]]:
    # Only CLARIFY_BOT_<TABLE>__<KEY> names are settings: single-level names such as the
    # CLARIFY_BOT_PORT that Kubernetes injects for a service of that name are not ours.
    found = []
    for var in sorted(env):
        if not var.startswith(ENV_PREFIX) or "__" not in var or var in SECRET_ENV.values():
            continue
        keys = tuple(k.lower() for k in var.removeprefix(ENV_PREFIX).split("__"))
        found.append((var, keys, _env_value(env[var])))
    return found


def _env_value(text: str) -> Any:
    if text.lstrip()[:1] in ("[", "{"):
        try:
            return json.loads(text)
        except ValueError:
            pass
    return text


def _merge(into: dict[str, Any], tree: Mapping[str, Any], sources: dict[tuple[str, ...], str],
           label: str, at: tuple[str, ...]) -> None:
    node = into
    for key in at:
        if not isinstance(node.get(key), dict):
            node[key] = {}
        node = node[key]
    for key, value in tree.items():
        if isinstance(value, dict):
            _merge(into, value, sources, label, (*at, key))
        else:
            node[key] = value
            sources[(*at, key)] = label


def _refuse_fixed_and_secret(node: dict[str, Any], sources: dict[tuple[str, ...], str],
                             at: tuple[str, ...]) -> list[Problem]:
    problems = []
    for key in list(node):
        path, value = (*at, key), node[key]
        if at[:1] == ("clarify",) and key.lower() in _FIXED:
            problems.append(_fixed_problem(path, sources))
            del node[key]
        elif _SECRET_NAME.search(key):
            problems.append(_secret_problem(path, sources))
            del node[key]
        elif isinstance(value, dict):
            problems += _refuse_fixed_and_secret(value, sources, path)
        elif isinstance(value, list):
            for i, item in enumerate(value):
                if isinstance(item, dict):
                    problems += _refuse_fixed_and_secret(item, sources, (*path, f"[{i}]"))
    return problems


def _fixed_problem(path: tuple[str, ...], sources: dict[tuple[str, ...], str]) -> Problem:
    what = _FIXED[path[-1].lower()]
    section = "§5" if path[-1] == "conflict_policy" else "§8"
    return Problem(_dotted(path), None, f"{what} is fixed by the spec ({section}, "
                   "docs/requirements.md) and cannot be configured; remove this key",
                   _source(path, sources))


def _secret_problem(path: tuple[str, ...], sources: dict[tuple[str, ...], str]) -> Problem:
    dotted = _dotted(path)
    env = _SECRET_HINTS.get(dotted) or _SECRET_HINTS.get(path[-1].lower())
    hint = f"; set {env} instead" if env else f"; see {', '.join(SECRET_ENV.values())}"
    return Problem(dotted, None,
                   "secrets are read from the environment or secret files only" + hint,
                   _source(path, sources))


def _translate(exc: ValidationError, raw: dict[str, Any],
               sources: dict[tuple[str, ...], str]) -> list[Problem]:
    problems = []
    for err in exc.errors():
        loc = tuple(str(p) if isinstance(p, str) else p for p in err["loc"])
        if err["type"] == "cross_field":
            loc = (*loc, err["ctx"]["field"])
        path, info = _resolve(loc)
        source = _source(path, sources)
        if err["type"] == "extra_forbidden":
            problems.append(_unknown_problem(path, source))
            continue
        if path[:1] == ("secrets",):  # never echo a secret, name its variable
            problems.append(Problem(SECRET_ENV[path[1]], None, _expected(err, info)))
            continue
        fallback = err["ctx"]["value"] if err["type"] == "cross_field" else err.get("input")
        shown = _display(_lookup(raw, path, fallback), from_env=_is_env(source))
        problems.append(Problem(_dotted(path), shown, _expected(err, info), source))
    return problems


def _resolve(loc: tuple[Any, ...]) -> tuple[tuple[str, ...], FieldInfo | None]:
    """The dotted path a person would write, and the field it names (if any)."""
    model: type[BaseModel] | None = Settings
    path: list[str] = []
    info = None
    for part in loc:
        if isinstance(part, int):
            if model is None:
                break  # an item of a plain list: the key is the list itself
            path.append(f"[{part}]")
            continue
        path.append(part)
        if model is None or part not in model.model_fields:
            model = None
            continue
        info = model.model_fields[part]
        model = _inner_model(info.annotation)
    return tuple(path), info


def _inner_model(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return next(filter(None, (_inner_model(a) for a in get_args(annotation))), None)


def _expected(err: Any, info: FieldInfo | None) -> str:
    if err["type"] in _OWN_MESSAGES:
        return "expected " + str(err["msg"])
    if err["type"] in ("model_type", "model_attributes_type", "dict_type"):
        return "expected a table"
    extra = info.json_schema_extra if info is not None else None
    if isinstance(extra, dict) and "allowed" in extra:
        return "expected " + str(extra["allowed"])
    fallback = {"bool_parsing": "true or false", "bool_type": "true or false",
                "string_type": "a string", "missing": "a value (this key is required)"}
    return "expected " + fallback.get(err["type"], str(err["msg"]).lower())


def _unknown_problem(path: tuple[str, ...], source: str | None) -> Problem:
    near = difflib.get_close_matches(_plain(path), [_plain(k) for k in _known_keys()], n=1)
    hint = ""
    if near:
        known = next(k for k in _known_keys() if _plain(k) == near[0])
        hint = f"; did you mean {_dotted(known)}"
        hint += f" ({env_var(_dotted(known))})?" if _is_env(source) else "?"
    return Problem(_dotted(path), None, f"unknown key{hint}", source)


def setting_keys() -> tuple[str, ...]:
    """Every configurable key in dotted form; keys of a list of tables read ``table.list[].key``."""
    return tuple(_dotted(k) for k in _known_keys())


def env_var(key: str) -> str:
    """The variable overriding a dotted key (a list of tables is replaced whole, as JSON)."""
    return ENV_PREFIX + key.split("[]")[0].replace(".", "__").upper()


@cache
def _known_keys(model: type[BaseModel] = Settings,
                at: tuple[str, ...] = ()) -> tuple[tuple[str, ...], ...]:
    keys: list[tuple[str, ...]] = []
    for name, info in model.model_fields.items():
        if model is Settings and name == "secrets":
            continue
        inner = _inner_model(info.annotation)
        listed = inner is not None and get_args(info.annotation)[:1] != ()
        nested = (*at, name, "[]") if listed else (*at, name)
        keys += _known_keys(inner, nested) if inner is not None else [nested]
    return tuple(keys)


def _plain(path: Iterable[str]) -> str:
    # Compare keys whatever their separators, so CLARIFY_DIGEST_THRESHOLD finds clarify.digest_...
    return "_".join(p for p in path if not p.startswith("["))


def _dotted(path: Iterable[str]) -> str:
    return ".".join(path).replace(".[", "[")


def _source(path: tuple[str, ...], sources: dict[tuple[str, ...], str]) -> str | None:
    """Where the value at ``path`` came from: the nearest key set at, above or below it."""
    for end in range(len(path), 0, -1):
        found = [label for key, label in sources.items() if key[:end] == path[:end]]
        if found:
            return found[-1]
    return None


def _lookup(raw: Any, path: tuple[str, ...], fallback: Any) -> Any:
    node = raw
    for part in path:
        index = int(part[1:-1]) if part.startswith("[") else None
        if index is not None and isinstance(node, list) and index < len(node):
            node = node[index]
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            return fallback
    return node


def _is_env(source: str | None) -> bool:
    return source is not None and source.startswith(ENV_PREFIX)


def _display(value: Any, *, from_env: bool) -> str | None:
    if value is None or isinstance(value, dict):
        return None  # a whole table: the key says enough
    as_written = from_env and isinstance(value, str)
    text = value if as_written else json.dumps(value, default=str, ensure_ascii=False)
    # A URL may carry credentials even where none belong; never repeat them.
    text = re.sub(r"//[^/@\s\"]*@", "//***@", text)
    return text if len(text) <= 80 else text[:77] + "..."


def _dedupe(problems: list[Problem]) -> list[Problem]:
    seen: dict[str, Problem] = {}
    for p in problems:
        seen.setdefault(p.key, p)
    return list(seen.values())
