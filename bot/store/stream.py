"""One person's answers to one clarification (an order key) as the outbox sees them: when an
entry only repeats an answer already forwarded.

Each action the outbox accepts has a time (the platform's time of the action) and an answer
(``Callback.fingerprint``: equal answers, equal fingerprints; "" when the caller did not say).
The order marker keeps every entry it settled with its time and answer (``settled_mark``).

An entry **repeats a forwarded answer** when the next action after it in the person's order was
forwarded already (settled) and gave the same answer: it arrived late (a click on the other
platform given a moment before), and it goes to the core as a resend of that one (that entry's
idempotency key), so that no core records the same answer twice, whatever it does with the
time. A different answer between the two (waiting, or forwarded) makes it an answer of its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

UNKNOWN = ""  # an answer nobody named: never the same as another


PARKED = "p"


def settled_mark(acted: int, answer: str, *, parked: bool = False) -> str:
    """What the order marker keeps of a settled entry: its action time, its answer, and
    whether it was parked (set aside, never forwarded) rather than forwarded."""
    return f"{acted} {answer or '-'}" + (f" {PARKED}" if parked else "")


def repeat_of(acted: int, answer: str, settled: Mapping[str, str], waiting: Iterable[int]
              ) -> str | None:
    """The settled entry this one repeats: the next action after ``acted`` in the person's
    order, when it is a forwarded one (``settled``: entry id → ``settled_mark``; a mark of
    another form, kept before marks held times, is skipped) with the same answer; None
    otherwise (a waiting or parked action comes next, or another answer, or none)."""
    if answer == UNKNOWN:
        return None
    best: tuple[int, str, list[str]] | None = None
    for entry_id, mark in settled.items():
        words = mark.split()
        if len(words) < 2 or not words[0].isdigit() or int(words[0]) <= acted:
            continue
        if best is None or (int(words[0]), entry_id) < best[:2]:
            best = (int(words[0]), entry_id, words[1:])
    if best is None or best[2] != [answer]:
        return None
    if any(acted < at <= best[0] for at in waiting):
        return None
    return best[1]
