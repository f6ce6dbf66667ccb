"""Who is away, as Teams says it (``bot.channel.Absences`` for the Teams channel; docs/teams.md,
"Who is away").

Two reads of the person through Microsoft Graph (``adapters.teams.graph``), side by side:

- their presence (``Presence.Read.All``): away while its ``activity`` (or ``availability``) is
  ``OutOfOffice`` or its ``outOfOfficeSettings.isOutOfOffice`` is true (Outlook's automatic
  replies or Teams' scheduled out of office are on, or an event shown as out of office is
  under way); source ``teams_presence``, until when it does not say;
- their mailbox's automatic replies (``MailboxSettings.Read``): away while they are
  ``alwaysEnabled`` (until unknown) or ``scheduled`` with now inside the schedule (until its
  end, from the zone Outlook names, Windows names included); source ``teams_auto_reply``.

The automatic replies decide when they say the person is away (they know until when);
otherwise presence does. Neither says so: not away (None). Neither could be read: ChannelError
(the engine then treats the person as not away). A person without a mailbox, or not known to
Graph (404), is one source saying nothing.

A 403 for a permission the tenant has not granted (the token's ``roles`` lack it, or carry no
list at all) is logged once as an error naming the permission, shown in ``/readyz`` under
``teams_away``, and that read is not asked again in that tenant for ``PERMISSION_HOLD``; the
other read still is. A 403 while the token does carry the permission concerns that one person
(an Exchange application access policy leaving their mailbox out): nothing is held. The
start-up check (``check``) reads the permissions off each served tenant's token before anyone
is asked. The status words never name a person; no message text is read, logged or kept, and
what was read is kept only ``KEPT`` per person.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

import structlog

from adapters.teams.graph import (
    GUID,
    STARTUP_CHECK_SECONDS,
    Graph,
    GraphRefused,
    in_time,
    served_tokens,
)
from adapters.teams.graph_times import graph_time
from bot.channel import Address, Away, ChannelError, TeamsReach
from bot.clock import Clock
from bot.settings import TeamsSettings

log = structlog.get_logger("clarify.teams")

PERMISSION_HOLD = timedelta(hours=1)  # a read refused for want of a permission rests this long
TOKEN_HOLD = timedelta(minutes=10)  # a tenant whose token the identity platform refused
KEPT = timedelta(minutes=5)  # what a person's reads said, reused this long
KEPT_PEOPLE = 10_000
# Graph's codes for a refusal for want of a permission (presence answers Forbidden, directory
# reads Authorization_RequestDenied, Exchange ErrorAccessDenied)
DENIED_CODES = frozenset({"Forbidden", "Authorization_RequestDenied", "ErrorAccessDenied",
                          "AccessDenied", "accessDenied"})


@dataclass(frozen=True, slots=True)
class Source:
    name: str  # the value-free word of ``Away.source``
    key: str  # its key in ``/readyz``'s teams_away
    permission: str  # the least privileged application permission that allows the read
    grants: frozenset[str]  # every permission that allows it


PRESENCE = Source("teams_presence", "presence", "Presence.Read.All",
                  frozenset({"Presence.Read.All", "Presence.ReadWrite.All"}))
AUTO_REPLY = Source("teams_auto_reply", "auto_reply", "MailboxSettings.Read",
                    frozenset({"MailboxSettings.Read", "MailboxSettings.ReadWrite"}))
SOURCES = (PRESENCE, AUTO_REPLY)


class Word(StrEnum):
    """What ``/readyz`` says of one read in one tenant."""

    UNCHECKED = "unchecked"  # not asked yet, and the token did not say
    OK = "ok"
    MISSING = "missing"  # "missing: <permission>"
    NO_TOKEN = "no_token"  # the identity platform refused the app a Graph token here


@dataclass
class _State:
    """One read in one tenant."""

    word: Word = Word.UNCHECKED
    held_until: datetime | None = None
    said: bool = False  # its missing permission was logged as an error (once a process)
    fresh: bool = False  # the next read takes a new token (a permission may have been granted)


@dataclass(frozen=True, slots=True)
class _Said:
    """What one read said: ``away`` when it says so, ``known`` whether it said anything."""

    known: bool
    away: Away | None = None


NOTHING = _Said(known=False)
NOT_AWAY = _Said(known=True)


@dataclass
class AwayReader:
    graph: Graph
    settings: TeamsSettings
    clock: Clock
    permission_hold: timedelta = PERMISSION_HOLD
    token_hold: timedelta = TOKEN_HOLD
    kept: timedelta = KEPT
    _states: dict[tuple[str, str], _State] = field(default_factory=dict, repr=False)
    _recent: OrderedDict[tuple[str, str], tuple[datetime, Away | None]] = field(
        default_factory=OrderedDict, repr=False)

    # ---------------------------------------------------------------- Absences

    async def away(self, address: Address) -> Away | None:
        reach = address.reach
        if not isinstance(reach, TeamsReach):
            raise ChannelError("not a Teams address", certain=True, retryable=False)
        tenant = reach.aad_tenant_id.lower()
        if self.settings.tenant_for(tenant) is None:
            raise ChannelError("Teams tenant not configured", certain=True, retryable=False)
        user = address.user_id.lower()
        if not GUID.match(user):
            raise ChannelError("not an Entra object id", certain=True, retryable=False)
        now = self.clock.now()
        recent = self._recent.get((tenant, user))
        if recent is not None and now - recent[0] < self.kept:
            return recent[1]
        asked = [source for source in SOURCES if self._askable(tenant, source, now)]
        if asked:
            await self._token(tenant, fresh=any(self._state(tenant, s).fresh for s in asked))
        presence, replies = await asyncio.gather(
            self._read(tenant, user, PRESENCE, self._presence),
            self._read(tenant, user, AUTO_REPLY, self._auto_reply))
        found = replies.away or presence.away
        if found is None and not (presence.known or replies.known):
            raise ChannelError("Teams cannot tell whether this person is away now",
                               certain=True, retryable=True)
        self._keep((tenant, user), now, found)
        if found is not None:
            log.info("teams.away_read", source=found.source, until_known=found.until is not None)
        return found

    # ---------------------------------------------------------------- the reads

    async def _presence(self, tenant: str, user: str, fresh: bool) -> _Said:
        body = await self.graph.presence(tenant, user, fresh=fresh)
        words = {body.get("activity"), body.get("availability")}
        settings = body.get("outOfOfficeSettings")
        flagged = isinstance(settings, dict) and settings.get("isOutOfOffice") is True
        if "OutOfOffice" in words or flagged:
            return _Said(known=True, away=Away(until=None, source=PRESENCE.name))
        return NOT_AWAY

    async def _auto_reply(self, tenant: str, user: str, fresh: bool) -> _Said:
        body = await self.graph.auto_replies(tenant, user, fresh=fresh)
        status = body.get("status")
        status = status.lower() if isinstance(status, str) else ""
        if status == "alwaysenabled":
            return _Said(known=True, away=Away(until=None, source=AUTO_REPLY.name))
        if status != "scheduled":
            return NOT_AWAY  # disabled (or a status this release does not know)
        start = graph_time(body.get("scheduledStartDateTime"))
        end = graph_time(body.get("scheduledEndDateTime"))
        now = self.clock.now()
        if start is None and end is None:
            return NOT_AWAY  # a schedule with no times says nothing of now
        if (start is not None and now < start) or (end is not None and now >= end):
            return NOT_AWAY  # outside the schedule: on holiday later, or back already
        return _Said(known=True, away=Away(until=end, source=AUTO_REPLY.name))

    def _askable(self, tenant: str, source: Source, now: datetime) -> bool:
        """Whether the read may be asked now: not resting (once its rest is over, it is asked
        with a new token: a permission may have been granted meanwhile)."""
        state = self._state(tenant, source)
        if state.held_until is not None and now < state.held_until:
            return False
        if state.held_until is not None:
            state.held_until, state.fresh = None, True
        return True

    async def _token(self, tenant: str, *, fresh: bool) -> None:
        """The tenant's Graph token, had once before both reads (a new one when a read comes
        back from its rest); ChannelError when there is none."""
        try:
            await self.graph.tokens.token(tenant, fresh=fresh)
        except GraphRefused as exc:
            self._no_token(tenant, exc.code)
            raise ChannelError("no Graph token for this tenant", certain=True,
                               retryable=True) from None
        for source in SOURCES:
            self._state(tenant, source).fresh = False

    async def _read(self, tenant: str, user: str, source: Source,
                    read: Callable[[str, str, bool], Awaitable[_Said]]) -> _Said:
        state = self._state(tenant, source)
        if state.held_until is not None:
            return NOTHING  # resting (``_askable`` ended any rest that is over)
        try:
            said = await read(tenant, user, False)
        except GraphRefused as exc:
            return self._refused(tenant, source, state, exc)
        except ChannelError as exc:
            log.info("teams.away_unread", source=source.name, reason=exc.reason)
            return NOTHING
        if state.word is Word.MISSING:
            log.info("teams.away_permission_granted", permission=source.permission,
                     tenant=self._tenant_key(tenant))
        state.word = Word.OK
        return said

    def _refused(self, tenant: str, source: Source, state: _State,
                 exc: GraphRefused) -> _Said:
        if exc.what == "token":
            self._no_token(tenant, exc.code)
            return NOTHING
        if exc.status == 404:  # no mailbox (MailboxNotEnabledForRESTAPI), or no such user
            state.word = Word.OK
            return NOT_AWAY
        if exc.status == 403 and exc.code in DENIED_CODES and (
                exc.roles is None or not (exc.roles & source.grants)):
            self._missing(tenant, source, state)
            return NOTHING
        # another refusal (a 403 for this person alone, a 400): this person, this time
        log.info("teams.away_refused", source=source.name, status=exc.status, code=exc.code)
        return NOTHING

    def _missing(self, tenant: str, source: Source, state: _State) -> None:
        state.word = Word.MISSING
        state.held_until = self.clock.now() + self.permission_hold
        if not state.said:
            state.said = True
            log.error("teams.away_permission_missing", permission=source.permission,
                      source=source.name, tenant=self._tenant_key(tenant),
                      fix=f"grant the application permission {source.permission} to "
                          "teams.app_id with admin consent (docs/teams.md, \"Who is away\")")

    def _no_token(self, tenant: str, code: str | None) -> None:
        first = not any(self._state(tenant, s).word is Word.NO_TOKEN for s in SOURCES)
        for source in SOURCES:
            state = self._state(tenant, source)
            state.word = Word.NO_TOKEN
            state.held_until = self.clock.now() + self.token_hold
            state.fresh = True
        if first:
            log.error("teams.graph_token_refused", tenant=self._tenant_key(tenant), code=code,
                      setting="TEAMS_APP_PASSWORD",
                      fix="consent the app in this tenant, or check teams.app_id and its "
                          "secret (docs/teams.md, \"Who is away\")")

    # ---------------------------------------------------------------- start-up and readiness

    async def check(self) -> None:
        """Each served tenant's Graph token asked for once, and the permissions its ``roles``
        claim names compared with the two reads': a missing one is logged (once) and rests,
        as a refused read would. Never raises."""
        tenants = ((t.aad_tenant_id, t.tenant) for t in self.settings.tenants)
        async for tenant, token in served_tokens(self.graph.tokens, tenants,
                                                 failed="teams.away_check_failed"):
            if isinstance(token, GraphRefused):
                self._no_token(tenant, token.code)
                continue
            for source in SOURCES:
                state = self._state(tenant, source)
                if token.roles is None:
                    continue  # the token does not say: the first read will
                if token.roles & source.grants:
                    state.word = Word.OK
                else:
                    self._missing(tenant, source, state)

    async def check_in_time(self, seconds: float = STARTUP_CHECK_SECONDS) -> None:
        await in_time(self.check(), failed="teams.away_check_failed", seconds=seconds)

    def status(self) -> dict[str, object]:
        """What ``/readyz`` shows of the reads, per served tenant (it never makes the bot
        unready: without them nobody is known to be away)."""
        shown: dict[str, Any] = {}
        for entry in self.settings.tenants:
            tenant = entry.aad_tenant_id.lower()
            shown[entry.tenant] = {source.key: self._word(tenant, source)
                                   for source in SOURCES}
        return {"teams_away": shown}

    def _word(self, tenant: str, source: Source) -> str:
        word = self._state(tenant, source).word
        return f"missing: {source.permission}" if word is Word.MISSING else word.value

    # ---------------------------------------------------------------- kept

    def _state(self, tenant: str, source: Source) -> _State:
        return self._states.setdefault((tenant, source.name), _State())

    def _tenant_key(self, aad_tenant_id: str) -> str | None:
        return self.settings.tenant_for(aad_tenant_id)

    def _keep(self, key: tuple[str, str], at: datetime, found: Away | None) -> None:
        self._recent[key] = (at, found)
        self._recent.move_to_end(key)
        while len(self._recent) > KEPT_PEOPLE:
            self._recent.popitem(last=False)


def off_status() -> dict[str, object]:
    """``/readyz`` while the reads are off (``teams.read_away = false``, or no app id)."""
    return {"teams_away": "off"}
