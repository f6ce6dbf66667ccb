"""Keyset paging over HTTP: no repeats and no skips while clarifications and jobs are created."""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Callable

import httpx
import pytest

from bot.core import errors as e
from bot.core import models as m
from bot.core.client import CoreClient
from devcore.client import DevCoreClient
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
        request=m.CreateClarificationRequest.model_validate(spec))
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
    first = await bot_client.list_clarifications(state=m.ClarificationState.OPEN, limit=2)
    await bot_client.answer_clarification(  # an item of the first page leaves the filter
        clarification_id=first.items[0].id, request=m.AnswerRequest(
            answer_index=0, responder="p-ahmed", rights=m.Role.EDITOR, channel=m.Channel.SLACK))
    rest = await bot_client.list_clarifications(state=m.ClarificationState.OPEN, limit=200,
                                                cursor=first.next_cursor)
    everything = [c.id for c in (await bot_client.list_clarifications(limit=200)).items]
    expected = [cid for cid in everything[everything.index(first.items[1].id) + 1:]
                if (await bot_client.get_clarification(clarification_id=cid)).state
                is m.ClarificationState.OPEN]
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
