"""What the answer path read from the core a moment ago, remembered for a few seconds.

Under a burst the same facts are read again and again: one person answering a digest question
after question (their verified identity), several people answering one question (its tenant,
document ACL and workspace). Each is remembered for ``ttl_seconds`` so that a burst costs one
read per person and per question instead of one per answer. Only facts that let an answer
through are remembered (a verified PERSON, a clarification), never a refusal, so a fix in the
core (an identity verified, a mapping added) takes effect at once. The price is bounded: for at
most ``ttl_seconds`` an identity whose verification, alias or role was just withdrawn in the core
still answers with the identity remembered. 0 turns it off.

What is kept is what the last ``ttl_seconds`` read, never more than ``max_size`` facts: an
expired fact is dropped as soon as anything new is kept (not only when its own key is asked for
again), so a process that forwards thousands of answers, each to another question, holds a few
seconds' worth of clarifications, not the last ``max_size`` of them (docs/reliability.md, "Soak").
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta


@dataclass
class Recent[K, V]:
    ttl_seconds: float = 10.0
    max_size: int = 10_000
    _kept: OrderedDict[K, tuple[V, datetime]] = field(default_factory=OrderedDict)
    _reading: dict[K, asyncio.Future[V]] = field(default_factory=dict)

    async def read(self, key: K, load: Callable[[], Awaitable[V]], *, now: datetime) -> V:
        """The remembered value, or what ``load`` returns (then remembered). Callers asking for
        one key at the same time share one load: a burst on one question reads it once."""
        found = self.get(key, now=now)
        if found is not None:
            return found
        loading = self._reading.get(key)
        if loading is None:
            loading = asyncio.ensure_future(load())
            self._reading[key] = loading
            loading.add_done_callback(lambda done: self._loaded(key, done))
        value = await asyncio.shield(loading)  # one caller giving up does not cancel the rest
        self.keep(key, value, now=now)
        return value

    def _loaded(self, key: K, done: asyncio.Future[V]) -> None:
        self._reading.pop(key, None)
        if not done.cancelled():
            done.exception()  # retrieved here: every caller may have given up meanwhile

    def get(self, key: K, *, now: datetime) -> V | None:
        found = self._kept.get(key)
        if found is None:
            return None
        value, until = found
        if until <= now:
            del self._kept[key]
            return None
        return value

    def keep(self, key: K, value: V, *, now: datetime) -> None:
        if self.ttl_seconds <= 0:
            return
        self._kept[key] = (value, now + timedelta(seconds=self.ttl_seconds))
        self._kept.move_to_end(key)
        self._forget_expired(now)
        while len(self._kept) > self.max_size:
            self._kept.popitem(last=False)

    def __len__(self) -> int:
        return len(self._kept)

    def _forget_expired(self, now: datetime) -> None:
        """Drop expired facts from the oldest kept on: with one ttl, kept order is expiry order
        (a clock that stepped back can leave some behind a newer one, until ``max_size``)."""
        while self._kept:
            oldest = next(iter(self._kept))
            if self._kept[oldest][1] > now:
                return
            del self._kept[oldest]
