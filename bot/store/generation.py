"""The store's generation: how a process tells that Redis came back empty, or older than it
left it (docs/reliability.md, "A store that lost its data").

One small hash, ``{prefix}:generation``, written at first use: a random id (``id``), when it
was made (``created``), why (``origin``: ``first_use``, ``after_loss`` or ``reset``), a
counter that only grows (``epoch``: raised by every check of every process) and the last
check's time (``checked``). A process remembers the id and the highest epoch it has seen:

- the hash gone: the store lost its data (a restart without persistence, a flush, a failover to
  an empty replica): ``EMPTIED``;
- another id: the store was emptied and a process (or ``clarify-bot store reset``) started a
  new generation before this one looked: ``REPLACED`` (``RESET`` when an operator did it);
- the same id with a lower epoch: a snapshot older than what this process saw was restored (an
  RDB file, a lagging replica promoted): ``ROLLED_BACK``.

Nothing in the hash names a person or holds a value from the core: the id is random.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Protocol

ORIGINS = ("first_use", "after_loss", "reset")


class Loss(StrEnum):
    """What a check found wrong with the store (the metric's ``kind`` label)."""

    EMPTIED = "emptied"  # the marker is gone: the store came back without its data
    REPLACED = "replaced"  # another generation started meanwhile (after a loss)
    RESET = "reset"  # an operator reset the store (``clarify-bot store reset``)
    ROLLED_BACK = "rolled_back"  # the same generation, older than this process saw it


@dataclass(frozen=True, slots=True)
class Generation:
    id: str
    created_at: datetime
    origin: str
    epoch: int
    checked_at: datetime | None = None

    @classmethod
    def from_fields(cls, fields: dict[str, Any]) -> Generation | None:
        """The hash as read (strings), or None when it is not there or does not read."""
        try:
            checked = fields.get("checked")
            return cls(id=str(fields["id"]),
                       created_at=datetime.fromtimestamp(float(fields["created"]), tz=UTC),
                       origin=str(fields.get("origin") or "first_use"),
                       epoch=int(fields.get("epoch") or 0),
                       checked_at=None if not checked
                       else datetime.fromtimestamp(float(checked), tz=UTC))
        except (KeyError, ValueError, TypeError):
            return None


def new_id() -> str:
    return secrets.token_hex(8)


def compare(remembered: Generation | None, found: Generation | None) -> Loss | None:
    """What happened to the store since this process last saw it (None: nothing lost).
    ``found`` is the generation as read now, before this check raised its epoch."""
    if remembered is None:
        return None  # nothing to compare with: the process has just started
    if found is None:
        return Loss.EMPTIED
    if found.id != remembered.id:
        return Loss.RESET if found.origin == "reset" else Loss.REPLACED
    if found.epoch < remembered.epoch:
        return Loss.ROLLED_BACK
    return None


@dataclass(frozen=True, slots=True)
class Census:
    """How much the store held at a check (counts only): what a loss right after it would
    take with it."""

    holds: int = 0  # jobs held for a person's working hours (or a read the core refused)
    reminders: int = 0  # question cards' reminders waiting
    answers: int = 0  # answers waiting in the outbox for the core


class Generations(Protocol):
    """What a store offers to keep its generation (``RedisStore`` and ``MemoryStore``)."""

    async def generation_read(self) -> Generation | None: ...

    async def generation_start(self, *, now: datetime, origin: str = "first_use"
                               ) -> tuple[Generation, bool]:
        """The generation, made now when there is none (True: this call made it)."""
        ...

    async def generation_check(self, *, now: datetime) -> tuple[Generation | None, int]:
        """The generation as it was (None: gone, and not made again here) and the epoch this
        check raised it to (0 when gone)."""
        ...

    async def generation_reset(self, *, now: datetime, origin: str = "reset") -> Generation:
        """A new generation, whatever was there (``clarify-bot store reset``; ``after_loss``
        when a process found an older snapshot restored)."""
        ...

    async def census(self) -> Census: ...

    def holds_remembered(self) -> dict[str, str]:
        """The holds this process wrote or read and has not dropped (job id -> hold), kept in
        the process's memory: what it can give back to a store that lost them."""
        ...

    def holds_forget(self, job_id: str) -> None:
        """Forget a remembered hold (the core says it is no longer held)."""
        ...

    async def holds_present(self, job_ids: list[str]) -> set[str]:
        """Which of these jobs the store holds now."""
        ...


def fresh_fields(now: datetime, origin: str) -> dict[str, str]:
    if origin not in ORIGINS:
        raise ValueError("origin")
    return {"id": new_id(), "created": f"{now.timestamp():.3f}", "origin": origin, "epoch": "0",
            "checked": f"{now.timestamp():.3f}"}


# KEYS[1] the generation hash. ARGV: fields of a new generation (id, created, origin, epoch,
# checked), flattened. Returns the hash's fields and 1 when this call made it.
START = """
if redis.call('EXISTS', KEYS[1]) == 1 then
  return {redis.call('HGETALL', KEYS[1]), 0}
end
redis.call('HSET', KEYS[1], unpack(ARGV))
return {redis.call('HGETALL', KEYS[1]), 1}
"""

# KEYS[1] the generation hash; ARGV[1] now (epoch seconds). The hash as it was (empty: gone,
# and not made again) and the epoch this check raised it to.
CHECK = """
if redis.call('EXISTS', KEYS[1]) == 0 then
  return {{}, 0}
end
local before = redis.call('HGETALL', KEYS[1])
local epoch = redis.call('HINCRBY', KEYS[1], 'epoch', 1)
redis.call('HSET', KEYS[1], 'checked', ARGV[1])
return {before, epoch}
"""


def pairs(flat: list[Any]) -> dict[str, str]:
    return {str(k): str(v) for k, v in zip(flat[::2], flat[1::2], strict=True)}


class RedisGenerations:
    """``Generations`` on Redis: one hash, each step one script (a single key, so one slot on
    a cluster). Mixed into ``RedisStore``, which sets ``_redis``, ``_keys`` and the memory."""

    _redis: Any
    _keys: Any
    _remembered_holds: dict[str, str]

    def _generation_scripts(self) -> None:
        self._remembered_holds = {}
        self._gen_start = self._redis.register_script(START)
        self._gen_check = self._redis.register_script(CHECK)

    async def generation_read(self) -> Generation | None:
        return Generation.from_fields(await self._redis.hgetall(self._keys.generation))

    async def generation_start(self, *, now: datetime, origin: str = "first_use"
                               ) -> tuple[Generation, bool]:
        flat = [x for kv in fresh_fields(now, origin).items() for x in kv]
        raw, made = await self._gen_start(keys=[self._keys.generation], args=flat)
        found = Generation.from_fields(pairs(raw))
        assert found is not None
        return found, bool(made)

    async def generation_check(self, *, now: datetime) -> tuple[Generation | None, int]:
        raw, epoch = await self._gen_check(keys=[self._keys.generation],
                                           args=[f"{now.timestamp():.3f}"])
        return Generation.from_fields(pairs(raw)), int(epoch)

    async def generation_reset(self, *, now: datetime, origin: str = "reset") -> Generation:
        fields = fresh_fields(now, origin)
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.delete(self._keys.generation)
            pipe.hset(self._keys.generation, mapping=fields)
            await pipe.execute()
        found = Generation.from_fields(fields)
        assert found is not None
        return found

    async def census(self) -> Census:
        holds = await self._redis.hlen(self._keys.holds)
        reminders = await self._redis.zcard(self._keys.reminders_due)
        answers = await self._redis.hlen(self._keys.outbox_entries)
        return Census(holds=int(holds), reminders=int(reminders), answers=int(answers))

    def holds_remembered(self) -> dict[str, str]:
        return dict(self._remembered_holds)

    def holds_forget(self, job_id: str) -> None:
        self._remembered_holds.pop(job_id, None)

    async def holds_present(self, job_ids: list[str]) -> set[str]:
        found: set[str] = set()
        for start in range(0, len(job_ids), 500):
            part = job_ids[start:start + 500]
            values = await self._redis.hmget(self._keys.holds, part)
            found.update(i for i, v in zip(part, values, strict=True) if v is not None)
        return found


class MemoryGenerations:
    """``Generations`` in memory (the demo, single-process runs, tests): ``forget`` stands for
    a store that lost its data."""

    _generation: dict[str, str] | None = None
    _memory_holds: dict[str, str]

    def _generation_init(self) -> None:
        self._generation = None
        self._memory_holds = {}

    async def generation_read(self) -> Generation | None:
        return None if self._generation is None else Generation.from_fields(self._generation)

    async def generation_start(self, *, now: datetime, origin: str = "first_use"
                               ) -> tuple[Generation, bool]:
        made = self._generation is None
        if self._generation is None:
            self._generation = fresh_fields(now, origin)
        found = Generation.from_fields(self._generation)
        assert found is not None
        return found, made

    async def generation_check(self, *, now: datetime) -> tuple[Generation | None, int]:
        if self._generation is None:
            return None, 0
        before = Generation.from_fields(self._generation)
        epoch = int(self._generation["epoch"]) + 1
        self._generation["epoch"] = str(epoch)
        self._generation["checked"] = f"{now.timestamp():.3f}"
        return before, epoch

    async def generation_reset(self, *, now: datetime, origin: str = "reset") -> Generation:
        self._generation = fresh_fields(now, origin)
        found = Generation.from_fields(self._generation)
        assert found is not None
        return found

    def holds_remembered(self) -> dict[str, str]:
        return dict(self._memory_holds)

    def holds_forget(self, job_id: str) -> None:
        self._memory_holds.pop(job_id, None)

    async def holds_present(self, job_ids: list[str]) -> set[str]:
        held = getattr(self, "_holds", {})
        return {i for i in job_ids if i in held}
