"""What a first card costs the store when the person's workspace is listed (``adapters.slack.
people``): counted on the test's own Redis as ``bench/delivery.py`` counts (``INFO
commandstats`` after ``CONFIG RESETSTAT``: every command the server ran, those inside Lua
scripts too), the housekeeping of an empty pass taken off. The fake Slack over HTTP, the
reference core, the engine as production wires it, Slack's pacing lifted (its buckets' takes
are the same for every card, first or not: docs/performance.md)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any
from uuid import uuid4

import pytest
import redis.asyncio as aioredis

from adapters.slack.channel import SlackChannel
from bot.channel import SlackReach
from bot.settings import SlackRates
from bot.store.redis import RedisStore
from devslack import LocalSlack
from tests.redis_url import TEST_REDIS

FIRST_CARD_MOST = 10  # Redis commands of a first card to a listed person


@pytest.fixture
async def redis_store() -> AsyncIterator[tuple[RedisStore, aioredis.Redis]]:
    client = aioredis.Redis.from_url(f"{TEST_REDIS}/13", decode_responses=True)
    admin = aioredis.Redis.from_url(f"{TEST_REDIS}/13", decode_responses=True)
    prefix = f"cmd-{uuid4().hex[:8]}"
    yield RedisStore(client, prefix=prefix), admin
    async for name in admin.scan_iter(match=f"{prefix}:*", count=500):
        await admin.delete(name)
    await client.aclose()
    await admin.aclose()


async def commands(admin: aioredis.Redis) -> int:
    """Commands the server ran since the last CONFIG RESETSTAT, the counting's own aside."""
    stats = await admin.info("commandstats")
    return sum(int(v["calls"]) for k, v in stats.items()
               if k not in ("cmdstat_info", "cmdstat_config|resetstat"))


async def counted(admin: aioredis.Redis, stack: Any) -> int:
    await admin.config_resetstat()
    await stack.burst()
    return await commands(admin)


async def test_a_first_card_to_a_listed_person_costs_at_most_ten_redis_commands(
        make_stack: Any, fake_slack: LocalSlack,
        redis_store: tuple[RedisStore, aioredis.Redis]) -> None:
    store, admin = redis_store
    stack = await make_stack(store=store)
    channel = stack.engine.deliverer.channels["slack"]
    assert isinstance(channel, SlackChannel)
    channel.people = store
    channel.rates = SlackRates(paced=False)
    await channel.list_workspace(SlackReach(team_id="T0ACME", enterprise_id="E0ACME"))
    await stack.burst()
    empty = await counted(admin, stack)  # the housekeeping of a pass with nothing to send
    await stack.create(authority={"authored_by": ["p-ahmed"]})
    first = await counted(admin, stack) - empty
    assert len(fake_slack.dm_of("U0AHMED")) == 1
    assert first <= FIRST_CARD_MOST
    assert fake_slack.calls_to("users.info") == [] and fake_slack.calls_to("dnd.info") == []
    await stack.create(authority={"authored_by": ["p-ahmed"]})
    repeat = await counted(admin, stack) - empty
    assert len(fake_slack.dm_of("U0AHMED")) == 2
    assert repeat <= first
