"""The bot's settings: one immutable ``Settings`` built at start-up from defaults, a TOML file and
the environment (each overriding the one before) and passed down. ``loader`` is the only module
that reads ``os.environ``; secrets come from the environment alone and never appear in repr or
errors. The tables live by area (``clarify``: the spec's; ``service``: the bot's own; ``slack``,
``teams``: each platform's; ``models``: the root ``Settings``). Everything public is re-exported
here, so callers import from ``bot.settings``.
"""

from __future__ import annotations

from bot.settings.clarify import (
    AwaySettings,
    ClarifySettings,
    Elevations,
    QuorumSettings,
    SeveritySettings,
)
from bot.settings.errors import Problem, SettingsError
from bot.settings.fields import Channels, Guid, Int, MaybeSeverity, Num, Roles, TenantId
from bot.settings.loader import CONFIG_ENV, ENV_PREFIX, env_var, load_settings, setting_keys
from bot.settings.models import Settings
from bot.settings.secrets import SECRET_ENV, Secrets
from bot.settings.service import (
    AnswersSettings,
    AuditSettings,
    CoreSettings,
    LimitsSettings,
    LogSettings,
    ReachSettings,
    RedisSettings,
    ServerSettings,
    StoreSettings,
    WorkerSettings,
)
from bot.settings.slack import SlackOAuthSettings, SlackRates, SlackSettings, SlackWorkspace
from bot.settings.teams import TeamsPackageSettings, TeamsRates, TeamsSettings, TeamsTenant

__all__ = [
    "CONFIG_ENV",
    "ENV_PREFIX",
    "SECRET_ENV",
    "AnswersSettings",
    "AuditSettings",
    "AwaySettings",
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
    "ReachSettings",
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
