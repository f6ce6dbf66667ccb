"""The bot's settings: one immutable ``Settings`` built at start-up from defaults, a TOML file and
the environment (each overriding the one before) and passed down. The only module that reads
``os.environ``; secrets come from the environment alone and never appear in repr or errors.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal, get_args
from urllib.parse import urlsplit

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    model_validator,
)
from pydantic.fields import FieldInfo
from pydantic_core import PydanticCustomError

from bot.core.models import AmbiguityKind, Channel, QuorumPolicy, Role, Severity

ENV_PREFIX = "CLARIFY_BOT_"
CONFIG_ENV = "CLARIFY_BOT_CONFIG"
SECRET_ENV: dict[str, str] = {
    "core_token": "CLARIFY_BOT_CORE_TOKEN",
    "slack_bot_token": "SLACK_BOT_TOKEN",
    "slack_signing_secret": "SLACK_SIGNING_SECRET",
    "slack_app_token": "SLACK_APP_TOKEN",
    "teams_app_password": "TEAMS_APP_PASSWORD",
    "redis_password": "REDIS_PASSWORD",
    "action_signing_key": "CLARIFY_BOT_ACTION_SIGNING_KEY",
}
# Where an operator would naturally write a secret in TOML, so the refusal names the right variable.
_SECRET_HINTS: dict[str, str] = {
    "core.token": "CLARIFY_BOT_CORE_TOKEN", "slack.bot_token": "SLACK_BOT_TOKEN",
    "slack.signing_secret": "SLACK_SIGNING_SECRET", "slack.app_token": "SLACK_APP_TOKEN",
    "teams.app_password": "TEAMS_APP_PASSWORD", "redis.password": "REDIS_PASSWORD",
    "action_signing_key": "CLARIFY_BOT_ACTION_SIGNING_KEY", "bot_token": "SLACK_BOT_TOKEN",
    "signing_secret": "SLACK_SIGNING_SECRET", "app_token": "SLACK_APP_TOKEN",
    "app_password": "TEAMS_APP_PASSWORD", "microsoftapppassword": "TEAMS_APP_PASSWORD",
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
_UNSET = "not set (secrets are read from the environment only)"
_OWN_MESSAGES = frozenset({"cross_field", "url_password"})
_TENANT = r"^[A-Za-z0-9._:@-]{1,200}$"
_GUID = r"^[0-9a-fA-F]{8}-([0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}$"


# ---------------------------------------------------------------- field helpers


def _no_bool(value: object) -> object:
    # pydantic's lax mode reads `true` as 1; a boolean in a numeric key is always a mistake.
    if isinstance(value, bool):
        raise ValueError("a boolean is not a number")
    return value


def _csv(value: object) -> object:
    """TOML and the environment write lists as "a,b"; TOML may also use a real list."""
    items = value.split(",") if isinstance(value, str) else value
    if isinstance(items, list | tuple):
        cleaned = (i.strip().lower() if isinstance(i, str) else i for i in items)
        return tuple(i for i in cleaned if i != "")
    return value


def _distinct(value: tuple[Any, ...]) -> tuple[Any, ...]:
    if not value or len(set(value)) != len(value):
        raise ValueError("must be non-empty without duplicates")
    return value


def _lower(value: object) -> object:
    return value.strip().lower() if isinstance(value, str) else value


def _url(schemes: tuple[str, ...], secret_env: str) -> Any:
    def check(value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme not in schemes or not (parts.hostname or parts.scheme == "unix"):
            raise ValueError("bad url")
        if parts.password:
            message = f"a URL without a password (set {secret_env})"
            raise PydanticCustomError("url_password", message)
        return value

    return AfterValidator(check)


def _allowed(default: Any, allowed: str, **constraints: Any) -> Any:
    """A field whose error message says what is allowed, in words."""
    return Field(default, json_schema_extra={"allowed": allowed}, **constraints)


def _ints(default: int, lo: int, hi: int) -> Any:
    return _allowed(default, f"an integer from {lo} to {hi}", ge=lo, le=hi)


def _seconds(default: float, hi: float) -> Any:
    return _allowed(default, f"a number of seconds greater than 0 and at most {hi:g}", gt=0, le=hi)


def _choice(default: Any, *choices: str) -> Any:
    return _allowed(default, "one of: " + ", ".join(choices))


def _cross(field: str, value: object, allowed: str) -> PydanticCustomError:
    """A cross-field error that still names the one key to change."""
    return PydanticCustomError("cross_field", allowed, {"field": field, "value": value})


Int = Annotated[int, BeforeValidator(_no_bool)]
Num = Annotated[float, BeforeValidator(_no_bool)]
Channels = Annotated[
    tuple[Literal["teams", "slack"], ...],
    BeforeValidator(_csv), AfterValidator(_distinct),
    AfterValidator(lambda names: tuple(Channel(n) for n in names)),
]
Roles = Annotated[tuple[Role, ...], BeforeValidator(_csv), AfterValidator(_distinct)]
MaybeSeverity = Annotated[Severity | None, BeforeValidator(_lower)]
TenantId = Annotated[str, Field(pattern=_TENANT)]
Guid = Annotated[str, Field(pattern=_GUID)]


class _Table(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# ---------------------------------------------------------------- spec §8 tables


class QuorumSettings(_Table):
    enabled: bool = True
    critical_required_confirmations: Int = _ints(2, 1, 10)
    required_roles: Roles = _allowed(
        (Role.EDITOR,), "one or more of: viewer, editor, steward (comma-separated, no duplicates)")
    allow_steward_override: bool = True


class Elevations(_Table):
    """Kind → minimum severity; the field names are exactly ``AmbiguityKind``'s values."""

    relative_date: MaybeSeverity = _choice(None, *Severity)
    conflicting_dates: MaybeSeverity = _choice(None, *Severity)
    undated: MaybeSeverity = _choice(None, *Severity)
    low_confidence_extraction: MaybeSeverity = _choice(None, *Severity)


class SeveritySettings(_Table):
    high_notifies_steward: bool = True
    elevate: Elevations = Elevations()

    def minimum(self, kind: AmbiguityKind) -> Severity | None:
        minimum: Severity | None = getattr(self.elevate, kind.value)
        return minimum

    def effective(self, kind: AmbiguityKind, severity: Severity) -> Severity:
        """The severity raised to the kind's configured minimum, never lowered."""
        floor = self.minimum(kind)
        return floor if floor is not None and floor.rank > severity.rank else severity


class ClarifySettings(_Table):
    enabled: bool = False
    escalation_window_hours: Num = _allowed(
        48.0, "a number of hours greater than 0 and at most 8760", gt=0, le=8760)
    max_candidates: Int = _ints(3, 1, 20)
    per_person_daily_cap: Int = _ints(5, 1, 1000)
    digest_threshold: Int = _ints(3, 1, 100)
    digest_window_minutes: Int = _ints(30, 1, 1440)
    redact_fallback: bool = True
    channels: Channels = _allowed((Channel.TEAMS, Channel.SLACK),
                                  "one or more of: teams, slack (comma-separated, no duplicates)")
    quorum: QuorumSettings = QuorumSettings()
    severity: SeveritySettings = SeveritySettings()

    @property
    def escalation_window(self) -> timedelta:
        return timedelta(hours=self.escalation_window_hours)

    @property
    def digest_window(self) -> timedelta:
        return timedelta(minutes=self.digest_window_minutes)

    def quorum_policy(self, severity: Severity) -> QuorumPolicy:
        """Spec §5: critical needs the configured confirmations while quorum is on; else one."""
        quorum = self.quorum
        critical = severity is Severity.CRITICAL and quorum.enabled
        return QuorumPolicy(
            required_confirmations=quorum.critical_required_confirmations if critical else 1,
            required_roles=list(quorum.required_roles),
            allow_steward_override=quorum.allow_steward_override,
        )


# ---------------------------------------------------------------- the bot's own tables


class CoreSettings(_Table):
    url: Annotated[str, _url(("http", "https"), "CLARIFY_BOT_CORE_TOKEN")] = _allowed(
        "http://127.0.0.1:8700", "an http(s) URL without credentials")
    connect_timeout_seconds: Num = _seconds(3.0, 60)
    read_timeout_seconds: Num = _seconds(10.0, 300)


class RedisSettings(_Table):
    url: Annotated[str, _url(("redis", "rediss", "unix"), "REDIS_PASSWORD")] = _allowed(
        "redis://127.0.0.1:6379/0", "a redis://, rediss:// or unix:// URL without a password")
    key_prefix: str = _allowed("clarify-bot:", "1 to 64 characters from A-Z a-z 0-9 . _ : -",
                               pattern=r"^[A-Za-z0-9._:-]{1,64}$")


class WorkerSettings(_Table):
    concurrency: Int = _ints(4, 1, 64)
    poll_interval_seconds: Num = _seconds(2.0, 300)
    lease_seconds: Int = _ints(60, 10, 3600)
    heartbeat_seconds: Int = _ints(20, 1, 1800)

    @model_validator(mode="after")
    def _heartbeat_inside_lease(self) -> WorkerSettings:
        # At most half the lease, so one late heartbeat does not lose the lease.
        if self.heartbeat_seconds * 2 > self.lease_seconds:
            raise _cross("heartbeat_seconds", self.heartbeat_seconds,
                         f"at most half of worker.lease_seconds ({self.lease_seconds})")
        return self


class ServerSettings(_Table):
    host: str = _allowed("127.0.0.1", "a host name or IP address", min_length=1)
    port: Int = _ints(3978, 1, 65535)


class SlackWorkspace(_Table):
    team_id: str | None = _allowed(
        None, "a Slack team id such as T0123ABCD", pattern=r"^T[A-Z0-9]+$")
    enterprise_id: str | None = _allowed(
        None, "a Slack enterprise id such as E0123ABCD", pattern=r"^E[A-Z0-9]+$")
    tenant: TenantId = _allowed(..., "a tenant id (1-200 of A-Z a-z 0-9 . _ : @ -)")

    @model_validator(mode="after")
    def _keyed(self) -> SlackWorkspace:
        if self.team_id is None and self.enterprise_id is None:
            raise _cross("team_id", None, "team_id or enterprise_id (at least one)")
        return self


class SlackSettings(_Table):
    mode: Literal["http", "socket"] = _choice("http", "http", "socket")
    api_url: Annotated[str, _url(("http", "https"), "SLACK_BOT_TOKEN")] = _allowed(
        "https://slack.com/api/", "an http(s) URL without credentials")
    workspaces: tuple[SlackWorkspace, ...] = ()

    @model_validator(mode="after")
    def _unique(self) -> SlackSettings:
        keys = [(w.team_id, w.enterprise_id) for w in self.workspaces]
        if len(set(keys)) != len(keys):
            raise _cross("workspaces", None, "each team_id/enterprise_id pair at most once")
        return self

    def tenant_for(self, *, team_id: str | None, enterprise_id: str | None) -> str | None:
        """The tenant of a verified Slack request, or None (deny by default)."""
        # The most specific entry wins: team within enterprise, then team, then enterprise.
        wanted = [(team_id, enterprise_id), (team_id, None), (None, enterprise_id)]
        for want in (w for w in wanted if w != (None, None)):
            for workspace in self.workspaces:
                if (workspace.team_id, workspace.enterprise_id) == want:
                    return workspace.tenant
        return None


class TeamsTenant(_Table):
    aad_tenant_id: Guid = _allowed(..., "an Entra (AAD) tenant id, a GUID")
    tenant: TenantId = _allowed(..., "a tenant id (1-200 of A-Z a-z 0-9 . _ : @ -)")


class TeamsSettings(_Table):
    app_id: Guid | None = _allowed(None, "the bot's Entra app (client) id, a GUID")
    app_tenant_id: Guid | None = _allowed(None, "the Entra tenant id of the app registration")
    tenants: tuple[TeamsTenant, ...] = ()

    @model_validator(mode="after")
    def _unique(self) -> TeamsSettings:
        ids = [t.aad_tenant_id.lower() for t in self.tenants]
        if len(set(ids)) != len(ids):
            raise _cross("tenants", None, "each aad_tenant_id at most once")
        return self

    def tenant_for(self, aad_tenant_id: str) -> str | None:
        """The tenant of a verified Teams activity, or None (deny by default)."""
        wanted = aad_tenant_id.lower()
        return next((t.tenant for t in self.tenants if t.aad_tenant_id.lower() == wanted), None)


class StoreSettings(_Table):
    backend: Literal["memory", "redis"] = _choice("redis", "memory", "redis")


class AuditSettings(_Table):
    sink: Literal["stdout", "jsonl"] = _choice("stdout", "stdout", "jsonl")
    path: Path | None = _allowed(None, "a file path (required when sink is jsonl)")

    @model_validator(mode="after")
    def _path_for_jsonl(self) -> AuditSettings:
        if self.sink == "jsonl" and self.path is None:
            raise _cross("path", None, "a file path when audit.sink is jsonl")
        return self


class LogSettings(_Table):
    level: Annotated[Literal["debug", "info", "warning", "error"], BeforeValidator(_lower)] = (
        _choice("info", "debug", "info", "warning", "error"))
    format: Literal["json", "console"] = _choice("json", "json", "console")


def _prefixed(prefix: str) -> Any:
    def check(value: SecretStr | None) -> SecretStr | None:
        if value is not None and not value.get_secret_value().startswith(prefix):
            raise ValueError(prefix)
        return value

    return AfterValidator(check)


def _long(value: SecretStr | None) -> SecretStr | None:
    if value is not None and len(value.get_secret_value()) < 32:
        raise ValueError("short")
    return value


class Secrets(_Table):
    """Read from the environment only (names in ``SECRET_ENV``); empty means unset."""

    core_token: SecretStr | None = None
    slack_bot_token: Annotated[SecretStr | None, _prefixed("xoxb-")] = _allowed(
        None, "a bot token starting with xoxb-")
    slack_signing_secret: SecretStr | None = None
    slack_app_token: Annotated[SecretStr | None, _prefixed("xapp-")] = _allowed(
        None, "an app-level token starting with xapp-")
    teams_app_password: SecretStr | None = None
    redis_password: SecretStr | None = None
    action_signing_key: Annotated[SecretStr | None, AfterValidator(_long)] = _allowed(
        None, "at least 32 characters")

    def require(self, name: str) -> str:
        """The secret's value, or a SettingsError naming its environment variable."""
        value: SecretStr | None = getattr(self, name)
        if value is None:
            raise SettingsError([Problem(SECRET_ENV[name], None, _UNSET)])
        return value.get_secret_value()


class Settings(_Table):
    clarify: ClarifySettings = ClarifySettings()
    core: CoreSettings = CoreSettings()
    redis: RedisSettings = RedisSettings()
    worker: WorkerSettings = WorkerSettings()
    server: ServerSettings = ServerSettings()
    slack: SlackSettings = SlackSettings()
    teams: TeamsSettings = TeamsSettings()
    store: StoreSettings = StoreSettings()
    audit: AuditSettings = AuditSettings()
    log: LogSettings = LogSettings()
    secrets: Secrets = Secrets()

    def missing_secrets(self) -> tuple[str, ...]:
        """Environment variables this configuration needs that are unset."""
        needed = ["core_token", "action_signing_key"]
        if Channel.SLACK in self.clarify.channels:
            socket = self.slack.mode == "socket"
            needed += ["slack_bot_token", "slack_app_token" if socket else "slack_signing_secret"]
        if Channel.TEAMS in self.clarify.channels and self.teams.app_id is not None:
            needed.append("teams_app_password")
        return tuple(SECRET_ENV[n] for n in needed if getattr(self.secrets, n) is None)

    def require_secrets(self) -> None:
        """Fail start-up, naming every missing variable, before anything is sent."""
        missing = self.missing_secrets()
        if missing:
            raise SettingsError([Problem(m, None, _UNSET) for m in missing])


# ---------------------------------------------------------------- errors


@dataclass(frozen=True)
class Problem:
    """One bad key: ``value`` is already rendered, and None whenever it must not be shown."""

    key: str
    value: str | None
    reason: str
    source: str | None = None

    def __str__(self) -> str:
        shown = f" = {self.value}" if self.value is not None else ""
        where = f" (from {self.source})" if self.source else ""
        return f"{self.key}{shown}: {self.reason}{where}"


class SettingsError(ValueError):
    """The settings cannot be used; the message names every bad key, never a secret."""

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems = tuple(problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"invalid clarify-bot settings ({len(self.problems)}):\n{lines}")


# ---------------------------------------------------------------- loading


def load_settings(path: Path | None = None, environ: Mapping[str, str] | None = None) -> Settings:
    """Defaults, overridden by the TOML file (``path`` or $CLARIFY_BOT_CONFIG), overridden by
    ``CLARIFY_BOT_<TABLE>__<KEY>`` variables; secrets from their own variables only."""
    env = os.environ if environ is None else environ
    file = path or (Path(env[CONFIG_ENV]) if env.get(CONFIG_ENV) else None)
    raw: dict[str, Any] = {}
    sources: dict[tuple[str, ...], str] = {}
    if file is not None:
        _merge(raw, _read_toml(file), sources, str(file), ())
    for var, keys, value in _env_settings(env):
        _merge(raw, {keys[-1]: value}, sources, var, keys[:-1])
    problems = _refuse_fixed_and_secret(raw, sources, ())
    raw["secrets"] = {n: env[v] for n, v in SECRET_ENV.items() if env.get(v)}
    try:
        settings = Settings.model_validate(raw)
    except ValidationError as exc:
        problems += _translate(exc, raw, sources)
    if problems:
        # `from None`: pydantic's own error text would repeat the raw input values.
        raise SettingsError(_dedupe(problems)) from None
    return settings


def _read_toml(file: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(file.read_text(encoding="utf-8"))
    except OSError as exc:
        reason = f"the config file cannot be read ({exc.strerror})"
    except tomllib.TOMLDecodeError as exc:
        reason = f"the config file is not valid TOML ({exc})"
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
    return Problem(_dotted(path), None, f"{what} is fixed by the spec ({section}) and cannot be "
                   "configured; remove this key", _source(path, sources))


def _secret_problem(path: tuple[str, ...], sources: dict[tuple[str, ...], str]) -> Problem:
    dotted = _dotted(path)
    env = _SECRET_HINTS.get(dotted) or _SECRET_HINTS.get(path[-1].lower())
    hint = f"; set {env} instead" if env else f"; see {', '.join(SECRET_ENV.values())}"
    return Problem(dotted, None, "secrets are read from the environment only" + hint,
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
