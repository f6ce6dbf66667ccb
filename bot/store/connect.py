"""Which Redis the store talks to, read from one URL: a single server, a Redis Cluster, or a
master found through Sentinel (docs/configuration.md, ``[redis] url``).

    redis://host:6379/0, rediss://host:6380/0, unix:///run/redis.sock   one server
    redis+cluster://host1:7000,host2:7001,host3:7002                     a cluster (its seeds)
    rediss+cluster://...                                                 the same over TLS
    redis+sentinel://host1:26379,host2:26379/mymaster[/db]               Sentinel's master
    rediss+sentinel://...                                                the same over TLS
                                                                         (sentinels and nodes)

A password never travels in the URL: REDIS_PASSWORD holds the data nodes', and
REDIS_SENTINEL_PASSWORD the sentinels' own (``requirepass`` in sentinel.conf), if they ask for
one. Errors name no part of the URL and no password.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

import redis.asyncio as aioredis
from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis.asyncio.sentinel import Sentinel

from bot.errors import BotError

Mode = Literal["standalone", "cluster", "sentinel"]
STANDALONE_SCHEMES = ("redis", "rediss", "unix")
CLUSTER_SCHEMES = ("redis+cluster", "rediss+cluster")
SENTINEL_SCHEMES = ("redis+sentinel", "rediss+sentinel")
SCHEMES = STANDALONE_SCHEMES + CLUSTER_SCHEMES + SENTINEL_SCHEMES


class BadRedisUrl(BotError, ValueError):
    """What is wrong with a Redis URL, in words that quote none of it."""


@dataclass(frozen=True, slots=True)
class RedisTarget:
    mode: Mode
    url: str  # as given (standalone: handed to redis-py as is)
    nodes: tuple[tuple[str, int], ...] = ()  # cluster seeds or sentinels
    service: str | None = None  # Sentinel's name for the master
    db: int = 0
    tls: bool = False


def _nodes(netloc: str, default_port: int) -> tuple[tuple[str, int], ...]:
    if "@" in netloc:
        raise BadRedisUrl("no user or password in the URL (set REDIS_PASSWORD)")
    found = []
    for part in netloc.split(","):
        host, sep, port = part.strip().rpartition(":")
        if not sep:
            host, port = part.strip(), str(default_port)
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise BadRedisUrl("host:port pairs separated by commas")
        found.append((host.strip("[]"), int(port)))
    return tuple(found)


def parse_redis_url(url: str) -> RedisTarget:
    """The target a URL names; BadRedisUrl says what is allowed when it names none."""
    scheme, sep, rest = url.partition("://")
    if not sep or scheme not in SCHEMES:
        raise BadRedisUrl("a redis://, rediss://, unix://, redis+cluster://, rediss+cluster://, "
                          "redis+sentinel:// or rediss+sentinel:// URL")
    if scheme in STANDALONE_SCHEMES:
        parts = urlsplit(url)
        if not (parts.hostname or scheme == "unix"):
            raise BadRedisUrl("a host name after //")
        if parts.password:
            raise BadRedisUrl("no password in the URL (set REDIS_PASSWORD)")
        return RedisTarget("standalone", url)
    netloc, _, path = rest.partition("/")
    if "?" in path or "?" in netloc:
        raise BadRedisUrl("no query string: the store sets the client's options itself")
    tls = scheme.startswith("rediss+")
    if scheme in CLUSTER_SCHEMES:
        if path not in ("", "0"):
            raise BadRedisUrl("no database after the cluster's nodes (a cluster has only 0)")
        return RedisTarget("cluster", url, _nodes(netloc, 6379), tls=tls)
    service, _, db = path.partition("/")
    if not service or not (db == "" or db.isdigit()):
        raise BadRedisUrl("the master's name after the sentinels, then optionally /<database>")
    return RedisTarget("sentinel", url, _nodes(netloc, 26379), service=service,
                       db=int(db or 0), tls=tls)


def client_for(target: RedisTarget, *, password: str | None,
               max_connections: int,
               sentinel_password: str | None = None) -> aioredis.Redis | RedisCluster:
    """A client with decoded replies. One server's pool makes a call past ``max_connections``
    wait; a cluster's (per node) and Sentinel's fail it, so the store holds its calls to that
    many at a time (``RedisStore.from_url``). ``sentinel_password`` is only for Sentinel's
    sentinels (their ``requirepass``); ``password`` is the data nodes'."""
    if target.mode == "standalone":
        pool = aioredis.BlockingConnectionPool.from_url(
            target.url, password=password, decode_responses=True,
            max_connections=max_connections)
        return aioredis.Redis.from_pool(pool)
    if target.mode == "cluster":
        return RedisCluster(startup_nodes=[ClusterNode(h, p) for h, p in target.nodes],
                            password=password, decode_responses=True, ssl=target.tls,
                            max_connections=max_connections)
    assert target.service is not None
    # the sentinels: their own password (or none) and the same TLS as the nodes they name
    sentinel = Sentinel(list(target.nodes), socket_timeout=5, password=password, ssl=target.tls,
                        sentinel_kwargs={"socket_timeout": 5, "password": sentinel_password,
                                         "ssl": target.tls})
    return sentinel.master_for(target.service, db=target.db, decode_responses=True,
                               max_connections=max_connections)
