"""A fake Slack Web API on 127.0.0.1 that the real ``slack_sdk`` client talks to in tests.

It keeps messages, DMs, modals and users in memory, checks arguments and Block Kit limits the way
Slack answers them, records every call, and can be told to rate-limit or fail a method.

It is also Slack's side of a distributed app: several workspaces (``add_workspace``), the OAuth
v2 install (``/oauth/v2/authorize`` hands a code back to the redirect URL, ``oauth.v2.access``
exchanges it for a bot token of that workspace), token rotation (with ``rotation`` on, tokens
expire ``token_seconds`` after they are issued on the ``epoch`` clock, and ``oauth.v2.access``
with ``grant_type=refresh_token`` issues a new one; a refresh token is spent when used), tokens
revoked (``revoke``), and the ``app_uninstalled``/``tokens_revoked`` events (``event``). Every
call records the workspace whose token made it and whether that token had expired.
"""

from __future__ import annotations

import base64
import itertools
import json
import math
import secrets
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Self
from urllib.parse import urlencode

from aiohttp import web
from slack_sdk.errors import SlackObjectFormationError
from slack_sdk.models.blocks import Block
from slack_sdk.models.views import View

from cards import platform_limits as limits

BOT_TOKEN = "xoxb-fake-bot-token"
APP_TOKEN = "xapp-1-A0FAKEAPP-fake-app-token"  # Socket Mode's app-level token
TEAM_ID = "T0FAKE"
BOT_USER_ID = "U0FAKEBOT"
BOT_ID = "B0FAKEBOT"
APP_ID = "A0FAKEAPP"
TRIGGER_TTL = 3.0  # seconds a trigger_id can open a modal
MAX_TEXT = 40_000
FIRST_TS = 1_720_000_000_000_100  # microseconds: the first ts is "1720000000.000100"
JSON_FIELDS = ("blocks", "metadata", "view")

Json = dict[str, Any]
Handler = Callable[[Json], Json]


class SlackError(Exception):
    """A Slack ``{"ok": false}`` answer, with its HTTP status and headers."""

    def __init__(self, error: str, *, status: int = 200, messages: Iterable[str] = (),
                 retry_after: int | None = None, html: bool = False) -> None:
        super().__init__(error)
        self.error, self.status, self.retry_after, self.html = error, status, retry_after, html
        self.messages = list(messages)

    def headers(self) -> dict[str, str]:
        return {} if self.retry_after is None else {"Retry-After": str(self.retry_after)}

    def body(self) -> Json:
        body: Json = {"ok": False, "error": self.error}
        if self.messages:
            body["errors"] = self.messages
            body["response_metadata"] = {"messages": [f"[ERROR] {m}" for m in self.messages]}
        return body


@dataclass(frozen=True)
class Call:
    """One request as the fake saw it: decoded arguments (no token), arrival time, outcome."""

    method: str
    args: Json
    at: float
    status: int
    error: str | None
    retry_after: int | None = None
    team: str | None = None  # the installation whose token made the call (key: T… or E…)
    expired: bool = False  # made with a token that had expired


@dataclass
class Message:
    channel: str
    ts: str
    text: str
    blocks: list[Json]
    metadata: Json | None = None
    thread_ts: str | None = None
    edited_ts: str | None = None
    team: str | None = None  # the installation whose token posted it
    broadcast: bool = False  # a thread reply also shown in the channel (``reply_broadcast``)

    def as_slack(self, *, with_metadata: bool) -> Json:
        """The message as conversations.history shows it."""
        shown: Json = {"type": "message", "user": BOT_USER_ID, "bot_id": BOT_ID,
                       "app_id": APP_ID, "team": TEAM_ID, "ts": self.ts, "text": self.text}
        if self.blocks:
            shown["blocks"] = self.blocks
        if self.thread_ts:
            shown["thread_ts"] = self.thread_ts
            if self.broadcast:
                shown["subtype"] = "thread_broadcast"
        if self.edited_ts:
            shown["edited"] = {"user": BOT_USER_ID, "ts": self.edited_ts}
        if with_metadata and self.metadata:
            shown["metadata"] = self.metadata
        return shown


@dataclass
class Fault:
    status: int
    retry_after: int
    error: str | None
    times: int


@dataclass
class Bucket:
    """A token bucket: ``capacity`` calls at once, refilled at ``per_second``."""

    per_second: float
    capacity: float
    tokens: float
    last: float

    def take(self, now: float) -> float:
        """0 when a call may pass (and spends a token), else the seconds until one may."""
        self.tokens = min(self.capacity, self.tokens + (now - self.last) * self.per_second)
        self.last = now
        if self.tokens >= 1:
            self.tokens -= 1
            return 0.0
        return (1 - self.tokens) / self.per_second


@dataclass(frozen=True)
class RetryGap:
    """A 429 and the next call to the same method: did the client wait ``retry_after``?"""

    retry_after: int
    gap: float

    @property
    def honoured(self) -> bool:
        return self.gap >= self.retry_after


@dataclass
class User:
    id: str
    name: str
    email: str | None = None
    tz: str = "UTC"
    is_bot: bool = False
    deleted: bool = False
    team: str = "T0FAKE"  # the workspace the user belongs to
    locale: str = "en-GB"  # answered only with include_locale, as Slack does

    def as_slack(self) -> Json:
        profile = {"real_name": self.name, "display_name": self.name}
        if self.email:
            profile["email"] = self.email
        return {"id": self.id, "team_id": TEAM_ID, "name": self.name, "real_name": self.name,
                "deleted": self.deleted, "is_bot": self.is_bot, "tz": self.tz,
                "profile": profile}


@dataclass
class Workspace:
    """A workspace (or, ``org_wide``, an Enterprise Grid org) the app can be installed in."""

    team_id: str | None
    enterprise_id: str | None = None
    name: str = "Workspace"
    org_wide: bool = False

    @property
    def key(self) -> str:
        return (self.enterprise_id if self.org_wide else self.team_id) or ""


@dataclass
class Issued:
    """A bot token Slack issued for an installation."""

    key: str
    expires_at: float | None  # epoch seconds; None: never
    revoked: bool = False


# ---------------------------------------------------------------- argument checks


def _flag(value: object) -> bool:
    return value in (True, 1, "1", "true", "True")


def _decode_json_fields(args: Json) -> None:
    """Form bodies carry blocks/metadata/view as JSON strings; undecodable ones stay strings."""
    for name in JSON_FIELDS:
        if isinstance(args.get(name), str):
            try:
                args[name] = json.loads(args[name])
            except ValueError:
                pass


def _sdk_problems(parse: Callable[[], object]) -> list[str]:
    """What slack_sdk's own models say about a payload (an independent second opinion)."""
    try:
        parsed = parse()
    except (SlackObjectFormationError, TypeError, KeyError, AttributeError) as exc:
        return [str(exc)]
    if parsed is None or (isinstance(parsed, list) and None in parsed):
        return ["unknown block type"]
    return []


def _block_problems(blocks: list[Json]) -> list[str]:
    def parse() -> list[object]:
        parsed = [Block.parse(b) for b in blocks]
        return [p.to_dict() if p else None for p in parsed]

    return limits.slack_message_problems({"blocks": blocks}) + _sdk_problems(parse)


def _view_problems(view: Json) -> list[str]:
    if not isinstance(view, dict) or view.get("type") != "modal":
        return ["view must be a modal object"]
    blocks = view.get("blocks")
    if not isinstance(blocks, list) or not all(isinstance(b, dict) for b in blocks):
        return ["view.blocks must be a list of objects"]
    return limits.slack_modal_problems(view) + _sdk_problems(lambda: View(**view).to_dict())


def _home_problems(view: Json) -> list[str]:
    if not isinstance(view, dict) or view.get("type") != "home":
        return ["view must be a home object"]
    blocks = view.get("blocks")
    if not isinstance(blocks, list) or not all(isinstance(b, dict) for b in blocks):
        return ["view.blocks must be a list of objects"]
    return limits.slack_modal_problems(view) + _sdk_problems(lambda: View(**view).to_dict())


def _content(args: Json, *, required: bool = True) -> tuple[str | None, list[Json] | None]:
    """The message text and blocks, checked; raises Slack's error for a bad pair."""
    text, blocks = args.get("text"), args.get("blocks")
    if blocks is not None:
        if not isinstance(blocks, list) or not all(isinstance(b, dict) for b in blocks):
            raise SlackError("invalid_blocks_format")
        if problems := _block_problems(blocks):
            raise SlackError("invalid_blocks", messages=problems)
    if required and not text and not blocks:
        raise SlackError("no_text")
    if isinstance(text, str) and len(text) > MAX_TEXT:
        raise SlackError("msg_too_long")
    return text, blocks


def _metadata(args: Json) -> Json | None:
    metadata = args.get("metadata")
    if metadata is None:
        return None
    if (not isinstance(metadata, dict) or not isinstance(metadata.get("event_type"), str)
            or not isinstance(metadata.get("event_payload"), dict)):
        raise SlackError("invalid_metadata_format")
    return metadata


def _required(args: Json, name: str) -> Any:
    if args.get(name) in (None, ""):
        raise SlackError("invalid_arguments", messages=[f"missing required field: {name}"])
    return args[name]


async def _read_args(request: web.Request) -> Json:
    args: Json = dict(request.query)
    if request.can_read_body:
        if request.content_type == "application/json":
            body = await request.json()
            args.update(body if isinstance(body, dict) else {})
        else:
            args.update((await request.post()).items())
    _decode_json_fields(args)
    return args


# ---------------------------------------------------------------- the server


@dataclass
class FakeSlack:
    """The fake workspace and its HTTP server; ``async with FakeSlack() as slack: slack.url``.

    ``clock`` (seconds, monotonic) times arrivals, rate buckets and trigger expiry; a test can
    pass ``lambda: manual_clock.now().timestamp()`` to move it by hand.
    """

    tokens: frozenset[str] = frozenset({BOT_TOKEN})
    app_tokens: frozenset[str] = frozenset({APP_TOKEN})
    socket_url: str = ""  # what apps.connections.open hands out (Socket Mode's WebSocket)
    clock: Callable[[], float] = time.monotonic
    url: str = ""
    port: int = 0  # where it listens (0: any free port)
    calls: list[Call] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    ephemerals: list[Json] = field(default_factory=list)
    views: dict[str, Json] = field(default_factory=dict)
    homes: dict[str, Json] = field(default_factory=dict)  # user id -> published App Home
    # what was posted to a click's response_url: {"user", "channel", "text", ...}
    responses: list[Json] = field(default_factory=list)
    _response_urls: dict[str, tuple[str, str]] = field(default_factory=dict)
    users: dict[str, User] = field(default_factory=dict)
    channels: set[str] = field(default_factory=set)
    _faults: dict[str, list[Fault]] = field(default_factory=dict)
    _rates: dict[str, tuple[float, float, bool]] = field(default_factory=dict)
    _buckets: dict[tuple[str, str], Bucket] = field(default_factory=dict)
    _triggers: dict[str, float | None] = field(default_factory=dict)
    _serial: itertools.count = field(default_factory=lambda: itertools.count(0))
    _ts_serial: itertools.count = field(default_factory=lambda: itertools.count(0))
    _runner: web.AppRunner | None = None
    # a distributed app: its credentials, the workspaces, what was issued
    client_id: str = "1111111111.2222222222"
    client_secret: str = "fake-client-secret-0123456789abcdef"
    rotation: bool = False  # token_rotation_enabled in the app's manifest
    token_seconds: int = 43_200  # how long a rotating token lives (Slack: 12 hours)
    epoch: Callable[[], float] = time.time  # token expiry (the bot's clock, in tests)
    workspaces: dict[str, Workspace] = field(default_factory=dict)
    issued: dict[str, Issued] = field(default_factory=dict)
    _codes: dict[str, tuple[Workspace, str | None]] = field(default_factory=dict)
    _refresh: dict[str, str] = field(default_factory=dict)  # refresh token -> installation key
    refreshes: list[str] = field(default_factory=list)  # installation keys, one per refresh
    installing: str | None = None  # the workspace /oauth/v2/authorize installs into

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
        """Stops the server; safe to call twice."""
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    # ------------------------------------------------------------ workspace set-up

    def add_user(self, user_id: str, *, name: str | None = None, email: str | None = None,
                 tz: str = "UTC", is_bot: bool = False, deleted: bool = False,
                 team: str = TEAM_ID, locale: str = "en-GB") -> User:
        user = User(user_id, name or user_id.lower(), email, tz, is_bot, deleted, team, locale)
        self.users[user_id] = user
        return user

    def add_channel(self, channel_id: str) -> str:
        self.channels.add(channel_id)
        return channel_id

    def new_response_url(self, user_id: str, channel: str) -> str:
        """A click's response_url: what is posted there is shown to that user only, in the
        conversation the click came from (Slack's "ephemeral" response)."""
        token = secrets.token_hex(8)
        self._response_urls[token] = (user_id, channel)
        return self.url.removesuffix("/api/") + f"/actions/{token}"

    async def _respond(self, request: web.Request) -> web.Response:
        found = self._response_urls.get(request.match_info["token"])
        if found is None:
            return web.Response(status=404, text="no_active_hooks")
        try:
            body = await request.json()
        except ValueError:
            return web.Response(status=400, text="invalid_payload")
        self.responses.append({"user": found[0], "channel": found[1], **body})
        return web.Response(text="ok")

    def new_trigger_id(self) -> str:
        """A trigger_id as a click would carry: one use, within TRIGGER_TTL seconds."""
        # Slack's shape: two numbers and a hex tail ("13345224609.738474920.8088930838d88f008e0")
        trigger = f"{1_000_000 + next(self._serial)}.{4_242_424}.{secrets.token_hex(10)}"
        self._triggers[trigger] = self.clock()
        return trigger

    # ------------------------------------------------------------ a distributed app

    @property
    def authorize_url(self) -> str:
        return self.url.removesuffix("/api/") + "/oauth/v2/authorize"

    def add_workspace(self, team_id: str | None, *, enterprise_id: str | None = None,
                      name: str | None = None, org_wide: bool = False) -> Workspace:
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
                        "scope": "chat:write,im:write,im:history,users:read",
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

    def event(self, kind: str, key: str) -> Json:
        """The ``event_callback`` body Slack sends for ``app_uninstalled`` or
        ``tokens_revoked`` of installation ``key``."""
        workspace = self.workspaces[key]
        event: Json = {"type": kind, "event_ts": f"{time.time():.6f}"}
        if kind == "tokens_revoked":
            event["tokens"] = {"oauth": [], "bot": [BOT_USER_ID]}
        return {"token": "legacy-verification-token", "team_id": workspace.team_id
                or workspace.enterprise_id, "enterprise_id": workspace.enterprise_id,
                "api_app_id": APP_ID, "event": event, "type": "event_callback",
                "event_id": f"Ev{next(self._serial):08d}", "event_time": int(time.time()),
                "is_ext_shared_channel": False,
                "authorizations": [{"enterprise_id": workspace.enterprise_id,
                                    "team_id": None if workspace.org_wide
                                    else workspace.team_id, "user_id": BOT_USER_ID,
                                    "is_bot": True,
                                    "is_enterprise_install": workspace.org_wide}]}

    def calls_with_expired_tokens(self) -> list[Call]:
        return [call for call in self.calls if call.expired]

    # ------------------------------------------------------------ fault injection

    def fail_next(self, method: str, *, status: int = 429, retry_after: int = 1, times: int = 1,
                  error: str | None = None) -> None:
        """The next ``times`` calls to ``method`` fail: 429 with Retry-After, a 5xx, or (status
        200) ``{"ok": false, "error": error}``."""
        self._faults.setdefault(method, []).append(Fault(status, retry_after, error, times))

    def rate_limit(self, method: str, *, per_second: float, burst: float | None = None,
                   per_channel: bool = False) -> None:
        """Calls to ``method`` beyond a token bucket (per channel if asked) get 429."""
        self._rates[method] = (per_second, burst or max(1.0, per_second), per_channel)

    def clear_faults(self) -> None:
        self._faults.clear()
        self._rates.clear()
        self._buckets.clear()

    # ------------------------------------------------------------ what happened

    def calls_to(self, method: str) -> list[Call]:
        return [call for call in self.calls if call.method == method]

    @property
    def counts(self) -> Counter[str]:
        """Calls per method, failed ones included."""
        return Counter(call.method for call in self.calls)

    def messages_in(self, channel: str) -> list[Message]:
        """Messages in ``channel``, oldest first."""
        return [m for m in self.messages if m.channel == channel]

    def dm_of(self, user_id: str) -> list[Message]:
        return self.messages_in(self.dm_channel(user_id))

    @staticmethod
    def dm_channel(user_id: str) -> str:
        return f"D{user_id}"

    def retry_gaps(self, method: str) -> list[RetryGap]:
        """For each 429 answer on ``method`` that a later call followed, the wait before it."""
        calls = self.calls_to(method)
        gaps = []
        for before, after in itertools.pairwise(calls):
            if before.retry_after is not None:
                gaps.append(RetryGap(before.retry_after, after.at - before.at))
        return gaps

    # ------------------------------------------------------------ request handling

    async def _handle(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        now = self.clock()
        args = await _read_args(request)
        token = _bearer(request.headers.get("Authorization")) or args.pop("token", None)
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
                return web.Response(text=_gateway_page(exc.status), status=exc.status,
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

    @property
    def _team(self) -> str:
        """The installation whose token makes the call being handled."""
        issued = self.issued.get(getattr(self, "_token", None) or "")
        return issued.key if issued else TEAM_ID

    def _inject_faults(self, method: str, args: Json, now: float) -> None:
        faults = self._faults.get(method)
        if faults:
            fault = faults[0]
            fault.times -= 1
            if fault.times <= 0:
                faults.pop(0)
            raise _fault_error(fault)
        if method in self._rates:
            per_second, burst, per_channel = self._rates[method]
            key = (method, str(args.get("channel", "")) if per_channel else "")
            bucket = self._buckets.setdefault(key, Bucket(per_second, burst, burst, now))
            if wait := bucket.take(now):
                raise SlackError("ratelimited", status=429, retry_after=max(1, math.ceil(wait)))

    def _handlers(self) -> dict[str, Handler]:
        return {
            "auth.test": self._auth_test,
            "auth.revoke": self._auth_revoke,
            "apps.connections.open": self._connections_open,
            "conversations.open": self._conversations_open,
            "conversations.history": self._conversations_history,
            "conversations.info": self._conversations_info,
            "chat.postMessage": self._post_message,
            "chat.update": self._update,
            "chat.postEphemeral": self._post_ephemeral,
            "views.open": self._views_open,
            "views.update": self._views_update,
            "views.publish": self._views_publish,
            "users.info": self._users_info,
            "users.lookupByEmail": self._users_lookup_by_email,
            "oauth.v2.access": self._oauth_access,
        }

    # ------------------------------------------------------------ helpers for methods

    def _next_ts(self) -> str:
        micro = FIRST_TS + 100 * next(self._ts_serial)
        return f"{micro // 1_000_000}.{micro % 1_000_000:06d}"

    def _channel(self, args: Json) -> str:
        """The channel named in ``args``; a user id means that user's DM, as in Slack."""
        channel = args.get("channel")
        if not isinstance(channel, str) or not channel:
            raise SlackError("channel_not_found")
        if channel in self.users:
            channel = self.dm_channel(channel)
        user = self.users.get(channel[1:]) if channel.startswith("D") else None
        if user is not None and not self._reaches(user):
            raise SlackError("channel_not_found")  # another workspace's user: not this token's
        if channel in self.channels or user is not None:
            return channel
        raise SlackError("channel_not_found")

    def _reaches(self, user: User) -> bool:
        """Whether the calling token's installation reaches the user: its own workspace, or
        every workspace of its org for an org-wide install."""
        team = self._team
        if team == TEAM_ID or team == user.team:
            return True
        workspace = self.workspaces.get(team)
        member = self.workspaces.get(user.team)
        return workspace is not None and workspace.org_wide and member is not None \
            and member.enterprise_id == workspace.enterprise_id

    def _user(self, user_id: object) -> User:
        user = self.users.get(user_id) if isinstance(user_id, str) else None
        if user is None:
            raise SlackError("user_not_found")
        return user

    def _message(self, channel: str, ts: str) -> Message:
        for message in self.messages:
            if message.channel == channel and message.ts == ts:
                return message
        raise SlackError("message_not_found")

    # ------------------------------------------------------------ methods

    def _auth_revoke(self, args: Json) -> Json:
        """The calling token is revoked (Slack's ``auth.revoke``; ``test=true`` only says so)."""
        issued = self.issued.get(getattr(self, "_token", None) or "")
        if _flag(args.get("test")):
            return {"revoked": False}
        if issued is not None:
            issued.revoked = True
        else:  # the single-workspace token
            self.tokens = self.tokens - {getattr(self, "_token", None) or ""}
        return {"revoked": True}

    def _auth_test(self, args: Json) -> Json:
        workspace = self.workspaces.get(self._team)
        if workspace is not None:
            return {"url": "https://fake.slack.com/", "team": workspace.name, "user": "clarify",
                    "team_id": workspace.team_id or workspace.enterprise_id,
                    "enterprise_id": workspace.enterprise_id, "user_id": BOT_USER_ID,
                    "bot_id": BOT_ID, "is_enterprise_install": workspace.org_wide}
        return {"url": "https://fake.slack.com/", "team": "Fake Workspace", "user": "clarify",
                "team_id": TEAM_ID, "user_id": BOT_USER_ID, "bot_id": BOT_ID,
                "is_enterprise_install": False}

    def _connections_open(self, args: Json) -> Json:
        if not self.socket_url:
            raise SlackError("internal_error", status=500)
        return {"url": self.socket_url}

    def _conversations_open(self, args: Json) -> Json:
        users = args.get("users")
        ids = users.split(",") if isinstance(users, str) else list(users or [])
        if not ids and args.get("channel"):
            return {"channel": {"id": self._channel(args)}}
        if not ids:
            raise SlackError("users_list_not_supplied")
        if len(ids) > 1:
            raise SlackError("invalid_arguments", messages=["the fake opens 1:1 DMs only"])
        user = self._user(ids[0].strip())
        if user.deleted:
            raise SlackError("user_disabled")
        if user.is_bot:
            raise SlackError("cannot_dm_bot")
        channel = self.dm_channel(user.id)
        already_open = channel in self.channels
        self.channels.add(channel)
        return {"no_op": already_open, "already_open": already_open,
                "channel": {"id": channel, "is_im": True, "user": user.id}}

    def _conversations_info(self, args: Json) -> Json:
        channel = self._channel(args)
        for user in self.users.values():
            if self.dm_channel(user.id) == channel:
                return {"channel": {"id": channel, "is_im": True, "user": user.id}}
        return {"channel": {"id": channel, "is_im": False}}

    def _post_message(self, args: Json) -> Json:
        channel = self._channel(args)
        text, blocks = _content(args)
        thread = args.get("thread_ts")
        if thread and not any(m.ts == thread for m in self.messages_in(channel)):
            raise SlackError("thread_not_found")
        message = Message(channel, self._next_ts(), text or "", blocks or [], _metadata(args),
                          thread, team=self._team,
                          broadcast=bool(thread) and _flag(args.get("reply_broadcast")))
        self.messages.append(message)
        return {"channel": channel, "ts": message.ts,
                "message": message.as_slack(with_metadata=True)}

    def _update(self, args: Json) -> Json:
        channel = self._channel(args)
        message = self._message(channel, _required(args, "ts"))
        text, blocks = _content(args)
        metadata = _metadata(args)
        if text is not None:
            message.text = text
        if blocks is not None:
            message.blocks = blocks
        if metadata is not None:
            message.metadata = metadata
        message.edited_ts = self._next_ts()
        return {"channel": channel, "ts": message.ts, "text": message.text,
                "message": message.as_slack(with_metadata=True)}

    def _post_ephemeral(self, args: Json) -> Json:
        channel = self._channel(args)
        user = self._user(args.get("user"))
        if channel.startswith("D") and channel != self.dm_channel(user.id):
            raise SlackError("user_not_in_channel")
        text, blocks = _content(args)
        ts = self._next_ts()
        self.ephemerals.append({"channel": channel, "user": user.id, "ts": ts,
                                "text": text or "", "blocks": blocks or []})
        return {"message_ts": ts}

    def _conversations_history(self, args: Json) -> Json:
        channel = self._channel(args)
        limit = max(1, min(999, int(args.get("limit") or 100)))
        inclusive = _flag(args.get("inclusive"))
        oldest = Decimal(str(args.get("oldest") or "0"))
        latest = Decimal(str(args.get("latest") or "1e12"))
        cursor = args.get("cursor")
        if cursor:
            latest, inclusive = Decimal(str(cursor)), False

        def within(ts: Decimal) -> bool:
            if inclusive:
                return oldest <= ts <= latest
            return oldest < ts < latest

        # as Slack: the channel's own messages, and of thread replies only those broadcast
        found = [m for m in self.messages_in(channel) if within(Decimal(m.ts))
                 and (not m.thread_ts or m.thread_ts == m.ts or m.broadcast)]
        found.sort(key=lambda m: Decimal(m.ts), reverse=True)
        page, has_more = found[:limit], len(found) > limit
        with_metadata = _flag(args.get("include_all_metadata"))
        return {"messages": [m.as_slack(with_metadata=with_metadata) for m in page],
                "has_more": has_more, "pin_count": 0,
                "response_metadata": {"next_cursor": page[-1].ts if has_more else ""}}

    def _views_open(self, args: Json) -> Json:
        self._spend_trigger(_required(args, "trigger_id"))
        view = self._checked_view(args)
        external_id = view.get("external_id")
        if external_id and any(v.get("external_id") == external_id for v in self.views.values()):
            raise SlackError("duplicate_external_id")
        view_id = f"V{next(self._serial):08d}"
        return {"view": self._store_view(view_id, view)}

    def _views_update(self, args: Json) -> Json:
        view_id = self._find_view(args.get("view_id"), args.get("external_id"))
        stored = self.views[view_id]
        if args.get("hash") and args["hash"] != stored["hash"]:
            raise SlackError("hash_conflict")
        view = self._checked_view(args)
        return {"view": self._store_view(view_id, view)}

    def _views_publish(self, args: Json) -> Json:
        """A person's App Home: checked like Slack checks a home view, kept per user."""
        user_id = self._user(_required(args, "user_id")).id
        view = _required(args, "view")
        if problems := _home_problems(view):
            raise SlackError("invalid_arguments", messages=problems)
        view_id = f"V{next(self._serial):08d}"
        self.homes[user_id] = self._store_view(view_id, dict(view))
        return {"view": self.homes[user_id]}

    def _users_info(self, args: Json) -> Json:
        user = self._user(args.get("user"))
        shown = user.as_slack()
        if str(args.get("include_locale", "")).lower() in ("true", "1"):
            shown["locale"] = user.locale
        return {"user": shown}

    def _users_lookup_by_email(self, args: Json) -> Json:
        email = _required(args, "email")
        for user in self.users.values():
            if user.email and user.email.lower() == str(email).lower():
                return {"user": user.as_slack()}
        raise SlackError("users_not_found")

    # ------------------------------------------------------------ modal helpers

    def _spend_trigger(self, trigger_id: str) -> None:
        if trigger_id not in self._triggers:
            raise SlackError("invalid_trigger_id")
        issued = self._triggers[trigger_id]
        if issued is None:
            raise SlackError("exchanged_trigger_id")
        self._triggers[trigger_id] = None
        if self.clock() - issued > TRIGGER_TTL:
            raise SlackError("expired_trigger_id")

    def _checked_view(self, args: Json) -> Json:
        # Slack reports a malformed or over-long view as invalid_arguments, not invalid_blocks.
        view = _required(args, "view")
        if problems := _view_problems(view):
            raise SlackError("invalid_arguments", messages=problems)
        return dict(view)

    def _find_view(self, view_id: object, external_id: object) -> str:
        if not view_id and not external_id:
            raise SlackError("invalid_arguments", messages=["view_id or external_id required"])
        for stored_id, view in self.views.items():
            if stored_id == view_id or (external_id and view.get("external_id") == external_id):
                return stored_id
        raise SlackError("not_found")

    def _store_view(self, view_id: str, view: Json) -> Json:
        stored = {**view, "id": view_id, "team_id": TEAM_ID, "app_id": APP_ID,
                  "bot_id": BOT_ID, "hash": f"{next(self._serial)}.fakehash",
                  "root_view_id": view_id, "state": {"values": {}}}
        self.views[view_id] = stored
        return stored


def _bearer(header: str | None) -> str | None:
    if header and header.startswith("Bearer "):
        return header.removeprefix("Bearer ").strip() or None
    return None


def _fault_error(fault: Fault) -> SlackError:
    if fault.status == 429:
        return SlackError(fault.error or "ratelimited", status=429, retry_after=fault.retry_after)
    # A 5xx without a named error is a gateway page (HTML), as Slack's edge answers.
    html = fault.status >= 500 and fault.error is None
    return SlackError(fault.error or "fatal_error", status=fault.status, html=html)


def _gateway_page(status: int) -> str:
    return f"<html><body><h1>{status}</h1>The server could not handle the request.</body></html>"
