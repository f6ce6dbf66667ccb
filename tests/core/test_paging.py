"""A walk of a core list (bot/core/paging.py) against cores that page oddly: it asks for what
it still needs, stops when its time is spent, and never loops on a repeated cursor; each time
it says that the list went on."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from structlog.testing import capture_logs

from bot.clock import ManualClock
from bot.core.client import CoreClient
from bot.core.http import WireRequest, WireResponse
from bot.core.paging import Bound

from .conftest import FakeCore, respond, summary


def endless(clock: ManualClock, *, per_page: int = 2, takes: float = 0.0
            ) -> Callable[[WireRequest], WireResponse]:
    """A core whose list never ends: ``per_page`` items a page, whatever ``limit`` asks, each
    page taking ``takes`` seconds on the clock."""
    served = [0]

    def reply(request: WireRequest) -> WireResponse:
        clock.advance(takes)
        served[0] += 1
        n = served[0]
        items = [summary(f"clr-{n}-{i}") for i in range(per_page)]
        return respond(200, json={"items": items, "nextCursor": f"c{n}"})

    return reply


async def test_a_walk_asks_each_page_for_what_it_still_needs(
        core: FakeCore, client: CoreClient, clock: ManualClock) -> None:
    """Five items wanted from a core serving two a page: limits 5, 3, 1 are asked, the last
    page is kept whole (six items), and the listing says where the list goes on."""
    core.script(endless(clock, per_page=2))
    listing = await client.walk_clarifications(bound=Bound(pages=10, items=5, seconds=60))
    assert [r.url.query["limit"] for r in core.requests] == ["5", "3", "1"]
    assert [r.url.query.get("cursor") for r in core.requests] == [None, "c1", "c2"]
    assert len(listing.items) == 6
    assert not listing.complete and listing.next_cursor == "c3"


async def test_a_walk_stops_when_its_time_is_spent(
        core: FakeCore, client: CoreClient, clock: ManualClock) -> None:
    """Each page takes 4 s on the client's clock: a 10 s walk reads three pages (4, 8, 12 s),
    asks for no fourth, and logs the cut without a value."""
    core.script(endless(clock, takes=4.0))
    began = clock.now()
    with capture_logs() as logs:
        listing = await client.walk_clarifications(
            bound=Bound(pages=1000, items=100_000, seconds=10))
    assert len(core.requests) == 3 and clock.now() - began == timedelta(seconds=12)
    assert not listing.complete and listing.next_cursor == "c3" and len(listing.items) == 6
    assert {"event": "core.list_cut", "list": "clarifications", "items": 6,
            "log_level": "info"} in logs


async def test_a_walk_stops_at_its_pages(core: FakeCore, client: CoreClient,
                                         clock: ManualClock) -> None:
    """A bound of three pages reads three pages of an endless list, and not a fourth."""
    core.script(endless(clock, per_page=1))
    listing = await client.walk_jobs(bound=Bound(pages=3, items=100, seconds=60))
    assert len(core.requests) == 3 and core.requests[0].url.path == "/v1/jobs"
    assert not listing.complete and listing.next_cursor == "c3"


async def test_a_walk_that_reaches_the_end_is_complete(core: FakeCore,
                                                       client: CoreClient) -> None:
    """The page without ``nextCursor`` ends the walk: every item, complete, nowhere to go on."""
    core.script(respond(200, json={"items": [summary("a")], "nextCursor": "c1"}),
                respond(200, json={"items": [summary("b")]}))
    listing = await client.walk_clarifications(bound=Bound(pages=2, items=10, seconds=60))
    assert [c.id for c in listing.items] == ["a", "b"]
    assert listing.complete and listing.next_cursor is None


async def test_a_repeated_cursor_ends_the_walk_as_not_whole(core: FakeCore,
                                                            client: CoreClient) -> None:
    """A core that hands back a cursor it gave before cannot trap the walk: it stops after the
    second page, is not complete, offers no cursor to go on from, and logs it."""
    core.script(respond(200, json={"items": [summary()], "nextCursor": "same"}))
    with capture_logs() as logs:
        listing = await client.walk_clarifications(
            bound=Bound(pages=1000, items=100_000, seconds=60))
    assert len(core.requests) == 2
    assert not listing.complete and listing.next_cursor is None
    assert any(line["event"] == "core.list_cursor_repeated" for line in logs)


async def test_a_walk_from_a_cursor_starts_there(core: FakeCore, client: CoreClient) -> None:
    """``start`` is sent as the first page's cursor (where an earlier walk stopped)."""
    core.script(respond(200, json={"items": [summary("c")]}))
    listing = await client.walk_clarifications(bound=Bound(pages=5, items=10, seconds=60),
                                               start="c7")
    assert [r.url.query.get("cursor") for r in core.requests] == ["c7"]
    assert listing.complete


async def test_an_item_served_on_two_pages_is_listed_once(core: FakeCore,
                                                          client: CoreClient) -> None:
    """A newest-first list shifts while it is walked (an item updated between two pages comes
    again on the next): each item is listed once, in the order first served, so a queue's
    count and rows are not doubled."""
    core.script(respond(200, json={"items": [summary("a"), summary("b")],
                                          "nextCursor": "c1"}),
                respond(200, json={"items": [summary("b"), summary("c")],
                                          "nextCursor": "c2"}),
                respond(200, json={"items": [summary("a"), summary("d")]}))
    listing = await client.walk_clarifications(bound=Bound(pages=10, items=100, seconds=60))
    assert [c.id for c in listing.items] == ["a", "b", "c", "d"]
    assert listing.complete


async def test_a_core_that_serves_the_same_page_under_new_cursors_is_not_counted_twice(
        core: FakeCore, client: CoreClient) -> None:
    """A core whose every cursor is new but whose pages repeat the same items: the walk stops
    at its bound, the items are listed once each, and the listing is not whole."""
    served = [0]

    def reply(request: WireRequest) -> WireResponse:
        served[0] += 1
        return respond(200, json={"items": [summary("a"), summary("b")],
                                         "nextCursor": f"c{served[0]}"})

    core.script(reply)
    listing = await client.walk_clarifications(bound=Bound(pages=5, items=100, seconds=60))
    assert [c.id for c in listing.items] == ["a", "b"]
    assert not listing.complete and served[0] == 5
