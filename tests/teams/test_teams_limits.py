"""Teams' limits and faults through the fake Bot Connector: per-conversation and per-tenant rate
buckets shared across replicas, 429/412/502/504 retried with backoff, jitter and Retry-After, a
bounded time before DELIVERY_FAILED, and the bot's token only for allowed connector hosts."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from adapters.teams.connector import ConnectorHosts, Limits
from bot.channel import ChannelError
from bot.store.base import DeliveryKey, Store
from cards.fixtures import QUESTION
from tests.teams.fakeconnector import FakeConnector
from tests.teams.outbound import KEY, ORG, Kit, address, stored_reference

OTHER = "8f1c2d3e-0000-4000-8000-00000000b002"


def key(n: int) -> DeliveryKey:
    return DeliveryKey(f"clr-{n}", "p-sarah", 0, "question")


@pytest.mark.parametrize("status", [412, 502, 504])
async def test_transient_answers_are_retried_with_exponential_backoff(kit: Kit, status: int
                                                                      ) -> None:
    """Two transient answers, then the send lands: waits grow 1 s, 2 s (half of each fixed,
    half jitter: here no jitter), and the card is there once."""
    await stored_reference(kit)
    kit.fake.fail("send", status, times=2)
    await kit.channel().send(address(), QUESTION, key=KEY)
    assert [c.status for c in kit.fake.of("send")] == [status, status, 201]
    assert kit.sleeps.taken == [0.5, 1.0] and len(kit.fake.posted) == 1


async def test_jitter_spreads_the_backoff(kit: Kit) -> None:
    """With full jitter drawn, each wait is its whole backoff step."""
    await stored_reference(kit)
    kit.fake.fail("send", 502, times=3)
    await kit.channel(jitter=lambda: 1.0).send(address(), QUESTION, key=KEY)
    assert kit.sleeps.taken == [1.0, 2.0, 4.0]


async def test_a_retry_after_is_a_floor_under_the_backoff(kit: Kit) -> None:
    """A 502 asking for 3 s: waited while longer than the backoff, then the backoff (4 s at a
    draw of 1.0) once that is longer (``Limits.retry``, bot.retry)."""
    await stored_reference(kit)
    kit.fake.fail("send", 502, times=3, retry_after="3")
    await kit.channel(jitter=lambda: 1.0).send(address(), QUESTION, key=KEY)
    assert kit.sleeps.taken == [3.0, 3.0, 4.0]
    assert kit.sleeps.taken == [Limits().retry.delay(n, retry_after=3.0, draw=1.0)
                                for n in (1, 2, 3)]


async def test_a_429_is_retried_after_retry_after(kit: Kit) -> None:
    """A 429 with Retry-After: 7 blocks the conversation's bucket for 7 s; the retry waits
    that out (and then the bucket's own pace, one send every 2 s), and lands once."""
    await stored_reference(kit)
    kit.fake.fail("send", 429, retry_after="7")
    await kit.channel().send(address(), QUESTION, key=KEY)
    assert [c.status for c in kit.fake.of("send")] == [429, 201]
    assert kit.sleeps.taken == [9.0] and len(kit.fake.posted) == 1


@pytest.mark.parametrize("raw", ["inf", "1e999", "nan"])
async def test_a_retry_after_that_is_no_finite_number_is_the_backoff_alone(kit: Kit,
                                                                          raw: str) -> None:
    """A 502 whose Retry-After is no finite number is read as none: the backoff alone is
    waited (1, 2, 4 s at a draw of 1.0) and the card lands, not a wait of infinity (past the
    send's budget: given up on) or of NaN."""
    await stored_reference(kit)
    kit.fake.fail("send", 502, times=3, retry_after=raw)
    await kit.channel(jitter=lambda: 1.0).send(address(), QUESTION, key=KEY)
    assert kit.sleeps.taken == [Limits().retry.delay(n, draw=1.0) for n in (1, 2, 3)]
    assert len(kit.fake.posted) == 1


async def test_a_429_holds_every_replica(kit: Kit) -> None:
    """The block is in the store: another replica sending to the same conversation during it
    waits it out before its first request."""
    await stored_reference(kit)
    kit.fake.fail("send", 429, retry_after="30", times=1)
    first = kit.channel(limits=Limits(attempts=1))
    with pytest.raises(ChannelError):
        await first.send(address(), QUESTION, key=KEY)
    await kit.channel().send(address(), QUESTION, key=key(2))
    assert kit.sleeps.taken[0] >= 30.0
    assert [c.status for c in kit.fake.of("send")] == [429, 201]


async def test_a_send_fails_after_a_bounded_time(kit: Kit) -> None:
    """A connector that keeps answering 429: the send gives up once its waits would pass the
    retry budget; the failure is certain (nothing was sent) and retryable later."""
    await stored_reference(kit)
    kit.fake.fail("send", 429, times=50)
    limits = Limits(attempts=50, retry_budget_seconds=20.0)
    with pytest.raises(ChannelError) as raised:
        await kit.channel(limits=limits).send(address(), QUESTION, key=KEY)
    assert raised.value.certain and raised.value.retryable
    assert sum(kit.sleeps.taken) <= 20.0 and kit.fake.posted == []
    assert len(kit.fake.of("send")) < 50


async def test_a_send_that_may_have_landed_is_not_certain(kit: Kit) -> None:
    """Gateway errors to the end: the connector may have delivered one of them, so the
    failure is not certain (the engine keeps the reservation and never sends it again)."""
    await stored_reference(kit)
    kit.fake.fail("send", 504, times=10)
    with pytest.raises(ChannelError) as raised:
        await kit.channel(limits=Limits(attempts=3)).send(address(), QUESTION, key=KEY)
    assert not raised.value.certain and not raised.value.retryable


async def test_other_refusals_are_not_retried(kit: Kit) -> None:
    await stored_reference(kit)
    kit.fake.fail("send", 400)
    with pytest.raises(ChannelError) as raised:
        await kit.channel().send(address(), QUESTION, key=KEY)
    assert raised.value.reason.startswith("connector_400") and raised.value.certain
    assert len(kit.fake.of("send")) == 1 and kit.sleeps.taken == []


async def test_at_most_seven_sends_per_second_per_conversation(kit: Kit) -> None:
    """Seven cards to one conversation go at once; the eighth waits for the bucket (refilled
    at one every two seconds, so 8 in 2 s and 60 in 30 s hold too)."""
    await stored_reference(kit)
    channel = kit.channel()
    for n in range(7):
        await channel.send(address(), QUESTION, key=key(n))
    assert kit.sleeps.taken == []
    await channel.send(address(), QUESTION, key=key(7))
    assert kit.sleeps.taken == [2.0] and len(kit.fake.posted) == 8


async def test_the_tenant_limit_spans_conversations_and_replicas(kit: Kit, clock: object
                                                                 ) -> None:
    """The per-tenant bucket (configurable) is shared by every conversation of the tenant and
    by every replica on the same store."""
    await stored_reference(kit)
    other = kit.fake.open(ORG, OTHER)
    await kit.store.conversation_put("acme", OTHER, json.dumps(
        {"conversation": {"id": other}, "serviceUrl": kit.fake.url}), now=kit.clock.now())
    limits = Limits(tenant_rate=2.0, interactive_reserve=0)  # the reserve: tested below
    first, second = kit.channel(limits=limits), kit.channel(limits=limits)
    await first.send(address(), QUESTION, key=key(1))
    await second.send(address(OTHER), QUESTION, key=key(2))
    assert kit.sleeps.taken == []
    await first.send(address(OTHER), QUESTION, key=key(3))
    assert kit.sleeps.taken == [0.5]


async def test_replicas_on_redis_share_the_buckets(kit: Kit, redis_store: Callable[[], Store]
                                                   ) -> None:
    """Two replicas with their own Redis clients: the conversation's eighth card waits."""
    one, two = redis_store(), redis_store()
    kit.store = one
    await stored_reference(kit)
    for n in range(3):
        await kit.channel(store=one).send(address(), QUESTION, key=key(n))
        await kit.channel(store=two).send(address(), QUESTION, key=key(10 + n))
    await kit.channel(store=one).send(address(), QUESTION, key=key(3))
    assert kit.sleeps.taken == []
    await kit.channel(store=two).send(address(), QUESTION, key=key(20))
    assert kit.sleeps.taken == [pytest.approx(2.0)]


@pytest.mark.parametrize("service_url", [
    "https://connector.evil.example/teams/",
    "https://smba.trafficmanager.net.evil.example/teams/",
    "http://smba.trafficmanager.net/teams/",
    "https://user@smba.trafficmanager.net/teams/",
    "https://smba.trafficmanager.net:8443/teams/",
])
async def test_the_token_goes_only_to_allowed_connector_hosts(kit: Kit, service_url: str
                                                              ) -> None:
    """A stored reference naming a host that is not Microsoft's connector: refused before any
    request, so neither the token nor the card leaves."""
    await stored_reference(kit, service_url=service_url)
    with pytest.raises(ChannelError) as raised:
        await kit.channel(hosts=ConnectorHosts()).send(address(), QUESTION, key=KEY)
    assert "allowed" in raised.value.reason and kit.tokens.asked == []
    assert kit.fake.calls == []


async def test_a_local_connector_is_allowed_only_by_its_exact_origin(kit: Kit) -> None:
    """Another port on 127.0.0.1 (another local server) never gets the token."""
    async with FakeConnector() as elsewhere:
        await stored_reference(kit, service_url=elsewhere.url)
        with pytest.raises(ChannelError):
            await kit.channel().send(address(), QUESTION, key=KEY)
        assert elsewhere.calls == [] and kit.tokens.asked == []


def test_microsofts_connector_hosts_are_allowed() -> None:
    hosts = ConnectorHosts()
    for url in ("https://smba.trafficmanager.net/amer/", "https://smba.trafficmanager.net/teams/",
                "https://europe.webchat.botframework.com/", "https://SMBA.trafficmanager.net/emea",
                "https://smba.infra.gcc.teams.microsoft.com/gcc/"):
        assert hosts.allows(url), url
    assert not hosts.allows("not a url") and not hosts.allows("")
