"""The bot's side of erasing a person's attribution (spec OQ-5), after the core's tombstone.

The core's answer names the person's chat identities; with them and the person id, the Redis
store forgets what it keeps for the person (``bot.store.erasure``) and a JSON-lines audit file is
rewritten with their ids tombstoned (``bot.audit.erase_from_lines``). A memory store lives in one
process and an audit sink on stdout keeps nothing on disk: both are reported as such (None).
"""

from __future__ import annotations

from bot.audit import erase_from_lines
from bot.core import models as m
from bot.settings import Settings


def chat_ids(aliases: m.PersonAliases) -> set[str]:
    """Every chat user id the bot may hold data under for this person."""
    return {a.user_id for a in aliases.slack} | {a.aad_object_id for a in aliases.teams}


async def erase_bot_data(settings: Settings, report: m.ErasureReport
                         ) -> tuple[dict[str, int] | None, int | None]:
    """(what the store removed, per kind; audit lines rewritten); None where nothing is kept."""
    users = chat_ids(report.aliases)
    removed: dict[str, int] | None = None
    if settings.store.backend == "redis":
        from bot.store.redis import RedisStore

        secrets = settings.secrets
        async with RedisStore.from_url(
            settings.redis.url, prefix=settings.redis.key_prefix.rstrip(":"),
            password=secrets.value("redis_password"),
            sentinel_password=secrets.value("redis_sentinel_password"),
        ) as store:
            removed = await store.erase_person(report.person_id, chat_users=sorted(users))
    lines: int | None = None
    if settings.audit.sink == "jsonl" and settings.audit.path is not None:
        lines = erase_from_lines(settings.audit.path, {report.person_id, *users},
                                 tombstone=m.NIL_PERSON)
    return removed, lines
