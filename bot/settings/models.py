"""The settings tables: the spec's [clarify] tables (§5, §8), the bot's own tables, and the root
``Settings`` that holds them and the secrets.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, BeforeValidator, model_validator
from pydantic_core import PydanticCustomError

from bot.core.extensions import Extension, parse_setting
from bot.core.models import AmbiguityKind, Channel, QuorumPolicy, Role, Severity
from bot.core.policy import critical_quorum_problem
from bot.settings.errors import Problem, SettingsError
from bot.settings.fields import (
    Channels,
    ExtensionNames,
    Guid,
    Int,
    MaybeSeverity,
    Num,
    Roles,
    TenantId,
    _allowed,
    _choice,
    _cross,
    _csv,
    _ints,
    _lower,
    _seconds,
    _Table,
    _url,
)
from bot.settings.secrets import _UNSET, SECRET_ENV, Secrets
from bot.store import keys as store_keys
from bot.store.connect import BadRedisUrl, parse_redis_url

# ---------------------------------------------------------------- spec §8 tables


class QuorumSettings(_Table):
    enabled: bool = True
    critical_required_confirmations: Int = _ints(2, 1, 10)
    required_roles: Roles = _allowed(
        (Role.EDITOR,), "one or more of: viewer, editor, steward (comma-separated, no duplicates)")
    allow_steward_override: bool = True

    @model_validator(mode="after")
    def _critical_never_binds_on_one_answer(self) -> QuorumSettings:
        problem = critical_quorum_problem(
            enabled=self.enabled,
            critical_required_confirmations=self.critical_required_confirmations,
            allow_steward_override=self.allow_steward_override,
            override_set_explicitly="allow_steward_override" in self.model_fields_set,
        )
        if problem is not None:
            raise _cross(problem.field, getattr(self, problem.field), problem.allowed)
        return self


class Elevations(_Table):
    """Kind → minimum severity; the field names are exactly ``AmbiguityKind``'s values."""

    relative_date: MaybeSeverity = _choice(None, *Severity)
    conflicting_dates: MaybeSeverity = _choice(None, *Severity)
    undated: MaybeSeverity = _choice(None, *Severity)
    low_confidence_extraction: MaybeSeverity = _choice(None, *Severity)


class SeveritySettings(_Table):
    high_notifies_steward: bool = True
    # the steward's high-severity notices of this many seconds go out in one message, opened
    # by the first notice of a quiet period (0: each housekeeping pass sends what is queued)
    steward_notice_window_seconds: Int = _ints(60, 0, 3600)
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
    # the HTTP connection pool to the core, per process; a request past it waits for a free one
    max_connections: Int = _ints(32, 1, 1000)
    max_keepalive_connections: Int = _ints(32, 0, 1000)
    # which contract extensions the core offers: "auto" finds out (its OpenAPI document, else a
    # probe per extension) at start and every extensions_refresh_seconds; "none" uses the
    # baseline only; "all", or a list of names, is used as given (docs/core-contract.md)
    extensions: ExtensionNames = _allowed(
        ("auto",), "auto, none, all, or extension names (comma-separated): "
        + ", ".join(e.value for e in Extension))
    extensions_refresh_seconds: Num = _seconds(600.0, 86400)

    def extension_set(self) -> frozenset[Extension] | None:
        """What the client is given: None to find out, else the fixed set."""
        return parse_setting(list(self.extensions) if len(self.extensions) > 1
                             else self.extensions[0])


def _redis_url(value: str) -> str:
    try:
        parse_redis_url(value)
    except BadRedisUrl as exc:  # its message says what is allowed and quotes nothing
        raise PydanticCustomError("redis_url", str(exc)) from None
    return value


class RedisSettings(_Table):
    url: Annotated[str, AfterValidator(_redis_url)] = _allowed(
        "redis://127.0.0.1:6379/0",
        "a redis://, rediss:// or unix:// URL (one server), redis+cluster://host:port,... "
        "(a Redis Cluster) or redis+sentinel://host:port,.../master-name[/db] (Sentinel), "
        "rediss+cluster:// or rediss+sentinel:// over TLS, without a password")
    key_prefix: str = _allowed("clarify-bot:", "1 to 64 characters from A-Z a-z 0-9 . _ : -",
                               pattern=r"^[A-Za-z0-9._:-]{1,64}$")


class WorkerSettings(_Table):
    concurrency: Int = _ints(4, 1, 64)
    # hold as many jobs again leased ahead of the slots (each heartbeating), so a freed slot
    # starts the next job without waiting for a poll
    lease_ahead: bool = False
    poll_interval_seconds: Num = _seconds(2.0, 300)
    lease_seconds: Int = _ints(60, 10, 3600)
    heartbeat_seconds: Int = _ints(20, 1, 1800)
    # how much a `--role worker` process lowers its own CPU priority (a nice increment; 0 keeps
    # it): forwarding and delivery are background work, acknowledgements are not
    nice: Int = _ints(10, 0, 19)
    # where a `--role worker` process serves /healthz, /readyz and /metrics (on server.host);
    # 0 opens no port (its probes and metrics then have nowhere to go)
    health_port: Int = _ints(0, 0, 65535)

    @model_validator(mode="after")
    def _heartbeat_inside_lease(self) -> WorkerSettings:
        # At most half the lease, so one late heartbeat does not lose the lease.
        if self.heartbeat_seconds * 2 > self.lease_seconds:
            raise _cross("heartbeat_seconds", self.heartbeat_seconds,
                         f"at most half of worker.lease_seconds ({self.lease_seconds})")
        return self


class AnswersSettings(_Table):
    """The answer outbox: its consumers and how an entry is retried, then parked."""

    consumers: Int = _ints(8, 1, 256)
    followup_workers: Int = _ints(2, 1, 64)
    poll_seconds: Num = _seconds(0.5, 60)
    lease_seconds: Int = _ints(60, 10, 3600)
    max_failures: Int = _ints(5, 1, 100)
    backoff_base_seconds: Num = _seconds(2.0, 3600)
    backoff_cap_seconds: Num = _seconds(300.0, 86400)
    cache_seconds: Num = _allowed(10.0, "a number of seconds from 0 (off) to 300", ge=0, le=300)
    queue_cache_seconds: Num = _allowed(30.0, "a number of seconds from 0 (off) to 600", ge=0,
                                        le=600)


class LimitsSettings(_Table):
    """Abuse limits on the callback endpoints (docs/reliability.md, "Abuse limits")."""

    # refusals (bad signature or token, malformed or oversized body) one client address may
    # cause before it is refused unread; 0: off. Per process.
    ip_refusals_per_second: Num = _allowed(1.0, "a number from 0 (off) to 10000", ge=0, le=10000)
    ip_refusal_burst: Int = _ints(100, 1, 1_000_000)
    # proxies in front of the bot that append the client's address to X-Forwarded-For (0: the
    # connecting address is the client's, and X-Forwarded-For is ignored)
    trusted_proxy_hops: Int = _ints(0, 0, 10)
    # callbacks one verified person may make; 0: off. Shared by replicas on Redis.
    user_per_second: Num = _allowed(1.0, "a number from 0 (off) to 10000", ge=0, le=10000)
    user_burst: Int = _ints(60, 1, 1_000_000)
    # tasks an adapter runs after acknowledging, per platform and process; 0: no cap
    max_outstanding_tasks: Int = _ints(1000, 0, 1_000_000)


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


class SlackRates(_Table):
    """How fast the bot calls Slack's Web API, per workspace and method (Slack's published
    tiers, docs/slack.md): every replica takes from the same buckets in the store."""

    # chat.postMessage is Slack's "special" tier: about 1 per second per channel (here: per
    # person's DM) with short bursts, plus a workspace-wide limit Slack does not publish
    post_per_second: Num = _allowed(5.0, "messages per second from 0.1 to 1000", ge=0.1, le=1000)
    post_burst: Int = _ints(20, 1, 10000)
    post_per_dm_per_second: Num = _allowed(1.0, "messages per second from 0.1 to 100",
                                           ge=0.1, le=100)
    post_per_dm_burst: Int = _ints(3, 1, 100)
    # Tier 3 (50+ per minute): chat.update, conversations.open, conversations.history
    tier3_per_minute: Int = _ints(50, 1, 100000)
    # Tier 4 (100+ per minute): views.open, chat.postEphemeral
    tier4_per_minute: Int = _ints(100, 1, 100000)
    # tokens of every bucket that bulk delivery leaves to clicks (a card's update after an
    # answer, a digest's next page, a modal): interactive work never queues behind cards
    interactive_reserve: Int = _ints(2, 1, 1000)
    # false: no pacing of our own (benchmarks against a fake); Slack's 429s are still obeyed
    paced: bool = True


SLACK_SCOPES = ("chat:write", "im:write", "im:history", "users:read")


class SlackOAuthSettings(_Table):
    """Slack as a distributed app (docs/slack.md, "One bot for many workspaces"): installed
    through Slack's OAuth v2 flow from operator-issued install links, a bot token per
    installation kept in the database, rotated before it expires."""

    # false: the single-workspace mode (SLACK_BOT_TOKEN); the two modes are exclusive
    enabled: bool = False
    # the app's Client ID (Basic Information → App Credentials); not a secret
    client_id: str | None = _allowed(None, "the app's Client ID, such as 1234567890.1234567890",
                                     pattern=r"^[0-9]+\.[0-9]+$")
    # the bot's public base URL: install links and the redirect URL are made from it
    public_url: Annotated[str, _url(("http", "https"), None)] | None = _allowed(
        None, "the bot's public http(s) base URL, such as https://clarify.example.com")
    scopes: Annotated[tuple[str, ...], BeforeValidator(_csv)] = _allowed(
        SLACK_SCOPES, "bot scopes, comma-separated (the manifest's)")
    install_path: str = _allowed("/slack/install", "a path starting with /",
                                 pattern=r"^/[A-Za-z0-9/_.-]*$")
    redirect_path: str = _allowed("/slack/oauth_redirect", "a path starting with /",
                                  pattern=r"^/[A-Za-z0-9/_.-]*$")
    authorize_url: Annotated[str, _url(("http", "https"), None)] = _allowed(
        "https://slack.com/oauth/v2/authorize", "an http(s) URL without credentials")
    # a rotating token is refreshed once it expires within this many minutes (Slack's tokens
    # live 12 hours; Bolt refreshes 2 hours ahead)
    refresh_before_minutes: Int = _ints(120, 1, 600)
    # how often the worker looks for tokens to refresh, and waits after a failed refresh
    refresh_check_seconds: Num = _seconds(60.0, 3600)
    # how long an install link is valid when `slack install-link` is not told otherwise
    link_days: Num = _allowed(7.0, "a number of days greater than 0 and at most 90", gt=0,
                              le=90)
    # how long another process may take to see an installation, its removal or its pause
    # (each reads the installations again this often)
    directory_seconds: Num = _seconds(10.0, 600)

    @property
    def redirect_uri(self) -> str | None:
        return None if self.public_url is None else \
            self.public_url.rstrip("/") + self.redirect_path

    @property
    def install_url(self) -> str | None:
        return None if self.public_url is None else \
            self.public_url.rstrip("/") + self.install_path


class SlackSettings(_Table):
    mode: Literal["http", "socket"] = _choice("http", "http", "socket")
    api_url: Annotated[str, _url(("http", "https"), "SLACK_BOT_TOKEN")] = _allowed(
        "https://slack.com/api/", "an http(s) URL without credentials")
    workspaces: tuple[SlackWorkspace, ...] = ()
    rates: SlackRates = SlackRates()
    oauth: SlackOAuthSettings = SlackOAuthSettings()

    @model_validator(mode="after")
    def _distributed(self) -> SlackSettings:
        oauth = self.oauth
        if not oauth.enabled:
            return self
        if self.mode != "http":
            raise _cross("mode", self.mode, "http while slack.oauth.enabled (installs come back "
                         "to the redirect URL over HTTPS)")
        if self.workspaces:
            raise _cross("workspaces", None, "none while slack.oauth.enabled (each "
                         "installation is bound to its tenant by its install link)")
        for name in ("client_id", "public_url"):
            if getattr(oauth, name) is None:
                raise _cross(f"oauth.{name}", None, "set while slack.oauth.enabled ("
                             + ("the app's Client ID" if name == "client_id"
                                else "the bot's public base URL") + ")")
        return self

    @property
    def distributed(self) -> bool:
        """Installed per workspace through OAuth (else the single token of SLACK_BOT_TOKEN)."""
        return self.oauth.enabled

    @model_validator(mode="after")
    def _unique(self) -> SlackSettings:
        # a workspace belongs to one org, so one entry per team; one entry per whole org
        teams = [w.team_id for w in self.workspaces if w.team_id is not None]
        orgs = [w.enterprise_id for w in self.workspaces if w.team_id is None]
        if len(set(teams)) != len(teams) or len(set(orgs)) != len(orgs):
            raise _cross("workspaces", None,
                         "each team_id at most once, and each enterprise-only entry at most once")
        return self

    def tenant_for(self, *, team_id: str | None, enterprise_id: str | None) -> str | None:
        """The tenant of a Slack workspace (a verified callback's or an alias's), or None.

        A listed team decides, whether or not the request names its org (team ids are unique
        across Slack), unless the request names another org than the entry; an entry with only
        an enterprise id covers the org's other workspaces and requests naming no team. Anything
        else is unmapped (deny by default). The payload side is ``adapters.slack.payloads.who``.
        """
        listed = next((w for w in self.workspaces if team_id and w.team_id == team_id), None)
        if listed is not None:
            other_org = None not in (listed.enterprise_id, enterprise_id) \
                and listed.enterprise_id != enterprise_id
            return None if other_org else listed.tenant
        if enterprise_id is None:
            return None
        return next((w.tenant for w in self.workspaces
                     if w.team_id is None and w.enterprise_id == enterprise_id), None)


class TeamsTenant(_Table):
    aad_tenant_id: Guid = _allowed(..., "an Entra (AAD) tenant id, a GUID")
    tenant: TenantId = _allowed(..., "a tenant id (1-200 of A-Z a-z 0-9 . _ : @ -)")


TeamsAppType = Literal["single-tenant", "multi-tenant", "managed-identity"]
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
_HTTPS_URL = "an https URL without credentials"


class TeamsPackageSettings(_Table):
    """What ``clarify-bot teams-package`` writes into the app's manifest.json (the URLs have no
    defaults: Teams shows them to every person who installs the app)."""

    name: str = _allowed("Clarify", "1-30 characters", min_length=1, max_length=30)
    full_name: str = _allowed("Clarify: one-tap date questions", "1-100 characters",
                              min_length=1, max_length=100)
    developer: str = _allowed("Clarify", "1-32 characters", min_length=1, max_length=32)
    website_url: Annotated[str, _url(("https",), None)] | None = _allowed(
        None, _HTTPS_URL)
    privacy_url: Annotated[str, _url(("https",), None)] | None = _allowed(
        None, _HTTPS_URL)
    terms_url: Annotated[str, _url(("https",), None)] | None = _allowed(
        None, _HTTPS_URL)
    public_url: Annotated[str, _url(("https",), None)] | None = _allowed(
        None, "the bot's public https base URL (its host becomes the app's valid domain)")
    version: str = _allowed("1.0.0", "a version such as 1.0.0 (raise it for every upload)",
                            pattern=r"^\d{1,5}\.\d{1,5}\.\d{1,5}$")
    teams_app_id: Guid | None = _allowed(
        None, "the Teams app id, a GUID (unset: the bot's app_id)")
    accent_color: str = _allowed("#2E5AAC", "a colour such as #2E5AAC",
                                 pattern=r"^#[0-9a-fA-F]{6}$")


class TeamsRates(_Table):
    """How fast the bot sends through the Bot Connector (Teams' limits per bot, docs/teams.md):
    every replica takes from the same buckets in the store."""

    # per conversation (a person's 1:1 chat): 7 in 1 s, 8 in 2 s, 60 in 30 s, 1,800 an hour;
    # a burst of 7 refilled at the hourly rate keeps all four
    conversation_per_second: Num = _allowed(0.5, "sends per second from 0.01 to 100",
                                            ge=0.01, le=100)
    conversation_burst: Int = _ints(7, 1, 100)
    # per app and tenant the rate is ``teams.tenant_sends_per_second``; its burst here
    tenant_burst: Int = _ints(30, 1, 10000)
    # tokens of every bucket that bulk delivery leaves to clicks (a card's update after an
    # answer, a note): interactive work never queues behind cards
    interactive_reserve: Int = _ints(2, 1, 1000)
    # false: no pacing of our own (benchmarks against a fake); Teams' 429s are still obeyed
    paced: bool = True


class TeamsSettings(_Table):
    """The bot's Entra app and the tenants it serves (docs/teams.md, "App types")."""

    # single-tenant: app_id + app_tenant_id + TEAMS_APP_PASSWORD; multi-tenant: app_id +
    # TEAMS_APP_PASSWORD; managed-identity: app_id (the user-assigned identity's client id) +
    # app_tenant_id, no secret
    app_type: TeamsAppType = _choice("single-tenant", "single-tenant", "multi-tenant",
                                     "managed-identity")
    app_id: Guid | None = _allowed(None, "the bot's Entra app (client) id, a GUID")
    app_tenant_id: Guid | None = _allowed(None, "the Entra tenant id of the app registration")
    # no token checked at all: only for a local run (the Agents Playground) with no app id
    anonymous: bool = False
    tenants: tuple[TeamsTenant, ...] = ()
    # where 1:1 conversations are opened when no conversation reference is stored for a person
    service_url: Annotated[str, _url(("http", "https"), "TEAMS_APP_PASSWORD")] = _allowed(
        "https://smba.trafficmanager.net/teams/", "the Bot Connector service URL (https)")
    # Teams allows about 30 requests a second per app and tenant (some say 50)
    tenant_sends_per_second: Num = _allowed(
        30.0, "a number of sends per second greater than 0 and at most 100", gt=0, le=100)
    rates: TeamsRates = TeamsRates()
    package: TeamsPackageSettings = TeamsPackageSettings()

    @model_validator(mode="after")
    def _unique(self) -> TeamsSettings:
        ids = [t.aad_tenant_id.lower() for t in self.tenants]
        if len(set(ids)) != len(ids):
            raise _cross("tenants", None, "each aad_tenant_id at most once")
        return self

    @model_validator(mode="after")
    def _app_fits_its_type(self) -> TeamsSettings:
        if self.anonymous and self.app_id is not None:
            raise _cross("anonymous", True, "false while teams.app_id is set (anonymous is for "
                         "a local run with no app id)")
        if self.app_id is not None and self.app_tenant_id is None \
                and self.app_type != "multi-tenant":
            raise _cross("app_tenant_id", None,
                         f"the Entra tenant id of the app registration (a {self.app_type} app "
                         "needs it)")
        return self

    @property
    def needs_password(self) -> bool:
        """TEAMS_APP_PASSWORD (the app's client secret) is needed: an app id that is not a
        managed identity."""
        return self.app_id is not None and self.app_type != "managed-identity"

    def connection_problem(self) -> Problem | None:
        """Why Teams cannot be mounted as configured, or None: without an app id only an
        explicitly anonymous (local) run is allowed."""
        if self.app_id is None and not self.anonymous:
            return Problem("teams.app_id", None, "the bot's Entra app (client) id, a GUID "
                           "(or teams.anonymous = true for a local run without one)")
        return None

    def tenant_for(self, aad_tenant_id: str) -> str | None:
        """The tenant of a verified Teams activity, or None (deny by default)."""
        wanted = aad_tenant_id.lower()
        return next((t.tenant for t in self.tenants if t.aad_tenant_id.lower() == wanted), None)


class StoreSettings(_Table):
    backend: Literal["memory", "redis"] = _choice("redis", "memory", "redis")
    # how long per-person state lives (docs/reliability.md, "Scale-out")
    slot_ttl_days: Int = _ints(8, 1, 365)
    cap_ttl_hours: Int = _ints(48, 25, 720)
    cards_ttl_days: Int = _ints(30, 1, 365)
    order_ttl_days: Int = _ints(7, 1, 365)
    conversation_ttl_days: Int = _ints(400, 1, 3650)
    outbox_max_entries: Int = _ints(store_keys.OUTBOX_MAX_ENTRIES, 100, 10_000_000)
    # replicas that must hold an answer before its click is acknowledged (WAIT; one server or
    # Sentinel's master, not a cluster), and how long to wait for them (docs/reliability.md)
    outbox_replicas: Int = _ints(0, 0, 16)
    outbox_replica_wait_ms: Int = _ints(250, 10, 2000)

    def ttls(self) -> store_keys.Ttls:
        day = store_keys.DAY
        return store_keys.Ttls(slot=self.slot_ttl_days * day, cap=self.cap_ttl_hours * 3600,
                               cards=self.cards_ttl_days * day, order=self.order_ttl_days * day,
                               conversation=self.conversation_ttl_days * day)


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



class Settings(_Table):
    clarify: ClarifySettings = ClarifySettings()
    core: CoreSettings = CoreSettings()
    redis: RedisSettings = RedisSettings()
    worker: WorkerSettings = WorkerSettings()
    answers: AnswersSettings = AnswersSettings()
    server: ServerSettings = ServerSettings()
    limits: LimitsSettings = LimitsSettings()
    slack: SlackSettings = SlackSettings()
    teams: TeamsSettings = TeamsSettings()
    store: StoreSettings = StoreSettings()
    audit: AuditSettings = AuditSettings()
    log: LogSettings = LogSettings()
    secrets: Secrets = Secrets()

    @model_validator(mode="after")
    def _answers_fit_the_core_pool(self) -> Settings:
        # every consumer, follow-up worker and job holds at most one core request at a time
        busy = self.answers.consumers + self.answers.followup_workers + self.worker.concurrency
        if busy > self.core.max_connections:
            raise _cross("answers.consumers", self.answers.consumers,
                         "answers.consumers + answers.followup_workers + worker.concurrency at "
                         f"most core.max_connections ({self.core.max_connections})")
        return self

    @model_validator(mode="after")
    def _anonymous_only_locally(self) -> Settings:
        if self.teams.anonymous and self.server.host not in LOOPBACK_HOSTS:
            raise _cross("teams.anonymous", True, "false while server.host listens beyond this "
                         f"machine ({self.server.host}); anonymous is for local runs only")
        return self

    def needed_secrets(self) -> tuple[str, ...]:
        """The secrets (``Secrets`` field names) this configuration cannot serve without."""
        needed = ["core_token", "action_signing_key"]
        if Channel.SLACK in self.clarify.channels:
            socket = self.slack.mode == "socket"
            needed += ["slack_client_secret", "install_link_key", "database_url"] \
                if self.slack.distributed else ["slack_bot_token"]
            needed += ["slack_app_token" if socket else "slack_signing_secret"]
        if Channel.TEAMS in self.clarify.channels and self.teams.needs_password:
            needed.append("teams_app_password")
        return tuple(needed)

    def missing_secrets(self) -> tuple[str, ...]:
        """Environment variables this configuration needs that are unset."""
        return tuple(SECRET_ENV[n] for n in self.needed_secrets()
                     if getattr(self.secrets, n) is None)

    def require_secrets(self) -> None:
        """Fail start-up, naming every missing variable, before anything is sent; and a bot
        token beside a distributed app (the modes are exclusive)."""
        problems = [Problem(m, None, _UNSET) for m in self.missing_secrets()]
        if self.slack.distributed and self.secrets.slack_bot_token is not None \
                and Channel.SLACK in self.clarify.channels:
            problems.append(Problem(SECRET_ENV["slack_bot_token"], None, "unset while "
                                    "slack.oauth.enabled: each installation has its own token "
                                    "(the single-workspace and distributed modes are "
                                    "exclusive)"))
        if problems:
            raise SettingsError(problems)

    @property
    def slack_mode(self) -> str:
        """Which Slack mode is active, in words (check-config prints it)."""
        if Channel.SLACK not in self.clarify.channels:
            return "off (slack not in clarify.channels)"
        if self.slack.distributed:
            return ("distributed: installed per workspace through OAuth, a token per "
                    "installation in the database (slack.oauth.enabled)")
        return "single workspace: one bot token (SLACK_BOT_TOKEN)"

