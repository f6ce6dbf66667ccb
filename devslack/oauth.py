"""Slack's side of a distributed app in the local Slack stand-in: several workspaces
(``add_workspace``, an Enterprise Grid org among them), the OAuth v2 install
(``/oauth/v2/authorize`` hands a code back to the redirect URL, ``oauth.v2.access`` exchanges it
for a bot token of that workspace), token rotation (with ``rotation`` on, tokens expire
``token_seconds`` after they are issued on the ``epoch`` clock, and ``oauth.v2.access`` with
``grant_type=refresh_token`` issues a new one; a refresh token is spent when used), tokens revoked
(``revoke``), and the Events API callbacks Slack sends (``event``: ``app_uninstalled``,
``tokens_revoked``, ``app_home_opened``). Every call records the workspace whose token made it and
whether that token had expired.
"""

from __future__ import annotations

import secrets
from typing import Any
from urllib.parse import urlencode

from aiohttp import web

from devslack.errors import SlackError
from devslack.model import (
    APP_ID,
    BOT_USER_ID,
    VERIFICATION_TOKEN,
    Issued,
    Json,
    Workspace,
)
from devslack.state import State


class Distributed(State):
    """Workspaces, installs, rotating tokens, revocation and event callbacks."""

    @property
    def authorize_url(self) -> str:
        return f"{self.base_url}/oauth/v2/authorize"

    def add_workspace(self, team_id: str | None, *, enterprise_id: str | None = None,
                      name: str | None = None, org_wide: bool = False) -> Workspace:
        """A workspace (of Enterprise Grid org ``enterprise_id`` if given), or with
        ``org_wide`` the org itself (``team_id`` None): a place the app can be installed, and
        the team and enterprise its people's interactions carry."""
        workspace = Workspace(team_id, enterprise_id, name or (team_id or enterprise_id or ""),
                              org_wide)
        self.workspaces[workspace.key] = workspace
        return workspace

    def grant_code(self, key: str, *, redirect_uri: str | None = None) -> str:
        """A person approved the install in workspace (or org) ``key``: the code Slack sends
        to the redirect URL."""
        code = f"{next(self._serial)}.{secrets.token_hex(12)}"
        self._codes[code] = (self.workspaces[key], redirect_uri)
        return code

    async def _authorize(self, request: web.Request) -> web.Response:
        """Slack's authorize page, approved at once into ``installing``: back to the
        redirect URL with a code and the state it was given."""
        query = request.query
        if query.get("client_id") != self.client_id or not self.installing:
            return web.Response(status=400, text="invalid_client_id")
        redirect = query.get("redirect_uri", "")
        code = self.grant_code(self.installing, redirect_uri=redirect or None)
        location = f"{redirect}?{urlencode({'code': code, 'state': query.get('state', '')})}"
        raise web.HTTPFound(location)

    def _issue(self, workspace: Workspace) -> Json:
        token = f"xoxb-{workspace.key}-{secrets.token_hex(10)}"
        expires = self.epoch() + self.token_seconds if self.rotation else None
        self.issued[token] = Issued(workspace.key, expires)
        answer: Json = {"access_token": token, "token_type": "bot",
                        "scope": ",".join(sorted(self.scopes)),
                        "bot_user_id": BOT_USER_ID, "app_id": APP_ID,
                        "team": None if workspace.org_wide else {"id": workspace.team_id,
                                                                 "name": workspace.name},
                        "enterprise": {"id": workspace.enterprise_id, "name": workspace.name}
                        if workspace.enterprise_id else None,
                        "is_enterprise_install": workspace.org_wide,
                        "authed_user": {"id": "U0INSTALLER"}}
        if self.rotation:
            refresh = f"xoxe-1-{secrets.token_hex(12)}"
            self._refresh[refresh] = workspace.key
            answer.update(refresh_token=refresh, expires_in=self.token_seconds)
        return answer

    def _oauth_access(self, args: Json) -> Json:
        if args.get("client_id") != self.client_id \
                or args.get("client_secret") != self.client_secret:
            raise SlackError("invalid_client_id")
        if args.get("grant_type") == "refresh_token":
            key = self._refresh.pop(str(args.get("refresh_token")), None)  # spent when used
            if key is None or key not in self.workspaces:
                raise SlackError("invalid_refresh_token")
            self.refreshes.append(key)
            return self._issue(self.workspaces[key])
        found = self._codes.pop(str(args.get("code")), None)
        if found is None:
            raise SlackError("invalid_code")
        workspace, redirect = found
        if redirect is not None and args.get("redirect_uri") not in (None, redirect):
            raise SlackError("bad_redirect_uri")
        return self._issue(workspace)

    def revoke(self, key: str) -> None:
        """Every token of installation ``key`` is revoked (an admin, or an uninstall)."""
        for issued in self.issued.values():
            if issued.key == key:
                issued.revoked = True
        self._refresh = {r: k for r, k in self._refresh.items() if k != key}

    def installed_org_wide(self, enterprise_id: str | None, team_id: str | None) -> bool:
        """Whether the app reaches ``team_id`` through an org-wide install of its org (a live
        token of the org's and none of the workspace's own): Slack's ``is_enterprise_install``."""
        if not enterprise_id:
            return False
        live = {i.key for i in self.issued.values() if not i.revoked}
        return enterprise_id in live and team_id not in live

    def event(self, kind: str, key: str, **fields: Any) -> Json:
        """The ``event_callback`` body Slack sends for an event of ``kind`` in installation
        ``key`` (``app_uninstalled``, ``tokens_revoked``, ``app_home_opened`` …); ``fields``
        go into the event."""
        workspace = self.workspaces[key]
        return self._callback(kind, workspace.team_id, workspace.enterprise_id,
                              org_wide=workspace.org_wide, **fields)

    def _callback(self, kind: str, team_id: str | None, enterprise_id: str | None, *,
                  org_wide: bool, **fields: Any) -> Json:
        now = self.clock.now().timestamp()
        event: Json = {"type": kind, **fields, "event_ts": f"{now:.6f}"}
        if kind == "tokens_revoked":
            event["tokens"] = {"oauth": [], "bot": [BOT_USER_ID]}
        return {"token": VERIFICATION_TOKEN, "team_id": team_id or enterprise_id,
                "enterprise_id": enterprise_id, "api_app_id": APP_ID, "event": event,
                "type": "event_callback", "event_id": f"Ev{next(self._serial):08d}",
                "event_time": int(now), "is_ext_shared_channel": False,
                "authorizations": [{"enterprise_id": enterprise_id,
                                    "team_id": None if org_wide else team_id,
                                    "user_id": BOT_USER_ID, "is_bot": True,
                                    "is_enterprise_install": org_wide}]}
