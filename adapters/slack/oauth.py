"""The "Add to Slack" install: Bolt's OAuth flow, bound to a tenant by an operator's link.

``GET /slack/install?link=…`` (``slack.oauth.install_path``) checks the install link
(``adapters.slack.links``: signature, expiry); a missing or bad one is refused (403) and audited
(``slack_install_refused``). A good one gets an OAuth state from slack_sdk's SQLAlchemy state
store, bound in the database to the link's tenant, and Bolt's install page with its state
cookie. Slack sends the installer back to ``GET /slack/oauth_redirect``
(``slack.oauth.redirect_path``), where Bolt's ``AsyncOAuthFlow.handle_callback`` checks the
cookie and consumes the state, exchanges the code (``oauth.v2.access``, then ``auth.test``), and
``store_installation`` keeps the installation bound to the state's tenant, unless the
workspace (or org) already belongs to another tenant, or the link already installed another
one: refused and audited too. A person who reaches the redirect without a state the bot issued
(Slack's own "Install" button, a forged or replayed link) is refused by Bolt's state check
before any code is exchanged.

No token, code, state or secret reaches a log line or a page: Bolt's and slack_sdk's loggers are
silent here and the bot logs only outcomes and reason codes, from the closed list of
``adapters.slack.refusals`` (Slack's ``error`` parameter is a stranger's text: anything not on
the list is ``other``). Each audit event names its occurrence (``bot.audit.AuditEvent``): the
OAuth state for the redirect's events (one install per state, so a replayed redirect is the same
event), a fresh id for each refused request to the install path.

The token Slack issued for an install the bot then refuses (a workspace of another tenant, a link
already used) or cannot keep (the database failed) is revoked at once (``auth.revoke``): it is
never stored, and no one holds it.
"""

from __future__ import annotations

import html
import re
import uuid
from datetime import timedelta

import structlog
from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request
from slack_bolt.oauth.async_callback_options import (
    AsyncCallbackOptions,
    AsyncFailureArgs,
    AsyncSuccessArgs,
)
from slack_bolt.oauth.async_oauth_flow import AsyncOAuthFlow
from slack_bolt.oauth.async_oauth_settings import AsyncOAuthSettings
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse
from slack_sdk.oauth.installation_store import Installation
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack import refusals
from adapters.slack.authorize import AuthorizeStore
from adapters.slack.binding import REASONS as BINDING_REASONS
from adapters.slack.installations import QUIET, InstallationDB, installation_key, redated
from adapters.slack.links import LINK_PARAM, InstallRefused, LinkSigner
from adapters.slack.tokens import Installations
from bot.audit import Audit, AuditEvent, occurrence_of
from bot.clock import Clock
from bot.metrics import REGISTRY
from bot.settings import SlackOAuthSettings

log = structlog.get_logger("clarify.slack")
STATE_SECONDS = 600


def _page(title: str, text: str, *, status: int) -> BoltResponse:
    body = (f"<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{html.escape(title)}"
            f"</title></head><body><h1>{html.escape(title)}</h1><p>{html.escape(text)}</p>"
            "</body></html>")
    return BoltResponse(status=status, body=body,
                        headers={"Content-Type": "text/html; charset=utf-8"})


REFUSED_TEXT = {
    "missing": "Clarify is installed from a link your Clarify operator gives you. Ask them for "
               "one.",
    "malformed": "This install link is not valid. Ask your Clarify operator for a new one.",
    "bad_signature": "This install link is not valid. Ask your Clarify operator for a new one.",
    "expired": "This install link has expired. Ask your Clarify operator for a new one.",
    "invalid_state": "This install did not start from a valid install link, or took too long. "
                     "Open the install link again.",
    "invalid_browser": "This install was finished in another browser than it was started in. "
                       "Open the install link again in one browser.",
    "workspace_of_another_tenant": "This workspace is already installed for another "
                                   "organisation. Ask your Clarify operator.",
    "org_of_another_tenant": "This workspace is already served by an org-wide installation of "
                             "Clarify for another organisation, so Clarify cannot be installed "
                             "in it for yours. Nothing was changed. Ask your Clarify operator.",
    "org_has_workspaces_of_another_tenant": "A workspace of this Enterprise Grid org already has "
                                            "Clarify installed for another organisation, so "
                                            "Clarify cannot be installed for the whole org for "
                                            "yours. Nothing was changed. Ask your Clarify "
                                            "operator.",
    "link_already_used": "This install link was already used for another workspace. Ask your "
                         "Clarify operator for a new one.",
    "access_denied": "The install was cancelled.",
}


# the audit's words for a refusal by the binding (adapters.slack.binding): its reason says which
BINDING_AUDIT = ("A Slack install was refused: it would have given a workspace or an Enterprise "
                 "Grid org a second tenant (or the link had installed another one already).")


class InstallFlow(AsyncOAuthFlow):
    """Bolt's flow, with the install path behind a link and the installation bound to its
    tenant."""

    def __init__(self, *, settings: AsyncOAuthSettings, client: AsyncWebClient,
                 db: InstallationDB, installations: Installations, signer: LinkSigner,
                 clock: Clock, audit: Audit) -> None:
        super().__init__(client=client, logger=QUIET, settings=settings)
        self.db, self.installations, self.signer = db, installations, signer
        self.clock, self.audit = clock, audit

    async def handle_installation(self, request: AsyncBoltRequest) -> BoltResponse:
        value = next(iter(request.query.get(LINK_PARAM) or ()), None)
        try:
            link = self.signer.verify(value, now=self.clock.now())
        except InstallRefused as exc:
            await self.refused(exc.reason, stage="install", occurrence=uuid.uuid4().hex)
            return _page("Not installed", REFUSED_TEXT[exc.reason], status=403)
        state = await self.settings.state_store.async_issue()
        now = self.clock.now()
        await self.db.bind_state(state, tenant=link.tenant, link_id=link.link_id, now=now,
                                 expire_at=now + timedelta(seconds=STATE_SECONDS))
        url = await self.build_authorize_url(state, request)
        cookie = self.settings.state_utils.build_set_cookie_for_new_state(state)
        page = await self.build_install_page_html(url, request)
        log.info("slack.install_started", tenant=link.tenant)
        return BoltResponse(status=200, body=page, headers=await self.append_set_cookie_headers(
            {"Content-Type": "text/html; charset=utf-8"}, cookie))

    async def run_installation(self, code: str) -> Installation | None:
        installation = await super().run_installation(code)  # Bolt's, its logger silent
        return None if installation is None else redated(installation, now=self.clock.now())

    async def store_installation(self, request: AsyncBoltRequest,
                                 installation: Installation) -> None:
        state = (request.query.get("state") or [""])[0]
        try:
            binding = await self.db.take_binding(state)
            if binding is None:  # Bolt consumed a state this bot issued without a tenant: never
                raise InstallRefused("invalid_state")
            tenant, link_id = binding
            again = await self.db.save(installation, tenant=tenant, link_id=link_id,
                                       now=self.clock.now())  # or InstallRefused, for failed()
        except Exception as exc:  # refused (for failed()) or not kept: the token Slack just
            # issued is given back, as no one will ever use it
            if isinstance(exc, InstallRefused) and exc.reason in BINDING_REASONS:
                REGISTRY.inc("clarify_slack_binding_refusals_total", reason=exc.reason)
            await self.revoke(installation)
            raise
        try:  # committed already: the page says "installed" whether or not this view is read
            await self.installations.load()
        except Exception as exc:  # every process confirms a workspace it misses (tokens.py)
            log.warning("slack.installations_unreadable", error=type(exc).__name__)
        key = installation_key(enterprise_id=installation.enterprise_id,
                               team_id=installation.team_id,
                               is_enterprise_install=bool(installation.is_enterprise_install))
        outcome = "reinstalled" if again else "installed"
        REGISTRY.inc("clarify_slack_installs_total", outcome=outcome)
        log.info("slack.installed", installation=key, tenant=tenant, outcome=outcome,
                 org_wide=bool(installation.is_enterprise_install))
        await self.audit.emit(AuditEvent(
            type="slack_installed", at=self.clock.now(), clarification_id="-", channel="slack",
            extra={"installation": key, "tenant": tenant, "outcome": outcome,
                   "org_wide": str(bool(installation.is_enterprise_install)).lower()},
            occurrence=_of_state(request),
            message=f"The Slack app was {outcome} in {key} for tenant {tenant}."),
            to_core=False)

    async def revoke(self, installation: Installation) -> None:
        """``auth.revoke`` on each token an install refused was issued (logged by outcome)."""
        for token in (installation.bot_token, installation.user_token):
            if not token:
                continue
            try:
                await self.client.auth_revoke(token=token)
                outcome = "revoked"
            except Exception as exc:  # Slack down, already revoked: said, never the token
                outcome = f"failed ({_slack_error(exc)})"
            log.info("slack.refused_install_token", outcome=outcome)

    async def refused(self, reason: str, *, stage: str, occurrence: str) -> None:
        reason = refusals.code(reason)  # a closed list: never a stranger's text
        REGISTRY.inc("clarify_slack_installs_total", outcome="refused")
        log.warning("slack.install_refused", reason=reason, stage=stage)
        await self.audit.emit(AuditEvent(
            type="slack_install_refused", at=self.clock.now(), clarification_id="-",
            channel="slack", extra={"reason": reason, "stage": stage}, occurrence=occurrence,
            message=BINDING_AUDIT if reason in BINDING_REASONS else
            "A Slack install was refused: it did not come through a valid install link for its "
            "workspace."), to_core=False)

    # the callbacks Bolt calls at the redirect's end
    async def succeeded(self, args: AsyncSuccessArgs) -> BoltResponse:
        i = args.installation
        where = i.enterprise_name if i.is_enterprise_install else i.team_name
        return _page("Clarify is installed",
                     f"Clarify is installed in {where or 'your workspace'}. You can close this "
                     "page.", status=200)

    async def failed(self, args: AsyncFailureArgs) -> BoltResponse:
        reason = refusals.code(args.error.reason if isinstance(args.error, InstallRefused)
                               else args.reason)
        await self.refused(reason, stage="redirect", occurrence=_of_state(args.request))
        text = REFUSED_TEXT.get(reason, "The install could not be completed. Try the install "
                                        "link again, or ask your Clarify operator.")
        status = 403 if reason in REFUSED_TEXT and reason != "access_denied" else \
            args.suggested_status_code
        return _page("Not installed", text, status=status)

    def routes(self) -> list[web.RouteDef]:
        async def install(request: web.Request) -> web.StreamResponse:
            return await to_aiohttp_response(await self.handle_installation(
                await to_bolt_request(request)))

        async def redirect(request: web.Request) -> web.StreamResponse:
            return await to_aiohttp_response(await self.handle_callback(
                await to_bolt_request(request)))

        return [web.get(self.install_path, install), web.get(self.redirect_uri_path, redirect)]


def _of_state(request: AsyncBoltRequest) -> str:
    """The redirect's occurrence: its state (one install per state) and code, hashed; a
    redirect without a state is a request of its own."""
    state = (request.query.get("state") or [""])[0]
    code = (request.query.get("code") or [""])[0]
    return occurrence_of("redirect", state, code) if state else uuid.uuid4().hex


def _slack_error(exc: Exception) -> str:
    """Slack's error code when it is one (lower-case words), else the exception's class."""
    response = getattr(exc, "response", None)
    error = response.get("error") if response is not None else None
    if isinstance(error, str) and re.fullmatch(r"[a-z_]{1,40}", error):
        return error
    return type(exc).__name__


def build_flow(*, oauth: SlackOAuthSettings, client_secret: str, client: AsyncWebClient,
               db: InstallationDB, installations: Installations, signer: LinkSigner,
               clock: Clock, audit: Audit) -> InstallFlow:
    settings = AsyncOAuthSettings(
        client_id=oauth.client_id, client_secret=client_secret, scopes=list(oauth.scopes),
        user_scopes=[], redirect_uri=oauth.redirect_uri, install_path=oauth.install_path,
        redirect_uri_path=oauth.redirect_path, authorization_url=oauth.authorize_url,
        installation_store=AuthorizeStore(installations), state_store=db.states,
        state_expiration_seconds=STATE_SECONDS,
        token_rotation_expiration_minutes=oauth.refresh_before_minutes, logger=QUIET)
    flow = InstallFlow(settings=settings, client=client, db=db, installations=installations,
                       signer=signer, clock=clock, audit=audit)
    options = AsyncCallbackOptions(success=flow.succeeded, failure=flow.failed)
    settings.callback_options = options
    flow.success_handler, flow.failure_handler = options.success, options.failure
    return flow
