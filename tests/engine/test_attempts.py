"""bot/engine/attempts.py: a job's attempt, its ranking and its lease → what the job does.

Each row of ``PASSES`` is one leased job: where its clarification stands by its evidence
(``bot.engine.evidence``), its severity and the quorum it still needs, the attempt it is at,
its ranking (with what happens when each candidate is tried: asked, asked but unable to
confirm, or skipped) and how long its lease has left; and what the job does: its step, the
earlier turns it settles, whom it asks, where it advances inside the lease, and whether it keeps
the lease token. The handler (``bot.engine.handler``) composes the same functions the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from bot.core.models import Severity
from bot.engine import attempts
from bot.engine.attempts import Step
from bot.engine.evidence import Standing

S = Standing
V = Severity
NOW = datetime(2026, 7, 4, 9, tzinfo=UTC)


@dataclass(frozen=True)
class Job:
    name: str
    attempt: int
    # one letter per candidate, in ranking order: what trying them gives
    # a = asked (can confirm), n = asked (cannot confirm: a critical quorum does not count them),
    # s = skipped (no alias, capped, no permission, delivery failed ...)
    ranking: str
    lease_seconds: float = 300.0
    standing: Standing = S.OPEN
    severity: Severity = V.NORMAL
    remaining: int = 1  # confirmations the quorum still needs
    max_attempts: int = 10
    # the pass counts only people who can confirm (``evidence.counts_confirmers``): a critical
    # question, or a quorum of several whatever the severity word; None: critical only
    confirmers_only: bool | None = None

    @property
    def counts_confirmers(self) -> bool:
        if self.confirmers_only is None:
            return self.severity is V.CRITICAL
        return self.confirmers_only


@dataclass(frozen=True)
class Does:
    step: Step
    earlier: tuple[int, ...] = ()  # the turns settled after a crash
    asked: tuple[int, ...] = ()  # the ranking's indices asked now
    advances: tuple[int, ...] = ()  # each advance inside the lease, in order
    lease_kept: int | None = None  # seconds the lease token is kept (ASK only)
    read_people: bool = True
    refresh: bool = False


PASSES: list[tuple[Job, Does]] = [
    # ---------------------------------------------------------------- first attempt
    (Job("first attempt asks the first candidate", 0, "aaa"),
     Does(Step.ASK, asked=(0,), lease_kept=300)),
    (Job("one candidate only", 0, "a"), Does(Step.ASK, asked=(0,), lease_kept=300)),
    # each skip before anyone is asked moves past itself; then the pass moves past the last
    # person asked (again: the advance is idempotent)
    (Job("a skip before anyone is asked moves past itself", 0, "saa"),
     Does(Step.ASK, asked=(1,), advances=(1, 1), lease_kept=300)),
    (Job("several skips move one by one, to the last candidate", 0, "ssa"),
     Does(Step.ASK, asked=(2,), advances=(1, 2, 2), lease_kept=300)),
    # ---------------------------------------------------------------- later attempts
    (Job("a later attempt asks its own candidate and settles the earlier turns", 1, "aaa"),
     Does(Step.ASK, earlier=(0,), asked=(1,), lease_kept=300)),
    (Job("a later attempt skips forward from its own turn", 1, "asa"),
     Does(Step.ASK, earlier=(0,), asked=(2,), advances=(2, 2), lease_kept=300)),
    (Job("the last attempt of the ranking", 2, "aaa"),
     Does(Step.ASK, earlier=(0, 1), asked=(2,), lease_kept=300)),
    # ---------------------------------------------------------------- ranking exhausted
    (Job("past the ranking: the steward escalation", 3, "aaa"),
     Does(Step.ESCALATE, earlier=(0, 1, 2))),
    (Job("far past the ranking (advanced by steps): the escalation, earlier turns bounded",
         7, "aa"),
     Does(Step.ESCALATE, earlier=(0, 1))),
    (Job("an empty ranking escalates at once", 0, ""), Does(Step.ESCALATE)),
    (Job("everyone skipped: past the ranking, then the escalation", 0, "sss"),
     Does(Step.ASK, advances=(1, 2, 3, 3))),
    (Job("everyone left skipped on a later attempt", 1, "ass"),
     Does(Step.ASK, earlier=(0,), advances=(2, 3, 3))),
    (Job("an advance stops below the dead-letter attempt", 0, "sss", max_attempts=3),
     Does(Step.ASK, advances=(1, 2, 2, 2))),
    # ---------------------------------------------------------------- critical quorum
    (Job("critical asks as many as the quorum needs", 0, "aaaa", severity=V.CRITICAL,
         remaining=2),
     Does(Step.ASK, asked=(0, 1), advances=(1,), lease_kept=300)),
    (Job("critical counts only people who can confirm", 0, "anaa", severity=V.CRITICAL,
         remaining=2),
     Does(Step.ASK, asked=(0, 1, 2), advances=(2,), lease_kept=300)),
    (Job("critical walks the whole ranking when too few can confirm", 0, "nsn",
         severity=V.CRITICAL, remaining=2),
     Does(Step.ASK, asked=(0, 2), advances=(2,), lease_kept=300)),
    (Job("critical with the quorum met still asks one", 0, "aa", severity=V.CRITICAL,
         remaining=0),
     Does(Step.ASK, asked=(0,), lease_kept=300)),
    (Job("critical: a skip after the first asked does not advance", 0, "asaa",
         severity=V.CRITICAL, remaining=2),
     Does(Step.ASK, asked=(0, 2), advances=(2,), lease_kept=300)),
    # an unknown severity reads as normal: the quorum it still needs decides, not the word
    (Job("a quorum of two under an unknown severity asks two at once", 0, "aaaa",
         remaining=2, confirmers_only=True),
     Does(Step.ASK, asked=(0, 1), advances=(1,), lease_kept=300)),
    (Job("a quorum of two counts only people who can confirm, whatever the severity", 0,
         "anaa", severity=V.HIGH, remaining=2, confirmers_only=True),
     Does(Step.ASK, asked=(0, 1, 2), advances=(2,), lease_kept=300)),
    (Job("one confirmation still missing: one more asked", 1, "aaa", remaining=1,
         confirmers_only=True),
     Does(Step.ASK, earlier=(0,), asked=(1,), lease_kept=300)),
    # ---------------------------------------------------------------- the lease
    (Job("lease nearly out: the token is not kept", 0, "a", lease_seconds=0.9),
     Does(Step.ASK, asked=(0,))),
    (Job("lease already out: the token is not kept", 0, "a", lease_seconds=-5),
     Does(Step.ASK, asked=(0,))),
    (Job("a lease with a second and a bit: one second kept", 0, "a", lease_seconds=1.7),
     Does(Step.ASK, asked=(0,), lease_kept=1)),
    # ---------------------------------------------------------------- settled, low
    (Job("bound on the first attempt: completed, cards refreshed, nobody read", 0, "aa",
         standing=S.BOUND),
     Does(Step.COMPLETE, read_people=False, refresh=True)),
    (Job("bound on a later attempt: earlier turns settled first", 2, "aaa",
         standing=S.BOUND),
     Does(Step.COMPLETE, earlier=(0, 1), refresh=True)),
    (Job("conflicted: completed like an answer", 0, "aa", standing=S.CONFLICTED),
     Does(Step.COMPLETE, read_people=False, refresh=True)),
    (Job("conflicted on a later attempt", 1, "aa", standing=S.CONFLICTED),
     Does(Step.COMPLETE, earlier=(0,), refresh=True)),
    (Job("bound and low: completed, the cards refreshed", 0, "aa", standing=S.BOUND,
         severity=V.LOW),
     Does(Step.COMPLETE, read_people=False, refresh=True)),
    (Job("low severity is never asked in chat", 0, "aa", severity=V.LOW),
     Does(Step.COMPLETE, read_people=False)),
    (Job("low severity on a later attempt settles nothing", 2, "aa", severity=V.LOW),
     Does(Step.COMPLETE, read_people=False)),
    (Job("open with a quorum still short is not settled", 0, "aa", severity=V.CRITICAL),
     Does(Step.ASK, asked=(0,), lease_kept=300)),
]


def does(job: Job) -> Does:
    """The job's pass, composed as the handler composes it."""
    plan = attempts.plan(job.standing, job.severity, attempt=job.attempt,
                         ranking=len(job.ranking))
    asked: list[int] = []
    can_confirm = 0
    advances: list[int] = []
    exhausted = True
    want = attempts.wanted(job.remaining)
    for index in plan.turns:
        if job.ranking[index] == "s":
            forward = attempts.after_skip(index, asked_any=bool(asked))
            if forward is not None:
                advances.append(attempts.bounded(forward, job.max_attempts))
            continue
        asked.append(index)
        can_confirm += job.ranking[index] == "a"
        if attempts.enough(confirmers_only=job.counts_confirmers, asked=len(asked),
                           can_confirm=can_confirm, wanted=want):
            exhausted = False
            break
    kept = None
    if plan.step is Step.ASK:
        target = attempts.after_pass(job.attempt, len(job.ranking),
                                     last_asked=asked[-1] if asked else None,
                                     exhausted=exhausted)
        if not asked or target > job.attempt:
            advances.append(attempts.bounded(target, job.max_attempts))
        if asked:
            kept = attempts.lease_left(NOW + timedelta(seconds=job.lease_seconds), NOW)
    return Does(plan.step, earlier=tuple(plan.earlier), asked=tuple(asked),
                advances=tuple(advances), lease_kept=kept, read_people=plan.read_people,
                refresh=plan.refresh)


@pytest.mark.parametrize(("job", "expected"), PASSES, ids=[job.name for job, _ in PASSES])
def test_a_job_does_what_its_attempt_ranking_and_lease_say(job: Job, expected: Does) -> None:
    assert does(job) == expected


# ---------------------------------------------------------------- the functions one by one

@pytest.mark.parametrize(("standing", "step"), [
    (S.OPEN, Step.ASK), (S.BOUND, Step.COMPLETE), (S.CONFLICTED, Step.COMPLETE),
])
def test_only_an_open_standing_asks(standing: Standing, step: Step) -> None:
    """Bound or conflicted by the evidence, a job completes; only an open one asks."""
    assert attempts.plan(standing, V.HIGH, attempt=0, ranking=2).step is step


@pytest.mark.parametrize(("attempt", "ranking", "recover", "earlier", "turns"), [
    (0, 3, False, range(0), range(0, 3)),
    (1, 3, True, range(1), range(1, 3)),
    (3, 3, True, range(3), range(0)),
    (5, 3, True, range(3), range(0)),
])
def test_a_plan_names_the_earlier_turns_and_the_turns_it_may_ask(
        attempt: int, ranking: int, recover: bool, earlier: range, turns: range) -> None:
    plan = attempts.plan(S.OPEN, V.HIGH, attempt=attempt, ranking=ranking)
    assert (plan.recover, plan.earlier, plan.turns) == (recover, earlier, turns)


@pytest.mark.parametrize(("remaining", "wanted"), [(3, 3), (2, 2), (1, 1), (0, 1)])
def test_wanted(remaining: int, wanted: int) -> None:
    """A pass asks as many people as the quorum still needs, and at least one."""
    assert attempts.wanted(remaining) == wanted


@pytest.mark.parametrize(("attempt", "ranking", "last_asked", "exhausted", "target"), [
    (0, 3, 0, False, 0),  # asked the first and stopped: stays
    (0, 3, 1, False, 1),  # skipped one, asked the next: past the skip
    (0, 3, 1, True, 2),  # walked to the end: the last turn
    (2, 3, 2, True, 2),  # already at the last turn: stays
    (1, 4, None, True, 4),  # nobody asked: past the ranking
])
def test_after_pass(attempt: int, ranking: int, last_asked: int | None, exhausted: bool,
                    target: int) -> None:
    assert attempts.after_pass(attempt, ranking, last_asked=last_asked,
                               exhausted=exhausted) == target


@pytest.mark.parametrize(("attempt", "max_attempts", "bounded"), [
    (2, 10, 2), (9, 10, 9), (10, 10, 9), (15, 10, 9), (0, 1, 0),
])
def test_bounded(attempt: int, max_attempts: int, bounded: int) -> None:
    assert attempts.bounded(attempt, max_attempts) == bounded


def test_after_skip_moves_only_before_anyone_is_asked() -> None:
    assert attempts.after_skip(2, asked_any=False) == 3
    assert attempts.after_skip(2, asked_any=True) is None


@pytest.mark.parametrize(("confirmers_only", "exhausted", "checks"), [
    (True, True, True), (True, False, False), (False, True, False),
])
def test_the_quorum_is_checked_only_after_a_quorum_ranking_walked_to_its_end(
        confirmers_only: bool, exhausted: bool, checks: bool) -> None:
    """Only a pass that counts confirmers and walked the whole ranking checks the quorum."""
    assert attempts.checks_quorum(confirmers_only=confirmers_only,
                                  exhausted=exhausted) is checks


@pytest.mark.parametrize(("ranking", "firsts"), [
    (["p-a", "p-b", "p-a"], [None, None, 0]),
    (["p-a", "p-a", "p-b"], [None, 0, None]),
    (["p-a", "p-b", "p-b", "p-a"], [None, None, 1, 0]),
    (["p-a", "p-b", "p-c"], [None, None, None]),
])
def test_a_person_named_again_has_their_first_entry_as_their_turn(
        ranking: list[str], firsts: list[int | None]) -> None:
    assert [attempts.first_turn(ranking, i) for i in range(len(ranking))] == firsts


@pytest.mark.parametrize(("ranking", "last"), [
    (["p-a", "p-b", "p-c"], [False, False, True]),
    # the steward comes after Ahmed's turn: Sarah's second entry is no turn of its own
    (["p-sarah", "p-ahmed", "p-sarah"], [False, True, True]),
    (["p-a", "p-a", "p-b"], [False, False, True]),
    (["p-a", "p-a"], [True, True]),
])
def test_a_turn_only_repeats_come_after_is_the_last_before_the_steward(
        ranking: list[str], last: list[bool]) -> None:
    assert [attempts.last_turn(ranking, i) for i in range(len(ranking))] == last
