"""The store's errors: one root, library errors translated at the boundary::

    StoreError
    ├── SlotNotFound        the delivery slot to update does not exist (released or expired)
    └── StoreUnavailable    the backing service could not be reached or failed

Messages are value-free: they never repeat keys, tokens or payloads.
"""

from __future__ import annotations

from bot.errors import BotError


class StoreError(BotError):
    """Root of the store's errors."""


class SlotNotFound(StoreError, LookupError):
    def __init__(self) -> None:
        super().__init__("delivery slot not found")


class StoreUnavailable(StoreError):
    def __init__(self) -> None:
        super().__init__("store unavailable")
