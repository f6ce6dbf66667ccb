"""Slack's people in bulk: each workspace's members read with ``users.list`` (pages of
``PAGE_LIMIT``, ``include_locale``; Tier 2) and their Do Not Disturb with ``dnd.teamInfo`` (50
users a call; Tier 2, scope ``dnd:read``), kept in the store's directory of that workspace
(``bot.store.directory``), which every replica shares. A person found there costs no
``users.info`` and no ``dnd.info``: their zone and locale (``SlackChannel.profile``) and whether
they are away (``away``) are read from it in one store read, kept a minute in the process.

- **What is kept** of a member (``member_document``): the zone, the locale, whether their
  status says away by ``[clarify.away]`` and until when (never the status's text or emoji), and
  their Do Not Disturb period as ``dnd.teamInfo`` told it. Deleted users and bots are skipped; a
  member read tolerantly (unknown fields, a missing zone, a field of an odd type), one that
  cannot be read at all skipped alone.
- **Order**: every page is kept as it is read (the zones and locales first, resumable by the
  cursor), then the Do Not Disturb of everyone listed, a batch at a time.
- **When**: a configured workspace at the worker's first housekeeping pass, any other when a
  person of it is first looked up (the first fill), then
  again every ``REFRESH_SECONDS`` by the worker's housekeeping (``keep_house``), one replica at
  a time (a lease in the store). A page that fails (Slack unreachable, a 429 the retries did not
  outlast) keeps what was read; the listing resumes from its cursor in the next lease window.
- **Fallback**: a person the directory lacks (joined since, a listing not done yet) or whose
  document is older than ``KEPT_SECONDS`` is read alone (``users.info``, with the profile's
  patience), and what it said is kept in the directory for the other replicas. A Do Not Disturb
  period that ended since the listing, or one ``dnd.teamInfo`` did not tell, is asked of
  ``dnd.info`` for that person when their away check needs it.
"""

from __future__ import annotations

import asyncio
import json
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

import structlog

from adapters.pacing import Lane
from adapters.slack.away import (
    STATUS,
    USER_FRESH_SECONDS,
    USERS_KEPT,
    SlackAbsences,
    dnd_away,
    instant,
    status_away,
)
from adapters.slack.tokens import Workspace
from bot.channel import Address, Away, ChannelError, CredentialsRejected, Profile, SlackReach
from bot.engine.away import StatusWords
from bot.store.directory import Directories
from bot.store.kv import KeyValues

log = structlog.get_logger("clarify.slack")
PAGE_LIMIT = 200  # members a users.list page asks for (Slack recommends no more than 200)
DND_BATCH = 50  # users a dnd.teamInfo call asks for (Slack's most)
REFRESH_SECONDS = 3 * 3600  # a workspace is listed again this long after its last listing
KEPT_SECONDS = 2 * REFRESH_SECONDS  # a member's document older than this counts as absent
# one replica lists a workspace in each window of this many seconds; a broken listing resumes
# from its cursor in the next one
LEASE_SECONDS = 600
LISTED, LISTING, CURSOR = "slack-listed", "slack-listing", "slack-listing-cursor"


class PeopleStore(Directories, KeyValues, Protocol):
    """What the directory keeps in the store: the members, and the listing's lease and
    cursor."""


@dataclass(frozen=True, slots=True)
class Member:
    """One member as the directory keeps them. ``away``: whether their status says away (None:
    not read; ``(until,)`` with ``until`` None: no return date; ``()``: not away). ``dnd``:
    their Do Not Disturb period (None: not read; ``()``: none)."""

    tz: str | None
    locale: str | None
    at: float  # when Slack said it (epoch seconds)
    away: tuple[float | None, ...] | None = None
    dnd: tuple[float, ...] | None = None


def member_document(user: Mapping[str, Any], words: StatusWords | None, now: datetime
                    ) -> tuple[str, str] | None:
    """(user id, document) of a ``users.list`` or ``users.info`` member; None for a deleted
    user, a bot, or a member without an id."""
    uid = user.get("id")
    if not isinstance(uid, str) or not uid or user.get("deleted") is True \
            or user.get("is_bot") is True or uid == "USLACKBOT":
        return None
    tz, locale = user.get("tz"), user.get("locale")
    doc: dict[str, Any] = {"tz": tz if isinstance(tz, str) and tz else None,
                           "locale": locale if isinstance(locale, str) and locale else None,
                           "at": now.timestamp()}
    if words is not None:
        away = status_away(user, words, now)
        doc["away"] = [] if away is None else [
            away.until.timestamp() if away.until is not None else None]
    return uid, json.dumps(doc, separators=(",", ":"))


def read_member(text: str) -> Member | None:
    """A kept document as a ``Member``; None when it cannot be read."""
    try:
        doc = json.loads(text)
    except ValueError:
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("at"), int | float):
        return None
    tz, locale = doc.get("tz"), doc.get("locale")
    away, dnd = doc.get("away"), doc.get("dnd")
    return Member(tz=tz if isinstance(tz, str) else None,
                  locale=locale if isinstance(locale, str) else None, at=float(doc["at"]),
                  away=tuple(away) if isinstance(away, list) else None,
                  dnd=tuple(dnd) if isinstance(dnd, list) else None)


def with_dnd(document: str, dnd: object) -> str:
    """The document with what ``dnd.teamInfo`` said of the member: their current or next
    period while Do Not Disturb is on, ``[]`` while it is off."""
    doc = json.loads(document)
    if isinstance(dnd, Mapping) and dnd.get("dnd_enabled") is False:
        doc["dnd"] = []
    elif isinstance(dnd, Mapping) and dnd.get("dnd_enabled") is True:
        start, end = instant(dnd.get("next_dnd_start_ts")), instant(dnd.get("next_dnd_end_ts"))
        if start is not None and end is not None:
            doc["dnd"] = [start.timestamp(), end.timestamp()]
    return json.dumps(doc, separators=(",", ":"))


@dataclass(kw_only=True)
class SlackPeople(SlackAbsences):
    """The directory of each workspace the channel serves, read before any per-person call."""

    people: PeopleStore | None = None  # None: no directory (every person read alone)
    _members: OrderedDict[str, tuple[datetime, Member]] = field(
        default_factory=OrderedDict, repr=False)
    _wanted: dict[str, SlackReach] = field(default_factory=dict, repr=False)
    _listings: dict[str, asyncio.Task[None]] = field(default_factory=dict, repr=False)
    _next_listing: dict[str, datetime] = field(default_factory=dict, repr=False)

    @property
    def keeps_profiles(self) -> bool:
        """The profiles are kept in the store by the channel itself (``bot.engine.zones``)."""
        return self.people is not None

    def directory_of(self, where: Workspace) -> str:
        """The directory a workspace's members are kept in: its installation (or org) and the
        workspace itself, so that tenants and the workspaces of one org stay apart. A bare
        key names its workspace when it is a team's (``T…``); an org's, or none, does not."""
        if isinstance(where, SlackReach):
            team = where.team_id
        else:
            team = where if isinstance(where, str) and where.startswith("T") else None
        return f"{self._bucket(where) or '-'}|{team or '-'}"

    def _directories(self, scope: str) -> list[str]:
        """Where a member may be kept: ``scope``; when it names no workspace (a card's update
        knows its installation, or nothing, not the reader's workspace), also each directory
        of the same installation this process lists (with no installation known: each it
        lists, all under the one token)."""
        bucket, _, team = scope.partition("|")
        if team != "-":
            return [scope]
        return [scope, *(s for s in self._wanted
                         if s != scope and (bucket == "-" or s.startswith(f"{bucket}|")))]

    async def member(self, user_id: str, where: Workspace) -> Member | None:
        """The member as the directory keeps them (from this process for a minute); None
        when it lacks them or their document is old (the workspace's listing is then
        started, when it is not under way)."""
        if self.people is None:
            return None
        scope = self.directory_of(where)
        key = f"{scope}|{user_id}"
        now = self.clock.now()
        kept = self._members.get(key)
        if kept is not None and now < kept[0]:
            return kept[1]
        found = None
        for directory in self._directories(scope):
            text = await self.people.directory_get(directory, user_id)
            found = read_member(text) if text is not None else None
            if found is not None:
                break
        if found is None or now.timestamp() - found.at > KEPT_SECONDS:
            self._want(scope, where)
            return None
        self._members[key] = (now + timedelta(seconds=USER_FRESH_SECONDS), found)
        self._members.move_to_end(key)
        while len(self._members) > USERS_KEPT:
            self._members.popitem(last=False)
        return found

    async def keep_member(self, user: Mapping[str, Any], where: Workspace) -> None:
        """Keep what a ``users.info`` said of a person the directory lacked."""
        found = member_document(user, self.away_words, self.clock.now())
        if self.people is not None and found is not None:
            await self.people.directory_put(self.directory_of(where), dict([found]),
                                            ttl_seconds=KEPT_SECONDS)

    async def profile_of(self, user_id: str, where: Workspace) -> Profile | None:
        found = await self.member(user_id, where)
        return None if found is None else Profile(time_zone=found.tz, locale=found.locale)

    async def away(self, address: Address) -> Away | None:
        """As ``SlackAbsences.away``, from the directory where it has the person."""
        where = address.reach if isinstance(address.reach, SlackReach) else SlackReach()
        found = await self.member(address.user_id, where)
        if found is None or (self.away_words is not None and found.away is None):
            return await super().away(address)
        now = self.clock.now()
        if self.away_words is not None and found.away:
            until = found.away[0]
            back = instant(until) if until is not None else None
            if back is None or back > now:
                return Away(back, STATUS)
        if not self.away_dnd:
            return None
        if found.dnd == ():
            return None
        if found.dnd is not None and len(found.dnd) == 2 and found.dnd[1] > now.timestamp():
            return dnd_away({"dnd_enabled": True, "next_dnd_start_ts": found.dnd[0],
                             "next_dnd_end_ts": found.dnd[1]}, now)
        return await self._dnd(address.user_id, where, now)  # ended since, or not told

    # ------------------------------------------------------------ the listing

    def _want(self, scope: str, where: SlackReach | Workspace) -> None:
        """The workspace's listing, started now unless under way or listed lately."""
        if isinstance(where, SlackReach):
            self._wanted[scope] = where
        self._start(scope)

    def serves(self, where: SlackReach) -> None:
        """A workspace the channel serves (a configured one): listed at the next housekeeping
        pass, before anyone of it is looked up."""
        self._wanted[self.directory_of(where)] = where

    async def list_workspace(self, where: SlackReach) -> None:
        """List the workspace's members now, unless listed lately or by another replica (its
        first fill before anyone is looked up; tests)."""
        scope = self.directory_of(where)
        self._wanted[scope] = where
        await self.list_members(scope)

    async def listings_ended(self) -> None:
        """Until every listing under way in this process has ended (a drain; tests)."""
        await asyncio.gather(*self._listings.values(), return_exceptions=True)

    async def keep_house(self) -> None:
        """A worker chore: list again each workspace whose listing is due."""
        for scope in list(self._wanted):
            self._start(scope)

    def _start(self, scope: str) -> None:
        running = self._listings.get(scope)
        due = self._next_listing.get(scope)
        if (running is not None and not running.done()) or scope not in self._wanted \
                or (due is not None and self.clock.now() < due):
            return
        task = asyncio.create_task(self.list_members(scope))
        task.add_done_callback(_said)
        self._listings[scope] = task

    async def list_members(self, scope: str) -> None:
        """List the workspace's members into its directory, from the cursor a broken listing
        left, unless another replica lists it or it was listed in the last
        ``REFRESH_SECONDS``."""
        people, where = self.people, self._wanted.get(scope)
        if people is None or where is None:
            return
        if await people.kv_get(LISTED, scope) is not None:
            self._next_listing[scope] = self.clock.now() + timedelta(seconds=LEASE_SECONDS)
            return
        window = int(self.clock.now().timestamp() // LEASE_SECONDS)  # one lister in each
        if not await people.mark_once(LISTING, f"{scope}|{window}", ttl_seconds=LEASE_SECONDS):
            self._next_listing[scope] = self.clock.now() + timedelta(seconds=LEASE_SECONDS)
            return
        cursor = await people.kv_get(CURSOR, scope) or ""
        listed: dict[str, str] = {}
        try:
            while True:
                cursor = await self._page(scope, where, cursor, listed)
                if not cursor:
                    break
                await people.kv_put(CURSOR, scope, cursor, ttl_seconds=REFRESH_SECONDS)
            await self._with_dnd(scope, where, listed)  # the profiles first, then DND
        except CredentialsRejected:
            raise
        except ChannelError as exc:  # what was read is kept; resumed from the cursor later
            log.warning("slack.listing_broken", reason=exc.reason)
            self._next_listing[scope] = datetime.fromtimestamp((window + 1) * LEASE_SECONDS,
                                                               tz=UTC)
            return
        await people.kv_put(LISTED, scope, "1", ttl_seconds=REFRESH_SECONDS)
        await people.kv_delete(CURSOR, scope)
        self._next_listing[scope] = self.clock.now() + timedelta(seconds=REFRESH_SECONDS)

    async def _page(self, scope: str, where: SlackReach, cursor: str,
                    listed: dict[str, str]) -> str:
        """One page of users.list kept (and added to ``listed``); the next page's cursor (""
        after the last)."""
        args: dict[str, Any] = {"limit": PAGE_LIMIT, "include_locale": "true"}
        if cursor:
            args["cursor"] = cursor
        if where.enterprise_id and where.team_id:  # an org's token names the workspace
            args["team_id"] = where.team_id
        page = await self._call_retrying("users.list", where, args, lane=Lane.BULK)
        now = self.clock.now()
        members = page.get("members")
        docs: dict[str, str] = {}
        for user in members if isinstance(members, list) else []:
            found = member_document(user, self.away_words, now) \
                if isinstance(user, Mapping) else None
            if found is not None:
                docs[found[0]] = found[1]
        assert self.people is not None
        await self.people.directory_put(scope, docs, ttl_seconds=KEPT_SECONDS)
        listed.update(docs)
        meta = page.get("response_metadata")
        following = meta.get("next_cursor") if isinstance(meta, Mapping) else None
        return following if isinstance(following, str) else ""

    async def _with_dnd(self, scope: str, where: SlackReach, docs: dict[str, str]) -> None:
        """Each member's Do Not Disturb (``dnd.teamInfo``, 50 at a time) into their document,
        kept a batch at a time; left out when it cannot be read now (then ``dnd.info`` when
        needed)."""
        if not self.away_dnd or str(self._bucket(where)) in self._no_dnd \
                or self.people is None:
            return
        ids = list(docs)
        for start in range(0, len(ids), DND_BATCH):
            batch = ids[start:start + DND_BATCH]
            args: dict[str, Any] = {"users": ",".join(batch)}
            if where.enterprise_id and where.team_id:
                args["team_id"] = where.team_id
            try:
                told = await self._call_retrying("dnd.teamInfo", where, args, lane=Lane.BULK)
            except ChannelError as exc:
                if exc.reason == "missing_scope":
                    self._no_dnd.add(str(self._bucket(where)))
                    return
                if isinstance(exc, CredentialsRejected):
                    raise
                log.info("slack.dnd_listing_later", reason=exc.reason)
                return
            users = told.get("users")
            await self.people.directory_put(scope, {
                uid: with_dnd(docs[uid], users[uid]) for uid in batch
                if isinstance(users, Mapping) and uid in users}, ttl_seconds=KEPT_SECONDS)


def _said(task: asyncio.Task[None]) -> None:
    """A listing that ended on an error no page caught (refused credentials, a fault): said,
    value-free; it is started again when next due."""
    if not task.cancelled() and (error := task.exception()) is not None:
        log.warning("slack.listing_failed", error=type(error).__name__)
