"""A dict whose entries expire on the injected clock: the memory store's stand-in for Redis TTLs."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta

from bot.clock import Clock

_SWEEP_EVERY = 1024  # writes between sweeps of expired entries (reads skip them anyway)


class Expiring[K, V]:
    """``get`` never returns an expired entry; entries without an expiry (None) stay until
    removed. Every ``_SWEEP_EVERY`` writes, expired entries are dropped, so memory stays bounded
    by what is live, as Redis's own expiry keeps it."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._items: dict[K, tuple[V, datetime | None]] = {}
        self._writes = 0

    def _live(self, until: datetime | None, now: datetime) -> bool:
        return until is None or now < until

    def get(self, key: K) -> V | None:
        found = self._items.get(key)
        if found is None:
            return None
        if not self._live(found[1], self._clock.now()):
            del self._items[key]
            return None
        return found[0]

    def expires(self, key: K) -> datetime | None:
        found = self._items.get(key)
        return None if found is None else found[1]

    def put(self, key: K, value: V, ttl_seconds: float | None = None, *,
            keep_ttl: bool = False) -> None:
        """Store ``value``; it lasts ``ttl_seconds`` from now (None: until removed), or, with
        ``keep_ttl``, as long as the entry it replaces would have (Redis's KEEPTTL)."""
        if keep_ttl and self.get(key) is not None:
            until = self._items[key][1]
        else:
            until = None if ttl_seconds is None else \
                self._clock.now() + timedelta(seconds=ttl_seconds)
        self._items[key] = (value, until)
        self._writes += 1
        if self._writes % _SWEEP_EVERY == 0:
            self.sweep()

    def expire(self, key: K, ttl_seconds: float | None) -> None:
        """Give a live entry a new lifetime (None: none)."""
        value = self.get(key)
        if value is not None:
            self._items[key] = (value, None if ttl_seconds is None else
                                self._clock.now() + timedelta(seconds=ttl_seconds))

    def pop(self, key: K) -> V | None:
        value = self.get(key)
        self._items.pop(key, None)
        return value

    def sweep(self) -> None:
        now = self._clock.now()
        for key in [k for k, (_, until) in self._items.items() if not self._live(until, now)]:
            del self._items[key]

    def __contains__(self, key: object) -> bool:
        return self.get(key) is not None  # type: ignore[arg-type]

    def __len__(self) -> int:
        self.sweep()
        return len(self._items)

    def keys(self) -> Iterator[K]:
        self.sweep()
        return iter(list(self._items))
