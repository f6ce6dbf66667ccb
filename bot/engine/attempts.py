"""The attempt arithmetic of one ``clarify:`` job: pure, no I/O.

A job's ``attempts`` counts the turns of its ranking already taken: attempt N asks ranking[N],
and an attempt at or past the ranking's end is the steward escalation. ``plan`` says what a
leased job does (complete it, escalate, or ask from its attempt on), from where the
clarification stands by its evidence (``bot.engine.evidence``), and which earlier turns a
crash may have left unrecorded; ``wanted`` and ``enough`` say when a pass has asked enough
people (as many as the quorum still needs); ``after_skip`` and ``after_pass`` say where the
job advances inside its lease; ``bounded`` keeps an advance below the core's dead-letter
attempt; ``lease_left`` says how long the lease surely lives; ``from_trail`` is the attempt of
a job whose core left it out; ``first_turn`` finds a person the ranking names again,
``last_turn`` a turn only the steward comes after. ``bot.engine.handler`` does the I/O around
these.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from bot.core.models import Severity
from bot.engine.evidence import Standing


class Step(StrEnum):
    COMPLETE = "complete"  # settled, or low severity (never asked in chat): complete the job
    ESCALATE = "escalate"  # the ranking's turns are all taken: the steward escalation
    ASK = "ask"  # walk the ranking from the job's attempt on


@dataclass(frozen=True, slots=True)
class Plan:
    step: Step
    # the people of the ranking (and the steward) are read up front, in one call
    read_people: bool
    # a job back after its lease ran out may follow a crash: its earlier turns are settled
    recover: bool
    earlier: range  # the ranking's indices of the earlier turns to settle (empty: none)
    turns: range  # the ranking's indices this attempt may ask, in order (empty unless ASK)
    refresh: bool  # settled: every delivered card is shown the state


def plan(standing: Standing, severity: Severity, *, attempt: int, ranking: int) -> Plan:
    """What a job at ``attempt`` of a ranking of ``ranking`` people does, the clarification
    standing as its evidence says (bound or conflicted: settled, whatever the state word)."""
    low = severity is Severity.LOW
    settled = standing is not Standing.OPEN
    recover = attempt > 0 and not low
    earlier = range(min(attempt, ranking)) if recover else range(0)
    if settled or low:
        step = Step.COMPLETE
    elif attempt >= ranking:
        step = Step.ESCALATE
    else:
        step = Step.ASK
    return Plan(step=step, read_people=(not settled or recover) and not low, recover=recover,
                earlier=earlier,
                turns=range(attempt, ranking) if step is Step.ASK else range(0),
                refresh=settled)


def wanted(remaining: int) -> int:
    """How many people one pass asks: as many as the quorum still needs (``remaining``
    confirmations: one for a question without a quorum), whatever the severity says."""
    return max(remaining, 1)


def enough(*, confirmers_only: bool, asked: int, can_confirm: int, wanted: int) -> bool:
    """The pass stops asking: with ``confirmers_only`` (a quorum of several, or a critical
    question) only the people asked whose answer can count to the quorum are counted,
    otherwise everyone asked."""
    counted = can_confirm if confirmers_only else asked
    return counted >= wanted


def after_skip(index: int, *, asked_any: bool) -> int | None:
    """The attempt to advance to inside the lease after skipping ranking[index] (None: stay).
    Before anyone is asked each skip moves the job past itself, so a crash then does not burn
    an escalation window; once someone is asked the job stays at that turn."""
    return None if asked_any else index + 1


def after_pass(attempt: int, ranking: int, *, last_asked: int | None, exhausted: bool) -> int:
    """The attempt the job stands at once the pass ends (more than ``attempt``: it advances).

    Nobody asked: past the ranking (the steward escalation follows at once). Otherwise past the
    last person asked; when the pass reached the ranking's end, to its last turn, so the next
    escalation window ends in the steward escalation, not in skipping everyone again."""
    if last_asked is None:
        return ranking
    return max(attempt, ranking - 1 if exhausted else last_asked)


def bounded(attempt: int, max_attempts: int) -> int:
    """An advance never reaches the attempt at which the core dead-letters the job."""
    return min(attempt, max_attempts - 1)


def lease_left(expires_at: datetime, now: datetime) -> int | None:
    """Whole seconds the lease surely lives, or None when less than one is left."""
    left = int((expires_at - now).total_seconds())
    return left if left > 0 else None


def checks_quorum(*, confirmers_only: bool, exhausted: bool) -> bool:
    """Whether the pass checks that the quorum can still be reached: a pass that counts
    confirmers (``enough``) and walked the whole ranking."""
    return confirmers_only and exhausted


def first_turn(ranking: Sequence[str], index: int) -> int | None:
    """The earlier index of the ranking naming the same person as ``ranking[index]``, or None
    when this is the person's first entry. A person named again is never a turn of their own:
    their first entry was their turn (asked, or skipped with its reason), and their card, if
    any, is still live (docs/delivery.md, "A person named twice")."""
    person_id = ranking[index]
    for earlier in range(index):
        if ranking[earlier] == person_id:
            return earlier
    return None


def last_turn(ranking: Sequence[str], index: int) -> bool:
    """No person after ``ranking[index]`` has a turn of their own (every later entry names
    someone the ranking named before: ``first_turn``): when this turn ends, the steward's
    escalation comes next, and the card says so."""
    return all(first_turn(ranking, later) is not None
               for later in range(index + 1, len(ranking)))


def from_trail(ranking: Sequence[str], passed: Callable[[str], bool]) -> int:
    """The attempt of a job whose core did not say it (docs/core-contract.md, "A job without
    attempts"): the first candidate whose turn the clarification's record does not show as
    passed (``passed``: asked, a delivery, a skip, a digest entry, their window expired), or
    the steward escalation when every candidate's has. Every turn taken shows on the record,
    and each one costs the job at least one attempt, so this never skips a candidate who was
    not asked; a turn lost without a trace (a worker died before reserving it) is taken again.
    """
    for index, person_id in enumerate(ranking):
        if not passed(person_id):
            return index
    return len(ranking)
