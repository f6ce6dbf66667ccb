"""Whether a Slack user is away now (``bot.channel.Absences``): their status and Do Not Disturb,
turned into a value-free ``Away`` (``bot.engine.away`` decides what follows).

- **Status** (``users.info``: the profile's ``status_emoji``, ``status_text`` and
  ``status_expiration``): away when ``[clarify.away]``'s words say so
  (``bot.engine.away.StatusWords``), until the status's expiry (0: none, no return date); a
  status whose expiry has passed (Slack clears it a moment later) is no longer away. The same
  ``users.info`` answer serves the person's zone and locale (``SlackChannel.profile``): one
  call when both are asked within ``USER_FRESH_SECONDS``, while the engine keeps the profile a
  day and the away lookup only minutes.
- **Do Not Disturb** (``dnd.info``, scope ``dnd:read``): away while a Do Not Disturb period
  covers now (``next_dnd_start_ts`` to ``next_dnd_end_ts``; a snooze's own
  ``snooze_endtime``, which Slack shows only to the user themselves, where given), until it
  ends. Without the scope (``missing_scope``) DND is not read for that installation from then
  on: logged once, nothing else changes.

Both calls go through the shared buckets (``users.info`` Tier 4, ``dnd.info`` Tier 3) on the
bulk lane with the profile's patience: a burst of lookups never holds a click, and one that
cannot be made in time is unknown, never away. Nothing of the status (its text, its emoji) is
kept or logged.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import structlog

from adapters.pacing import Lane
from adapters.slack.tokens import Workspace
from adapters.slack.webapi import WebApi
from bot.channel import Address, Away, ChannelError, SlackReach
from bot.engine.away import StatusWords
from bot.settings import AwaySettings

log = structlog.get_logger("clarify.slack")
# a users.info answer serves the profile and the away lookup asked within this many seconds
USER_FRESH_SECONDS = 60
USERS_KEPT = 10_000  # users.info answers kept at most (least recently used go first)
# how long a lookup waits for its bucket before it is unknown (the profile's patience)
PATIENCE_SECONDS = 0.5
NOT_FOUND = ("user_not_found", "users_not_found")
STATUS, DND = "slack_status", "slack_dnd"  # the sources (``bot.channel.Away.source``)


def away_reading(settings: AwaySettings) -> dict[str, Any]:
    """The channel's ``away_words`` and ``away_dnd`` from ``[clarify.away]`` (nothing read
    while the rule is off)."""
    return {"away_words": StatusWords.of(settings) if settings.enabled else None,
            "away_dnd": settings.enabled and settings.dnd}


def status_away(user: Mapping[str, Any], words: StatusWords, now: datetime) -> Away | None:
    """What a ``users.info`` user's status says: away until its expiry, or None."""
    profile = user.get("profile")
    if not isinstance(profile, Mapping):
        return None
    emoji, text = profile.get("status_emoji"), profile.get("status_text")
    if not words.away(emoji if isinstance(emoji, str) else None,
                      text if isinstance(text, str) else None):
        return None
    until = instant(profile.get("status_expiration"))
    if until is not None and until <= now:
        return None  # expired, not cleared yet
    return Away(until, STATUS)


def dnd_away(dnd: Mapping[str, Any], now: datetime) -> Away | None:
    """What a ``dnd.info`` answer says: away until the snooze or the DND period covering now
    ends, or None."""
    if dnd.get("snooze_enabled") is True:
        ends = instant(dnd.get("snooze_endtime"))
        if ends is not None and ends > now:
            return Away(ends, DND)
    if dnd.get("dnd_enabled") is True:
        start, end = instant(dnd.get("next_dnd_start_ts")), instant(dnd.get("next_dnd_end_ts"))
        if start is not None and end is not None and start <= now < end:
            return Away(end, DND)
    return None


def instant(value: object) -> datetime | None:
    """A Slack epoch (seconds) as an aware instant; 0, absent or not a number: None."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        seconds = float(value)
        return datetime.fromtimestamp(seconds, tz=UTC) if seconds > 0 else None
    except (ValueError, OverflowError, OSError):
        return None


@dataclass(kw_only=True)
class SlackAbsences(WebApi):
    """The Slack channel's ``away`` (``bot.channel.Absences``) and the ``users.info`` answers
    it shares with the profile."""

    # what in a status says away ([clarify.away], handed over where the app is assembled);
    # None: no status is read
    away_words: StatusWords | None = None
    away_dnd: bool = False  # Do Not Disturb says away
    _users: OrderedDict[str, tuple[datetime, Mapping[str, Any]]] = field(
        default_factory=OrderedDict, repr=False)
    _no_dnd: set[str] = field(default_factory=set, repr=False)  # installations without dnd:read

    async def away(self, address: Address) -> Away | None:
        """The person's status, then their Do Not Disturb. A user Slack does not know is not
        away; Slack unreachable, paced or refusing is a ChannelError (not away, asked again
        soon)."""
        workspace = _workspace(address)
        now = self.clock.now()
        if self.away_words is not None:
            try:
                user = await self.user_record(address.user_id, workspace, lane=Lane.BULK,
                                              patience=PATIENCE_SECONDS)
            except ChannelError as exc:
                if exc.reason in NOT_FOUND:
                    return None
                raise
            found = status_away(user, self.away_words, now)
            if found is not None:
                return found
        if not self.away_dnd:
            return None
        return await self._dnd(address.user_id, workspace, now)

    async def _dnd(self, user_id: str, workspace: Workspace, now: datetime) -> Away | None:
        scope = str(self._bucket(workspace))
        if scope in self._no_dnd:
            return None
        try:
            dnd = await self._call_retrying("dnd.info", workspace, {"user": user_id},
                                            lane=Lane.BULK, patience=PATIENCE_SECONDS)
        except ChannelError as exc:
            if exc.reason == "missing_scope":  # the app was installed without dnd:read
                self._no_dnd.add(scope)
                log.warning("slack.dnd_unreadable", why="the app lacks the scope dnd:read; "
                            "reinstall it with the manifest's scopes to read Do Not Disturb")
                return None
            if exc.reason in NOT_FOUND:
                return None
            raise
        return dnd_away(dnd, now)

    async def user_record(self, user_id: str, workspace: Workspace, *,
                          lane: Lane = Lane.INTERACTIVE, patience: float | None = None
                          ) -> Mapping[str, Any]:
        """``users.info`` (with ``include_locale``) of the user, read again after
        ``USER_FRESH_SECONDS``."""
        key = f"{self._bucket(workspace)}|{user_id}"
        now = self.clock.now()
        kept = self._users.get(key)
        if kept is not None and now < kept[0]:
            self._users.move_to_end(key)
            return kept[1]
        found = await self._call_retrying("users.info", workspace,
                                          {"user": user_id, "include_locale": "true"},
                                          lane=lane, patience=patience)
        user = found.get("user")  # a SlackResponse reads like a mapping
        record: Mapping[str, Any] = user if isinstance(user, Mapping) else {}
        self._users[key] = (now + timedelta(seconds=USER_FRESH_SECONDS), record)
        self._users.move_to_end(key)
        while len(self._users) > USERS_KEPT:
            self._users.popitem(last=False)
        return record


def _workspace(address: Address) -> SlackReach:
    return address.reach if isinstance(address.reach, SlackReach) else SlackReach()
