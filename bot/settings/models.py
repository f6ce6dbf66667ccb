"""The root ``Settings``: every table (the spec's, ``bot.settings.clarify``; the service's,
``bot.settings.service``; each platform's, ``bot.settings.slack`` and ``bot.settings.teams``),
the secrets, and the rules that span tables.
"""

from __future__ import annotations

from pydantic import model_validator

from bot.core.models import Channel
from bot.settings.clarify import ClarifySettings
from bot.settings.errors import Problem, SettingsError
from bot.settings.fields import _cross, _Table
from bot.settings.secrets import _UNSET, SECRET_ENV, Secrets
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
from bot.settings.slack import SlackSettings
from bot.settings.teams import TeamsSettings

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


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
    reach: ReachSettings = ReachSettings()
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
            needed += ["slack_client_secret", "install_link_key", "database_url",
                       "slack_token_key"] \
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
            where = self.secrets.origin("slack_bot_token")
            problems.append(Problem(SECRET_ENV["slack_bot_token"], None, "is set"
                                    + (f" (from {where})" if where else "")
                                    + " but must be removed while slack.oauth.enabled: each "
                                    "installation has its own token (the single-workspace and "
                                    "distributed modes are exclusive)"))
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
