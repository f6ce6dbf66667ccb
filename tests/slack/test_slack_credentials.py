"""Credentials are checked, not assumed: a refused bot token pauses delivery, skips nobody."""

from __future__ import annotations

import structlog

from bot.channel import CredentialsRejected
from bot.core.models import DeliveryKind, JobState, ReasonCode
from bot.store.base import DeliveryKey
from devcore.jobs import JobRecord
from devslack import BOT_TOKEN
from tests.slack.conftest import Stack

CRITICAL = {"authority": {"authored_by": ["p-sarah"], "named": ["p-ahmed"]},
            "severity": "critical"}


def revoke(stack: Stack) -> None:
    stack.slack.tokens = frozenset()  # Slack now answers invalid_auth to the bot's token


def restore(stack: Stack) -> None:
    stack.slack.tokens = frozenset({BOT_TOKEN})


def job_of(stack: Stack, cid: str) -> JobRecord:
    return next(j for j in stack.core.jobs.jobs.values()
                if j.payload.clarification_id == cid)


def delivery_failures(stack: Stack) -> list[object]:
    return [ev for ev in stack.sink.events
            if ev.reason_code is ReasonCode.DELIVERY_FAILED or ev.type == "escalation_failed"]


async def test_refused_token_pauses_delivery_and_burns_nobody(stack: Stack) -> None:
    """With Slack refusing the bot token mid-job, no candidate or steward is failed, the job is
    held on the same attempt, polling stops, and the log names SLACK_BOT_TOKEN."""
    cid = await stack.create(**CRITICAL)
    revoke(stack)
    with structlog.testing.capture_logs() as logs:
        await stack.burst()
        assert await stack.engine.worker.poll_iteration() == 0  # paused: nothing more is leased
    worker = stack.engine.worker
    assert worker.paused is not None and worker.paused.setting == "SLACK_BOT_TOKEN"
    paused = [x for x in logs if x["event"] == "worker.delivery_paused"]
    assert [(x["log_level"], x["setting"]) for x in paused] == [("error", "SLACK_BOT_TOKEN")]
    assert BOT_TOKEN not in repr(logs)
    assert delivery_failures(stack) == [] and not stack.sink.of("skipped")
    job = job_of(stack, cid)
    assert (job.state, job.attempts) == (JobState.LEASED, 0)
    assert not stack.slack.messages
    await stack.engine.worker.check_credentials()  # still refused: still paused
    assert worker.paused is not None
    restore(stack)
    assert await worker.check_credentials() is True
    await worker.drain()  # the held job goes on, on the same attempt and lease
    assert stack.card("U0SARAH", cid) and stack.card("U0AHMED", cid)
    assert delivery_failures(stack) == []
    job = job_of(stack, cid)  # critical: ranking[0] and [1] asked at once, as without a pause
    assert (job.state, job.attempts) == (JobState.LEASED, 1)


async def test_refused_token_at_start_pauses_before_anything_is_leased(stack: Stack) -> None:
    """A token refused by the start-up check (auth.test) leases no job until it is accepted."""
    cid = await stack.create(**CRITICAL)
    revoke(stack)
    assert await stack.engine.worker.check_credentials() is False
    await stack.burst()
    assert job_of(stack, cid).state is JobState.AVAILABLE
    assert [c.error for c in stack.slack.calls_to("auth.test")] == ["invalid_auth"]
    restore(stack)
    await stack.engine.worker.check_credentials()
    await stack.burst()
    assert stack.card("U0SARAH", cid)


async def test_unreachable_slack_does_not_pause_or_resume(stack: Stack) -> None:
    """A credentials check that cannot reach Slack (5xx) changes nothing either way."""
    worker = stack.engine.worker
    stack.slack.fail_next("auth.test", status=503)
    assert await worker.check_credentials() is True and worker.paused is None
    revoke(stack)
    await worker.check_credentials()
    restore(stack)
    stack.slack.fail_next("auth.test", status=503)
    assert await worker.check_credentials() is False and worker.paused is not None


async def test_a_refused_send_keeps_no_reservation_and_is_sent_once_after_resume(
        stack: Stack) -> None:
    """Slack answered the post with a refusal, so nothing was posted: the reservation taken
    before it goes (a reservation left would read, after the resume, as a worker that stopped
    mid-send); after the resume the card is sent exactly once, recorded against the same
    delivery key."""
    cid = await stack.create(authority={"authored_by": ["p-sarah"]}, severity="high")
    # conversations.open is allowed, the post is refused: nothing sent, nothing reserved
    stack.slack.fail_next("chat.postMessage", status=200, error="token_revoked")
    await stack.burst()
    key = DeliveryKey(cid, "p-sarah", 0, DeliveryKind.QUESTION.value)
    assert await stack.store.slot(key) is None
    assert stack.cards_of("U0SARAH", cid) == []
    await stack.engine.worker.check_credentials()
    await stack.engine.worker.drain()
    assert len(stack.cards_of("U0SARAH", cid)) == 1
    slot = await stack.store.slot(key)
    assert slot is not None and slot.message_ref is not None
    assert delivery_failures(stack) == []


async def test_delivery_resumes_only_when_every_platforms_credentials_pass(stack: Stack) -> None:
    """With two platforms, one refusing the bot's token keeps delivery paused even though the
    other accepts its own; once both pass it resumes."""
    worker = stack.engine.worker
    other_refuses = True

    async def other_platform() -> None:
        if other_refuses:
            raise CredentialsRejected("invalid_auth", setting="TEAMS_APP_PASSWORD")

    worker.also_check(other_platform)
    assert await worker.check_credentials() is False
    assert worker.paused is not None and worker.paused.setting == "TEAMS_APP_PASSWORD"
    other_refuses = False
    assert await worker.check_credentials() is True and worker.paused is None
    revoke(stack)  # Slack's own check, the first one, still counts
    assert await worker.check_credentials() is False
