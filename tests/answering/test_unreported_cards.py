"""A question card whose job died before its reports went to the core (found by bench/soak.py:
the core's trail showed an answer from a person it never showed asked). The card is marked
unreported in the store as it is recorded; an answer's follow-up reports a card still marked,
and whoever clears the mark (the job as it reports, the follow-up, the job's next pass) is the
one that sends the report: once, on the full contract and on the baseline's, which cannot
deduplicate reports."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest

from bot.clock import ManualClock
from bot.core.batching import JobScope
from bot.core.client import CoreClient, RetryPolicy
from bot.core.models import DeliveryKind, DeliveryReport, DeliveryReportItem
from bot.store.base import DeliveryKey
from tests.answering.test_followups import answered
from tests.conftest import CLARIFY_TOKEN, extensions_for
from tests.engine.conftest import Rig
from tests.support.answering import click

NEXT_PASS = timedelta(hours=49)  # the lease and the 48-hour window, then the job is back


@pytest.fixture
async def worker_core(core_url: str, contract: str, clock: ManualClock
                      ) -> AsyncIterator[CoreClient]:
    """A worker process's own client: it does not know what the web process's client sent (a
    client remembers the reports it sent, for a core that cannot deduplicate them)."""
    async with CoreClient(base_url=core_url, token=CLARIFY_TOKEN,
                          retry=RetryPolicy(max_attempts=1),
                          extensions=extensions_for(contract), clock=clock) as client:
        yield client


def hold_reports(rig: Rig) -> list[JobScope]:
    """The jobs' reports held back (a worker killed before its jobs end, or one still
    running)."""
    held: list[JobScope] = []

    async def hold(scope: JobScope, **_: Any) -> None:
        held.append(scope)

    rig.engine.core.flush = hold  # type: ignore[method-assign]
    return held


def let_reports_go(rig: Rig) -> None:
    del rig.engine.core.flush  # the client's own again


async def question_deliveries(rig: Rig, cid: str) -> list[str]:
    c = await rig.bot.get_clarification(clarification_id=cid)
    return [d.person_id for d in c.deliveries if d.kind is DeliveryKind.QUESTION]


async def marked(rig: Rig, cid: str) -> list[tuple[str, bool]]:
    """The question cards on record: whose, and whether still marked unreported."""
    return [(card.delivery.person_id, card.unreported) for card in await rig.store.cards(cid)
            if card.delivery.kind == DeliveryKind.QUESTION.value]


async def test_an_answer_puts_the_card_a_killed_worker_never_reported_on_the_trail(
        rig: Rig) -> None:
    """Sarah's card went out and the worker died before the job's end: her answer's follow-up
    reports the card at once, not a window later when the job comes back (or, the question
    settled, never); the job's next pass reports it no second time."""
    cid = await rig.create(authority={"named": ["p-sarah"]}, severity="high")
    hold_reports(rig)
    await rig.burst()
    let_reports_go(rig)
    assert await question_deliveries(rig, cid) == []
    assert await marked(rig, cid) == [("p-sarah", True)]

    await answered(rig, click(rig, "p-sarah", cid, 0))
    assert await question_deliveries(rig, cid) == ["p-sarah"]
    assert await marked(rig, cid) == [("p-sarah", False)]

    rig.clock.advance(NEXT_PASS)
    await rig.burst()
    assert await question_deliveries(rig, cid) == ["p-sarah"]
    assert [s.key.person_id for s in rig.channel.sent].count("p-sarah") == 1


@pytest.mark.parametrize("first", ["job", "answer"])
async def test_a_card_is_reported_once_whether_its_job_or_an_answer_reports_first(
        rig: Rig, worker_core: CoreClient, first: str) -> None:
    """The job still holds its reports when Sarah answers: the follow-up and the job's end both
    find the card; whichever clears its mark first reports it, and the other does not (the
    baseline core would record a second delivery)."""
    cid = await rig.create(authority={"named": ["p-sarah"]}, severity="high")
    held = hold_reports(rig)
    await rig.burst()
    let_reports_go(rig)
    assert held
    if first == "job":
        for scope in held:
            await worker_core.flush(scope)
        assert await question_deliveries(rig, cid) == ["p-sarah"]
    await answered(rig, click(rig, "p-sarah", cid, 0))
    assert await question_deliveries(rig, cid) == ["p-sarah"]
    for scope in held:
        await worker_core.flush(scope)
    assert await question_deliveries(rig, cid) == ["p-sarah"]


async def test_a_mark_its_job_could_not_clear_is_cleared_by_the_next_pass(
        rig: Rig, worker_core: CoreClient) -> None:
    """The store could not be reached as the job reported: the report went (none is lost) and
    the mark stayed. The job's next pass finds the card on the trail and clears the mark, so a
    later answer's follow-up does not report the card a second time."""
    cid = await rig.create(authority={"named": ["p-sarah"]}, severity="high")
    held = hold_reports(rig)
    await rig.burst()
    let_reports_go(rig)
    for scope in held:
        scope.take = unreachable
        await worker_core.flush(scope)
    assert await question_deliveries(rig, cid) == ["p-sarah"]
    assert await marked(rig, cid) == [("p-sarah", True)]

    rig.clock.advance(NEXT_PASS)
    await rig.burst()
    assert await marked(rig, cid) == [("p-sarah", False)]
    await answered(rig, click(rig, "p-sarah", cid, 0))
    # (the steward's escalation has gone out by now: a baseline delivery names no kind)
    assert (await question_deliveries(rig, cid)).count("p-sarah") == 1


async def unreachable(_: list[Any]) -> set[Any]:
    raise ConnectionError("the store is restarting")


async def test_a_store_that_cannot_clear_the_marks_loses_no_report() -> None:
    """The job's end cannot reach the store to clear its marks: every report is sent (a core
    that cannot deduplicate may hear of a card twice; none is lost)."""
    key = DeliveryKey("clr-1", "p-sarah", 0, "question")

    async def someone_else_cleared(_: list[Any]) -> set[Any]:
        return set()

    for take, elsewhere in ((unreachable, set()), (someone_else_cleared, {"dl.1"})):
        scope = JobScope()
        scope.deliveries.append(DeliveryReportItem(clarification_id="clr-1", report=DeliveryReport(
            delivery_id="dl.1", person_id="p-sarah", channel="slack",
            kind=DeliveryKind.QUESTION, attempt=0, message_ref="D1:1.0")))
        scope.mark("dl.1", key, take)
        assert await scope.sent_elsewhere() == elsewhere
        assert scope.marked == {}
        assert await scope.sent_elsewhere() == set()  # cleared once
