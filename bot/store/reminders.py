"""The reminders' due index (``bot.engine.reminders``): question cards' reminders by when they
are due, each claimed by one worker at a time, on Redis and in memory.

On Redis one sorted set (``keys.Keys.reminders_due``); a claim is the due sets' one script
(``bot.store.due``). In memory one lock stands in for it. Both are a ``bot.store.due`` due set.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from bot.store.due import DueSet


class ReminderIndex(Protocol):
    async def reminder_add(self, member: str, *, due: datetime) -> None:
        """Index a question card's reminder by when it is due; a member indexed already keeps
        its due time (a job handled again does not move it)."""
        ...

    async def reminders_due(self, *, now: datetime, limit: int = 100) -> list[str]:
        """Members due by ``now`` that no live claim holds, earliest first."""
        ...

    async def reminder_claim(self, member: str, *, now: datetime, lease_seconds: int) -> bool:
        """Hold a due member for ``lease_seconds`` (one claim wins; a holder that dies lets it
        come due again when the lease ends). False when not due or held by another."""
        ...

    async def reminder_later(self, member: str, *, due: datetime) -> None:
        """Move an indexed member to a new due time (the next working hour)."""
        ...

    async def reminder_done(self, member: str) -> None:
        """Forget a member: its reminder went out, or never will."""
        ...


class Reminders:
    """``ReminderIndex`` on the store's due set for reminders (``_reminders_due``: a
    ``RedisDueSet`` on ``keys.Keys.reminders_due``, or a ``MemoryDueSet``)."""

    _reminders_due: DueSet

    async def reminder_add(self, member: str, *, due: datetime) -> None:
        await self._reminders_due.add(member, due)

    async def reminders_due(self, *, now: datetime, limit: int = 100) -> list[str]:
        return await self._reminders_due.due(now, limit)

    async def reminder_claim(self, member: str, *, now: datetime, lease_seconds: int) -> bool:
        return await self._reminders_due.claim(member, now, lease_seconds)

    async def reminder_later(self, member: str, *, due: datetime) -> None:
        await self._reminders_due.later(member, due)

    async def reminder_done(self, member: str) -> None:
        await self._reminders_due.done(member)
