"""A person the ranking names twice, or who has answered already, is never sent a second
question card for one clarification (docs/delivery.md, "A person named twice").

The reference core ranks each person once (``devcore/creation.py``); a core that does not is
played by rewriting the devcore's own job in place, so every answer it gives (the poll, the
heartbeat, the advance, the clarification's trail) agrees on the ranking, over both contracts.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import structlog

from bot.core.models import (
    AnswerRequest,
    DeliveryKind,
    ReasonCode,
    Role,
)
from bot.core.models import (
    Channel as ContractChannel,
)
from bot.engine.handler import JobOutcome
from bot.metrics import REGISTRY
from devcore.core import ReferenceCore
from tests.engine.conftest import Rig

WINDOW = timedelta(hours=48)  # the acme escalation window (the clarify:temporal backoff)
REPEATED = {"kind": "repeated_entry", "model": "Ranking"}


def rank(core: ReferenceCore, clarification_id: str, ranking: list[str]) -> None:
    """The devcore's job (and the clarification's record) ranks ``ranking``, repeats and all,
    with the spec's ``maxAttempts = len(ranking) + 1``, as a core that ranks so serves it."""
    [job] = [j for j in core.jobs.jobs.values()
             if j.payload.clarification_id == clarification_id]
    job.payload = job.payload.model_copy(update={"ranking": list(ranking)})
    job.max_attempts = len(ranking) + 1
    core.records[clarification_id].model.ranking = list(ranking)  # the record says the same


def questions(rig: Rig) -> list[str]:
    return [s.address.person_id for s in rig.channel.sent if s.key.kind == "question"]


def escalations(rig: Rig) -> int:
    return sum(1 for s in rig.channel.sent if s.key.kind == "steward_escalation")


def value_free(logs: list[dict[str, Any]]) -> None:
    """The lines name turns, never a person."""
    for line in logs:
        assert "p-sarah" not in repr(line) and "p-ahmed" not in repr(line)


async def test_a_person_named_again_later_gets_no_second_card(
        rig: Rig, core: ReferenceCore) -> None:
    """["p-sarah", "p-ahmed", "p-sarah"]: Sarah is asked at her first turn, Ahmed at his; Sarah's
    second entry is her card still live, not a second card: the turn passes on at once (no
    reason code) and the steward's escalation follows in the same lease, not a window later."""
    before = REGISTRY.value("clarify_core_tolerated_total", **REPEATED)
    cid = await rig.create(authority={"authored_by": ["p-sarah"], "named": ["p-ahmed"]})
    rank(core, cid, ["p-sarah", "p-ahmed", "p-sarah"])
    await rig.burst()
    assert questions(rig) == ["p-sarah"]
    await rig.later(WINDOW + timedelta(minutes=5))
    assert questions(rig) == ["p-sarah", "p-ahmed"]
    # what Ahmed sees is true: only the steward comes after his turn
    assert "Goes to the workspace steward" in rig.rendered(rig.channel.to("p-ahmed")[0])
    assert "Moves on to the next person" in rig.rendered(rig.channel.to("p-sarah")[0])
    with structlog.testing.capture_logs() as logs:
        await rig.later(WINDOW + timedelta(minutes=5))
    assert questions(rig) == ["p-sarah", "p-ahmed"]  # never a second card to Sarah
    assert escalations(rig) == 1  # her repeat turn passed on at once, to the steward
    [escalation] = [s for s in rig.channel.sent if s.key.kind == "steward_escalation"]
    assert "Asked, no answer: Sarah Chen and Ahmed Karimi" in rig.rendered(escalation)
    repeated = [line for line in logs if line["event"] == "routing.repeated_candidate"]
    assert [(line["turn"], line["first_turn"]) for line in repeated] == [(2, 0)]
    value_free(repeated)
    assert REGISTRY.value("clarify_core_tolerated_total", **REPEATED) == before + 1
    c = await rig.bot.get_clarification(clarification_id=cid)
    # the core heard one question card per person, no invented skip for the repeat
    # (a baseline core takes every report as a question: the steward's escalation is left out)
    cards = [d for d in c.deliveries if d.kind is DeliveryKind.QUESTION
             and d.person_id != c.workspace.steward_id]
    assert sorted(d.person_id for d in cards) == ["p-ahmed", "p-sarah"]
    codes = {ev.reason_code for ev in c.events if ev.type == "skipped"}
    assert codes <= set(ReasonCode) and not [
        ev for ev in c.events if ev.type == "skipped" and ev.person_id == "p-sarah"]
    assert rig.engine.worker.outcomes == {JobOutcome.ASKED: 2, JobOutcome.ESCALATED: 1}


async def test_a_repeat_before_the_next_person_does_not_cost_a_window(
        rig: Rig, core: ReferenceCore) -> None:
    """["p-sarah", "p-sarah", "p-ahmed"]: when Sarah's window runs out, her second entry passes
    on at once and Ahmed is asked in the same lease; each has one card."""
    cid = await rig.create(authority={"authored_by": ["p-sarah"], "named": ["p-ahmed"]})
    rank(core, cid, ["p-sarah", "p-sarah", "p-ahmed"])
    await rig.burst()
    await rig.later(WINDOW + timedelta(minutes=5))
    assert questions(rig) == ["p-sarah", "p-ahmed"]
    job = await rig.bot.get_job(job_id=(await rig.bot.get_clarification(
        clarification_id=cid)).job_id or "")
    assert job.attempts == 2  # Ahmed's turn, where the job stands while he is asked
    await rig.later(WINDOW + timedelta(minutes=5))
    assert questions(rig) == ["p-sarah", "p-ahmed"]
    assert escalations(rig) == 1


async def test_a_critical_quorum_counts_distinct_people(rig: Rig, core: ReferenceCore) -> None:
    """A critical question needing two confirmations, ranked ["p-sarah", "p-sarah",
    "p-ahmed", "p-priya"]: a duplicate does not stand in for a second confirmer; Sarah and
    Ahmed are asked, one card each, and nobody else (two people for two confirmations)."""
    cid = await rig.create(authority={"named": ["p-sarah", "p-ahmed", "p-priya"]},
                           severity="critical")
    rank(core, cid, ["p-sarah", "p-sarah", "p-ahmed", "p-priya"])
    await rig.burst()
    assert questions(rig) == ["p-sarah", "p-ahmed"]
    c = await rig.bot.get_clarification(clarification_id=cid)
    job = await rig.bot.get_job(job_id=c.job_id or "")
    assert job.attempts == 2  # the job stands at the last person asked
    assert not [ev for ev in c.events if ev.type == "quorum_unreachable"]


async def test_a_critical_quorum_with_too_few_distinct_people_tells_the_steward(
        rig: Rig, core: ReferenceCore) -> None:
    """Ranked ["p-sarah", "p-sarah"] for two confirmations: Sarah once, and the steward hears at
    once that the quorum cannot be reached (one person is not two confirmers)."""
    cid = await rig.create(authority={"named": ["p-sarah", "p-ahmed"]}, severity="critical")
    rank(core, cid, ["p-sarah", "p-sarah"])
    await rig.burst()
    assert questions(rig) == ["p-sarah"]
    c = await rig.bot.get_clarification(clarification_id=cid)
    assert [ev for ev in c.events if ev.type == "quorum_unreachable"]


async def test_a_person_who_answered_is_not_asked_at_their_turn(
        rig: Rig, core: ReferenceCore) -> None:
    """Sarah answered (through the core's API) before her turn of a critical question that
    still needs a second confirmation: her turn passes on at once and Ahmed and Priya are
    asked; she gets no card for a question her answer is on record for."""
    cid = await rig.create(authority={"named": ["p-sarah", "p-ahmed", "p-priya"]},
                           severity="critical")
    await rig.bot.answer_clarification(
        clarification_id=cid,
        request=AnswerRequest(answer_index=0, responder="p-sarah", rights=Role.EDITOR,
                              channel=ContractChannel.CLI))
    with structlog.testing.capture_logs() as logs:
        await rig.burst()
    assert "p-sarah" not in questions(rig)
    assert questions(rig)[:1] == ["p-ahmed"]
    passed = [line for line in logs if line["event"] == "routing.answered_candidate"]
    assert [line["turn"] for line in passed] == [0]
    value_free(passed)


async def test_turns_lost_to_dead_workers_skip_a_repeated_person_once(
        rig: Rig, core: ReferenceCore) -> None:
    """["p-sarah", "p-sarah", "p-ahmed"]: two workers lease the job and die before reserving
    anything, one lease after the other. The job comes back at Ahmed's turn: Sarah's lost turn
    is on the trail once (her first entry's), her repeat adds no second skip, and Ahmed is
    asked."""
    cid = await rig.create(authority={"authored_by": ["p-sarah"], "named": ["p-ahmed"]})
    rank(core, cid, ["p-sarah", "p-sarah", "p-ahmed"])
    for _ in range(2):  # a worker leases the job and dies
        leased = await rig.bot.poll_jobs(kinds=["clarify:"], max_jobs=10, lease_seconds=60)
        assert [j.payload.clarification_id for j in leased.jobs] == [cid]
        rig.clock.advance(timedelta(seconds=60) + WINDOW + timedelta(minutes=1))
    await rig.burst()
    assert questions(rig) == ["p-ahmed"]
    c = await rig.bot.get_clarification(clarification_id=cid)
    skips = [(ev.person_id, ev.reason_code) for ev in c.events if ev.type == "skipped"]
    assert skips == [("p-sarah", ReasonCode.DELIVERY_FAILED)]
    assert [ev.attempt for ev in rig.events("skipped", cid)] == [0]
