"""A question card whose job died before its reports went to the core (found by bench/soak.py:
the core's trail showed an answer from a person it never showed asked). The card is recorded
with a not-yet-reported mark, which its job clears once the core has the report; an answer that
finds a card still marked has a worker look at it a lease after the card was reserved
(``bot.engine.unreported``): reported then if the trail still lacks it, once, on the full
contract and on the baseline's, which cannot deduplicate reports."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest

from bot.clock import ManualClock
from bot.core.batching import JobScope
from bot.core.client import CoreClient, RetryPolicy
from bot.core.models import DeliveryKind
from bot.metrics import REGISTRY
from bot.store.base import DeliveryKey
from tests.answering.test_followups import answered
from tests.conftest import CLARIFY_TOKEN, extensions_for
from tests.engine.conftest import Rig
from tests.support.answering import click

LEASE = timedelta(seconds=60)  # the rig's worker lease: a live job has reported by then
NEXT_PASS = timedelta(hours=49)  # the lease and the 48-hour window, then the job is back


@pytest.fixture
async def worker_core(core_url: str, contract: str, clock: ManualClock
                      ) -> AsyncIterator[CoreClient]:
    """A worker process's own client: it does not know what another process's client sent (a
    client remembers the reports it sent, for a core that cannot deduplicate them)."""
    async with CoreClient(base_url=core_url, token=CLARIFY_TOKEN,
                          retry=RetryPolicy(max_attempts=1),
                          extensions=extensions_for(contract), clock=clock) as client:
        yield client


async def sent_with_reports_held(rig: Rig) -> tuple[str, list[JobScope]]:
    """Sarah's card sent, its job's reports held back (a worker killed before its job ends, or
    one still running): the clarification, and the held reports."""
    cid = await rig.create(authority={"named": ["p-sarah"]}, severity="high")
    held: list[JobScope] = []

    async def hold(scope: JobScope, **_: Any) -> None:
        held.append(scope)

    rig.engine.core.flush = hold  # type: ignore[method-assign]
    await rig.burst()
    del rig.engine.core.flush  # the client's own again
    return cid, held


async def reported_but_still_marked(rig: Rig, worker_core: CoreClient) -> str:
    """Sarah's card reported by its job, whose store could not clear the mark after."""
    cid, held = await sent_with_reports_held(rig)
    for scope in held:
        scope.clear = unreachable
        await worker_core.flush(scope)
    assert await marked(rig, cid) == [("p-sarah", True)]
    return cid


async def asked(rig: Rig, cid: str) -> list[str]:
    """Whom the core's trail shows asked (a baseline delivery names no kind: the steward's
    escalation counts too, so tests compare Sarah's count)."""
    c = await rig.bot.get_clarification(clarification_id=cid)
    return [d.person_id for d in c.deliveries if d.kind is DeliveryKind.QUESTION]


async def marked(rig: Rig, cid: str) -> list[tuple[str, bool]]:
    """The question cards on record: whose, and whether still marked unreported."""
    return [(card.delivery.person_id, card.unreported) for card in await rig.store.cards(cid)
            if card.delivery.kind == DeliveryKind.QUESTION.value]


def reported_late() -> float:
    return REGISTRY.value("clarify_unreported_cards_total")


async def test_an_answer_puts_the_card_a_killed_worker_never_reported_on_the_trail(
        rig: Rig) -> None:
    """Sarah's card went out and the worker died before the job's end. Her answer has the card
    looked at a lease after it was sent: reported then, not a window later when the job comes
    back (or, the question settled, never); the job's next pass reports it no second time."""
    cid, _ = await sent_with_reports_held(rig)
    assert await asked(rig, cid) == []
    assert await marked(rig, cid) == [("p-sarah", True)]
    before = reported_late()

    await answered(rig, click(rig, "p-sarah", cid, 0))
    assert await rig.store.unreported_waiting() == 1
    await rig.burst()  # not yet: a live job might still report it
    assert await asked(rig, cid) == []
    rig.clock.advance(LEASE)
    await rig.burst()
    assert await asked(rig, cid) == ["p-sarah"]
    assert await marked(rig, cid) == [("p-sarah", False)]
    assert await rig.store.unreported_waiting() == 0
    assert reported_late() == before + 1

    rig.clock.advance(NEXT_PASS)
    await rig.burst()
    assert (await asked(rig, cid)).count("p-sarah") == 1
    assert [s.key.person_id for s in rig.channel.sent].count("p-sarah") == 1


@pytest.mark.parametrize("first", ["job", "answer"])
async def test_a_card_is_reported_once_whether_its_job_or_an_answer_comes_first(
        rig: Rig, worker_core: CoreClient, first: str) -> None:
    """The job still holds its reports when Sarah answers, or has sent them: either way the
    core hears of her card once (the baseline core would record a second delivery)."""
    cid, held = await sent_with_reports_held(rig)
    assert held
    if first == "job":
        for scope in held:
            await worker_core.flush(scope)
        assert await marked(rig, cid) == [("p-sarah", False)]
    await answered(rig, click(rig, "p-sarah", cid, 0))
    assert await rig.store.unreported_waiting() == (first == "answer")
    for scope in held:
        await worker_core.flush(scope)
    rig.clock.advance(LEASE)
    await rig.burst()
    assert await asked(rig, cid) == ["p-sarah"]
    assert await rig.store.unreported_waiting() == 0


async def test_a_report_that_reached_the_core_before_the_kill_is_not_sent_again(
        rig: Rig, worker_core: CoreClient) -> None:
    """The core had the report but the mark stayed (the worker killed, or the store away, just
    after): the trail is read before anything is reported, so the card is reported once."""
    cid = await reported_but_still_marked(rig, worker_core)
    assert await asked(rig, cid) == ["p-sarah"]
    await answered(rig, click(rig, "p-sarah", cid, 0))
    rig.clock.advance(LEASE)
    await rig.burst()
    assert await asked(rig, cid) == ["p-sarah"]
    assert await marked(rig, cid) == [("p-sarah", False)]


async def test_a_mark_its_job_could_not_clear_is_cleared_by_the_next_pass(
        rig: Rig, worker_core: CoreClient) -> None:
    """The store could not be reached as the job's reports went: the report went (none is
    lost) and the mark stayed. The job's next pass finds the card on the trail and clears the
    mark, so a later answer has nothing looked at."""
    cid = await reported_but_still_marked(rig, worker_core)
    rig.clock.advance(NEXT_PASS)
    await rig.burst()
    assert await marked(rig, cid) == [("p-sarah", False)]
    await answered(rig, click(rig, "p-sarah", cid, 0))
    assert await rig.store.unreported_waiting() == 0
    assert (await asked(rig, cid)).count("p-sarah") == 1


async def unreachable(_: list[Any]) -> None:
    raise ConnectionError("the store is restarting")


async def test_marks_the_store_cannot_clear_stay_and_nothing_is_raised() -> None:
    """Clearing a job's marks after its reports went: a store that cannot be reached keeps them
    (the report is not undone) and the job goes on."""
    key = DeliveryKey("clr-1", "p-sarah", 0, "question")
    cleared: list[list[Any]] = []

    async def clear(keys: list[Any]) -> None:
        cleared.append(keys)

    scope = JobScope()
    scope.mark("dl.1", key, unreachable)
    await scope.reported({"dl.1"})
    assert scope.marked == {}
    scope.mark("dl.1", key, clear)
    scope.mark("dl.2", DeliveryKey("clr-1", "p-ahmed", 0, "question"), clear)
    await scope.reported({"dl.1", "dl.9"})  # only what was reported; an unmarked id: nothing
    assert cleared == [[key]] and list(scope.marked) == ["dl.2"]
