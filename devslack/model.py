"""What the local Slack stand-in keeps: its fixed ids, the people and workspaces, messages, the
calls it answered, and the clock it reads.

The ids are the stand-in's own (``T0FAKE``, ``U0FAKEBOT`` …); a test or ``clarify-bot sandbox``
adds the people and workspaces it needs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from babel.dates import get_timezone_name

BOT_TOKEN = "xoxb-fake-bot-token"
APP_TOKEN = "xapp-1-A0FAKEAPP-fake-app-token"  # Socket Mode's app-level token
TEAM_ID = "T0FAKE"
BOT_USER_ID = "U0FAKEBOT"
BOT_ID = "B0FAKEBOT"
APP_ID = "A0FAKEAPP"
VERIFICATION_TOKEN = "legacy-verification-token"  # the deprecated token every payload carries
TRIGGER_TTL = 3.0  # seconds a trigger_id can open a modal
MAX_TEXT = 40_000
FIRST_TS = 1_720_000_000_000_100  # microseconds: the first ts is "1720000000.000100"
# the bot scopes the app's manifest asks for (manifest/slack/manifest.yaml): what a token has
SCOPES = ("chat:write", "im:write", "im:history", "users:read", "dnd:read")

Json = dict[str, Any]
Handler = Callable[[Json], Json]


class Clock(Protocol):
    """What the stand-in reads the time from (``bot.clock.Clock`` has this shape)."""

    def now(self) -> datetime:
        """The current time, timezone-aware."""
        ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


@dataclass(frozen=True)
class Call:
    """One request as the stand-in saw it: decoded arguments (no token), arrival, outcome."""

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
    """A message the bot posted (``chat.postMessage``, or ``in_channel`` to a response_url)."""

    channel: str
    ts: str
    text: str
    blocks: list[Json]
    metadata: Json | None = None
    thread_ts: str | None = None
    edited_ts: str | None = None
    team: str | None = None  # the installation whose token posted it
    broadcast: bool = False  # a thread reply also shown in the channel (``reply_broadcast``)
    edits: int = 0  # how often it was changed (``chat.update``, ``replace_original``)

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
    """A person (or a bot) of a workspace; ``team`` is the workspace they belong to."""

    id: str
    name: str
    email: str | None = None
    tz: str = "UTC"
    is_bot: bool = False
    deleted: bool = False
    team: str = TEAM_ID
    locale: str = "en-GB"  # answered only with include_locale, as Slack does
    # the person's status ("Out of office" :palm_tree:), until ``status_expiration`` (epoch
    # seconds; 0: until they clear it)
    status_text: str = ""
    status_emoji: str = ""
    status_expiration: int = 0
    # the person's Do Not Disturb period (epoch seconds; none while both are 0)
    dnd_start: int = 0
    dnd_end: int = 0

    def status(self, now: datetime) -> tuple[str, str, int]:
        """(text, emoji, expiration) as Slack shows it at ``now``: cleared once it expired."""
        if self.status_expiration and now.timestamp() >= self.status_expiration:
            return "", "", 0
        return self.status_text, self.status_emoji, self.status_expiration

    def dnd(self, now: datetime) -> Json:
        """``dnd.info`` of this person as another user (the bot) reads it: whether Do Not
        Disturb is on and its period (the current one, else the next); the ``snooze_*``
        fields Slack shows only to the person themselves."""
        on = self.dnd_end > now.timestamp()
        return {"dnd_enabled": on, "next_dnd_start_ts": self.dnd_start if on else 1,
                "next_dnd_end_ts": self.dnd_end if on else 1}

    def as_slack(self, now: datetime) -> Json:
        """The user as users.info answers: the zone's label and offset as at ``now``, the
        status as it stands then."""
        text, emoji, expiration = self.status(now)
        profile: Json = {"real_name": self.name, "display_name": self.name,
                         "status_text": text, "status_emoji": emoji,
                         "status_expiration": expiration}
        if self.email:
            profile["email"] = self.email
        label, offset = zone_at(self.tz, now)
        return {"id": self.id, "team_id": self.team, "name": self.name,
                "real_name": self.name, "deleted": self.deleted, "is_bot": self.is_bot,
                "tz": self.tz, "tz_label": label, "tz_offset": offset, "profile": profile}


def zone_at(name: str, now: datetime) -> tuple[str, int]:
    """A zone's long name and its offset from UTC in seconds at ``now``, as Slack shows them
    ("Central European Summer Time", 7200); a name the tz database lacks has neither."""
    try:
        local = now.astimezone(ZoneInfo(name))
    except (ZoneInfoNotFoundError, ValueError):
        return "", 0
    offset = local.utcoffset()
    return (get_timezone_name(local, width="long", locale="en_US"),
            int(offset.total_seconds()) if offset is not None else 0)


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

    @property
    def domain(self) -> str:
        """The workspace's subdomain, as payloads name it (``acme`` for ``acme.slack.com``)."""
        word = "".join(c for c in self.name.lower() if c.isalnum() or c == "-")
        return word or (self.team_id or self.enterprise_id or "").lower()


@dataclass
class Issued:
    """A bot token Slack issued for an installation."""

    key: str
    expires_at: float | None  # epoch seconds; None: never
    revoked: bool = False


@dataclass
class Trigger:
    """A trigger_id: issued at ``at`` (timer seconds) for a person's interaction, spent once."""

    at: float
    user_id: str | None = None
    spent: bool = False


@dataclass(frozen=True)
class Hook:
    """A response_url: the person who clicked, where, and the message the click was on."""

    user_id: str
    channel: str
    message_ts: str | None = None
    ephemeral: bool = False  # the clicked message was an ephemeral one
