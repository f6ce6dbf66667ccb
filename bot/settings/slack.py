"""The [slack] tables: the workspaces served and their tenants, the Web API's pacing, and the
distributed app's OAuth install (docs/slack.md).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BeforeValidator, model_validator

from bot.chat import ChatUser
from bot.settings.fields import (
    Int,
    Num,
    TenantId,
    _allowed,
    _choice,
    _cross,
    _csv,
    _ints,
    _seconds,
    _Table,
    _url,
)


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


SLACK_SCOPES = ("chat:write", "im:write", "im:history", "users:read", "dnd:read")


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

    def tenant_of(self, user: ChatUser) -> str | None:
        """The tenant a verified Slack user acts in: their workspace's (``tenant_for``)."""
        return self.tenant_for(team_id=user.team_id, enterprise_id=user.enterprise_id)

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
