"""The store's errors: one root, library errors translated at the boundary::

    StoreError
    ├── SlotNotFound        the delivery slot to update does not exist (released or expired)
    ├── SlotContended       the slot kept changing under a compare-and-set; nothing was written
    ├── StoreUnavailable    the backing service could not be reached or failed (Redis's own
    │                       errors arrive as its ``__cause__``, never raised as they are)
    └── OutboxFull          the answer outbox holds its most entries: nothing was stored, the
                            answer must be refused (never acknowledged)

Catching ``StoreError`` catches every failure the store reports: a missing or contended slot,
an unreachable or failing backend. Misuse (a Redis client without ``decode_responses``, a naive
datetime) is a ``ValueError``, never a ``StoreError``.

Messages are value-free: they never repeat keys, tokens or payloads.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from functools import wraps
from pathlib import PurePath
from typing import Any

from redis.exceptions import RedisError

from bot.errors import BotError


class StoreError(BotError):
    """Root of the store's errors."""


class SlotNotFound(StoreError, LookupError):
    def __init__(self) -> None:
        super().__init__("delivery slot not found")


class SlotContended(StoreError):
    def __init__(self) -> None:
        super().__init__("delivery slot update contended")


class StoreUnavailable(StoreError):
    def __init__(self) -> None:
        super().__init__("store unavailable")


class OutboxFull(StoreError):
    def __init__(self) -> None:
        super().__init__("answer outbox full")


def translated[**P, R](
    method: Callable[P, Coroutine[Any, Any, R]],
) -> Callable[P, Coroutine[Any, Any, R]]:
    """Turn the Redis client's errors into the store's own, value-free ones. A store that has a
    ``_turn()`` (``RedisStore``: its client started, one of its concurrent turns held) runs
    each call inside it."""

    @wraps(method)
    async def call(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            turn = getattr(args[0], "_turn", None) if args else None
            if turn is None:
                return await method(*args, **kwargs)
            async with turn():
                return await method(*args, **kwargs)
        except StoreError:
            raise
        except RedisError as exc:
            raise StoreUnavailable() from exc
        except (TypeError, AttributeError) as exc:
            if not _lost_transport(exc):
                raise
            raise StoreUnavailable() from exc

    return call


def _lost_transport(exc: BaseException) -> bool:
    """A write to a socket transport whose connection was lost a moment before, seen by the soak
    when a cluster master was killed: CPython 3.12's selector transport has cleared its write
    handler or loop by then and raises TypeError ("'NoneType' object is not callable") or
    AttributeError instead of an OSError, and redis-py passes it on after dropping the
    connection. It is a lost connection all the same. Only errors raised inside asyncio's
    transport code count: the same types anywhere else are bugs and propagate."""
    tb, where = exc.__traceback__, None
    while tb is not None:
        where, tb = tb.tb_frame.f_code.co_filename, tb.tb_next
    return where is not None and PurePath(where).parts[-2:] == ("asyncio", "selector_events.py")
