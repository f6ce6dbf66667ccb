"""Teams pacing with an interactive lane: bulk cards leave the tenant bucket's reserve
to clicks, so a card's update goes out while many cards wait; and under a burst the
per-conversation and per-tenant buckets hold in every window (injected clock, no sleeping)."""

from __future__ import annotations

import asyncio
from datetime import datetime

from adapters.teams.connector import Limits
from bot.settings import TeamsRates, TeamsSettings
from bot.store.base import DeliveryKey
from cards.fixtures import OUTCOMES, QUESTION
from tests.slack.test_slack_interactive_lane import StoppedTime
from tests.teams.outbound import ORG, SETTINGS, Kit, address

BULK = 60


def users(count: int) -> list[str]:
    return [f"8f1c2d3e-0000-4000-8000-{n:012d}" for n in range(count)]


def key(n: int) -> DeliveryKey:
    return DeliveryKey(f"clr-bulk-{n}", f"p-bulk-{n}", 0, "question")


async def test_a_clicks_update_goes_out_while_many_cards_wait(kit: Kit) -> None:
    """60 cards to 60 people against a tenant bucket of 5 a second: what the bucket holds less
    the reserve goes out, the rest wait; an update of a delivered card (a click's result) goes
    out at once, before one more card; then time moves and every card goes out once."""
    time = StoppedTime(kit.clock)
    channel = kit.channel(limits=Limits(tenant_rate=5.0, tenant_burst=5, interactive_reserve=2))
    channel.connector.sleep = time.sleep
    people = users(BULK)
    conversations = [kit.fake.open(ORG, user) for user in people]
    bulk = [asyncio.create_task(channel.send(
        address(user, service_url=kit.fake.url, conversation_id=conversation), QUESTION,
        key=key(n))) for n, (user, conversation) in enumerate(zip(people, conversations,
                                                                  strict=True))]
    for _ in range(3000):  # a guard while the tasks reach their waits, not a pace
        if time.sleeping + len(kit.fake.posted) == BULK:
            break
        await asyncio.sleep(0.01)
    assert len(kit.fake.posted) == 3 and time.sleeping == BULK - 3
    first = await bulk[next(n for n, t in enumerate(bulk) if t.done())]

    await channel.update(first, OUTCOMES["outcome_recorded"])
    assert len(kit.fake.of("update")) == 1 and len(kit.fake.posted) == 3

    while len(kit.fake.posted) < BULK:
        await time.advance(1.0)
        await asyncio.sleep(0)
        for _ in range(50):
            await asyncio.sleep(0)
    await asyncio.gather(*bulk)
    assert len({p.conversation_id for p in kit.fake.posted}) == BULK


def _check_windows(times: list[datetime], *, rate: float, burst: int) -> None:
    """In every window between two sends, no more sends than the bucket allows."""
    for i, start in enumerate(times):
        for j in range(i, len(times)):
            seconds = (times[j] - start).total_seconds()
            assert j - i + 1 <= burst + rate * seconds + 1e-9, (i, j, seconds)


async def test_the_buckets_hold_under_a_burst(kit: Kit) -> None:
    """150 cards round-robin to ten people from two replicas sharing the store, paced by
    ``[teams.rates]``: each conversation never exceeds its burst and rate (7 at once, then one
    every 2 s: so 7 in 1 s, 8 in 2 s and 60 in 30 s hold), nor the tenant its own (4 a second,
    less than the ten conversations would allow)."""
    settings = TeamsSettings.model_validate({
        **SETTINGS.model_dump(), "tenant_sends_per_second": 4.0,
        "rates": TeamsRates(tenant_burst=4, conversation_burst=7)})
    limits = Limits.of(settings)
    assert (limits.tenant_rate, limits.tenant_burst, limits.conversation_rate) == (4.0, 4, 0.5)
    replicas = [kit.channel(limits=limits, settings=settings) for _ in range(2)]
    people = users(10)
    conversations = [kit.fake.open(ORG, user) for user in people]
    sent: dict[str, list[datetime]] = {c: [] for c in conversations}
    tenant: list[datetime] = []
    for n in range(150):
        conversation = conversations[n % 10]
        await replicas[n % 2].send(
            address(people[n % 10], service_url=kit.fake.url, conversation_id=conversation),
            QUESTION, key=key(n))
        sent[conversation].append(kit.clock.now())
        tenant.append(kit.clock.now())
    for times in sent.values():
        _check_windows(times, rate=0.5, burst=7)
        assert sum(1 for t in times if (t - times[0]).total_seconds() < 30) <= 60
    _check_windows(tenant, rate=4.0, burst=4)
    # the tenant's bucket is what binds: (150 - 4) / 4 seconds at the least, and not much more
    assert 36.5 <= (tenant[-1] - tenant[0]).total_seconds() <= 40
    assert len(kit.fake.posted) == 150
