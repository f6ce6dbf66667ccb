"""A token per installation, fresh, for every Web API call: Slack as a distributed app.

``Installations`` is what the channel and bolt ask: which installation serves a workspace
(``resolve``, ``tenant_for``: from a snapshot of the database every process reads again each
``slack.oauth.directory_seconds``, and at once after a change it made itself), and that
installation's bot token (``client``), through Bolt's ``AsyncInstallationStoreAuthorize`` over
``AuthorizeStore`` (``adapters.slack.authorize``), the installation store Bolt is given.

Token rotation: a token that expires within ``refresh_before_minutes`` (on the bot's clock) is
refreshed before it is used, with ``oauth.v2.access`` and ``grant_type=refresh_token``, once
across every replica (``InstallationDB.refreshing`` holds the installation's row lock while
Slack is asked; whoever waited reads the new token). The worker also refreshes ahead of need
(``refresh_due``, every ``refresh_check_seconds``), so calls rarely wait. A refresh that fails is
retried at the next check (the old token is still used while it is valid), logged
(``slack.token_refresh_failed``, never a token) and counted (``clarify_slack_token_refreshes_total
{outcome="failed"}``, ``clarify_slack_token_refresh_failing``; the alert
``ClarifySlackTokenRefreshFailing``). A token that has expired is never sent: the installation is
paused (``token_expired``) until a refresh succeeds.

A token Slack refuses (``not_authed``, ``token_expired``…) pauses that installation only: its
state is ``paused`` in the database (so ``/readyz``, the metrics and ``clarify-bot slack
installations`` say so on every process) and the worker holds only its jobs
(``bot.process.pauses``). A token gone for good (``REVOKED_ERRORS``: ``token_revoked``,
``account_inactive``…) removes it instead, with Slack's error as the reason: the call that met
it raises ``NotReachable`` with the uninstall cause, so the person is skipped
``NO_DELIVERY_ALIAS`` at once (docs/slack.md).

A view read every ``directory_seconds`` can be older than an install another process just
made: ``confirm`` looks one workspace's installations up in the database before anything is
turned down for it, and reads the snapshot again when they differ.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import aiohttp
import structlog
from slack_bolt.authorization.async_authorize import AsyncInstallationStoreAuthorize
from slack_bolt.context.async_context import AsyncBoltContext
from slack_sdk.errors import SlackApiError
from slack_sdk.oauth.installation_store import Installation
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.authorize import AuthorizeStore
from adapters.slack.installations import (
    ACTIVE,
    PAUSED,
    QUIET,
    REMOVED,
    STATES,
    InstallationDB,
    Installed,
    expires_at,
    installation_key,
)
from adapters.slack.web import web_client
from bot.channel import ChannelError, CredentialsRejected, NotReachable, SlackReach
from bot.chat import ChatUser
from bot.clock import Clock
from bot.metrics import REGISTRY
from bot.reach.causes import APP_NOT_INSTALLED, BLOCKED_OR_UNINSTALLED
from bot.settings import SlackSettings, SlackWorkspace

log = structlog.get_logger("clarify.slack")
INSTALL_SETTING = "the Slack installation (reinstall it with `clarify-bot slack install-link`)"
CLIENTS_KEPT = 1_000
Workspace = str | SlackReach | None
UNINSTALLED = "the Slack app was uninstalled from the person's workspace"
# Slack's answers that mean an installation's token is gone for good (revoked, its account or
# workspace inactive, access withdrawn): only a reinstall gives a working one. Met on any call,
# the installation is removed with that reason, and the person is skipped NO_DELIVERY_ALIAS at
# once: Slack answered, nothing was posted, and waiting would not bring the token back
REVOKED_ERRORS = frozenset({"token_revoked", "account_inactive", "invalid_auth",
                            "team_access_revoked", "org_login_required", "team_disabled",
                            "app_uninstalled"})


def uninstalled(reason: str | None) -> str:
    """A removed installation's skip text, with its cause (an event or Slack's error code)."""
    return UNINSTALLED if not reason else f"{UNINSTALLED} ({reason})"


def scope_key(scope: str) -> str:
    return scope.removeprefix("slack:")


@dataclass
class Installations:
    db: InstallationDB
    clock: Clock
    client_id: str
    client_secret: str
    api_url: str
    session: aiohttp.ClientSession
    refresh_before: timedelta = timedelta(minutes=120)
    refresh_retry_seconds: float = 60.0
    directory_seconds: float = 10.0
    _snapshot: dict[str, Installed] = field(default_factory=dict)
    _rules: SlackSettings = field(default_factory=SlackSettings)
    _loaded: float = float("-inf")  # monotonic
    _clients: OrderedDict[tuple[str, str], AsyncWebClient] = field(default_factory=OrderedDict)
    _failed_at: dict[str, datetime] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.authorize = AsyncInstallationStoreAuthorize(
            logger=QUIET, installation_store=AuthorizeStore(self), cache_enabled=True)
        self.web = web_client(base_url=self.api_url, session=self.session)

    # ------------------------------------------------------------ the directory

    async def load(self) -> None:
        """Read every installation again (each process: every ``directory_seconds``)."""
        found = await self.db.all()
        self._snapshot = {i.key: i for i in found}
        self._rules = SlackSettings(workspaces=tuple(
            SlackWorkspace(team_id=None if i.is_enterprise_install else i.team_id,
                           enterprise_id=i.enterprise_id, tenant=i.tenant) for i in found))
        self._loaded = time.monotonic()
        for state in STATES:
            REGISTRY.set("clarify_slack_installations",
                         sum(1 for i in found if i.state == state), state=state)
        REGISTRY.set("clarify_slack_token_refresh_failing",
                     sum(1 for i in found if i.refresh_failures and i.state != REMOVED))

    async def keep_loading(self) -> None:
        """Read the installations again every ``directory_seconds`` until cancelled."""
        while True:
            await asyncio.sleep(self.directory_seconds)
            try:
                await self.load()
            except Exception as exc:  # the database away: the last snapshot stays
                log.warning("slack.installations_unreadable", error=type(exc).__name__)

    async def confirm(self, *, team_id: str | None, enterprise_id: str | None) -> bool:
        """Before a workspace is taken for another tenant's, or for one no install serves: its
        installations as the database holds them now (a look-up by key), and, when they differ
        from this process's snapshot, the snapshot read again. True when the caller should
        decide again, on the snapshot as it is now, by the same rules (``tenant_for``): the
        snapshot was read again, or it already holds the workspace's installations as the
        database does (another task may have read it again between the caller's decision and
        this look-up: the caller's decision was made on the older one). So a workspace
        installed a moment ago is served at once, and one bound to another tenant stays
        another tenant's. False when the database knows no installation of the workspace (or
        cannot be read): nothing would decide otherwise."""
        try:
            found = await self.db.serving(team_id=team_id, enterprise_id=enterprise_id)
        except Exception as exc:  # the database away: the snapshot's word stands
            log.warning("slack.installations_unreadable", error=type(exc).__name__)
            return False
        held = {k: self._snapshot.get(k) for k in {i.key for i in found}}
        mine = {i.key for i in self._snapshot.values()
                if i.key in (team_id, enterprise_id)
                or (enterprise_id and i.enterprise_id == enterprise_id)}
        if {i.key: i for i in found} == held and mine == set(held):
            return bool(found)  # current already, perhaps since the caller decided
        REGISTRY.inc("clarify_slack_directory_reloads_total")
        log.info("slack.installations_reread", reason="stale_view")
        await self.load()
        return True

    async def _confirm(self, workspace: Workspace) -> bool:
        if isinstance(workspace, SlackReach):
            return await self.confirm(team_id=workspace.team_id,
                                      enterprise_id=workspace.enterprise_id)
        if not workspace:
            return False
        org = workspace.startswith("E")
        return await self.confirm(team_id=None if org else workspace,
                                  enterprise_id=workspace if org else None)

    @property
    def installed(self) -> list[Installed]:
        return list(self._snapshot.values())

    def tenant_of(self, user: ChatUser) -> str | None:
        """The tenant a verified Slack user acts in: their workspace's (``tenant_for``)."""
        return self.tenant_for(team_id=user.team_id, enterprise_id=user.enterprise_id)

    def tenant_for(self, *, team_id: str | None, enterprise_id: str | None) -> str | None:
        """The tenant of a workspace: its installation's, by the rules of
        ``SlackSettings.tenant_for`` (a workspace's own install, else its org's)."""
        return self._rules.tenant_for(team_id=team_id, enterprise_id=enterprise_id)

    def resolve(self, workspace: Workspace) -> Installed | None:
        """The installation that serves a workspace: its own, else its org's. A bare id is
        an installation key, a team's or an org's."""
        if isinstance(workspace, SlackReach):
            team, org = workspace.team_id, workspace.enterprise_id
        elif workspace is None:
            return None
        elif workspace.startswith("E"):
            team, org = None, workspace
        else:
            team, org = workspace, None
        if team is not None and (own := self._snapshot.get(team)) is not None \
                and not own.is_enterprise_install:
            return own
        if org is not None:
            whole = self._snapshot.get(org)
            if whole is not None and whole.is_enterprise_install:
                return whole
            in_org = [i for i in self._snapshot.values() if i.enterprise_id == org]
            if team is None and len(in_org) == 1:
                return in_org[0]
        return None

    # ------------------------------------------------------------ tokens

    async def client(self, workspace: Workspace) -> tuple[AsyncWebClient, Installed]:
        """A Web API client holding the fresh token of the installation serving ``workspace``.
        NotReachable when none does, or it was removed; CredentialsRejected (scoped) while
        paused or when its token expired unrefreshed."""
        if time.monotonic() - self._loaded > self.directory_seconds:
            await self.load()
        installed = self.resolve(workspace)
        if (installed is None or installed.state == REMOVED) \
                and await self._confirm(workspace):  # a view older than an install: read again
            installed = self.resolve(workspace)
        if installed is None or installed.state == REMOVED:
            if installed is None:
                raise NotReachable("no Slack installation serves the person's workspace",
                                   cause=APP_NOT_INSTALLED)
            raise NotReachable(uninstalled(installed.reason), cause=BLOCKED_OR_UNINSTALLED)
        if installed.state == PAUSED:
            raise self._rejected(installed, installed.reason or "paused")
        context = AsyncBoltContext(client=self.web)
        context["is_enterprise_install"] = installed.is_enterprise_install
        try:
            result = await self.authorize(context=context, enterprise_id=installed.enterprise_id,
                                          team_id=installed.team_id, user_id=None)
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise ChannelError(type(exc).__name__, certain=True, retryable=True) from None
        if len(self.authorize.authorize_result_cache) > CLIENTS_KEPT:
            self.authorize.authorize_result_cache.clear()
        if result is None or result.bot_token is None:  # auth.test refused the stored token
            try:
                await self.check(installed.scope)  # for Slack's own word on why
            except CredentialsRejected as exc:
                raise await self.refused(installed.key, exc.reason) from None
            gone = self.resolve(workspace)
            if gone is not None and gone.state == REMOVED:  # check() found it revoked
                raise NotReachable(uninstalled(gone.reason), cause=BLOCKED_OR_UNINSTALLED)
            raise await self.refused(installed.key, "invalid_auth")
        return self._client(installed.key, result.bot_token), installed

    def _client(self, key: str, token: str) -> AsyncWebClient:
        kept = self._clients.get((key, token))
        if kept is None:
            kept = web_client(token=token, base_url=self.api_url, session=self.session)
            self._clients[(key, token)] = kept
            while len(self._clients) > CLIENTS_KEPT:
                self._clients.popitem(last=False)
        self._clients.move_to_end((key, token))
        return kept

    def _rejected(self, installed: Installed, reason: str) -> CredentialsRejected:
        return CredentialsRejected(reason, setting=f"{INSTALL_SETTING}: {installed.key}",
                                   scope=installed.scope)

    async def refused(self, key: str, error: str) -> ChannelError:
        """Slack refused an installation's token: it is paused, for every process
        (CredentialsRejected); a token gone for good (``REVOKED_ERRORS``) removes it instead
        (NotReachable, with the cause)."""
        installed = self._snapshot.get(key)
        if error in REVOKED_ERRORS:
            await self.revoked(key, error)
            return NotReachable(uninstalled(error), cause=BLOCKED_OR_UNINSTALLED)
        if installed is None:
            return CredentialsRejected(error, setting=INSTALL_SETTING, scope=f"slack:{key}")
        if await self.db.set_state(key, PAUSED, reason=error, now=self.clock.now(),
                                   only_from=(ACTIVE, PAUSED)):
            log.error("slack.installation_paused", installation=key, tenant=installed.tenant,
                      error=error)
            await self.load()
        return self._rejected(installed, error)

    async def fresh(self, installed: Installed) -> Installation | None:
        """The installation with a token that is not about to expire: refreshed (once across
        replicas) when it is; None when it was removed. A token that has expired is never
        handed out: CredentialsRejected (``token_expired``) while no refresh succeeds."""
        current = await self.db.find(installed)
        if current is None:
            return None
        if self._due(current):
            current = await self._refresh(installed, current)
        expiry = expires_at(current)
        if expiry is not None and expiry <= self.clock.now():
            raise await self.refused(installed.key, "token_expired")
        return current

    def _due(self, installation: Installation) -> bool:
        expiry = expires_at(installation)
        return installation.bot_refresh_token is not None and expiry is not None \
            and expiry - self.refresh_before <= self.clock.now()

    async def _refresh(self, installed: Installed, current: Installation) -> Installation:
        failed = self._failed_at.get(installed.key)
        now = self.clock.now()
        if failed is not None and now - failed < timedelta(seconds=self.refresh_retry_seconds):
            return current  # retried at the next check; the old token while it is valid
        try:
            refreshed = await self.db.refreshing(installed, due=self._due, rotate=self._rotate,
                                                 now=now)
        except Exception as exc:
            self._failed_at[installed.key] = now
            REGISTRY.inc("clarify_slack_token_refreshes_total", outcome="failed")
            error = exc.response.get("error", "unknown") if isinstance(exc, SlackApiError) \
                else type(exc).__name__
            log.error("slack.token_refresh_failed", installation=installed.key,
                      tenant=installed.tenant, error=str(error),
                      retry_seconds=self.refresh_retry_seconds)
            try:
                await self.db.refresh_failed(installed.key)
            except Exception as db_exc:
                log.warning("slack.installations_unwritable", error=type(db_exc).__name__)
            return current
        self._failed_at.pop(installed.key, None)
        return refreshed or current

    async def _rotate(self, installation: Installation) -> Installation:
        """``oauth.v2.access`` with the refresh token; the new token dated on the bot's clock."""
        asked = self.clock.now()
        answer = await self.web.oauth_v2_access(
            client_id=self.client_id, client_secret=self.client_secret,
            grant_type="refresh_token", refresh_token=installation.bot_refresh_token or "")
        rotated = Installation(**installation.to_dict_for_copying())
        rotated.bot_token = answer["access_token"]
        rotated.bot_refresh_token = answer.get("refresh_token") or installation.bot_refresh_token
        rotated.bot_token_expires_at = int(asked.timestamp()) + int(answer["expires_in"])
        REGISTRY.inc("clarify_slack_token_refreshes_total", outcome="refreshed")
        log.info("slack.token_refreshed", installation=installation_key(
            enterprise_id=installation.enterprise_id, team_id=installation.team_id,
            is_enterprise_install=bool(installation.is_enterprise_install)),
            expires_at=datetime.fromtimestamp(rotated.bot_token_expires_at, asked.tzinfo)
            .isoformat())
        return rotated

    async def refresh_due(self) -> None:
        """The worker's pass: refresh every token that expires within the margin."""
        await self.load()
        for installed in self.installed:
            if installed.state == REMOVED or installed.token_expires_at is None:
                continue
            if installed.token_expires_at - self.refresh_before <= self.clock.now():
                try:
                    await self.fresh(installed)
                except CredentialsRejected:
                    pass  # paused: its check resumes it once a refresh succeeds
        await self.load()

    async def keep_refreshing(self) -> None:
        """``refresh_due`` every ``refresh_retry_seconds`` until cancelled (worker role)."""
        while True:
            try:
                await self.refresh_due()
            except Exception as exc:
                log.warning("slack.refresh_pass_failed", error=type(exc).__name__)
            await asyncio.sleep(self.refresh_retry_seconds)

    # ------------------------------------------------------------ checks

    async def check(self, scope: str) -> None:
        """One installation's credentials: ``auth.test`` with its token; resumes it (active)
        when Slack accepts it, CredentialsRejected while not."""
        key = scope_key(scope)
        installed = self._snapshot.get(key) or await self.db.get(key)
        if installed is None or installed.state == REMOVED:
            return  # removed: its jobs go on, and its people are skipped with a reason
        current = await self.fresh(installed)
        if current is None or current.bot_token is None:
            return
        try:
            await self.web.auth_test(token=current.bot_token)
        except SlackApiError as exc:
            error = str(exc.response.get("error", "unknown"))
            if error in REVOKED_ERRORS:  # gone for good: removed, its held jobs go on
                await self.revoked(key, error)
                return
            raise self._rejected(installed, error) from None
        if await self.db.set_state(key, ACTIVE, reason=None, now=self.clock.now(),
                                   only_from=(PAUSED,)):
            log.info("slack.installation_resumed", installation=key, tenant=installed.tenant)
            await self.load()

    async def check_paused(self) -> None:
        """Every paused installation's check (the worker's credentials check, /readyz)."""
        await self.load()
        for installed in self.installed:
            if installed.state == PAUSED:
                try:
                    await self.check(installed.scope)
                except CredentialsRejected:
                    pass

    def readiness(self) -> dict[str, object]:
        """What ``/readyz`` says of the installations: counts, and each paused one by key."""
        counts = {state: 0 for state in STATES}
        for i in self.installed:
            counts[i.state] += 1
        paused = {i.key: i.reason or "paused" for i in self.installed if i.state == PAUSED}
        return {"slack_installations": {**counts, "paused_installations": paused}}

    async def revoked(self, key: str, error: str) -> None:
        """Slack answered a call with a token gone for good: the installation is removed (its
        reason Slack's error), for every process, as ``tokens_revoked`` would. Its tokens are
        kept until Slack's event or a reinstall replaces them; the tenant binding stays."""
        installed = self._snapshot.get(key) or await self.db.get(key)
        if installed is None:
            return
        if await self.db.set_state(key, REMOVED, reason=error, now=self.clock.now(),
                                   only_from=(ACTIVE, PAUSED)):
            log.warning("slack.installation_removed", installation=key,
                        tenant=installed.tenant, reason=error)
            await self.load()

    async def removed(self, *, enterprise_id: str | None, team_id: str | None,
                      is_enterprise_install: bool, reason: str) -> None:
        gone = await self.db.remove(enterprise_id=enterprise_id, team_id=team_id,
                                    is_enterprise_install=is_enterprise_install, reason=reason,
                                    now=self.clock.now())
        if gone is not None:
            log.warning("slack.installation_removed", installation=gone.key, tenant=gone.tenant,
                        reason=reason)
        await self.load()
