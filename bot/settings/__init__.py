"""The bot's settings: one immutable ``Settings`` built at start-up from defaults, a TOML file and
the environment (each overriding the one before) and passed down. ``loader`` is the only module
that reads ``os.environ``; secrets come from the environment alone and never appear in repr or
errors. Everything public is re-exported here, so callers import from ``bot.settings``.
"""

from __future__ import annotations

from bot.settings.errors import Problem, SettingsError
from bot.settings.fields import Channels, Guid, Int, MaybeSeverity, Num, Roles, TenantId
from bot.settings.loader import CONFIG_ENV, ENV_PREFIX, env_var, load_settings, setting_keys
from bot.settings.models import (
    AnswersSettings,
    AuditSettings,
    ClarifySettings,
    CoreSettings,
    Elevations,
    LimitsSettings,
    LogSettings,
    QuorumSettings,
    RedisSettings,
    ServerSettings,
    Settings,
    SeveritySettings,
    SlackOAuthSettings,
    SlackRates,
    SlackSettings,
    SlackWorkspace,
    StoreSettings,
    TeamsPackageSettings,
    TeamsRates,
    TeamsSettings,
    TeamsTenant,
    WorkerSettings,
)
from bot.settings.secrets import SECRET_ENV, Secrets

__all__ = [
    "CONFIG_ENV",
    "ENV_PREFIX",
    "SECRET_ENV",
    "AnswersSettings",
    "AuditSettings",
    "Channels",
    "ClarifySettings",
    "CoreSettings",
    "Elevations",
    "Guid",
    "Int",
    "LimitsSettings",
    "LogSettings",
    "MaybeSeverity",
    "Num",
    "Problem",
    "QuorumSettings",
    "RedisSettings",
    "Roles",
    "Secrets",
    "ServerSettings",
    "Settings",
    "SettingsError",
    "SeveritySettings",
    "SlackOAuthSettings",
    "SlackRates",
    "TeamsRates",
    "SlackSettings",
    "SlackWorkspace",
    "StoreSettings",
    "TeamsPackageSettings",
    "TeamsSettings",
    "TeamsTenant",
    "TenantId",
    "WorkerSettings",
    "env_var",
    "load_settings",
    "setting_keys",
]
