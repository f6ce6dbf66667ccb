"""What the answer path read from the core a moment ago, remembered for a few seconds.

Under a burst the same facts are read again and again: one person answering a digest question
after question (their verified identity), several people answering one question (its tenant,
document ACL and workspace). Each is remembered for ``ttl_seconds`` so that a burst costs one
read per person and per question instead of one per answer. Only facts that let an answer
through are remembered (a verified PERSON, a clarification), never a refusal, so a fix in the
core (an identity verified, a mapping added) takes effect at once. The price is bounded: for at
most ``ttl_seconds`` an identity whose verification, alias or role was just withdrawn in the core
answers as before. 0 turns it off.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import datetime, timedelta


@dataclass
class Recent[K, V]:
    ttl_seconds: float = 10.0
    max_size: int = 10_000
    _kept: OrderedDict[K, tuple[V, datetime]] = field(default_factory=OrderedDict)

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
        while len(self._kept) > self.max_size:
            self._kept.popitem(last=False)
