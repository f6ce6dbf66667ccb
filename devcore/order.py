"""A responder's answers in the order they gave them (the ``answer-order`` extension).

A response is given at its ``respondedAt`` (the platform's time of the action, sent by the bot)
and again at every repeat of it: the same answer given once more, which the core answers as a
replay and never records twice (spec §6). The core keeps each repeat beside the record
(``Repeat``: when, through which channel and message, with which rights), never on it, so that
an answer arriving late is put in its place among everything the responder gave.

The rules, for one responder:

- **The latest** response is the one given last, its repeats counted; without ``respondedAt``
  on either side, the one recorded last.
- **A repeat** is an answer equal (same normalised interval, same override flag) to the one the
  responder gave right before it or right after it, however it arrived: through another
  platform, from another message, late. Equal answers with another answer of theirs between
  them are not a repeat: A, then B, then A are three responses.
- **A run split**: an answer that arrives late and falls between a response and a repeat of it
  (the responder gave A, B, A and the B came last) makes the repeat on the far side of it a
  response of its own (``straddled``), so the record still shows every change of mind.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from bot.core.models import Channel as ContractChannel
from bot.core.models import Clarification, ResponseRecord, Role


@dataclass(frozen=True, slots=True)
class Repeat:
    """A response given again, answered as a replay: when, where and with which rights."""

    at: datetime
    channel: ContractChannel
    message_ref: str | None
    rights: Role


Repeats = Mapping[str, Sequence[Repeat]]  # response id → its repeats, by time


def points(record: ResponseRecord, repeats: Repeats) -> list[datetime]:
    """Every time the responder gave this response (none without ``respondedAt``)."""
    if record.responded_at is None:
        return []
    return [record.responded_at, *(r.at for r in repeats.get(record.response_id, ()))]


def given(record: ResponseRecord, repeats: Repeats) -> datetime | None:
    """When the responder last gave this response: its ``respondedAt`` or a later repeat's."""
    return max(points(record, repeats), default=None)


def is_after(record: ResponseRecord, latest: ResponseRecord | None, repeats: Repeats
             ) -> bool:
    """Whether ``record`` (recorded after ``latest``) replaces it as its responder's latest:
    by when each was last given where both carry it (answer-order), else by recording."""
    if latest is None:
        return True
    mine, theirs = given(record, repeats), given(latest, repeats)
    if mine is not None and theirs is not None:
        return mine >= theirs
    return True


def latest_of(c: Clarification, responder: str, repeats: Repeats
              ) -> ResponseRecord | None:
    """The responder's latest response: by when it was last given, else the last recorded."""
    latest: ResponseRecord | None = None
    for record in c.responses:
        if record.responder == responder and is_after(record, latest, repeats):
            latest = record
    return latest


def _timed(c: Clarification, responder: str) -> list[ResponseRecord] | None:
    """The responder's responses when every one carries ``respondedAt``; else None."""
    mine = [r for r in c.responses if r.responder == responder]
    return None if any(r.responded_at is None for r in mine) else mine


def neighbours(c: Clarification, responder: str, at: datetime | None, repeats: Repeats
               ) -> tuple[ResponseRecord | None, ResponseRecord | None]:
    """The responses the responder gave right before (or at) ``at`` and right after it, each
    at its ``respondedAt`` and at its repeats. Without ``at``, or with a response of theirs
    that carries no ``respondedAt``, the order is the recording order: the one before is their
    latest, none is after."""
    mine = _timed(c, responder)
    if at is None or mine is None:
        return latest_of(c, responder, repeats), None
    timeline = sorted(((when, seq, record) for seq, record in enumerate(mine)
                       for when in points(record, repeats)), key=lambda p: (p[0], p[1]))
    before = [p[2] for p in timeline if p[0] <= at]
    after = [p[2] for p in timeline if p[0] > at]
    return (before[-1] if before else None), (after[0] if after else None)


def straddled(c: Clarification, responder: str, at: datetime | None, repeats: Repeats
              ) -> ResponseRecord | None:
    """The responder's response given both before and after ``at`` (at its ``respondedAt``
    and a repeat): an answer given at ``at`` splits its run in two."""
    mine = _timed(c, responder)
    if at is None or mine is None:
        return None
    for record in mine:
        times = points(record, repeats)
        if any(t < at for t in times) and any(t > at for t in times):
            return record
    return None
