"""A fake Microsoft Graph on 127.0.0.1, for reading who is away: the identity platform's token
endpoint (client credentials) and the two reads, shaped as Microsoft documents them.

- ``POST /{tenant}/oauth2/v2.0/token``: checks the client id, secret, grant and scope; answers a
  JWT whose ``roles`` are the permissions granted in that tenant (``grant``; ``opaque``: a
  token with no readable claims), or the identity platform's refusal (``refuse_tokens``:
  400 ``invalid_client`` with its AADSTS number).
- ``GET /v1.0/users/{id}/presence``: ``{"id", "availability", "activity",
  "outOfOfficeSettings": {"isOutOfOffice", "message"}}``; without Presence.Read.All in the
  token 403 ``Forbidden`` (Graph's answer, empty message).
- ``GET /v1.0/users/{id}/mailboxSettings/automaticRepliesSetting``: ``{"status",
  "externalAudience", "scheduledStartDateTime", "scheduledEndDateTime",
  "internalReplyMessage", "externalReplyMessage"}``; without MailboxSettings.Read 403
  ``ErrorAccessDenied`` ("Access is denied. Check credentials and try again."); a person with
  no mailbox 404 ``MailboxNotEnabledForRESTAPI``; one an application access policy leaves out
  403 ``ErrorAccessDenied`` whatever the token says.

- ``POST /v1.0/users/{id}/teamwork/installedApps``: installs the app (``{"teamsApp@odata.bind":
  ".../appCatalogs/teamsApps/{id}"}``) for the person: 201, then ``on_install`` (a test's fake
  connector marks the app installed); 409 ``Conflict`` when it is installed already; without an
  install permission in the token 403 ``Forbidden``; a tenant whose permission policy blocks the
  app 403 ``Forbidden`` ("...blocked by app permission policy..."); a person without a Teams
  licence 404 ``NotFound`` (``no_teams``); with ``catalog`` set, an install of another catalog
  id 404 ``NotFound`` (an id the tenant's catalog does not hold).
- ``GET /v1.0/users/{id}/teamwork/installedApps``: the app's own installations for the person
  (``{"value": [...]}``, empty when not installed); a person without Teams 404 ``NotFound``.

Each person's answers are set by the test (``set_presence``, ``set_replies``); every reply and
status carries a message text (``MESSAGE``) the bot must never log or keep. Failures of the next
calls of a route are queued with ``fail`` (429 with Retry-After, 503 ...); ``slow`` delays
every answer of a route. Every call is recorded.
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Self

import jwt
from aiohttp import web

PRESENCE_PERMISSION = "Presence.Read.All"
MAILBOX_PERMISSION = "MailboxSettings.Read"
INSTALL_PERMISSION = "TeamsAppInstallation.ReadWriteSelfForUser.All"
BOTH = frozenset({PRESENCE_PERMISSION, MAILBOX_PERMISSION})
EVERY = BOTH | {INSTALL_PERMISSION}
SECRET = "fake-graph-client-secret"
SIGNING = "fake graph's own signing key, never checked by the bot"
# what a person wrote for their colleagues: never in a log line, a metric or the store
MESSAGE = "Private: at my sister's wedding in Porto, call +351 555 0100"


@dataclass(frozen=True)
class Call:
    route: str  # "token" | "presence" | "auto_replies" | "install"
    tenant: str | None
    user: str | None
    status: int
    roles: frozenset[str] | None = None  # the token's (None: no token, or opaque)
    form: dict[str, str] = field(default_factory=dict)  # a token request's fields


@dataclass
class Fault:
    status: int
    retry_after: str | None = None
    code: str = "TooManyRequests"
    body: Any = None  # a body of its own (a str: not JSON)


def dt(when: str, zone: str) -> dict[str, str]:
    """A Graph dateTimeTimeZone, as Outlook writes it (seven fractional digits)."""
    return {"dateTime": f"{when}.0000000", "timeZone": zone}


class FakeGraph:
    def __init__(self, *, app_id: str, secret: str = SECRET) -> None:
        self.app_id = app_id
        self.secret = secret
        self.granted: dict[str, frozenset[str]] = defaultdict(lambda: EVERY)
        self.installed: set[str] = set()  # people the app is installed for
        self.installed_status = 201  # what a successful install answers (no body unless 201)
        self.no_teams: set[str] = set()  # people without a Teams licence
        self.catalog: str | None = None  # the only catalog id an install may name (None: any)
        self.blocking: set[str] = set()  # tenants whose permission policy blocks the app
        self.on_install: Callable[[str, str], None] = lambda tenant, user: None
        self.bodies: list[Any] = []  # what each install was asked with
        self.opaque: set[str] = set()  # tenants whose tokens carry no readable claims
        self.refused: set[str] = set()  # tenants where the app gets no token (not consented)
        self.presences: dict[str, dict[str, Any]] = {}
        self.replies: dict[str, dict[str, Any]] = {}
        self.no_mailbox: set[str] = set()
        self.left_out: set[str] = set()  # mailboxes an application access policy excludes
        self.faults: dict[str, deque[Fault]] = defaultdict(deque)
        self.delays: dict[str, float] = {}
        self.calls: list[Call] = []
        self.in_flight = 0
        self.most_in_flight = 0  # reads being answered at once, at most
        self._issued: dict[str, tuple[str, frozenset[str] | None]] = {}  # token -> tenant, roles
        self._runner: web.AppRunner | None = None
        self.origin = ""

    async def __aenter__(self) -> Self:
        app = web.Application()
        app.router.add_post("/{tenant}/oauth2/v2.0/token", self._token)
        app.router.add_get("/v1.0/users/{user}/presence", self._presence)
        app.router.add_post("/v1.0/users/{user}/teamwork/installedApps", self._install)
        app.router.add_get("/v1.0/users/{user}/teamwork/installedApps", self._installed_apps)
        app.router.add_get("/v1.0/users/{user}/mailboxSettings/automaticRepliesSetting",
                           self._auto_replies)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        self.origin = f"http://127.0.0.1:{self._runner.addresses[0][1]}"
        return self

    async def __aexit__(self, *_: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def graph_url(self) -> str:
        return self.origin + "/v1.0"

    @property
    def login_url(self) -> str:
        return self.origin

    # ---------------------------------------------------------------- set-up by tests

    def grant(self, tenant: str, *permissions: str) -> None:
        """The application permissions the tenant's admin consented (what tokens carry)."""
        self.granted[tenant.lower()] = frozenset(permissions)

    def set_presence(self, user: str, activity: str = "Available", *,
                     availability: str | None = None, out_of_office: bool = False) -> None:
        self.presences[user.lower()] = {
            "id": user.lower(), "availability": availability or activity, "activity": activity,
            "statusMessage": {"message": {"content": MESSAGE, "contentType": "text"}},
            "outOfOfficeSettings": {"isOutOfOffice": out_of_office,
                                    "message": MESSAGE if out_of_office else ""}}

    def set_replies(self, user: str, status: str = "disabled", *,
                    start: dict[str, str] | None = None,
                    end: dict[str, str] | None = None) -> None:
        self.replies[user.lower()] = {
            "@odata.context": "https://graph.microsoft.com/v1.0/$metadata#users('x')/"
                              "mailboxSettings/automaticRepliesSetting",
            "status": status, "externalAudience": "all",
            "scheduledStartDateTime": start or dt("2026-01-01T00:00:00", "UTC"),
            "scheduledEndDateTime": end or dt("2026-01-02T00:00:00", "UTC"),
            "internalReplyMessage": f"<html><body><p>{MESSAGE}</p></body></html>",
            "externalReplyMessage": f"<html><body><p>{MESSAGE}</p></body></html>"}

    def fail(self, route: str, status: int, *, times: int = 1, retry_after: str | None = None,
             code: str = "TooManyRequests", body: Any = None) -> None:
        for _ in range(times):
            self.faults[route].append(Fault(status, retry_after, code, body))

    def slow(self, route: str, seconds: float) -> None:
        self.delays[route] = seconds

    def of(self, route: str, user: str | None = None) -> list[Call]:
        return [c for c in self.calls if c.route == route
                and (user is None or c.user == user.lower())]

    # ---------------------------------------------------------------- routes

    async def _token(self, request: web.Request) -> web.Response:
        tenant = request.match_info["tenant"].lower()
        form = {k: str(v) for k, v in (await request.post()).items()}
        shown = {k: v for k, v in form.items() if k != "client_secret"}
        if self.faults["token"]:
            fault = self.faults["token"].popleft()
            return self._said("token", tenant, None, fault.status, {"error": fault.code},
                              form=shown)
        if form.get("grant_type") != "client_credentials" \
                or form.get("scope") != "https://graph.microsoft.com/.default":
            return self._said("token", tenant, None, 400, {
                "error": "invalid_request", "error_description": "AADSTS900144: bad request",
                "error_codes": [900144]}, form=shown)
        if form.get("client_id") != self.app_id or form.get("client_secret") != self.secret \
                or tenant in self.refused:
            return self._said("token", tenant, None, 401, {
                "error": "invalid_client",
                "error_description": "AADSTS7000215: Invalid client secret provided. "
                                     f"Trace ID: {MESSAGE}",
                "error_codes": [7000215]}, form=shown)
        roles = None if tenant in self.opaque else self.granted[tenant]
        now = int(time.time())
        if roles is None:
            value = f"opaque-token-{len(self._issued)}"
        else:
            value = jwt.encode({"aud": "https://graph.microsoft.com", "tid": tenant,
                                "appid": self.app_id, "roles": sorted(roles),
                                "iat": now, "exp": now + 3600, "n": len(self._issued)},
                               SIGNING, algorithm="HS256")
        self._issued[value] = (tenant, roles)
        return self._said("token", tenant, None, 200, {
            "token_type": "Bearer", "expires_in": 3599, "ext_expires_in": 3599,
            "access_token": value}, form=shown)

    async def _presence(self, request: web.Request) -> web.Response:
        return await self._read("presence", request, PRESENCE_PERMISSION, "Forbidden", "",
                                self.presences)

    async def _auto_replies(self, request: web.Request) -> web.Response:
        user = request.match_info["user"].lower()
        if user in self.no_mailbox:
            return self._said("auto_replies", None, user, 404, _error(
                "MailboxNotEnabledForRESTAPI",
                "The mailbox is either inactive, soft-deleted, or is hosted on-premise."))
        if user in self.left_out:
            return self._said("auto_replies", None, user, 403, _error(
                "ErrorAccessDenied", "Access is denied. Check credentials and try again."))
        return await self._read("auto_replies", request, MAILBOX_PERMISSION,
                                "ErrorAccessDenied",
                                "Access is denied. Check credentials and try again.",
                                self.replies)

    async def _read(self, route: str, request: web.Request, permission: str, denied: str,
                    message: str, answers: dict[str, dict[str, Any]]) -> web.Response:
        user = request.match_info["user"].lower()
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            delay = self.delays.get(route)
            if delay:
                await asyncio.sleep(delay)
        finally:
            self.in_flight -= 1
        issued = self._bearer(request)
        if issued is None:
            return self._unauthenticated(route, user)
        tenant, roles = issued
        if self.faults[route]:
            fault = self.faults[route].popleft()
            headers = {"Retry-After": fault.retry_after} if fault.retry_after else {}
            return self._said(route, tenant, user, fault.status, _error(
                fault.code, "Too many requests"), roles=roles, headers=headers)
        if (roles is None and permission not in self.granted[tenant]) or (
                roles is not None and permission not in roles):
            return self._said(route, tenant, user, 403, _error(denied, message), roles=roles)
        if user not in answers:
            return self._said(route, tenant, user, 404, _error(
                "Request_ResourceNotFound", f"Resource '{user}' does not exist."), roles=roles)
        return self._said(route, tenant, user, 200, answers[user], roles=roles)

    async def _install(self, request: web.Request) -> web.Response:
        user = request.match_info["user"].lower()
        try:
            self.bodies.append(await request.json())
        except ValueError:
            self.bodies.append(None)
        issued = self._bearer(request)
        if issued is None:
            return self._unauthenticated("install", user)
        tenant, roles = issued
        if self.faults["install"]:
            fault = self.faults["install"].popleft()
            headers = {"Retry-After": fault.retry_after} if fault.retry_after else {}
            body = fault.body if fault.body is not None else _error(fault.code, "Try later")
            if isinstance(body, str):
                self.calls.append(Call("install", tenant, user, fault.status, roles))
                return web.Response(status=fault.status, text=body, headers=headers)
            return self._said("install", tenant, user, fault.status, body, roles=roles,
                              headers=headers)
        if INSTALL_PERMISSION not in (roles if roles is not None else self.granted[tenant]):
            return self._said("install", tenant, user, 403, _error(
                "Forbidden", "Missing role permissions on the request."), roles=roles)
        if tenant in self.blocking:
            return self._said("install", tenant, user, 403, _error(
                "Forbidden", "The app is blocked by app permission policy for this user."),
                roles=roles)
        if user in self.no_teams:
            return self._said("install", tenant, user, 404, _error(
                "NotFound", "Failed to execute Skype backend request GetUserRequest."),
                roles=roles)
        bound = (self.bodies[-1] or {}).get("teamsApp@odata.bind", "")
        if self.catalog is not None and not str(bound).endswith(f"/{self.catalog}"):
            return self._said("install", tenant, user, 404, _error(
                "NotFound", "Not found."), roles=roles)
        if user in self.installed:
            return self._said("install", tenant, user, 409, _error(
                "Conflict", "App is already installed."), roles=roles)
        self.installed.add(user)
        self.on_install(tenant, user)
        if self.installed_status != 201:  # a proxy's or a later Graph's word for success
            self.calls.append(Call("install", tenant, user, self.installed_status, roles))
            return web.Response(status=self.installed_status)
        return self._said("install", tenant, user, 201, {}, roles=roles)

    async def _installed_apps(self, request: web.Request) -> web.Response:
        user = request.match_info["user"].lower()
        issued = self._bearer(request)
        if issued is None:
            return self._unauthenticated("installed_apps", user)
        tenant, roles = issued
        if self.faults["installed_apps"]:
            fault = self.faults["installed_apps"].popleft()
            return self._said("installed_apps", tenant, user, fault.status,
                              _error(fault.code, "Try later"), roles=roles)
        if user in self.no_teams:
            return self._said("installed_apps", tenant, user, 404, _error(
                "NotFound", "Failed to execute Skype backend request GetUserRequest."),
                roles=roles)
        found = [{"id": f"{user}-app"}] if user in self.installed else []
        return self._said("installed_apps", tenant, user, 200, {"value": found}, roles=roles)

    def _bearer(self, request: web.Request) -> tuple[str, frozenset[str] | None] | None:
        """The tenant and roles of the request's bearer token, as this fake issued it (None:
        no token it issued)."""
        return self._issued.get(request.headers.get("Authorization", "").removeprefix(
            "Bearer "))

    def _unauthenticated(self, route: str, user: str) -> web.Response:
        return self._said(route, None, user, 401, _error(
            "InvalidAuthenticationToken", "Access token is empty."))

    def _said(self, route: str, tenant: str | None, user: str | None, status: int,
              body: dict[str, Any], *, roles: frozenset[str] | None = None,
              headers: dict[str, str] | None = None,
              form: dict[str, str] | None = None) -> web.Response:
        self.calls.append(Call(route, tenant, user, status, roles, form or {}))
        return web.json_response(body, status=status, headers=headers)


def _error(code: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message,
                      "innerError": {"date": "2026-12-01T09:00:00",
                                     "request-id": "9e5c3d4f-0000-4000-8000-000000000001",
                                     "client-request-id": "9e5c3d4f-0000-4000-8000-000000000001"}}}
