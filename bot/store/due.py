"""Due sets: members scored by when they are due, claimed one holder at a time (digest batches,
reminders, held jobs). On Redis a sorted set and one script; in memory a dict of due times."""

from __future__ import annotations

from datetime import datetime

# KEYS: a due set (batches, reminders or holds) | ARGV: member, now, lease end -> 1 claimed
# (held until lease end), 0 not due or held by another claim
CLAIM_DUE = """
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score or tonumber(score) > tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
return 1
"""


def due_first(scores: dict[str, datetime], now: datetime, limit: int) -> list[str]:
    """Ids scored at or before now, soonest first, ties by id: a Redis sorted set's order."""
    ready = sorted((score, name) for name, score in scores.items() if score <= now)
    return [name for _, name in ready[:limit]]
