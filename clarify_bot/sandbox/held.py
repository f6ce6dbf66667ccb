"""The questions the bot holds for now, read from its store as the page shows them: a question
whose person is outside their working hours waits, with nothing sent, until their next working
hour (``bot.engine.holds``); the core's record alone would only show that nobody was asked."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from bot.engine.holds import Hold
from bot.store.holds import HeldJobs

EVERY = datetime(9999, 1, 1, tzinfo=UTC)  # as late as a hold can be looked at
MOST = 500


async def held_questions(store: HeldJobs) -> dict[str, dict[str, Any]]:
    """Each held clarification's id → until when, whom it waits for, and why."""
    found: dict[str, dict[str, Any]] = {}
    for _, text in await store.holds_due(now=EVERY, limit=MOST):
        try:
            hold = Hold.loads(text)
        except (ValueError, KeyError, TypeError):  # a hold the page cannot read: not shown
            continue
        if hold.job is None:
            continue
        payload = hold.job.payload
        turn = hold.job.attempts or 0
        found[payload.clarification_id] = {
            "until": hold.due.isoformat(),
            "person": payload.ranking[turn] if turn < len(payload.ranking) else None,
            "why": "the core refused a read; tried again later" if hold.troubles
            else "outside their working hours: nothing is sent until their next working hour",
        }
    return found
