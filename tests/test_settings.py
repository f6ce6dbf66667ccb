"""Tests of bot.settings: defaults, sources and precedence, validation messages, secrets."""

from __future__ import annotations

import re
import tomllib
from datetime import timedelta
from pathlib import Path

import pytest

from bot.core.models import AmbiguityKind, Channel, Role, Severity
from bot.settings import (
    SECRET_ENV,
    Elevations,
    Settings,
    SettingsError,
    env_var,
    load_settings,
    setting_keys,
)

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "clarify-bot.example.toml"
DOCS = ROOT / "docs" / "configuration.md"
GUID = "72f988bf-86f1-41af-91ab-2d7cd011db47"


def load(tmp_path: Path, toml: str = "", **environ: str) -> Settings:
    file = tmp_path / "clarify-bot.toml"
    file.write_text(toml, encoding="utf-8")
    return load_settings(file, environ)


def failure(tmp_path: Path, toml: str = "", **environ: str) -> SettingsError:
    with pytest.raises(SettingsError) as caught:
        load(tmp_path, toml, **environ)
    return caught.value


# ---------------------------------------------------------------- defaults (spec §8)


def test_defaults_match_spec_section_8() -> None:
    """With no file and no environment every [clarify] value is the spec's default."""
    clarify = load_settings(None, {}).clarify
    assert (clarify.enabled, clarify.escalation_window_hours, clarify.max_candidates) == (
        False, 48, 3)
    assert (clarify.per_person_daily_cap, clarify.digest_threshold) == (5, 3)
    assert (clarify.digest_window_minutes, clarify.redact_fallback) == (30, True)
    assert clarify.channels == (Channel.TEAMS, Channel.SLACK)
    assert clarify.quorum.enabled and clarify.quorum.allow_steward_override
    assert clarify.quorum.critical_required_confirmations == 2
    assert clarify.quorum.required_roles == (Role.EDITOR,)
    assert clarify.severity.high_notifies_steward
    assert all(clarify.severity.minimum(kind) is None for kind in AmbiguityKind)


def test_operational_defaults() -> None:
    """The bot's own tables default to local services and the durable store."""
    settings = load_settings(None, {})
    assert settings.core.url == "http://127.0.0.1:8700"
    assert settings.redis.url == "redis://127.0.0.1:6379/0"
    assert settings.store.backend == "redis"
    assert (settings.slack.mode, settings.audit.sink, settings.log.level) == (
        "http", "stdout", "info")


def test_windows_as_timedeltas() -> None:
    """The hour and minute settings are exposed as timedeltas for the engine and clocks."""
    clarify = Settings().clarify
    assert clarify.escalation_window == timedelta(hours=48)
    assert clarify.digest_window == timedelta(minutes=30)


def test_quorum_policy_per_severity(tmp_path: Path) -> None:
    """Only critical needs the configured confirmations; the other severities need one."""
    clarify = load(tmp_path, "[clarify.quorum]\ncritical_required_confirmations = 3\n"
                   'required_roles = ["editor", "steward"]\n').clarify
    critical = clarify.quorum_policy(Severity.CRITICAL)
    assert critical.required_confirmations == 3
    assert critical.required_roles == [Role.EDITOR, Role.STEWARD]
    assert critical.allow_steward_override is True
    for severity in (Severity.LOW, Severity.NORMAL, Severity.HIGH):
        assert clarify.quorum_policy(severity).required_confirmations == 1


def test_quorum_disabled_means_one_confirmation(tmp_path: Path) -> None:
    """Quorum off with the steward override explicitly allowed: critical binds on one answer."""
    clarify = load(tmp_path, "[clarify.quorum]\nenabled = false\n"
                   "allow_steward_override = true\n").clarify
    assert clarify.quorum_policy(Severity.CRITICAL).required_confirmations == 1


@pytest.mark.parametrize(("toml", "key", "shown"), [
    ("critical_required_confirmations = 1\nallow_steward_override = false\n",
     "clarify.quorum.critical_required_confirmations", "1"),
    ("critical_required_confirmations = 1\n",  # the default permission is not explicit
     "clarify.quorum.critical_required_confirmations", "1"),
    ("enabled = false\n", "clarify.quorum.enabled", "false"),
    ("enabled = false\nallow_steward_override = false\n", "clarify.quorum.enabled", "false"),
])
def test_single_response_critical_binding_is_refused(
        tmp_path: Path, toml: str, key: str, shown: str) -> None:
    """Spec §3.7: a policy binding critical on one answer needs an explicit override permission."""
    error = failure(tmp_path, "[clarify.quorum]\n" + toml)
    [problem] = error.problems
    assert (problem.key, problem.value) == (key, shown)
    assert "§3.7" in problem.reason and "allow_steward_override = true" in problem.reason


def test_single_response_critical_refused_from_the_environment(tmp_path: Path) -> None:
    """The same rule holds for a policy given by variables, and names the variable."""
    error = failure(tmp_path, CLARIFY_BOT_CLARIFY__QUORUM__CRITICAL_REQUIRED_CONFIRMATIONS="1",
                    CLARIFY_BOT_CLARIFY__QUORUM__ALLOW_STEWARD_OVERRIDE="false")
    [problem] = error.problems
    assert problem.key == "clarify.quorum.critical_required_confirmations"
    assert problem.source == "CLARIFY_BOT_CLARIFY__QUORUM__CRITICAL_REQUIRED_CONFIRMATIONS"
    ok = load(tmp_path, CLARIFY_BOT_CLARIFY__QUORUM__CRITICAL_REQUIRED_CONFIRMATIONS="1",
              CLARIFY_BOT_CLARIFY__QUORUM__ALLOW_STEWARD_OVERRIDE="true")
    assert ok.clarify.quorum_policy(Severity.CRITICAL).required_confirmations == 1


def test_elevation_raises_but_never_lowers(tmp_path: Path) -> None:
    """elevate.<kind> is a minimum: lower severities are raised, higher ones kept."""
    severity = load(tmp_path, '[clarify.severity.elevate]\nconflicting_dates = "HIGH"\n'
                    ).clarify.severity
    kind = AmbiguityKind.CONFLICTING_DATES
    assert severity.effective(kind, Severity.NORMAL) is Severity.HIGH
    assert severity.effective(kind, Severity.CRITICAL) is Severity.CRITICAL
    assert severity.effective(AmbiguityKind.UNDATED, Severity.LOW) is Severity.LOW


def test_elevation_keys_are_the_ambiguity_kinds() -> None:
    """Every AmbiguityKind can be elevated, and nothing else can."""
    assert set(Elevations.model_fields) == {kind.value for kind in AmbiguityKind}


def test_settings_are_immutable() -> None:
    """The object passed down cannot be changed by a module that receives it."""
    settings = Settings()
    with pytest.raises(ValueError):
        settings.clarify.digest_threshold = 9  # type: ignore[misc]


# ---------------------------------------------------------------- the example file and the docs


def test_example_file_equals_defaults() -> None:
    """clarify-bot.example.toml loads to exactly the defaults."""
    assert load_settings(EXAMPLE, {}) == Settings()


def test_example_file_shows_every_key() -> None:
    """Each key is set in the example, or shown commented out when it has no default."""
    text = EXAMPLE.read_text(encoding="utf-8")
    parsed = tomllib.loads(text)
    for key in setting_keys():
        node: object = parsed
        for part in key.split("[]")[0].split("."):
            node = node.get(part) if isinstance(node, dict) else None
        leaf = key.rsplit(".", 1)[-1]
        assert node is not None or re.search(rf"^# {leaf} = ", text, re.M), key


def test_docs_name_every_key_and_variable() -> None:
    """docs/configuration.md names every key, its environment variable and every secret."""
    docs = DOCS.read_text(encoding="utf-8")
    for key in setting_keys():
        assert f"`{key.rsplit('.', 1)[-1].split('[]')[-1]}`" in docs, key
        assert env_var(key) in docs, key
    for variable in SECRET_ENV.values():
        assert variable in docs


# ---------------------------------------------------------------- sources and precedence


def test_toml_overrides_defaults(tmp_path: Path) -> None:
    """Values in the TOML file replace the defaults; untouched keys keep them."""
    settings = load(tmp_path, "[clarify]\nenabled = true\ndigest_threshold = 7\n"
                    '[core]\nurl = "https://core.example:8443"\n')
    assert settings.clarify.enabled is True
    assert settings.clarify.digest_threshold == 7
    assert settings.clarify.max_candidates == 3
    assert settings.core.url == "https://core.example:8443"


def test_env_overrides_toml(tmp_path: Path) -> None:
    """An environment variable wins over the same key in the file."""
    settings = load(tmp_path, "[clarify]\ndigest_threshold = 7\nmax_candidates = 4\n",
                    CLARIFY_BOT_CLARIFY__DIGEST_THRESHOLD="4")
    assert settings.clarify.digest_threshold == 4
    assert settings.clarify.max_candidates == 4


def test_nested_env_variables(tmp_path: Path) -> None:
    """`__` separates nesting levels at any depth, and strings convert to the field's type."""
    settings = load(
        tmp_path,
        CLARIFY_BOT_CLARIFY__QUORUM__CRITICAL_REQUIRED_CONFIRMATIONS="3",
        CLARIFY_BOT_CLARIFY__QUORUM__ENABLED="false",
        CLARIFY_BOT_CLARIFY__QUORUM__ALLOW_STEWARD_OVERRIDE="true",  # §3.7: quorum off needs it
        CLARIFY_BOT_CLARIFY__SEVERITY__ELEVATE__UNDATED="high",
        CLARIFY_BOT_CORE__URL="http://core.internal:9000",
        CLARIFY_BOT_WORKER__POLL_INTERVAL_SECONDS="0.5",
    )
    assert settings.clarify.quorum.critical_required_confirmations == 3
    assert settings.clarify.quorum.enabled is False
    assert settings.clarify.severity.minimum(AmbiguityKind.UNDATED) is Severity.HIGH
    assert settings.core.url == "http://core.internal:9000"
    assert settings.worker.poll_interval_seconds == 0.5


def test_env_json_replaces_a_list_of_tables(tmp_path: Path) -> None:
    """A list of tables can be set from the environment as JSON."""
    settings = load(tmp_path, '[[slack.workspaces]]\nteam_id = "T1"\ntenant = "old"\n',
                    CLARIFY_BOT_SLACK__WORKSPACES='[{"team_id": "T2", "tenant": "acme"}]')
    assert [(w.team_id, w.tenant) for w in settings.slack.workspaces] == [("T2", "acme")]


def test_config_path_from_environment(tmp_path: Path) -> None:
    """CLARIFY_BOT_CONFIG names the file when no path is passed; an explicit path wins."""
    from_env = tmp_path / "env.toml"
    from_env.write_text("[server]\nport = 8001\n", encoding="utf-8")
    explicit = tmp_path / "explicit.toml"
    explicit.write_text("[server]\nport = 8002\n", encoding="utf-8")
    environ = {"CLARIFY_BOT_CONFIG": str(from_env)}
    assert load_settings(None, environ).server.port == 8001
    assert load_settings(explicit, environ).server.port == 8002


def test_missing_config_file_fails(tmp_path: Path) -> None:
    """A named config file that does not exist stops start-up and names the file."""
    missing = tmp_path / "nope.toml"
    with pytest.raises(SettingsError, match=re.escape(str(missing))):
        load_settings(missing, {})


def test_invalid_toml_fails(tmp_path: Path) -> None:
    """A file that is not TOML stops start-up with the parser's position."""
    error = failure(tmp_path, "[clarify\nenabled = true\n")
    assert "not valid TOML" in str(error) and "line 1" in str(error)


def test_single_level_prefixed_variables_are_not_settings(tmp_path: Path) -> None:
    """Names like the CLARIFY_BOT_PORT that Kubernetes injects are ignored, not errors."""
    settings = load(tmp_path, CLARIFY_BOT_PORT="tcp://10.0.0.1:80", CLARIFY_BOT_SERVICE_HOST="x")
    assert settings == Settings()


# ---------------------------------------------------------------- validation messages

INVALID = [
    ("[clarify]\ndigest_threshold = 0", "clarify.digest_threshold", "0",
     "an integer from 1 to 100"),
    ("[clarify]\nescalation_window_hours = 0", "clarify.escalation_window_hours", "0",
     "greater than 0 and at most 8760"),
    ("[clarify]\nescalation_window_hours = 9000", "clarify.escalation_window_hours", "9000",
     "greater than 0 and at most 8760"),
    ("[clarify]\nmax_candidates = 21", "clarify.max_candidates", "21", "from 1 to 20"),
    ("[clarify]\nper_person_daily_cap = 0", "clarify.per_person_daily_cap", "0", "from 1 to"),
    ("[clarify]\ndigest_window_minutes = 1441", "clarify.digest_window_minutes", "1441",
     "from 1 to 1440"),
    ('[clarify]\nenabled = "maybe"', "clarify.enabled", '"maybe"', "true or false"),
    ("[clarify]\ndigest_threshold = true", "clarify.digest_threshold", "true",
     "an integer from 1 to 100"),
    ("[clarify]\ndigest_threshold = 2.5", "clarify.digest_threshold", "2.5",
     "an integer from 1 to 100"),
    ('[clarify]\nchannels = "teams,e@mail"', "clarify.channels", '"teams,e@mail"',
     "one or more of: teams, slack"),
    ("[clarify.quorum]\ncritical_required_confirmations = 11",
     "clarify.quorum.critical_required_confirmations", "11", "an integer from 1 to 10"),
    ('[clarify.quorum]\nrequired_roles = ["admin"]', "clarify.quorum.required_roles",
     '["admin"]', "one or more of: viewer, editor, steward"),
    ('[clarify.severity.elevate]\nundated = "urgent"', "clarify.severity.elevate.undated",
     '"urgent"', "one of: low, normal, high, critical"),
    ('[core]\nurl = "ftp://core"', "core.url", '"ftp://core"', "an http(s) URL"),
    ("[core]\nread_timeout_seconds = -1", "core.read_timeout_seconds", "-1",
     "greater than 0 and at most 300"),
    ('[redis]\nkey_prefix = "has space"', "redis.key_prefix", '"has space"', "1 to 64 characters"),
    ("[worker]\nconcurrency = 0", "worker.concurrency", "0", "an integer from 1 to 64"),
    ("[worker]\nheartbeat_seconds = 40", "worker.heartbeat_seconds", "40",
     "at most half of worker.lease_seconds (60)"),
    ("[server]\nport = 70000", "server.port", "70000", "an integer from 1 to 65535"),
    ('[slack]\nmode = "websocket"', "slack.mode", '"websocket"', "one of: http, socket"),
    ('[[slack.workspaces]]\nteam_id = "acme"\ntenant = "t"', "slack.workspaces[0].team_id",
     '"acme"', "a Slack team id"),
    ('[[slack.workspaces]]\ntenant = "t"', "slack.workspaces[0].team_id", None,
     "team_id or enterprise_id"),
    ('[teams]\napp_id = "bot"', "teams.app_id", '"bot"', "a GUID"),
    ('[store]\nbackend = "sqlite"', "store.backend", '"sqlite"', "one of: memory, redis"),
    ('[audit]\nsink = "jsonl"', "audit.path", None, "a file path when audit.sink is jsonl"),
    ('[log]\nlevel = "loud"', "log.level", '"loud"', "one of: debug, info, warning, error"),
    ("[clarify]\nquorum = 5", "clarify.quorum", "5", "a table"),
    ('[clarify.hours]\ntime_zone = "Mars/Olympus"', "clarify.hours.time_zone",
     '"Mars/Olympus"', "an IANA time zone such as Europe/Berlin"),
    ('[[clarify.hours.tenants]]\ntenant = "acme"\ntime_zone = "W. Europe Standard Time"',
     "clarify.hours.tenants[0].time_zone", '"W. Europe Standard Time"',
     "an IANA time zone such as Europe/Berlin"),
]


@pytest.mark.parametrize(("toml", "key", "shown", "allowed"), INVALID,
                         ids=[case[1] for case in INVALID])
def test_invalid_value_names_key_value_and_allowed(
        tmp_path: Path, toml: str, key: str, shown: str | None, allowed: str) -> None:
    """Each bad value fails with its dotted key, the value given and what is allowed."""
    error = failure(tmp_path, toml + "\n")
    [problem] = error.problems
    assert (problem.key, problem.value) == (key, shown)
    assert allowed in problem.reason
    assert key in str(error) and allowed in str(error)
    assert str(tmp_path / "clarify-bot.toml") in str(error)
    assert isinstance(error, ValueError)


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    """Several bad keys in one file give one exception naming all of them."""
    error = failure(tmp_path, "[clarify]\ndigest_threshold = 0\nmax_candidates = 0\n"
                    "[server]\nport = 0\n")
    assert [p.key for p in error.problems] == [
        "clarify.max_candidates", "clarify.digest_threshold", "server.port"]


def test_env_value_error_names_the_variable(tmp_path: Path) -> None:
    """A bad value from the environment is shown as written and names its variable."""
    error = failure(tmp_path, CLARIFY_BOT_CLARIFY__DIGEST_THRESHOLD="lots")
    assert str(error.problems[0]) == (
        "clarify.digest_threshold = lots: expected an integer from 1 to 100 "
        "(from CLARIFY_BOT_CLARIFY__DIGEST_THRESHOLD)")


def test_url_credentials_refused_and_masked(tmp_path: Path) -> None:
    """A password inside a URL is refused, pointed at its variable, and never repeated."""
    error = failure(tmp_path, '[redis]\nurl = "redis://:hunter2@cache:6379/0"\n')
    assert "hunter2" not in str(error)
    assert "redis://***@cache:6379/0" in str(error)
    assert "REDIS_PASSWORD" in str(error)


@pytest.mark.parametrize(("url", "allowed"), [
    ("memcached://cache:11211", "redis+cluster://"),
    ("redis+cluster://a:7000,b:notaport", "host:port pairs separated by commas"),
    ("redis+cluster://a:7000,b:7001/3", "no database after the cluster's nodes"),
    ("redis+sentinel://s1:26379,s2:26379", "the master's name after the sentinels"),
    ("redis+sentinel://s1:26379/mymaster/db", "the master's name after the sentinels"),
    ("redis+cluster://a:7000?ssl=1", "no query string"),
    ("rediss+sentinel://s1:26379", "the master's name after the sentinels"),
    ("rediss+sentinels://s1:26379/mymaster", "rediss+sentinel://"),
])
def test_a_redis_url_of_no_known_deployment_says_what_is_allowed(
        tmp_path: Path, url: str, allowed: str) -> None:
    """redis.url names one server, a cluster (its seeds) or a Sentinel-watched master; anything
    else fails naming the key and what is allowed."""
    error = failure(tmp_path, f'[redis]\nurl = "{url}"\n')
    [problem] = error.problems
    assert problem.key == "redis.url" and allowed in problem.reason


@pytest.mark.parametrize("url", [
    "redis://127.0.0.1:6379/0", "rediss://cache:6380/1", "unix:///run/redis.sock",
    "redis+cluster://10.0.0.1:7000,10.0.0.2:7001,10.0.0.3:7002", "rediss+cluster://c:7000",
    "redis+sentinel://s1:26379,s2:26379,s3:26379/mymaster", "redis+sentinel://s1/mymaster/2",
    "rediss+sentinel://s1:26380,s2:26380/mymaster",
])
def test_redis_urls_of_each_deployment_are_taken(tmp_path: Path, url: str) -> None:
    assert load(tmp_path, f'[redis]\nurl = "{url}"\n').redis.url == url


def test_a_password_in_a_cluster_url_is_refused_and_never_repeated(tmp_path: Path) -> None:
    error = failure(tmp_path, '[redis]\nurl = "redis+cluster://:hunter2@a:7000,b:7001"\n')
    assert "hunter2" not in str(error) and "REDIS_PASSWORD" in str(error)


def test_a_password_in_a_sentinel_url_is_refused_and_never_repeated(tmp_path: Path) -> None:
    error = failure(tmp_path, '[redis]\nurl = "rediss+sentinel://:hunter2@s1:26379/m"\n')
    assert "hunter2" not in str(error) and "REDIS_PASSWORD" in str(error)


def test_platform_port_wins_over_the_file_and_loses_to_the_explicit_variable(tmp_path: Path
                                                                           ) -> None:
    """$PORT (set by Heroku-like platforms) overrides server.port from the file; an explicit
    CLARIFY_BOT_SERVER__PORT overrides $PORT; a $PORT that is not a port names PORT."""
    toml = "[server]\nport = 3978\n"
    assert load(tmp_path, toml).server.port == 3978
    assert load(tmp_path, toml, PORT="8080").server.port == 8080
    assert load(tmp_path, toml, PORT="8080", CLARIFY_BOT_SERVER__PORT="9000").server.port == 9000
    error = failure(tmp_path, toml, PORT="eighty")
    assert [(p.key, p.source) for p in error.problems] == [("server.port", "PORT")]


def test_duplicate_workspace_mapping_refused(tmp_path: Path) -> None:
    """The same Slack workspace mapped twice is an error rather than a silent first-wins."""
    entry = '[[slack.workspaces]]\nteam_id = "T1"\ntenant = "a"\n'
    error = failure(tmp_path, entry + entry.replace('"a"', '"b"'))
    assert error.problems[0].key == "slack.workspaces"


# ---------------------------------------------------------------- unknown and fixed keys


def test_unknown_key_suggests_the_closest(tmp_path: Path) -> None:
    """A misspelt key is refused, named, and the nearest real key is suggested."""
    error = failure(tmp_path, "[clarify]\ndigest_treshold = 4\n")
    assert str(error.problems[0]).startswith(
        "clarify.digest_treshold: unknown key; did you mean clarify.digest_threshold?")


def test_unknown_env_key_suggests_the_variable(tmp_path: Path) -> None:
    """A misspelt variable is refused and the correct variable name is suggested."""
    error = failure(tmp_path, CLARIFY_BOT_CLARIFY__QUORUM__REQUIRED_ROLE="editor")
    assert "did you mean clarify.quorum.required_roles " \
           "(CLARIFY_BOT_CLARIFY__QUORUM__REQUIRED_ROLES)?" in str(error)


def test_unknown_kind_and_table_keys(tmp_path: Path) -> None:
    """Unknown kinds under elevate and unknown keys in list items are refused with a hint."""
    error = failure(tmp_path, '[clarify.severity.elevate]\nconflicting_date = "high"\n'
                    '[[teams.tenants]]\naad_tenant = "x"\n'
                    f'aad_tenant_id = "{GUID}"\ntenant = "acme"\n')
    text = str(error)
    assert "clarify.severity.elevate.conflicting_date: unknown key; did you mean " \
           "clarify.severity.elevate.conflicting_dates?" in text
    assert "teams.tenants[0].aad_tenant: unknown key; did you mean " \
           "teams.tenants[].aad_tenant_id?" in text


def test_unknown_key_without_a_near_match(tmp_path: Path) -> None:
    """A key resembling nothing is refused without a made-up suggestion."""
    error = failure(tmp_path, "[frobnicator]\nwidgets = 3\n")
    assert str(error.problems[0]).startswith("frobnicator: unknown key (from")


FIXED = ["rbac_gate", "audience_fence", "append_only", "tenant_scoped_identity", "audit",
         "pending_caveat", "history_preserving_correction", "severity_behaviour"]


@pytest.mark.parametrize("name", FIXED)
@pytest.mark.parametrize("table", ["clarify", "clarify.quorum", "clarify.severity"])
def test_spec_fixed_behaviours_are_refused(tmp_path: Path, table: str, name: str) -> None:
    """Behaviours the spec fixes cannot be configured anywhere under [clarify]."""
    error = failure(tmp_path, f"[{table}]\n{name} = false\n")
    [problem] = error.problems
    assert problem.key == f"{table}.{name}"
    assert "fixed by the spec (§8, docs/requirements.md) and cannot be configured" in problem.reason


def test_fixed_behaviour_refused_from_environment(tmp_path: Path) -> None:
    """The environment cannot switch off a fixed behaviour either."""
    error = failure(tmp_path, CLARIFY_BOT_CLARIFY__RBAC_GATE="false")
    assert ("clarify.rbac_gate: the RBAC gate is fixed by the spec (§8, docs/requirements.md)"
            in str(error))


def test_top_level_audit_table_is_the_sink_not_the_fixed_behaviour(tmp_path: Path) -> None:
    """[audit] chooses where events go; only [clarify] audit (switching them off) is refused."""
    assert load(tmp_path, '[audit]\nsink = "jsonl"\npath = "a.jsonl"\n').audit.path == Path(
        "a.jsonl")


# ---------------------------------------------------------------- secrets

SECRETS = {
    "CLARIFY_BOT_CORE_TOKEN": "core-token-Zq1",
    "SLACK_BOT_TOKEN": "xoxb-bot-Zq2",
    "SLACK_SIGNING_SECRET": "signing-Zq3",
    "SLACK_APP_TOKEN": "xapp-app-Zq4",
    "TEAMS_APP_PASSWORD": "teams-Zq5",
    "REDIS_PASSWORD": "redis-Zq6",
    "REDIS_SENTINEL_PASSWORD": "sentinel-Zq9",
    "CLARIFY_BOT_ACTION_SIGNING_KEY": "k" * 31 + "Zq7",
    "CLARIFY_BOT_API_KEY": "api-key-Zq8",
    "SLACK_CLIENT_SECRET": "client-secret-Zq10",
    "CLARIFY_BOT_INSTALL_LINK_KEY": "l" * 31 + "Zq11",
    "CLARIFY_BOT_DATABASE_URL": "postgresql://bot:pw-Zq12@db.internal:5432/clarify",
    "CLARIFY_BOT_PSEUDONYM_KEY": "p" * 31 + "Zq13",
    # 32 bytes in base64 (`openssl rand -base64 32`), containing "Zq"
    "CLARIFY_BOT_SLACK_TOKEN_KEY": "Zq14" + "A" * 39 + "=",
}


def test_secrets_come_from_the_environment(tmp_path: Path) -> None:
    """Each secret is read from its own variable into a SecretStr."""
    secrets = load(tmp_path, **SECRETS).secrets
    for name, variable in SECRET_ENV.items():
        assert secrets.require(name) == SECRETS[variable]


def test_secrets_never_in_repr_str_or_dump(tmp_path: Path) -> None:
    """No rendering of the settings object contains a secret value."""
    settings = load(tmp_path, **SECRETS)
    renderings = [repr(settings), str(settings), settings.model_dump_json(),
                  str(settings.model_dump(mode="json")), repr(settings.secrets)]
    for text in renderings:
        assert "Zq" not in text


@pytest.mark.parametrize(("toml", "key", "variable"), [
    ('[slack]\nsigning_secret = "Zq-leak"', "slack.signing_secret", "SLACK_SIGNING_SECRET"),
    ('[slack]\nbot_token = "Zq-leak"', "slack.bot_token", "SLACK_BOT_TOKEN"),
    ('[core]\ntoken = "Zq-leak"', "core.token", "CLARIFY_BOT_CORE_TOKEN"),
    ('[redis]\npassword = "Zq-leak"', "redis.password", "REDIS_PASSWORD"),
    ('[redis]\nsentinel_password = "Zq-leak"', "redis.sentinel_password",
     "REDIS_SENTINEL_PASSWORD"),
    ('[teams]\napp_password = "Zq-leak"', "teams.app_password", "TEAMS_APP_PASSWORD"),
    ('[teams]\nMicrosoftAppPassword = "Zq-leak"', "teams.MicrosoftAppPassword",
     "TEAMS_APP_PASSWORD"),
    ('action_signing_key = "Zq-leak"', "action_signing_key", "CLARIFY_BOT_ACTION_SIGNING_KEY"),
    ('[secrets]\nslack_bot_token = "Zq-leak"', "secrets", None),
    ('[[slack.workspaces]]\nteam_id = "T1"\ntenant = "a"\nclient_secret = "Zq-leak"',
     "slack.workspaces[0].client_secret", None),
])
def test_secret_in_toml_is_refused_without_echo(
        tmp_path: Path, toml: str, key: str, variable: str | None) -> None:
    """A secret anywhere in the file stops start-up, names the key, and hides the value."""
    error = failure(tmp_path, toml + "\n")
    [problem] = error.problems
    assert problem.key == key and problem.value is None
    assert "secrets are read from the environment or secret files only" in problem.reason
    assert variable is None or f"set {variable} instead" in problem.reason
    assert "Zq" not in str(error) and "Zq" not in repr(error)


def test_secret_refused_from_a_settings_variable(tmp_path: Path) -> None:
    """CLARIFY_BOT_SLACK__SIGNING_SECRET is refused in favour of SLACK_SIGNING_SECRET."""
    error = failure(tmp_path, CLARIFY_BOT_SLACK__SIGNING_SECRET="Zq-leak")
    assert "set SLACK_SIGNING_SECRET instead" in str(error) and "Zq" not in str(error)


def test_malformed_secret_error_hides_value(tmp_path: Path) -> None:
    """A secret of the wrong shape is named by its variable, its value never shown."""
    error = failure(tmp_path, SLACK_BOT_TOKEN="xoxp-Zq-user", SLACK_APP_TOKEN="xoxb-Zq",
                    CLARIFY_BOT_ACTION_SIGNING_KEY="Zq-short")
    assert [p.key for p in error.problems] == [
        "SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "CLARIFY_BOT_ACTION_SIGNING_KEY"]
    assert all(p.value is None for p in error.problems)
    assert "starting with xoxb-" in str(error) and "Zq" not in str(error)
    assert error.__cause__ is None and error.__context__ is None


def test_empty_secret_is_unset(tmp_path: Path) -> None:
    """An empty variable counts as unset, so require() names it."""
    settings = load(tmp_path, SLACK_SIGNING_SECRET="")
    with pytest.raises(SettingsError, match="SLACK_SIGNING_SECRET: not set"):
        settings.secrets.require("slack_signing_secret")


def test_missing_secrets_follow_the_configuration(tmp_path: Path) -> None:
    """Which secrets are required depends on the channels and the Slack mode."""
    assert load(tmp_path).missing_secrets() == (
        "CLARIFY_BOT_CORE_TOKEN", "CLARIFY_BOT_ACTION_SIGNING_KEY", "SLACK_BOT_TOKEN",
        "SLACK_SIGNING_SECRET")
    socket = load(tmp_path, f'[slack]\nmode = "socket"\n[teams]\napp_id = "{GUID}"\n'
                  f'app_tenant_id = "{GUID}"\n')
    assert socket.missing_secrets()[-2:] == ("SLACK_APP_TOKEN", "TEAMS_APP_PASSWORD")
    assert load(tmp_path, **SECRETS).missing_secrets() == ()
    with pytest.raises(SettingsError, match="CLARIFY_BOT_CORE_TOKEN: not set"):
        load(tmp_path).require_secrets()


# ---------------------------------------------------------------- channels


@pytest.mark.parametrize(("written", "parsed"), [
    ('"slack"', (Channel.SLACK,)),
    ('"slack,teams"', (Channel.SLACK, Channel.TEAMS)),
    ('" Teams , slack "', (Channel.TEAMS, Channel.SLACK)),
    ('["slack", "teams"]', (Channel.SLACK, Channel.TEAMS)),
])
def test_channels_parse_in_order(tmp_path: Path, written: str, parsed: tuple[Channel]) -> None:
    """Channels are a comma-separated string or a list, kept in the order written."""
    assert load(tmp_path, f"[clarify]\nchannels = {written}\n").clarify.channels == parsed


@pytest.mark.parametrize("written", ['""', '"slack,slack"', '"Sl@ck"', "[]", '" , "'])
def test_bad_channels_refused(tmp_path: Path, written: str) -> None:
    """Empty, duplicated or malformed channels fail and say what is allowed."""
    error = failure(tmp_path, f"[clarify]\nchannels = {written}\n")
    assert error.problems[0].key == "clarify.channels"
    assert "one or more of: teams, slack" in str(error)


def test_channels_from_environment(tmp_path: Path) -> None:
    """CLARIFY_BOT_CLARIFY__CHANNELS takes the same comma-separated form."""
    settings = load(tmp_path, CLARIFY_BOT_CLARIFY__CHANNELS="slack")
    assert settings.clarify.channels == (Channel.SLACK,)


# ---------------------------------------------------------------- tenant mapping


def test_slack_tenant_listed_team_then_whole_org(tmp_path: Path) -> None:
    """A listed team maps with or without its org named (never with another org); an org-only
    entry covers the org's other teams and team-less requests; anything else maps to None."""
    slack = load(tmp_path, """
[[slack.workspaces]]
enterprise_id = "E1"
tenant = "org"
[[slack.workspaces]]
team_id = "T1"
enterprise_id = "E1"
tenant = "both"
[[slack.workspaces]]
team_id = "T2"
tenant = "team"
""").slack
    assert slack.tenant_for(team_id="T1", enterprise_id="E1") == "both"
    assert slack.tenant_for(team_id="T1", enterprise_id=None) == "both"
    assert slack.tenant_for(team_id="T1", enterprise_id="E2") is None
    assert slack.tenant_for(team_id="T2", enterprise_id=None) == "team"
    assert slack.tenant_for(team_id="T2", enterprise_id="E7") == "team"
    assert slack.tenant_for(team_id="T9", enterprise_id="E1") == "org"
    assert slack.tenant_for(team_id=None, enterprise_id="E1") == "org"
    assert slack.tenant_for(team_id="T9", enterprise_id=None) is None
    assert slack.tenant_for(team_id=None, enterprise_id=None) is None


def test_slack_team_listed_twice_refused(tmp_path: Path) -> None:
    """One team under two entries (with and without its org) is an error, not a precedence."""
    error = failure(tmp_path, '[[slack.workspaces]]\nteam_id = "T1"\ntenant = "a"\n'
                    '[[slack.workspaces]]\nteam_id = "T1"\nenterprise_id = "E1"\ntenant = "b"\n')
    assert error.problems[0].key == "slack.workspaces"


def test_teams_tenant_mapping(tmp_path: Path) -> None:
    """An Entra tenant id maps to its tenant whatever its letter case; unmapped gives None."""
    teams = load(tmp_path, f'[[teams.tenants]]\naad_tenant_id = "{GUID}"\ntenant = "acme"\n').teams
    assert teams.tenant_for(GUID.upper()) == "acme"
    assert teams.tenant_for("00000000-0000-0000-0000-000000000000") is None


@pytest.mark.parametrize(("env", "key"), [
    ({"CLARIFY_BOT_CLARIFY__HOURS__START": "25:00"}, "clarify.hours.start"),
    ({"CLARIFY_BOT_CLARIFY__HOURS__START": "8"}, "clarify.hours.start"),
    ({"CLARIFY_BOT_CLARIFY__HOURS__END": "07:00"}, "clarify.hours.end"),
    ({"CLARIFY_BOT_CLARIFY__HOURS__DAYS": "funday"}, "clarify.hours.days"),
    ({"CLARIFY_BOT_CLARIFY__HOURS__TIME_ZONE": "Mars/Olympus"}, "clarify.hours.time_zone"),
    ({"CLARIFY_BOT_CLARIFY__HOURS__TENANTS":
      '[{"tenant": "globex", "time_zone": "Mars/Olympus"}]'},
     "clarify.hours.tenants[0].time_zone"),
    ({"CLARIFY_BOT_CLARIFY__HOURS__TENANTS": '[{"tenant": "globex", "start": "9:0"}]'},
     "clarify.hours.tenants[0].start"),
])
def test_a_bad_hours_key_is_reported_under_its_own_name(env: dict[str, str], key: str) -> None:
    """A bad hours key is reported under its own name (a bad `hours.start` under `hours.start`, not
    `hours.days`); a zone is one the IANA database names (one validator for every zone setting)."""
    with pytest.raises(SettingsError) as refused:
        load_settings(None, environ=env)
    assert [p.key for p in refused.value.problems] == [key]
    if key.endswith("time_zone"):
        assert "an IANA time zone" in str(refused.value)


def test_away_words_from_a_file_and_the_environment(tmp_path: Path) -> None:
    """``[clarify.away]``: on by default with Slack's own away presets; the lists come as a TOML
    list or, from the environment, comma-separated, each word stripped, empty ones left out,
    the case kept (the matching ignores it); an over-long word is refused by name."""
    away = load_settings(None, {}).clarify.away
    assert away.enabled and away.dnd
    assert ":palm_tree:" in away.status_emoji and ":airplane:" not in away.status_emoji
    assert {"out of office", "urlaub", "en congé"} <= set(away.status_text)
    listed = load(tmp_path, '[clarify.away]\nstatus_text = ["Out of Office", " Urlaub "]\n')
    assert listed.clarify.away.status_text == ("Out of Office", "Urlaub")
    from_env = load(tmp_path, "", CLARIFY_BOT_CLARIFY__AWAY__STATUS_EMOJI=":palm_tree:, ,:x:",
                    CLARIFY_BOT_CLARIFY__AWAY__ENABLED="false")
    assert from_env.clarify.away.status_emoji == (":palm_tree:", ":x:")
    assert not from_env.clarify.away.enabled
    problem = failure(tmp_path, f'[clarify.away]\nstatus_text = ["{"x" * 101}"]\n')
    assert "clarify.away.status_text" in str(problem)
