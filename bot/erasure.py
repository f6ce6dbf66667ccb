"""The bot's side of erasing a person's attribution (spec OQ-5), after the core's tombstone.

The core's answer names the person's chat identities (from a core without the erasure extension,
the person's record read with the service token does); with them and the person id, the Redis
store forgets what it keeps for the person (``bot.store.erasure``; their platform profiles,
kept under a keyed hash of each chat identity, too) and a JSON-lines audit file is
rewritten with their ids tombstoned (``bot.audit.erase_from_lines``); the reach record kept in
PostgreSQL forgets every entry about them (``bot.reach``). A memory store lives in one
process and an audit sink on stdout keeps nothing on disk: both are reported as such (None).
"""

from __future__ import annotations

from bot.audit import erase_from_lines
from bot.core.models import NIL_PERSON, PersonAliases
from bot.reach.log import ReachLog
from bot.settings import Settings
from bot.store.keys import PROFILES, profile_key


def chat_ids(aliases: PersonAliases) -> set[str]:
    """Every chat user id the bot may hold data under for this person."""
    return {a.user_id for a in aliases.slack} | {a.aad_object_id for a in aliases.teams}


def profile_keys(aliases: PersonAliases) -> set[str]:
    """The store's names of the person's platform profiles (``bot.engine.zones``), one per
    chat identity: the same keyed hash the engine kept them under."""
    return ({profile_key("slack", a.user_id) for a in aliases.slack}
            | {profile_key("teams", a.aad_object_id) for a in aliases.teams})


async def read_aliases(settings: Settings, *, person_id: str, tenant_id: str | None
                       ) -> PersonAliases | None:
    """The person's chat identities read through the baseline (``GET /v1/people/{id}``, which
    takes the bot's service token), for a core that does not erase attribution itself; None
    when they cannot be read (no service token, or the core refuses)."""
    from bot.core import errors as e
    from bot.core.client import CoreClient, RetryPolicy

    token = settings.secrets.core_token
    if token is None:
        return None
    async with CoreClient(base_url=settings.core.url, token=token,
                          retry=RetryPolicy(max_attempts=2)) as core:
        try:
            person = await core.get_person(person_id=person_id, tenant_id=tenant_id)
        except e.CoreAPIError:
            return None
    return person.aliases


async def erase_bot_data(settings: Settings, *, person_id: str, aliases: PersonAliases,
                         reach: ReachLog | None = None
                         ) -> tuple[dict[str, int] | None, int | None]:
    """(what the store removed, per kind, with the reach record's entries; audit lines
    rewritten); None where nothing is kept. ``reach``: a kept reach record (PostgreSQL),
    closed here."""
    users = chat_ids(aliases)
    removed: dict[str, int] | None = None
    if reach is not None:
        try:
            removed = {"reach_entries": await reach.erase_person({person_id, *users})}
        finally:
            await reach.aclose()
    if settings.store.backend == "redis":
        from bot.store.redis import RedisStore

        secrets = settings.secrets
        async with RedisStore.from_url(
            settings.redis.url, prefix=settings.redis.key_prefix.rstrip(":"),
            password=secrets.value("redis_password"),
            sentinel_password=secrets.value("redis_sentinel_password"),
        ) as store:
            removed = {**(removed or {}),
                       **await store.erase_person(person_id, chat_users=sorted(users))}
            removed["platform_profiles"] = sum(
                [await store.kv_delete(PROFILES, key) for key in sorted(profile_keys(aliases))])
    lines: int | None = None
    if settings.audit.sink == "jsonl" and settings.audit.path is not None:
        lines = erase_from_lines(settings.audit.path, {person_id, *users},
                                 tombstone=NIL_PERSON)
    return removed, lines
