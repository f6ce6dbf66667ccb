"""What a clarification's record shows: its evidence first, its state word second. Pure.

The core's state word can be one the bot does not know (it reads as ``open``), or say less than
the record does; the evidence cannot. A ``bound`` or ``steward_override`` response, a bound
interval or a satisfied quorum say a date is bound, whatever the word; binding-capable responses
that disagree, or a conflicted quorum, say a steward must decide. Only where the record shows
neither does the word count (``answered``, ``conflicted``); otherwise people are still asked, as
many at once as the quorum still needs. docs/delivery.md, "Evidence before words", is the
decision table; the handler, the card refresher, the reminders, declines and dead letters all
read a clarification through ``standing``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from bot.core.models import (
    BindingStatus,
    Clarification,
    ClarificationState,
    Interval,
    QuorumState,
    ResponseRecord,
    Severity,
)


class Standing(StrEnum):
    BOUND = "bound"  # a date is bound: nobody is asked again; cards show what bound
    CONFLICTED = "conflicted"  # binding-capable answers disagree: the steward decides
    OPEN = "open"  # neither: people are asked, as many as the quorum still needs


def standing(c: Clarification) -> Standing:
    """Where the clarification stands: the evidence first, then the state word."""
    if bound_by_evidence(c):
        return Standing.BOUND
    if conflicted_by_evidence(c):
        return Standing.CONFLICTED
    if c.state is ClarificationState.ANSWERED:
        return Standing.BOUND
    if c.state is ClarificationState.CONFLICTED:
        return Standing.CONFLICTED
    return Standing.OPEN


def settled(c: Clarification) -> bool:
    """Nobody is asked any more: bound, or waiting for the steward."""
    return standing(c) is not Standing.OPEN


def closed(c: Clarification) -> bool:
    """``settled``, or dead-lettered: no turn of the ranking comes after it."""
    return settled(c) or c.state is ClarificationState.DEAD_LETTERED


def binding(c: Clarification) -> ResponseRecord | None:
    """The response that bound: the latest steward override, else the latest bound one."""
    for status in (BindingStatus.STEWARD_OVERRIDE, BindingStatus.BOUND):
        found = [r for r in c.responses if r.binding_status is status]
        if found:
            return found[-1]
    return None


def bound_by_evidence(c: Clarification) -> bool:
    """A binding response, a bound interval or fact version, or a satisfied quorum."""
    return (binding(c) is not None or c.bound_interval is not None
            or c.bound_fact_version_tx is not None
            or c.quorum.state is QuorumState.SATISFIED)


def active(c: Clarification) -> list[ResponseRecord]:
    """Each responder's latest response that counts (not recorded as superseded), in the
    order the core recorded them."""
    latest: dict[str, ResponseRecord] = {}
    for response in c.responses:
        if response.superseded_by is None:
            latest.pop(response.responder, None)
            latest[response.responder] = response
    return list(latest.values())


def conflicted_by_evidence(c: Clarification) -> bool:
    """A conflicted quorum, or binding-capable active responses naming different intervals."""
    if c.quorum.state is QuorumState.CONFLICTED:
        return True
    intervals: list[Interval] = []
    for response in active(c):
        if response.binding_status is BindingStatus.BINDING_CANDIDATE \
                and response.interval not in intervals:
            intervals.append(response.interval)
    return len(intervals) > 1


def responded(c: Clarification) -> set[str]:
    """The people with a response on record (any status, superseded or not): an answer is
    evidence, so its giver is never asked the same question again."""
    return {r.responder for r in c.responses}


def remaining(c: Clarification) -> int:
    """Confirmations the quorum still needs: the core's count (or the one derived from the
    record), else the policy's requirement less the confirmations on record."""
    q = c.quorum
    if "remaining" in q.model_fields_set:
        return q.remaining
    if q.state is QuorumState.NOT_REQUIRED:
        return 0
    return max(c.quorum_policy.required_confirmations - q.confirmations, 0)


def counts_confirmers(c: Clarification) -> bool:
    """A pass counts only the people whose answer can count toward the quorum: a critical
    question, or any whose policy asks for more than one confirmation (an unknown severity
    reads as ``normal``; the quorum it still needs does not change)."""
    return c.severity is Severity.CRITICAL or (
        c.quorum_policy.required_confirmations > 1
        and c.quorum.state is not QuorumState.NOT_REQUIRED)


@dataclass(frozen=True, slots=True)
class Confirmation:
    """What another asked person's card shows of the answers so far: the interval, who gave it
    (person ids), and whether the quorum counts it (``certain``: "First confirmation
    recorded") or its status is one the bot does not know (neutral: "An answer has been
    recorded")."""

    interval: Interval
    responders: tuple[str, ...]
    certain: bool


def confirmation(c: Clarification) -> Confirmation | None:
    """The confirmation so far of a clarification still open, from the quorum's count (the
    core's ``confirmedBy``, or derived from the statuses), not from a status word; else an
    answer whose status the bot does not know; else None."""
    responses = active(c)
    confirmers = [r for r in responses if r.responder in c.quorum.confirmed_by]
    if confirmers:
        return Confirmation(confirmers[-1].interval, tuple(c.quorum.confirmed_by), True)
    unknown = [r for r in responses if r.binding_status is BindingStatus.UNKNOWN]
    if unknown:
        return Confirmation(unknown[-1].interval, tuple(r.responder for r in unknown), False)
    return None


def named(c: Clarification) -> list[str]:
    """The people a card of this clarification names as having confirmed (person ids)."""
    if c.quorum.confirmed_by:
        return list(c.quorum.confirmed_by)
    found = confirmation(c)
    return list(found.responders) if found is not None else []
