"""Erasing one person's data from the Redis store (spec OQ-5, the bot's side of it).

The core tombstones a person's attribution; the bot holds its own copies under the person's id
and chat identities: delivery slots, admissions, cap counters and digest windows (one hash named
by the person), digest batches and pages, their notice list as a steward, other stewards' queued
notices that name them (rewritten without them, or dropped when they named nobody else), their
Teams conversation references (AAD object id, Teams user id, display name), message references
of sent cards, rate and abuse-limit buckets named by their chat ids (a store before key names
were hashed named them in clear), and, for answers already forwarded, the outbox's order
markers, queue entries and parked entries (found by the person's order token and by their chat
ids), and their entries in the directories of people a platform's bulk listing keeps. Answers
still waiting in the outbox are kept (and counted): they are the person's own evidence on its
way to the core, erased by running again once forwarded. Every key name comes from
``bot.store.keys``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster

from bot.chat import person_order_token
from bot.store.keys import Keys, hashed, is_unreported_field

Client = aioredis.Redis | RedisCluster

_GLOB = re.compile(r"([*?\[\]\\])")


def _esc(text: str) -> str:
    return _GLOB.sub(r"\\\1", text)


async def _delete_matching(redis: Client, pattern: str) -> int:
    found = [name async for name in redis.scan_iter(match=pattern, count=500)]
    return int(await redis.delete(*found)) if found else 0


def _names(order_key: str, users: set[str], token: str) -> bool:
    """Whether an order key (``Callback.order_key``) is the person's: ``clarification|p|<order
    token>`` or ``clarification|platform|tenant|chat user``, each maybe ending ``|override``."""
    parts = order_key.split("|")
    if len(parts) >= 3 and parts[1] == "p":
        return parts[2] == token
    return len(parts) >= 4 and parts[3] in users


async def erase_person(redis: Client, keys: Keys, *, person_id: str,
                       chat_users: Iterable[str]) -> dict[str, int]:
    """Delete what the store holds for one person; returns a count per kind (zeros included)."""
    users = {u for u in chat_users if u}
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
    rewritten, dropped = await _erase_from_notices(redis, keys, person_id)
    done["notices_rewritten"], done["notices_dropped"] = rewritten, dropped
    done["conversation_refs"] = await _erase_conversations(redis, keys, users)
    done["rate_keys"] = await _erase_rate_keys(redis, keys, users)
    done["directory_entries"] = await _erase_directories(redis, keys, users)
    done["message_refs"] = await _erase_cards(redis, keys, person_id)
    done["digest_pages"] = await _erase_digest_pages(redis, keys, person_id)
    waiting, parked, markers = await _erase_outbox(redis, keys, users,
                                                   person_order_token(person_id))
    done["parked_answers"], done["answer_order_markers"] = parked, markers
    done["answers_waiting_kept"] = waiting
    return done


async def _erase_directories(redis: Client, keys: Keys, users: set[str]) -> int:
    """Their documents in every workspace's directory of people (``bot.store.directory``): a
    field under the keyed hash of their chat id, in one hash per workspace."""
    fields = [hashed(user) for user in sorted(users)]
    removed = 0
    if fields:
        async for name in redis.scan_iter(match=keys.directory("*"), count=500):
            removed += int(await redis.hdel(name, *fields))
    return removed


async def _erase_from_notices(redis: Client, keys: Keys, person_id: str) -> tuple[int, int]:
    """Other stewards' notices queued (or taken, not yet sent) that name the person among the
    people a question went to: rewritten without them, or dropped when nobody else is left.
    (notices rewritten, notices dropped)"""
    rewritten = dropped = 0
    async for name in redis.scan_iter(match=keys.notices("*", "*", "items"), count=500):
        queue = name.removesuffix(":items") + ":queue"
        async for cid, doc in redis.hscan_iter(name):
            kept, gone = _without(doc, person_id)
            if not gone:
                continue
            if kept is None:
                await redis.hdel(name, cid)
                await redis.zrem(queue, cid)
                dropped += 1
            else:
                await redis.hset(name, cid, kept)
                rewritten += 1
    async for name in redis.scan_iter(match=keys.notices("*", "*", "batch"), count=500):
        joined = await redis.hget(name, "items")
        if not joined:
            continue
        lines, changed = [], False
        for doc in str(joined).split("\n"):
            kept, gone = _without(doc, person_id) if doc else (doc, False)
            changed |= gone
            if gone and kept is None:
                dropped += 1
            elif kept:
                rewritten += int(gone)
                lines.append(kept)
        if changed:
            await redis.hset(name, "items", "\n".join(lines))
    return rewritten, dropped


def _without(doc: str, person_id: str) -> tuple[str | None, bool]:
    """A notice item's JSON without the person among those asked: (the item, or None when
    nobody is left; whether it named them)."""
    try:
        raw = json.loads(doc)
        asked = [p for p in raw.get("p", []) if p != person_id]
    except (ValueError, AttributeError, TypeError):
        return doc, False
    if len(asked) == len(raw.get("p", [])):
        return doc, False
    if not asked:
        return None, True
    raw["p"] = asked
    return json.dumps(raw, separators=(",", ":")), True


async def _erase_conversations(redis: Client, keys: Keys, users: set[str]) -> int:
    """The person's Teams conversation references (one per tenant and AAD object id)."""
    gone = 0
    for user in users:
        gone += await _delete_matching(redis, keys.conversation("*", _esc(user)))
    return gone


async def _erase_rate_keys(redis: Client, keys: Keys, users: set[str]) -> int:
    """Rate and abuse-limit buckets whose name holds one of the person's chat ids: a store whose
    key names are hashed (``keys.hashed``) has none; one written before them may."""
    gone = 0
    for user in users:
        for kind in ("rate", "limit"):
            gone += await _delete_matching(redis, f"{keys.prefix}:{kind}:*{_esc(user)}*")
    return gone


async def _erase_cards(redis: Client, keys: Keys, person_id: str) -> int:
    erased = 0
    async for name in redis.scan_iter(match=keys.cards("*"), count=500):
        fields = [f async for f, _ in redis.hscan_iter(name, match=f"*|{_esc(person_id)}|*")]
        if fields:  # the cards and their not-yet-reported marks; the cards counted
            gone = int(await redis.hdel(name, *fields))
            cards = sum(1 for f in fields if not is_unreported_field(
                f.decode() if isinstance(f, bytes) else f))
            erased += min(gone, cards)
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


async def _erase_outbox(redis: Client, keys: Keys, users: set[str], token: str
                        ) -> tuple[int, int, int]:
    """(entries still waiting, kept; parked entries erased; order markers erased)."""
    waiting_keys: set[str] = set()
    waiting = 0
    async for _, raw in redis.hscan_iter(keys.outbox_entries):
        order_key = json.loads(raw).get("key", "")
        if _names(order_key, users, token):
            waiting_keys.add(order_key)
            waiting += 1
    parked = []
    async for entry_id, raw in redis.hscan_iter(keys.outbox_parked):
        try:
            order_key = json.loads(json.loads(raw)["entry"]).get("key", "")
        except (ValueError, KeyError, TypeError, AttributeError):
            order_key = entry_id.rsplit("|", 2)[0]
        if _names(order_key, users, token):
            parked.append(entry_id)
    if parked:
        await redis.hdel(keys.outbox_parked, *parked)
    markers = []
    prefix = keys.order_pattern_prefix
    async for name in redis.scan_iter(match=f"{_esc(prefix)}*", count=500):
        order_key = name[len(prefix):]
        if _names(order_key, users, token) and order_key not in waiting_keys:
            markers.append(name)
    erased = int(await redis.delete(*markers)) if markers else 0
    settled = 0
    for hash_name in (keys.outbox_leases, keys.outbox_keys, keys.outbox_queue):
        fields = [key async for key, _ in redis.hscan_iter(hash_name)
                  if _names(key, users, token) and key not in waiting_keys]
        if fields:
            settled += int(await redis.hdel(hash_name, *fields))
    return waiting, len(parked), erased + settled
