"""The in-memory store: the Redis store's behaviour for one process (the demo, tests).

``MemoryStore`` is every concern's memory implementation in one object (``bot.store.base.Store``
names the concerns), over one asyncio.Lock that stands in for Redis's atomic scripts: an
operation of any concern holds it. Per-person state expires as its Redis key does, read against
the injected clock (``bot.store.expiring``); the outbox's entries never expire, and it takes at
most ``outbox_max`` of them, as on Redis.
"""

from __future__ import annotations

import asyncio
from types import TracebackType
from typing import Self

from bot.clock import Clock, SystemClock
from bot.store import keys as k
from bot.store.admissions import MemoryAdmissions
from bot.store.conversations import MemoryConversations
from bot.store.directory import MemoryDirectories
from bot.store.due import MemoryDueSet
from bot.store.generation import Census, MemoryGenerations
from bot.store.holds import MemoryHolds
from bot.store.kv import MemoryKeyValues
from bot.store.ledger import MemoryLedger
from bot.store.notices import MemoryNotices
from bot.store.outbox.memory import MemoryOutbox
from bot.store.rates import MemoryRates
from bot.store.reminders import Reminders
from bot.store.unreported import Unreported


class MemoryStore(MemoryLedger, MemoryAdmissions, MemoryHolds, Reminders, Unreported, MemoryNotices,
                  MemoryKeyValues, MemoryConversations, MemoryDirectories, MemoryRates,
                  MemoryOutbox, MemoryGenerations):
    _reminders_due: MemoryDueSet  # ``census`` counts it with len, under the lock they share

    def __init__(self, *, clock: Clock | None = None, ttls: k.Ttls | None = None,
                 outbox_max: int = k.OUTBOX_MAX_ENTRIES) -> None:
        self._clock = clock = clock or SystemClock()
        self._ttls = ttls or k.Ttls()
        self._lock = asyncio.Lock()
        self._notice_lists = {}
        self._init_ledger(clock)
        self._init_admissions(clock)
        self._init_holds()
        self._reminders_due = MemoryDueSet(self._lock)
        self._unreported_due = MemoryDueSet(self._lock)
        self._init_key_values()
        self._init_conversations(clock)
        self._init_directories(clock)
        self._init_rates(clock)
        self._init_outbox(clock, outbox_max)
        self._generation_init()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        return None

    async def census(self) -> Census:
        async with self._lock:
            holds, reminders = len(self._holds), len(self._reminders_due)
        return Census(holds=holds, reminders=reminders, answers=await self.outbox_size())

    def forget(self) -> None:
        """Lose every piece of state, as a Redis restarted without persistence does (tests):
        only what this process remembers of its holds is kept, in its own memory."""
        remembered = dict(self._memory_holds)
        self.__init__(clock=self._clock, ttls=self._ttls,  # type: ignore[misc]
                      outbox_max=self._outbox_max)
        self._memory_holds = remembered
