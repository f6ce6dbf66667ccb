"""The bot's own tables for the service it runs: the core it calls, the store and its Redis, the
worker, the answer outbox, the web server and its abuse limits, the audit and the logs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, BeforeValidator, model_validator
from pydantic_core import PydanticCustomError

from bot.core.extensions import Extension, parse_setting
from bot.settings.fields import (
    ExtensionNames,
    Int,
    Num,
    _allowed,
    _choice,
    _cross,
    _ints,
    _lower,
    _seconds,
    _Table,
    _url,
)
from bot.store import keys as store_keys
from bot.store.connect import BadRedisUrl, parse_redis_url


class CoreSettings(_Table):
    url: Annotated[str, _url(("http", "https"), "CLARIFY_BOT_CORE_TOKEN")] = _allowed(
        "http://127.0.0.1:8700", "an http(s) URL without credentials")
    connect_timeout_seconds: Num = _seconds(3.0, 60)
    read_timeout_seconds: Num = _seconds(10.0, 300)
    # the HTTP connection pool to the core, per process; a request past it waits for a free one
    max_connections: Int = _ints(32, 1, 1000)
    max_keepalive_connections: Int = _ints(32, 0, 1000)
    # which contract extensions the core offers: "auto" finds out (its OpenAPI document, else a
    # probe per extension) at start and every extensions_refresh_seconds; "none" uses the
    # baseline only; "all", or a list of names, is used as given (docs/core-contract.md)
    extensions: ExtensionNames = _allowed(
        ("auto",), "auto, none, all, or extension names (comma-separated): "
        + ", ".join(e.value for e in Extension))
    extensions_refresh_seconds: Num = _seconds(600.0, 86400)

    def extension_set(self) -> frozenset[Extension] | None:
        """What the client is given: None to find out, else the fixed set."""
        return parse_setting(list(self.extensions) if len(self.extensions) > 1
                             else self.extensions[0])


def _redis_url(value: str) -> str:
    try:
        parse_redis_url(value)
    except BadRedisUrl as exc:  # its message says what is allowed and quotes nothing
        raise PydanticCustomError("redis_url", str(exc)) from None
    return value


class RedisSettings(_Table):
    url: Annotated[str, AfterValidator(_redis_url)] = _allowed(
        "redis://127.0.0.1:6379/0",
        "a redis://, rediss:// or unix:// URL (one server), redis+cluster://host:port,... "
        "(a Redis Cluster) or redis+sentinel://host:port,.../master-name[/db] (Sentinel), "
        "rediss+cluster:// or rediss+sentinel:// over TLS, without a password")
    key_prefix: str = _allowed("clarify-bot:", "1 to 64 characters from A-Z a-z 0-9 . _ : -",
                               pattern=r"^[A-Za-z0-9._:-]{1,64}$")


class WorkerSettings(_Table):
    concurrency: Int = _ints(4, 1, 64)
    # hold as many jobs again leased ahead of the slots (each heartbeating), so a freed slot
    # starts the next job without waiting for a poll
    lease_ahead: bool = False
    poll_interval_seconds: Num = _seconds(2.0, 300)
    lease_seconds: Int = _ints(60, 10, 3600)
    heartbeat_seconds: Int = _ints(20, 1, 1800)
    # how much a `--role worker` process lowers its own CPU priority (a nice increment; 0 keeps
    # it): forwarding and delivery are background work, acknowledgements are not
    nice: Int = _ints(10, 0, 19)
    # where a `--role worker` process serves /healthz, /readyz and /metrics (on server.host);
    # 0 opens no port (its probes and metrics then have nowhere to go)
    health_port: Int = _ints(0, 0, 65535)

    @model_validator(mode="after")
    def _heartbeat_inside_lease(self) -> WorkerSettings:
        # At most half the lease, so one late heartbeat does not lose the lease.
        if self.heartbeat_seconds * 2 > self.lease_seconds:
            raise _cross("heartbeat_seconds", self.heartbeat_seconds,
                         f"at most half of worker.lease_seconds ({self.lease_seconds})")
        return self


class AnswersSettings(_Table):
    """The answer outbox: its consumers and how an entry is retried, then parked."""

    consumers: Int = _ints(8, 1, 256)
    followup_workers: Int = _ints(2, 1, 64)
    poll_seconds: Num = _seconds(0.5, 60)
    lease_seconds: Int = _ints(60, 10, 3600)
    max_failures: Int = _ints(5, 1, 100)
    backoff_base_seconds: Num = _seconds(2.0, 3600)
    backoff_cap_seconds: Num = _seconds(300.0, 86400)
    cache_seconds: Num = _allowed(10.0, "a number of seconds from 0 (off) to 300", ge=0, le=300)
    queue_cache_seconds: Num = _allowed(30.0, "a number of seconds from 0 (off) to 600", ge=0,
                                        le=600)
    # clicks one process answers with their outcome in place at once (Teams); more are
    # answered "being recorded" and painted later (0: none waits)
    in_place_at_once: Int = _ints(4, 0, 1000)


class LimitsSettings(_Table):
    """Abuse limits on the callback endpoints (docs/reliability.md, "Abuse limits")."""

    # refusals (bad signature or token, malformed or oversized body) one client address may
    # cause before it is refused unread; 0: off. Per process.
    ip_refusals_per_second: Num = _allowed(1.0, "a number from 0 (off) to 10000", ge=0, le=10000)
    ip_refusal_burst: Int = _ints(100, 1, 1_000_000)
    # proxies in front of the bot that append the client's address to X-Forwarded-For (0: the
    # connecting address is the client's, and X-Forwarded-For is ignored)
    trusted_proxy_hops: Int = _ints(0, 0, 10)
    # callbacks one verified person may make; 0: off. Shared by replicas on Redis.
    user_per_second: Num = _allowed(1.0, "a number from 0 (off) to 10000", ge=0, le=10000)
    user_burst: Int = _ints(60, 1, 1_000_000)
    # tasks an adapter runs after acknowledging, per platform and process; 0: no cap
    max_outstanding_tasks: Int = _ints(1000, 0, 1_000_000)


class ServerSettings(_Table):
    host: str = _allowed("127.0.0.1", "a host name or IP address", min_length=1)
    port: Int = _ints(3978, 1, 65535)


class StoreSettings(_Table):
    backend: Literal["memory", "redis"] = _choice("redis", "memory", "redis")
    # how long per-person state lives (docs/reliability.md, "Scale-out")
    slot_ttl_days: Int = _ints(8, 1, 365)
    cap_ttl_hours: Int = _ints(48, 25, 720)
    cards_ttl_days: Int = _ints(30, 1, 365)
    order_ttl_days: Int = _ints(7, 1, 365)
    conversation_ttl_days: Int = _ints(400, 1, 3650)
    outbox_max_entries: Int = _ints(store_keys.OUTBOX_MAX_ENTRIES, 100, 10_000_000)
    # replicas that must hold an answer before its click is acknowledged (WAIT; one server or
    # Sentinel's master, not a cluster), and how long to wait for them (docs/reliability.md)
    outbox_replicas: Int = _ints(0, 0, 16)
    outbox_replica_wait_ms: Int = _ints(250, 10, 2000)
    # how often every process checks that the store has not lost its data (docs/reliability.md,
    # "A store that lost its data"); a process also checks after the store answers again
    watch_seconds: Int = _ints(10, 1, 3600)

    def ttls(self) -> store_keys.Ttls:
        day = store_keys.DAY
        return store_keys.Ttls(slot=self.slot_ttl_days * day, cap=self.cap_ttl_hours * 3600,
                               cards=self.cards_ttl_days * day, order=self.order_ttl_days * day,
                               conversation=self.conversation_ttl_days * day)


class ReachSettings(_Table):
    # the reach record (docs/operations.md, "Reach report"): kept in PostgreSQL when
    # CLARIFY_BOT_DATABASE_URL is set, else in memory with store.backend = "memory"
    enabled: bool = True
    retention_days: Int = _ints(90, 1, 3650)
    # the stewards' weekly reach report in chat, on this day in each steward's zone (their
    # first working hour of it or later); "off": none
    weekly_report: Annotated[Literal["monday", "tuesday", "wednesday", "thursday", "friday",
                                     "saturday", "sunday", "off"],
                             BeforeValidator(_lower)] = "monday"

    def weekly_day(self) -> int | None:
        """The weekly report's day (Monday=0), None when it is off."""
        days = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
        return None if self.weekly_report == "off" else days.index(self.weekly_report)


class AuditSettings(_Table):
    sink: Literal["stdout", "jsonl"] = _choice("stdout", "stdout", "jsonl")
    path: Path | None = _allowed(None, "a file path (required when sink is jsonl)")

    @model_validator(mode="after")
    def _path_for_jsonl(self) -> AuditSettings:
        if self.sink == "jsonl" and self.path is None:
            raise _cross("path", None, "a file path when audit.sink is jsonl")
        return self


class LogSettings(_Table):
    level: Annotated[Literal["debug", "info", "warning", "error"], BeforeValidator(_lower)] = (
        _choice("info", "debug", "info", "warning", "error"))
    format: Literal["json", "console"] = _choice("json", "json", "console")
