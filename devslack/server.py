"""The local Slack stand-in's HTTP server: Slack's Web API under ``/api/{method}`` (what the real
``slack_sdk`` client of the bot talks to), the response URLs of clicks under ``/actions/{token}``,
and the OAuth authorize page; ``async with LocalSlack() as slack: slack.url``.

The tests and ``clarify-bot sandbox`` run the bot against it on 127.0.0.1: it checks what the
bot sends as Slack does, records every call, can be told to rate-limit or fail a method, keeps
what each person sees, and sends the bot their clicks and submissions, signed.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Self

from aiohttp import web

from devslack import checks
from devslack.errors import SlackError, gateway_page
from devslack.interactions import Interacting
from devslack.methods import WebApi
from devslack.model import TEAM_ID, Call, Handler


@dataclass
class LocalSlack(Interacting, WebApi):
    """The local Slack stand-in and its HTTP server (``devslack.state.State`` holds its
    fields: ``clock``, ``timer``, ``request_url``, ``signing_secret``, ``rotation`` …)."""

    # ------------------------------------------------------------ lifecycle

    async def __aenter__(self) -> Self:
        app = web.Application()
        app.router.add_route("*", "/api/{method}", self._handle)
        app.router.add_post("/actions/{token}", self._respond)
        app.router.add_get("/oauth/v2/authorize", self._authorize)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self.port)
        await site.start()
        port = self._runner.addresses[0][1]
        self.url = f"http://127.0.0.1:{port}/api/"
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stops the server and closes the session interactions are sent with; safe twice."""
        runner, self._runner = self._runner, None
        http, self._http = self._http, None
        if http is not None:
            await http.close()
        if runner is not None:
            await runner.cleanup()

    # ------------------------------------------------------------ request handling

    def _handlers(self) -> dict[str, Handler]:
        return {**self._web_api(), "oauth.v2.access": self._oauth_access}

    async def _handle(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        now = self.timer()
        args = await checks.read_args(request)
        token = checks.bearer(request.headers.get("Authorization")) or args.pop("token", None)
        args.pop("token", None)
        if token is None and request.headers.get("Authorization", "").startswith("Basic "):
            basic = base64.b64decode(request.headers["Authorization"][6:]).decode()
            args["client_id"], _, args["client_secret"] = basic.partition(":")
        issued = self.issued.get(token or "")
        team = issued.key if issued else (TEAM_ID if token in self.tokens else None)
        expired = issued is not None and issued.expires_at is not None \
            and self.epoch() >= issued.expires_at
        self._token = token
        try:
            handler = self._handlers().get(method)
            if handler is None:
                raise SlackError("unknown_method")
            if method != "oauth.v2.access":
                self._check_auth(token, app_level=method == "apps.connections.open")
            self._inject_faults(method, args, now)
            body = {"ok": True, **handler(args)}
        except SlackError as exc:
            self.calls.append(Call(method, args, now, exc.status, exc.error, exc.retry_after,
                                   team, expired))
            if exc.html:
                return web.Response(text=gateway_page(exc.status), status=exc.status,
                                    content_type="text/html")
            return web.json_response(exc.body(), status=exc.status, headers=exc.headers())
        self.calls.append(Call(method, args, now, 200, None, team=team, expired=expired))
        return web.json_response(body)

    def _check_auth(self, token: str | None, *, app_level: bool = False) -> None:
        if not token:
            raise SlackError("not_authed")
        issued = None if app_level else self.issued.get(token)
        if issued is not None:
            if issued.revoked:
                raise SlackError("token_revoked")
            if issued.expires_at is not None and self.epoch() >= issued.expires_at:
                raise SlackError("token_expired")
            return
        if token not in (self.app_tokens if app_level else self.tokens):
            raise SlackError("invalid_auth")

    async def _respond(self, request: web.Request) -> web.Response:
        """A post to a click's response_url, applied as Slack shows it (``devslack.seen``)."""
        hook = self._response_urls.get(request.match_info["token"])
        if hook is None:
            return web.Response(status=404, text="no_active_hooks")
        try:
            body = await request.json()
        except ValueError:
            return web.Response(status=400, text="invalid_payload")
        if not isinstance(body, dict):
            return web.Response(status=400, text="invalid_payload")
        self.responses.append({"user": hook.user_id, "channel": hook.channel, **body})
        self._apply_response(hook, body)
        return web.Response(text="ok")
