"""Keyset (stable) paging for every list: a cursor is the position of the last item shown.

Each list is ordered by a key that never changes and is never reused (a creation sequence), and a
page holds the items strictly after the cursor's key. Items created or changed between two pages
therefore never repeat an item and never skip one that existed when the walk began. The cursor is
opaque to clients: it names its list, so a cursor of another list is refused like a forged one.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from bot.core.errors import ErrorCode
from devcore.faults import CoreFault

DEFAULT_LIMIT, MAX_LIMIT = 50, 200


@dataclass(frozen=True, slots=True)
class Window:
    """Where a page starts (after ``after``, a key) and how many items it holds."""

    after: int | None
    limit: int


def window(*, listing: str, cursor: str | None, limit: int | None,
           largest: int = MAX_LIMIT) -> Window:
    """The page asked for; ``largest`` caps its size whatever ``limit`` says (a core may serve
    pages smaller than asked, and a client follows ``nextCursor`` either way)."""
    size = DEFAULT_LIMIT if limit is None else limit
    if not 1 <= size <= MAX_LIMIT:
        raise CoreFault(ErrorCode.VALIDATION_FAILED, "Query parameter limit is invalid.")
    return Window(after=None if cursor is None else _decode(cursor, listing),
                  limit=min(size, largest))


def page[T](
    items: Iterable[T], *, key: Callable[[T], int], win: Window, newest_first: bool, listing: str
) -> tuple[list[T], str | None]:
    """One page of ``items`` and the cursor of the next page (None on the last one)."""
    ordered = sorted(items, key=key, reverse=newest_first)
    if win.after is not None:
        after = win.after
        ordered = [i for i in ordered if (key(i) < after if newest_first else key(i) > after)]
    shown = ordered[: win.limit]
    more = len(ordered) > win.limit
    return shown, _encode(listing, key(shown[-1])) if more and shown else None


def _encode(listing: str, key: int) -> str:
    raw = json.dumps({"l": listing, "k": key}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode(cursor: str, listing: str) -> int:
    try:
        padded = cursor.encode("ascii") + b"=" * (-len(cursor) % 4)
        data = json.loads(base64.urlsafe_b64decode(padded))
        key = data["k"] if data["l"] == listing else None
    except (ValueError, UnicodeError, binascii.Error, TypeError, KeyError, RecursionError):
        key = None
    if not isinstance(key, int) or isinstance(key, bool) or key < 0:
        raise CoreFault(ErrorCode.VALIDATION_FAILED, "Query parameter cursor is invalid.")
    return key
