"""Following a list's cursors within a bound: what the bot shows of a list is whole, or says
that it is not.

A core pages every list by keyset and may serve pages smaller than asked (docs/core-contract.md,
"How the bot follows a list"). A walk asks page after page, each time after the previous
``nextCursor``, until the core says the list ended (no ``nextCursor``) or the walk's ``Bound``
is spent: a number of pages, a number of items, or seconds on the client's clock. The result
says which (``Listing.complete``) and where the walk stopped (``Listing.next_cursor``), so a
caller never presents a cut list as whole, and can go on from there later.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import structlog

from bot.clock import Clock

log = structlog.get_logger("bot.core.paging")
LARGEST_PAGE = 200  # the contract's largest ``limit``: what a walk asks for at most


@dataclass(frozen=True, slots=True)
class Bound:
    """How far one walk goes: at most ``pages`` pages and about ``items`` items (a page is
    taken whole), and no new page once ``seconds`` have passed since it began."""

    pages: int
    items: int
    seconds: float


class Page[T](Protocol):
    @property
    def items(self) -> Sequence[T]: ...
    @property
    def next_cursor(self) -> str | None: ...


@dataclass(frozen=True, slots=True)
class Listing[T]:
    """What one walk read. ``complete``: the core's last page was reached. ``next_cursor``:
    where the list goes on (None when complete, or when the core repeated a cursor and the
    walk cannot go on)."""

    items: list[T]
    complete: bool
    next_cursor: str | None = None


async def walk[T](read: Callable[[str | None, int], Awaitable[Page[T]]], bound: Bound,
                  clock: Clock, *, start: str | None = None, name: str = "list") -> Listing[T]:
    """Follow the list's cursors from ``start`` to its end or until ``bound`` is spent;
    ``read(cursor, limit)`` reads one page (after ``cursor``, None: the first). An item the
    core serves again on a later page (a newest-first list shifts when an item changes while
    it is walked; a core may repeat a page under a new cursor) is listed once, where it was
    first served."""
    began = clock.now()
    items: list[T] = []
    listed: set[object] = set()  # the ids of the items listed so far
    cursor = start
    seen = {start} if start is not None else set()
    for _ in range(max(bound.pages, 1)):
        page = await read(cursor, max(1, min(LARGEST_PAGE, bound.items - len(items))))
        items.extend(_new(page.items, listed))
        cursor = page.next_cursor
        if cursor is None:
            return Listing(items, complete=True)
        if cursor in seen:  # a core bug must not turn into an endless walk
            log.warning("core.list_cursor_repeated", list=name)
            return Listing(items, complete=False)
        seen.add(cursor)
        if len(items) >= bound.items or (clock.now() - began).total_seconds() >= bound.seconds:
            break
    log.info("core.list_cut", list=name, items=len(items))
    return Listing(items, complete=False, next_cursor=cursor)


def _new[T](page: Sequence[T], listed: set[object]) -> list[T]:
    """The items of ``page`` whose ``id`` is not in ``listed`` (added to it); an item without
    an id is always new."""
    fresh: list[T] = []
    for item in page:
        key = getattr(item, "id", None)
        if key is not None:
            if key in listed:
                continue
            listed.add(key)
        fresh.append(item)
    return fresh
