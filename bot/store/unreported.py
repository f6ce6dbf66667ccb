"""The clarifications whose question cards may still be unreported to the core, by when to look
again (``bot.engine.unreported``): a card is recorded with a not-yet-reported mark, its job clears
the mark once the core has its report, and an answer that finds a mark still there indexes the
clarification here for a worker to look at once a live job would have reported it. Claimed by one
worker at a time, on Redis and in memory.

On Redis one sorted set (``keys.Keys.unreported_due``), in memory a dict: a ``bot.store.due``
due set.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from bot.store.due import DueSet


class UnreportedIndex(Protocol):
    async def unreported_add(self, clarification_id: str, *, due: datetime) -> None:
        """Look at the clarification's marked cards at ``due``; an earlier time already set
        stays."""
        ...

    async def unreported_due(self, *, now: datetime, limit: int = 100) -> list[str]:
        """Clarifications due by ``now`` that no live claim holds, earliest first."""
        ...

    async def unreported_claim(self, clarification_id: str, *, now: datetime,
                               lease_seconds: int) -> bool:
        """Hold a due clarification for ``lease_seconds`` (one claim wins; a holder that dies
        lets it come due again when the lease ends)."""
        ...

    async def unreported_later(self, clarification_id: str, *, due: datetime) -> None: ...

    async def unreported_done(self, clarification_id: str) -> None: ...

    async def unreported_waiting(self) -> int:
        """How many clarifications wait to be looked at (the soak waits for none)."""
        ...


class Unreported:
    """``UnreportedIndex`` on the store's due set for it (``_unreported_due``: a
    ``RedisDueSet`` on ``keys.Keys.unreported_due``, or a ``MemoryDueSet``)."""

    _unreported_due: DueSet

    async def unreported_add(self, clarification_id: str, *, due: datetime) -> None:
        await self._unreported_due.add(clarification_id, due, earlier=True)

    async def unreported_due(self, *, now: datetime, limit: int = 100) -> list[str]:
        return await self._unreported_due.due(now, limit)

    async def unreported_claim(self, clarification_id: str, *, now: datetime,
                               lease_seconds: int) -> bool:
        return await self._unreported_due.claim(clarification_id, now, lease_seconds)

    async def unreported_later(self, clarification_id: str, *, due: datetime) -> None:
        await self._unreported_due.later(clarification_id, due)

    async def unreported_done(self, clarification_id: str) -> None:
        await self._unreported_due.done(clarification_id)

    async def unreported_waiting(self) -> int:
        return await self._unreported_due.size()
