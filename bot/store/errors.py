"""The store's errors: one root, library errors translated at the boundary::

    StoreError
    ├── SlotNotFound        the delivery slot to update does not exist (released or expired)
    ├── SlotContended       the slot kept changing under a compare-and-set; nothing was written
    └── StoreUnavailable    the backing service could not be reached or failed (Redis's own
                            errors arrive as its ``__cause__``, never raised as they are)

Catching ``StoreError`` catches every failure the store reports: a missing or contended slot,
an unreachable or failing backend. Misuse (a Redis client without ``decode_responses``, a naive
datetime) is a ``ValueError``, never a ``StoreError``.

Messages are value-free: they never repeat keys, tokens or payloads.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from functools import wraps
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


def translated[**P, R](
    method: Callable[P, Coroutine[Any, Any, R]],
) -> Callable[P, Coroutine[Any, Any, R]]:
    """Turn the Redis client's errors into the store's own, value-free ones."""

    @wraps(method)
    async def call(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return await method(*args, **kwargs)
        except StoreError:
            raise
        except RedisError as exc:
            raise StoreUnavailable() from exc

    return call
