"""The reach record's entries and where they are kept: ``ReachLog``, in memory or PostgreSQL.

An entry is one thing that happened to one person about one question: a card sent, a reminder,
a digest entry, a skip with its reason code and the platform's cause, an answer, the answer that
bound it, an escalation, a dead letter. It holds ids, codes and value-free causes only: no span
text, no answer, no token. A card or digest entry keeps the IANA zone the person was asked in
(``zone``: the report's working hours are theirs); a skip keeps the platform's cause group
(``cause_group``: one of ``bot.reach.causes.FIXES``) where the platform's adapter classified
the refusal, beside its words (``cause``). ``entry_id`` derives from the audit event it was
written from, so a replayed event (a retried job, a resent callback) is the same entry, kept
once.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum
from typing import Protocol


class Kind(StrEnum):
    ASKED = "asked"
    REMINDED = "reminded"
    DIGESTED = "digested"
    SKIPPED = "skipped"
    ANSWERED = "answered"
    BOUND = "bound"
    ESCALATED = "escalated"
    DEAD_LETTERED = "dead_lettered"


NONE = "-"  # a field the event did not know (a skip before any platform was tried)
CAUSE_LIMIT = 200
ZONE_LIMIT = 64  # an IANA zone name (the longest is 32 characters)
GROUP_LIMIT = 32  # a cause group's code
ASKING = (Kind.ASKED, Kind.DIGESTED)  # the entries that asked a person (a card, a digest)


@dataclass(frozen=True, slots=True)
class ReachEntry:
    entry_id: str
    at: datetime
    tenant: str
    workspace: str
    platform: str
    person_id: str
    clarification_id: str
    kind: Kind
    severity: str
    reason_code: str | None = None
    cause: str | None = None
    # the IANA zone of the person asked (ASKED, DIGESTED; None: not known, or another kind)
    zone: str | None = None
    # the platform's structured cause of a skip (a code of ``bot.reach.causes.FIXES``); None:
    # not classified (then ``cause_of`` reads the words of ``cause``), or another kind
    cause_group: str | None = None


class ReachLog(Protocol):
    async def add(self, entries: Sequence[ReachEntry]) -> int:
        """Keep the entries not kept yet (by ``entry_id``); returns how many were new."""
        ...

    async def read(self, *, tenant: str | None = None, since: datetime | None = None,
                   kinds: Collection[Kind] | None = None) -> list[ReachEntry]:
        """The entries of one tenant (None: every tenant) at or after ``since``, of ``kinds``
        (None: every kind), oldest first."""
        ...

    async def workspaces(self, *, since: datetime) -> dict[tuple[str, str], str]:
        """Each (tenant, workspace) with an entry at or after ``since``, and the question of
        its latest entry (the weekly report asks the core for the workspace's steward)."""
        ...

    async def first_asked(self, clarification_id: str) -> datetime | None:
        """When the question's first card or digest entry (``ASKING``) went out, whoever sent
        it; None when the log holds none."""
        ...

    async def erase_person(self, names: Iterable[str]) -> int:
        """Forget a person: every entry about any of ``names`` (their person id, their chat
        user ids) removed, and a cause naming one cleared; returns the entries removed."""
        ...

    async def expire(self, before: datetime) -> int:
        """Remove the entries older than ``before``; returns how many."""
        ...

    async def missing(self) -> str | None:
        """What the log lacks to be written (its table: ``clarify-bot db upgrade`` not run),
        value-free; None when it is ready. Raises when it cannot be asked."""
        ...

    async def aclose(self) -> None: ...


class MemoryReachLog:
    """One process's record: the demo, the tests and ``store.backend = "memory"``."""

    def __init__(self) -> None:
        self._entries: dict[str, ReachEntry] = {}

    async def add(self, entries: Sequence[ReachEntry]) -> int:
        new = 0
        for entry in entries:
            if entry.entry_id not in self._entries:
                self._entries[entry.entry_id] = entry
                new += 1
        return new

    async def read(self, *, tenant: str | None = None, since: datetime | None = None,
                   kinds: Collection[Kind] | None = None) -> list[ReachEntry]:
        return sorted((e for e in self._entries.values()
                       if (tenant is None or e.tenant == tenant)
                       and (since is None or e.at >= since)
                       and (kinds is None or e.kind in kinds)),
                      key=lambda e: (e.at, e.entry_id))

    async def workspaces(self, *, since: datetime) -> dict[tuple[str, str], str]:
        found: dict[tuple[str, str], tuple[datetime, str]] = {}
        for e in self._entries.values():
            key = (e.tenant, e.workspace)
            if e.at >= since and (key not in found or found[key][0] <= e.at):
                found[key] = (e.at, e.clarification_id)
        return {key: question for key, (_, question) in sorted(found.items())}

    async def first_asked(self, clarification_id: str) -> datetime | None:
        return min((e.at for e in self._entries.values()
                    if e.clarification_id == clarification_id and e.kind in ASKING),
                   default=None)

    async def erase_person(self, names: Iterable[str]) -> int:
        wanted = set(names)
        gone = [k for k, e in self._entries.items() if e.person_id in wanted]
        for key in gone:
            del self._entries[key]
        for key, entry in list(self._entries.items()):
            if entry.cause and any(name in entry.cause for name in wanted):
                self._entries[key] = _without_cause(entry)
        return len(gone)

    async def expire(self, before: datetime) -> int:
        gone = [k for k, e in self._entries.items() if e.at < before]
        for key in gone:
            del self._entries[key]
        return len(gone)

    async def missing(self) -> str | None:
        return None

    async def aclose(self) -> None:
        return None


def _without_cause(entry: ReachEntry) -> ReachEntry:
    # the cause group is a code (it names no one): it stays
    return replace(entry, cause=None)
