"""The [teams] tables: the bot's Entra app and the tenants it serves, the Bot Connector's pacing,
and what the Teams app package says (docs/teams.md).
"""

from __future__ import annotations

from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import model_validator

from bot.chat import ChatUser
from bot.settings.errors import Problem
from bot.settings.fields import (
    Guid,
    Int,
    Num,
    TenantId,
    _allowed,
    _choice,
    _cross,
    _ints,
    _Table,
    _url,
)


class TeamsTenant(_Table):
    aad_tenant_id: Guid = _allowed(..., "an Entra (AAD) tenant id, a GUID")
    tenant: TenantId = _allowed(..., "a tenant id (1-200 of A-Z a-z 0-9 . _ : @ -)")


TeamsAppType = Literal["single-tenant", "multi-tenant", "managed-identity"]
_HTTPS_URL = "an https URL without credentials"
_LOOPBACK = ("127.0.0.1", "localhost", "::1")


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
    # who is away (docs/teams.md, "Who is away"): each person's presence and automatic replies,
    # read from Microsoft Graph with the app's own token (application permissions
    # Presence.Read.All and MailboxSettings.Read, admin-consented in each tenant); false: never
    # asked, nobody is known to be away on Teams
    read_away: bool = True
    # Microsoft Graph and the identity platform's token endpoint (national clouds: their own
    # hosts; tests: a fake on 127.0.0.1); the app's Graph token goes to graph_url only
    graph_url: Annotated[str, _url(("http", "https"), None)] = _allowed(
        "https://graph.microsoft.com/v1.0", "Microsoft Graph's base URL with its version")
    login_url: Annotated[str, _url(("http", "https"), None)] = _allowed(
        "https://login.microsoftonline.com",
        "the identity platform's URL, where a tenant's /oauth2/v2.0/token is")
    # a person with no conversation gets the app installed for them through Microsoft Graph
    # (docs/teams.md, "Installing the app for people"): application permission
    # TeamsAppInstallation.ReadWriteSelfForUser.All; on only with an app id and catalog_app_id
    install_app: bool = True
    # the app's id in the tenant's Teams app catalog (an org-published app: its catalog id; a
    # store app: its manifest id); unset: no installs
    catalog_app_id: Guid | None = _allowed(None, "the Teams app's id in the app catalog, a GUID")
    # Graph reads in flight at once in this process (Graph allows presence 1,500 reads in 30 s
    # per app and tenant, and 4 requests at once per mailbox)
    graph_concurrency: Int = _ints(4, 1, 50)

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

    @model_validator(mode="after")
    def _graph_over_https(self) -> TeamsSettings:
        # the app's client secret goes to login_url and its Graph token to graph_url: plain
        # http only to this machine (a local fake)
        for key in ("login_url", "graph_url"):
            url = urlsplit(getattr(self, key))
            if url.scheme == "http" and url.hostname not in _LOOPBACK:
                raise _cross(key, getattr(self, key), "an https URL (http only on 127.0.0.1, "
                             "localhost or ::1)")
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

    def tenant_of(self, user: ChatUser) -> str | None:
        """The tenant a verified Teams user acts in: their Entra tenant's (``tenant_for``)."""
        return self.tenant_for(user.aad_tenant_id or "")

    def tenant_for(self, aad_tenant_id: str) -> str | None:
        """The tenant of a verified Teams activity, or None (deny by default)."""
        wanted = aad_tenant_id.lower()
        return next((t.tenant for t in self.tenants if t.aad_tenant_id.lower() == wanted), None)
