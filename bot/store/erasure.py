"""Erasing one person's data from the Redis store (spec OQ-5, the bot's side of it).

The core tombstones a person's attribution; the bot holds its own copies under the person's id
and chat identities: delivery slots, admissions, cap counters and digest windows (one hash named
by the person), digest batches and pages, their notice list as a steward, message references of
sent cards, and, for answers already forwarded, the outbox's order markers and parked entries.
Answers still waiting in the outbox are kept (and counted): they are the person's own evidence on
its way to the core, erased by running again once forwarded. Every key name comes from
``bot.store.keys``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster

from bot.store.keys import Keys

Client = aioredis.Redis | RedisCluster

_GLOB = re.compile(r"([*?\[\]\\])")


def _esc(text: str) -> str:
    return _GLOB.sub(r"\\\1", text)


async def _delete_matching(redis: Client, pattern: str) -> int:
    found = [name async for name in redis.scan_iter(match=pattern, count=500)]
    return int(await redis.delete(*found)) if found else 0


def _user_of(order_key: str) -> str:
    """An order key is ``clarification|platform|tenant|chat user`` (``Callback.order_key``)."""
    return order_key.rsplit("|", 1)[-1]


async def erase_person(redis: Client, keys: Keys, *, person_id: str,
                       chat_users: Iterable[str]) -> dict[str, int]:
    """Delete what the store holds for one person; returns a count per kind (zeros included)."""
    users = set(chat_users)
    pid = _esc(person_id)
    done: dict[str, int] = {}
    state = [str(f) for f in await redis.hkeys(keys.person(person_id))]
    await redis.delete(keys.person(person_id))
    done["delivery_slots"] = sum(f.startswith("s:") for f in state)
    done["admissions"] = sum(f.startswith("a:") for f in state)
    done["cap_counters"] = sum(f in ("c", "c0") for f in state)
    done["digest_windows"] = int("ws" in state)
    batches = [f for f in await redis.hkeys(keys.digest(person_id)) if str(f).endswith(":due")]
    await redis.delete(keys.digest(person_id))
    done["digest_batches"] = len(batches)
    due = [m async for m in redis.zscan_iter(keys.batches_due) if m[0].startswith(f"{person_id}|")]
    if due:
        await redis.zrem(keys.batches_due, *(member for member, _ in due))
    # their notice list as a steward (the ids of the people a question went to, of clarifications)
    done["steward_notices"] = await _delete_matching(redis, keys.notices("*", pid, "*"))
    owners = [m async for m in redis.zscan_iter(keys.notices_due)
              if m[0].endswith(f"|{person_id}")]
    if owners:
        await redis.zrem(keys.notices_due, *(member for member, _ in owners))
    done["message_refs"] = await _erase_cards(redis, keys, person_id)
    done["digest_pages"] = await _erase_digest_pages(redis, keys, person_id)
    waiting, parked, markers = await _erase_outbox(redis, keys, users)
    done["parked_answers"], done["answer_order_markers"] = parked, markers
    done["answers_waiting_kept"] = waiting
    return done


async def _erase_cards(redis: Client, keys: Keys, person_id: str) -> int:
    erased = 0
    async for name in redis.scan_iter(match=keys.cards("*"), count=500):
        fields = [f async for f, _ in redis.hscan_iter(name, match=f"*|{_esc(person_id)}|*")]
        if fields:
            erased += int(await redis.hdel(name, *fields))
    return erased


async def _erase_digest_pages(redis: Client, keys: Keys, person_id: str) -> int:
    gone = []
    async for name in redis.scan_iter(match=keys.latest("digest", "*"), count=500):
        raw = await redis.get(name)
        try:
            owner = json.loads(raw).get("person") if raw else None
        except (ValueError, AttributeError):
            owner = None
        if owner == person_id:
            gone.append(name)
    return int(await redis.delete(*gone)) if gone else 0


async def _erase_outbox(redis: Client, keys: Keys, users: set[str]
                        ) -> tuple[int, int, int]:
    """(entries still waiting, kept; parked entries erased; order markers erased)."""
    if not users:
        return 0, 0, 0
    waiting_keys: set[str] = set()
    waiting = 0
    async for _, raw in redis.hscan_iter(keys.outbox_entries):
        order_key = json.loads(raw).get("key", "")
        if _user_of(order_key) in users:
            waiting_keys.add(order_key)
            waiting += 1
    parked = []
    async for entry_id, _ in redis.hscan_iter(keys.outbox_parked):
        if _user_of(entry_id.rsplit("|", 2)[0]) in users:
            parked.append(entry_id)
    if parked:
        await redis.hdel(keys.outbox_parked, *parked)
    markers = []
    prefix = keys.order_pattern_prefix
    for user in users:
        async for name in redis.scan_iter(match=f"{_esc(prefix)}*|{_esc(user)}", count=500):
            if name[len(prefix):] not in waiting_keys:
                markers.append(name)
    erased = int(await redis.delete(*markers)) if markers else 0
    leases = [key async for key, _ in redis.hscan_iter(keys.outbox_leases)
              if _user_of(key) in users and key not in waiting_keys]
    if leases:
        await redis.hdel(keys.outbox_leases, *leases)
    return waiting, len(parked), erased + len(leases)
