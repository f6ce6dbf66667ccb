"""Keyset paging over HTTP: no repeats and no skips while clarifications and jobs are created."""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Callable

import httpx
import pytest

from bot.core import errors as e
from bot.core.client import CoreClient
from bot.core.models import (
    AnswerRequest,
    ClarificationState,
    CreateClarificationRequest,
    Role,
)
from bot.core.models import (
    Channel as ContractChannel,
)
from bot.core.paging import Bound
from devcore.client import DevCoreClient
from devcore.core import ReferenceCore
from devcore.scenario import read_scenario
from tests.conftest import CLARIFY_TOKEN

_versions = itertools.count(1)


async def create(dev: DevCoreClient, *, low: bool = False) -> str:
    """A new clarification (a new source version each time); low severity has no job."""
    spec = read_scenario("acme")["clarifications"][1]
    n = next(_versions)
    spec["document"]["content_hash"] = "sha256:" + hashlib.sha256(str(n).encode()).hexdigest()
    if low:
        spec["severity_hint"] = "low"
    created = await dev.create_clarification(
        request=CreateClarificationRequest.model_validate(spec))
    return created.clarification.id


async def test_clarification_pages_never_repeat_or_skip_while_new_ones_arrive(
    bot_client: CoreClient, dev_client: DevCoreClient
) -> None:
    """Newest first; items created between pages come before the cursor, so none is seen twice."""
    for _ in range(5):
        await create(dev_client)
    at_start = [c.id for c in (await bot_client.list_clarifications(limit=200)).items]
    seen: list[str] = []
    page = await bot_client.list_clarifications(limit=2)
    while True:
        seen += [c.id for c in page.items]
        for _ in range(3):  # concurrent inserts between two pages
            await create(dev_client)
        if page.next_cursor is None:
            break
        page = await bot_client.list_clarifications(limit=2, cursor=page.next_cursor)
    assert len(seen) == len(set(seen))
    assert seen == at_start  # every item that existed, in order, and nothing twice


async def test_job_pages_never_repeat_or_skip_while_new_jobs_arrive(
    bot_client: CoreClient, dev_client: DevCoreClient
) -> None:
    """Oldest first; jobs created between pages join the end of the walk, exactly once."""
    at_start = [j.id for j in (await bot_client.list_jobs(limit=200)).items]
    seen: list[str] = []
    cursor: str | None = None
    for _ in range(20):
        page = await bot_client.list_jobs(limit=1, cursor=cursor)
        seen += [j.id for j in page.items]
        if len(seen) <= 3:
            await create(dev_client)
        cursor = page.next_cursor
        if cursor is None:
            break
    assert len(seen) == len(set(seen))
    assert seen[: len(at_start)] == at_start
    assert seen == [j.id for j in (await bot_client.list_jobs(limit=200)).items]


async def test_filters_and_state_changes_do_not_move_the_cursor(
    bot_client: CoreClient, dev_client: DevCoreClient
) -> None:
    """An item changing state between pages never pulls another one across the page boundary."""
    for _ in range(3):
        await create(dev_client)
    first = await bot_client.list_clarifications(state=ClarificationState.OPEN, limit=2)
    await bot_client.answer_clarification(  # an item of the first page leaves the filter
        clarification_id=first.items[0].id, request=AnswerRequest(
            answer_index=0, responder="p-ahmed", rights=Role.EDITOR, channel=ContractChannel.SLACK))
    rest = await bot_client.list_clarifications(state=ClarificationState.OPEN, limit=200,
                                                cursor=first.next_cursor)
    everything = [c.id for c in (await bot_client.list_clarifications(limit=200)).items]
    expected = [cid for cid in everything[everything.index(first.items[1].id) + 1:]
                if (await bot_client.get_clarification(clarification_id=cid)).state
                is ClarificationState.OPEN]
    assert [c.id for c in rest.items] == expected


async def test_the_client_walks_every_page_once_under_inserts(
    core_url: str, dev_client: DevCoreClient, client_for: Callable[[str], CoreClient]
) -> None:
    """iter_clarifications yields each existing clarification once while new ones are made."""
    for _ in range(4):
        await create(dev_client, low=True)
    bot = client_for(CLARIFY_TOKEN)
    before = {c.id for c in (await bot.list_clarifications(limit=200)).items}
    walked = []
    async for item in bot.iter_clarifications(limit=3):
        walked.append(item.id)
        await create(dev_client, low=True)
    assert len(walked) == len(set(walked)) and set(walked) == before


@pytest.mark.parametrize("cursor", ["%%%", "eyJsIjoiam9icyIsImsiOjF9", "eyJrIjotMX0", "bnVsbA"])
async def test_a_cursor_not_issued_for_this_list_is_refused(
    core_url: str, bot_client: CoreClient, cursor: str
) -> None:
    """Forged, negative, or another list's cursor: 422 VALIDATION_FAILED, value-free."""
    with pytest.raises(e.ValidationFailed):
        await bot_client.list_clarifications(cursor=cursor)
    async with httpx.AsyncClient(base_url=core_url) as http:
        raw = await http.get("/v1/clarifications", params={"cursor": cursor},
                             headers={"Authorization": f"Bearer {CLARIFY_TOKEN}"})
    assert raw.status_code == 422 and cursor not in raw.text


# ---------------------------------------------------------------- pages smaller than asked

BOTH = pytest.mark.parametrize("contract", ["full", "baseline"], indirect=True)
ALL_OF_IT = Bound(pages=1000, items=100_000, seconds=60)


async def whole_list(bot: CoreClient) -> list[str]:
    return [c.id for c in (await bot.list_clarifications(limit=200)).items]


@BOTH
async def test_a_core_serves_no_page_larger_than_its_largest(
    core: ReferenceCore, bot_client: CoreClient, dev_client: DevCoreClient
) -> None:
    """``largest_page`` 2: every page of the list holds two items whatever ``limit`` asks (on
    a baseline core too, which ignores ``limit``), and the cursors lead through all of it."""
    for _ in range(5):
        await create(dev_client)
    everything = await whole_list(bot_client)
    core.largest_page = 2
    pages: list[list[str]] = []
    cursor: str | None = None
    while True:
        page = await bot_client.list_clarifications(limit=200, cursor=cursor)
        pages.append([c.id for c in page.items])
        if (cursor := page.next_cursor) is None:
            break
    assert [len(p) for p in pages[:-1]] == [2] * (len(pages) - 1) and len(pages[-1]) <= 2
    assert [cid for p in pages for cid in p] == everything


async def test_the_largest_page_holds_for_jobs_and_attention(
    core: ReferenceCore, bot_client: CoreClient, dev_client: DevCoreClient
) -> None:
    """The job list and the attention list keep to the largest page as the clarification
    list does."""
    for _ in range(3):
        await create(dev_client)
    core.largest_page = 1
    jobs = await bot_client.list_jobs(limit=200)
    attention = await bot_client.list_attention(limit=200)
    assert len(jobs.items) == 1 and jobs.next_cursor
    assert len(attention.items) == 1 and attention.next_cursor


@BOTH
async def test_a_walk_follows_a_core_that_pages_by_one_to_the_end(
    core: ReferenceCore, bot_client: CoreClient, dev_client: DevCoreClient
) -> None:
    """One item a page: the walk reads page after page and has every item once, in the list's
    order, and knows it reached the end."""
    for _ in range(6):
        await create(dev_client)
    everything = await whole_list(bot_client)
    core.largest_page = 1
    listing = await bot_client.walk_clarifications(bound=ALL_OF_IT)
    assert [c.id for c in listing.items] == everything and len(everything) > 6
    assert listing.complete and listing.next_cursor is None


@BOTH
async def test_a_walk_cut_by_its_bound_goes_on_from_where_it_stopped(
    core: ReferenceCore, bot_client: CoreClient, dev_client: DevCoreClient
) -> None:
    """Three pages of one: the walk says it is not whole and where the list goes on; a walk
    from there has the rest, nothing twice and nothing left out."""
    for _ in range(5):
        await create(dev_client)
    everything = await whole_list(bot_client)
    core.largest_page = 1
    cut = await bot_client.walk_clarifications(bound=Bound(pages=3, items=100, seconds=60))
    assert len(cut.items) == 3 and not cut.complete and cut.next_cursor is not None
    rest = await bot_client.walk_clarifications(bound=ALL_OF_IT, start=cut.next_cursor)
    assert rest.complete
    assert [c.id for c in cut.items + rest.items] == everything
