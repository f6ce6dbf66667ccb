"""The answer outbox: answers made durable and ordered before the platform's acknowledgement,
then claimed one per order key and forwarded in the person's order (``bot.answering``).

``Outbox`` is the concern; ``memory`` keeps it for the life of a process, ``redis`` in one
``{outbox}`` hash tag with every step one script (``scripts``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from bot.store.records import Acceptance, OutboxEntry


class Outbox(Protocol):
    async def outbox_accept(self, entry_id: str, payload: str, *, order_key: str, acted_at: int,
                            now: datetime, answer: str = "") -> Acceptance:
        """Store an answer to forward and raise its order key's "latest action" marker, at once
        (``answer``: its fingerprint, kept with the entry and, once it settled, in the marker;
        "" for none: it then never repeats another, ``bot.store.stream``).

        DUPLICATE (nothing stored) when the entry is held already or was settled or parked
        (within the order marker's TTL). An action older than one accepted before is queued too,
        in its place in the key's order. The marker is only ever raised.
        """
        ...

    async def outbox_claim(self, *, now: datetime, lease_seconds: int, limit: int,
                           entry_id: str | None = None) -> list[OutboxEntry]:
        """Entries due now (only ``entry_id`` when given), at most one per order key, none whose
        key another claim holds, and only a key's first waiting entry by action time (the
        person's order); each is held, with its key, for ``lease_seconds``, its attempts raised
        by one, flagged superseded when a later action of its key was accepted, and naming the
        settled entry it repeats, if any (``bot.store.stream.repeat_of``)."""
        ...

    async def outbox_retry(self, entry: OutboxEntry, *, at: datetime, failed: bool) -> None:
        """Try again at ``at`` and free the key; ``failed`` counts the attempt as a failure."""
        ...

    async def outbox_done(self, entry: OutboxEntry, *, now: datetime | None = None) -> None:
        """Settled: forget the entry, free its key, remember its action time as settled; with
        ``now``, the key's next entry in the person's order is due at once."""
        ...

    async def outbox_park(self, entry: OutboxEntry, *, reason: str, now: datetime) -> None:
        """Set aside for an operator (kept, never forwarded again); frees the key, and the
        key's next entry in the person's order is due at once."""
        ...

    async def outbox_size(self) -> int:
        """Entries waiting to be forwarded (parked ones not counted)."""
        ...

    async def outbox_parked(self) -> int: ...

    async def outbox_overdue(self, *, now: datetime) -> float:
        """Seconds the most overdue waiting entry has been due (0 when none is): how far the
        outbox's consumers are behind. Held entries are not due until their hold ends."""
        ...
