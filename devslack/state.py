"""Everything the local Slack stand-in holds, in one place, and the look-ups every part of it
shares: people and channels, recorded calls and messages, trigger ids and response URLs, the
faults injected into its methods.

The Web API (``devslack.methods``), the distributed app's OAuth side (``devslack.oauth``), what
each person sees (``devslack.seen``) and the interactions it sends the bot
(``devslack.interactions``) are mixins over this state; ``devslack.server.LocalSlack`` puts them
together with its HTTP server.
"""

from __future__ import annotations

import itertools
import math
import secrets
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

import aiohttp
from aiohttp import web

from devslack.errors import Fault, SlackError, fault_error
from devslack.model import (
    APP_TOKEN,
    BOT_TOKEN,
    FIRST_TS,
    SCOPES,
    TEAM_ID,
    Bucket,
    Call,
    Clock,
    Hook,
    Issued,
    Json,
    Message,
    RetryGap,
    SystemClock,
    Trigger,
    User,
    Workspace,
)


@dataclass
class State:
    """The stand-in's state. ``timer`` (seconds, monotonic) times arrivals, rate buckets and
    trigger expiry; ``clock`` (``.now()``, aware) stamps signed interactions and answers a
    person's time zone offset; ``epoch`` (seconds) decides when rotating tokens expire."""

    tokens: frozenset[str] = frozenset({BOT_TOKEN})
    # the bot scopes every token of the app has (a test takes one away: ``missing_scope``)
    scopes: frozenset[str] = frozenset(SCOPES)
    app_tokens: frozenset[str] = frozenset({APP_TOKEN})
    socket_url: str = ""  # what apps.connections.open hands out (Socket Mode's WebSocket)
    timer: Callable[[], float] = time.monotonic
    clock: Clock = field(default_factory=SystemClock)
    url: str = ""
    port: int = 0  # where it listens (0: any free port)
    # where interactions are sent (the bot's /slack/events) and the secret they are signed with
    request_url: str = ""
    signing_secret: str = ""
    calls: list[Call] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    ephemerals: list[Json] = field(default_factory=list)  # chat.postEphemeral, per user
    views: dict[str, Json] = field(default_factory=dict)  # every view stored, by id
    homes: dict[str, Json] = field(default_factory=dict)  # user id -> published App Home
    # what was posted to a click's response_url: {"user", "channel", "text", ...}
    responses: list[Json] = field(default_factory=list)
    # of those, the ones shown as ephemeral messages: as ``ephemerals`` keeps them
    responded: list[Json] = field(default_factory=list)
    modals: dict[str, list[str]] = field(default_factory=dict)  # user id -> open view ids
    view_errors: dict[str, dict[str, str]] = field(default_factory=dict)  # view id -> errors
    users: dict[str, User] = field(default_factory=dict)
    # raw members users.list shows ahead of the users (a test's malformed ones)
    listed_first: list[Json] = field(default_factory=list)
    channels: set[str] = field(default_factory=set)
    # a distributed app: its credentials, the workspaces, what was issued
    client_id: str = "1111111111.2222222222"
    client_secret: str = "fake-client-secret-0123456789abcdef"
    rotation: bool = False  # token_rotation_enabled in the app's manifest
    token_seconds: int = 43_200  # how long a rotating token lives (Slack: 12 hours)
    epoch: Callable[[], float] = time.time  # token expiry (the bot's clock, in tests)
    workspaces: dict[str, Workspace] = field(default_factory=dict)
    issued: dict[str, Issued] = field(default_factory=dict)
    refreshes: list[str] = field(default_factory=list)  # installation keys, one per refresh
    installing: str | None = None  # the workspace /oauth/v2/authorize installs into
    _codes: dict[str, tuple[Workspace, str | None]] = field(default_factory=dict)
    _refresh: dict[str, str] = field(default_factory=dict)  # refresh token -> installation key
    _response_urls: dict[str, Hook] = field(default_factory=dict)
    _faults: dict[str, list[Fault]] = field(default_factory=dict)
    _rates: dict[str, tuple[float, float, bool]] = field(default_factory=dict)
    _buckets: dict[tuple[str, str], Bucket] = field(default_factory=dict)
    _triggers: dict[str, Trigger] = field(default_factory=dict)
    _serial: itertools.count[int] = field(default_factory=lambda: itertools.count(0))
    _ts_serial: itertools.count[int] = field(default_factory=lambda: itertools.count(0))
    _runner: web.AppRunner | None = None
    _http: aiohttp.ClientSession | None = None
    _token: str | None = None  # the token of the request being handled

    # ------------------------------------------------------------ workspace set-up

    def add_user(self, user_id: str, *, name: str | None = None, email: str | None = None,
                 tz: str = "UTC", is_bot: bool = False, deleted: bool = False,
                 team: str = TEAM_ID, locale: str = "en-GB") -> User:
        """A person of workspace ``team`` (its team id), with their time zone and locale."""
        user = User(user_id, name or user_id.lower(), email, tz, is_bot, deleted, team, locale)
        self.users[user_id] = user
        return user

    def set_status(self, user_id: str, text: str, emoji: str = "", *,
                   until: datetime | None = None) -> None:
        """The person's status, as they would set it in Slack, until ``until`` (None: until
        they clear it; ``clear_status``)."""
        user = self.users[user_id]
        user.status_text, user.status_emoji = text, emoji
        user.status_expiration = round(until.timestamp()) if until is not None else 0

    def clear_status(self, user_id: str) -> None:
        self.set_status(user_id, "")

    def set_dnd(self, user_id: str, start: datetime, end: datetime) -> None:
        """The person's Do Not Disturb from ``start`` to ``end`` (a snooze, or their scheduled
        quiet hours); ``clear_dnd`` ends it."""
        user = self.users[user_id]
        user.dnd_start, user.dnd_end = round(start.timestamp()), round(end.timestamp())

    def clear_dnd(self, user_id: str) -> None:
        user = self.users[user_id]
        user.dnd_start = user.dnd_end = 0

    def add_channel(self, channel_id: str) -> str:
        self.channels.add(channel_id)
        return channel_id

    @staticmethod
    def dm_channel(user_id: str) -> str:
        """The id of the bot's DM with a person."""
        return f"D{user_id}"

    @property
    def base_url(self) -> str:
        """Where the stand-in listens, without the Web API's ``/api/``."""
        return self.url.removesuffix("/api/")

    def new_trigger_id(self, user_id: str | None = None) -> str:
        """A trigger_id as an interaction of ``user_id`` carries: one use, within TRIGGER_TTL
        seconds; a modal it opens is that person's."""
        # Slack's shape: two numbers and a hex tail ("13345224609.738474920.8088930838d88f008e0")
        trigger = f"{1_000_000 + next(self._serial)}.{4_242_424}.{secrets.token_hex(10)}"
        self._triggers[trigger] = Trigger(self.timer(), user_id)
        return trigger

    def new_response_url(self, user_id: str, channel: str, message_ts: str | None = None, *,
                         ephemeral: bool = False) -> str:
        """A click's response_url: what is posted there is shown to that user only, in the
        conversation the click came from, unless it replaces or deletes the message clicked
        (``message_ts``) or is posted ``in_channel``."""
        token = secrets.token_hex(8)
        self._response_urls[token] = Hook(user_id, channel, message_ts, ephemeral)
        return f"{self.base_url}/actions/{token}"

    # ------------------------------------------------------------ fault injection

    def fail_next(self, method: str, *, status: int = 429, retry_after: int = 1, times: int = 1,
                  error: str | None = None, after: int = 0, channel: str | None = None) -> None:
        """The next ``times`` calls to ``method`` fail (after ``after`` calls that pass): 429
        with Retry-After, a 5xx, or (status 200) ``{"ok": false, "error": error}``. With
        ``channel`` (a channel id, or a person's id for the bot's DM with them), only calls to
        that channel fail or count; the others pass by."""
        self._faults.setdefault(method, []).append(
            Fault(status, retry_after, error, times, after, channel))

    def rate_limit(self, method: str, *, per_second: float, burst: float | None = None,
                   per_channel: bool = False) -> None:
        """Calls to ``method`` beyond a token bucket (per channel if asked) get 429."""
        self._rates[method] = (per_second, burst or max(1.0, per_second), per_channel)

    def clear_faults(self) -> None:
        self._faults.clear()
        self._rates.clear()
        self._buckets.clear()

    def _inject_faults(self, method: str, args: Json, now: float) -> None:
        to = str(args.get("channel", ""))
        faults = [f for f in self._faults.get(method, ())
                  if f.channel is None or to in (f.channel, self.dm_channel(f.channel))]
        if faults and faults[0].after > 0:
            faults[0].after -= 1
        elif faults:
            fault = faults[0]
            fault.times -= 1
            if fault.times <= 0:
                self._faults[method].remove(fault)
            raise fault_error(fault)
        if method in self._rates:
            per_second, burst, per_channel = self._rates[method]
            key = (method, str(args.get("channel", "")) if per_channel else "")
            bucket = self._buckets.setdefault(key, Bucket(per_second, burst, burst, now))
            if wait := bucket.take(now):
                raise SlackError("ratelimited", status=429, retry_after=max(1, math.ceil(wait)))

    # ------------------------------------------------------------ what happened

    def calls_to(self, method: str) -> list[Call]:
        return [call for call in self.calls if call.method == method]

    def calls_with_expired_tokens(self) -> list[Call]:
        return [call for call in self.calls if call.expired]

    @property
    def counts(self) -> Counter[str]:
        """Calls per method, failed ones included."""
        return Counter(call.method for call in self.calls)

    def messages_in(self, channel: str) -> list[Message]:
        """Messages in ``channel``, oldest first."""
        return [m for m in self.messages if m.channel == channel]

    def dm_of(self, user_id: str) -> list[Message]:
        return self.messages_in(self.dm_channel(user_id))

    def retry_gaps(self, method: str) -> list[RetryGap]:
        """For each 429 answer on ``method`` that a later call followed, the wait before it."""
        calls = self.calls_to(method)
        gaps = []
        for before, after in itertools.pairwise(calls):
            if before.retry_after is not None:
                gaps.append(RetryGap(before.retry_after, after.at - before.at))
        return gaps

    # ------------------------------------------------------------ shared look-ups

    def _next_ts(self) -> str:
        micro = FIRST_TS + 100 * next(self._ts_serial)
        return f"{micro // 1_000_000}.{micro % 1_000_000:06d}"

    @property
    def _team(self) -> str:
        """The installation whose token makes the call being handled."""
        issued = self.issued.get(self._token or "")
        return issued.key if issued else TEAM_ID

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
