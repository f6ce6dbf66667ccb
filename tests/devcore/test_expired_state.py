"""The reference core's ``expired`` state means what the spec says (§5: the escalation window
exhausted for the current candidate): a delivered question's clarification stays open while
its window runs, whatever the bot's lease does, is expired once the window has run out, and is
open again when the next candidate is asked. A decline ends no window."""

from __future__ import annotations

from datetime import timedelta

from bot.clock import ManualClock
from bot.core.client import CoreClient
from bot.core.models import (
    Channel as ContractChannel,
)
from bot.core.models import (
    ClarificationState,
    DeliveryKind,
    DeliveryReport,
    LeasedJob,
    ReasonCode,
)

NORMAL = "clr-00002"  # the acme scenario's normal question (window 48 h)


async def _lease_normal(bot: CoreClient) -> LeasedJob:
    jobs = (await bot.poll_jobs(kinds=["clarify:"], max_jobs=5, lease_seconds=60)).jobs
    for job in jobs:
        if job.payload.clarification_id != NORMAL:
            await bot.complete_job(job_id=job.id, lease_token=job.lease_token)
    return next(j for j in jobs if j.payload.clarification_id == NORMAL)


async def _ask(bot: CoreClient, person: str, attempt: int) -> None:
    await bot.report_delivery(clarification_id=NORMAL, report=DeliveryReport(
        delivery_id=f"d-{attempt}", person_id=person, channel=ContractChannel.SLACK,
        kind=DeliveryKind.QUESTION, attempt=attempt, message_ref=f"D1:{attempt}.0"))


async def state(bot: CoreClient) -> ClarificationState:
    return (await bot.get_clarification(clarification_id=NORMAL)).state


async def test_expired_only_when_the_window_has_run_out(
    bot_client: CoreClient, clock: ManualClock
) -> None:
    """Asked, the lease ends a minute later: still open (the quickstart once showed "expired"
    60 s after the card); expired when the job is due again, 48 hours on; open again once the
    next candidate is asked."""
    job = await _lease_normal(bot_client)
    await _ask(bot_client, job.payload.ranking[0], 0)
    clock.advance(timedelta(seconds=61))  # the bot's lease ends after the delivery
    assert await state(bot_client) is ClarificationState.OPEN
    view = await bot_client.get_job(job_id=job.id)
    assert view is not None and view.visible_at is not None
    clock.set(view.visible_at - timedelta(seconds=1))
    assert await state(bot_client) is ClarificationState.OPEN
    c = await bot_client.get_clarification(clarification_id=NORMAL)
    assert [ev for ev in c.events if ev.type == "expired"] == []
    clock.advance(timedelta(seconds=1))  # the window has run out
    assert await state(bot_client) is ClarificationState.EXPIRED
    c = await bot_client.get_clarification(clarification_id=NORMAL)
    (expired,) = [ev for ev in c.events if ev.type == "expired"]
    assert (expired.person_id, expired.attempt) == (job.payload.ranking[0], 0)
    again = (await bot_client.poll_jobs(kinds=["clarify:"], lease_seconds=60)).jobs
    assert [j.id for j in again] == [job.id] and again[0].attempts == 1
    await _ask(bot_client, job.payload.ranking[1], 1)
    assert await state(bot_client) is ClarificationState.OPEN


async def test_a_decline_ends_no_window(bot_client: CoreClient, clock: ManualClock) -> None:
    """The candidate declined during the lease (expedite): when the lease ends the next turn
    starts at once, and nobody's window is said to have run out."""
    job = await _lease_normal(bot_client)
    await _ask(bot_client, job.payload.ranking[0], 0)
    await bot_client.expedite_job(job_id=job.id, attempt=0,
                                  reason_code=ReasonCode.CANDIDATE_DECLINED)
    clock.advance(timedelta(seconds=61))
    again = (await bot_client.poll_jobs(kinds=["clarify:"], lease_seconds=60)).jobs
    assert [j.id for j in again] == [job.id]
    clock.advance(timedelta(hours=100))  # (the next turn's own window runs out meanwhile)
    c = await bot_client.get_clarification(clarification_id=NORMAL)
    assert [ev for ev in c.events if ev.type == "expired" and ev.attempt == 0] == []
