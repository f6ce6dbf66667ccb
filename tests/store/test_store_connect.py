"""bot.store.connect: what each URL names and how the client for it is made (no server needed:
the clients connect lazily)."""

from __future__ import annotations

import pytest
from redis.asyncio.connection import SSLConnection
from redis.asyncio.sentinel import (
    SentinelConnectionPool,
    SentinelManagedConnection,
    SentinelManagedSSLConnection,
)

from bot.store.connect import BadRedisUrl, client_for, parse_redis_url


@pytest.mark.parametrize(("url", "tls"), [
    ("redis+sentinel://s1:26379,s2/mymaster/2", False),
    ("rediss+sentinel://s1:26379,s2/mymaster/2", True),
])
def test_a_sentinel_url_names_its_sentinels_master_database_and_tls(url: str, tls: bool) -> None:
    target = parse_redis_url(url)
    assert (target.mode, target.nodes, target.service, target.db, target.tls) == (
        "sentinel", (("s1", 26379), ("s2", 26379)), "mymaster", 2, tls)


@pytest.mark.parametrize("url", ["rediss+sentinel://s1:26379", "redis+sentinels://s1/m",
                                 "rediss+sentinel://:pw-Zq@s1/m"])
def test_a_bad_sentinel_url_says_what_is_allowed_and_quotes_none_of_it(url: str) -> None:
    with pytest.raises(BadRedisUrl) as caught:
        parse_redis_url(url)
    assert "s1" not in str(caught.value) and "pw-Zq" not in str(caught.value)


async def test_the_sentinels_get_their_own_password_and_the_nodes_theirs() -> None:
    """REDIS_SENTINEL_PASSWORD goes to the sentinels only, REDIS_PASSWORD to the master."""
    client = client_for(parse_redis_url("redis+sentinel://s1:26379/mymaster"),
                        password="nodes-Zq", sentinel_password="sentinels-Zq", max_connections=5)
    pool = client.connection_pool
    assert isinstance(pool, SentinelConnectionPool)
    [sentinel] = pool.sentinel_manager.sentinels
    assert sentinel.connection_pool.connection_kwargs["password"] == "sentinels-Zq"
    assert pool.connection_kwargs["password"] == "nodes-Zq"
    assert pool.connection_class is SentinelManagedConnection
    assert sentinel.connection_pool.connection_class is not SSLConnection
    await client.aclose()


async def test_unset_the_sentinels_are_asked_without_a_password() -> None:
    client = client_for(parse_redis_url("redis+sentinel://s1:26379/mymaster"),
                        password="nodes-Zq", max_connections=5)
    assert isinstance(client.connection_pool, SentinelConnectionPool)
    [sentinel] = client.connection_pool.sentinel_manager.sentinels
    assert sentinel.connection_pool.connection_kwargs.get("password") is None
    await client.aclose()


async def test_rediss_sentinel_speaks_tls_to_the_sentinels_and_to_the_nodes() -> None:
    client = client_for(parse_redis_url("rediss+sentinel://s1:26379/mymaster"),
                        password=None, sentinel_password=None, max_connections=5)
    pool = client.connection_pool
    assert isinstance(pool, SentinelConnectionPool)
    assert pool.connection_class is SentinelManagedSSLConnection
    [sentinel] = pool.sentinel_manager.sentinels
    assert sentinel.connection_pool.connection_class is SSLConnection
    await client.aclose()
