"""The one retry policy (``bot.retry.RetryPolicy``): ceilings doubling to the cap, jitter as the
random share of the ceiling, Retry-After as a capped floor, the last attempt; and each loop's
policy as docs/reliability.md ("Retries") tabulates it."""

from __future__ import annotations

import math
import random

import pytest

from adapters.slack.mount import SOCKET_RETRY
from adapters.slack.webapi import SLACK_RETRY
from adapters.teams.connector import Limits
from bot.answering.answers import OutboxPolicy
from bot.core.calls import CORE_RETRY
from bot.engine.delivery import SEND_RETRY
from bot.process.running import STORE_RETRY
from bot.retry import RetryPolicy

POLICY = RetryPolicy(max_attempts=5, base=1.0, cap=10.0, retry_after_cap=20.0, jitter=0.5)


@pytest.mark.parametrize(("attempt", "ceiling"), [
    (1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0),
    (5, 10.0),  # the cap reached
    (6, 10.0), (60, 10.0), (10_000, 10.0),  # and kept, however far (no float overflow)
    (0, 1.0), (-3, 1.0),  # below the first attempt: the first ceiling
])
def test_the_ceiling_doubles_up_to_the_cap(attempt: int, ceiling: float) -> None:
    assert POLICY.ceiling(attempt) == ceiling


@pytest.mark.parametrize(("jitter", "attempt", "draw", "delay"), [
    (0.0, 3, 0.0, 4.0),  # no jitter: the ceiling whatever the draw
    (0.0, 3, 0.7, 4.0),
    (0.5, 3, 0.0, 2.0),  # half random: from half the ceiling ...
    (0.5, 3, 1.0, 4.0),  # ... to the ceiling
    (0.5, 3, 0.5, 3.0),
    (1.0, 3, 0.0, 0.0),  # full jitter: from nothing ...
    (1.0, 3, 1.0, 4.0),  # ... to the ceiling
    (1.0, 3, 0.25, 1.0),
    (0.5, 9, 0.0, 5.0),  # at the cap: half the cap at least
    (0.5, 3, 1.5, 4.0),  # a draw outside [0, 1] is held to it
    (0.5, 3, -1.0, 2.0),
])
def test_jitter_is_the_random_share_of_the_ceiling(jitter: float, attempt: int, draw: float,
                                                    delay: float) -> None:
    policy = RetryPolicy(max_attempts=5, base=1.0, cap=10.0, jitter=jitter)
    assert policy.delay(attempt, draw=draw) == delay


@pytest.mark.parametrize(("attempt", "retry_after", "draw", "delay"), [
    (1, 7.0, 0.0, 7.0),  # a Retry-After above the backoff: waited in full
    (1, 7.0, 1.0, 7.0),
    (4, 3.0, 1.0, 8.0),  # below the backoff: the backoff still applies (a floor, not a value)
    (4, 3.0, 0.0, 4.0),
    (1, 3600.0, 1.0, 20.0),  # capped by retry_after_cap
    (1, 0.0, 1.0, 1.0),
    (1, -5.0, 0.0, 0.5),  # a negative one counts as none
    (1, None, 1.0, 1.0),
])
def test_retry_after_is_a_capped_floor(attempt: int, retry_after: float | None, draw: float,
                                       delay: float) -> None:
    assert POLICY.delay(attempt, retry_after=retry_after, draw=draw) == delay


@pytest.mark.parametrize(("max_attempts", "attempt", "last"), [
    (1, 1, True), (3, 1, False), (3, 2, False), (3, 3, True), (3, 4, True),
    (None, 1, False), (None, 10**6, False),  # no limit of the policy's own
])
def test_the_last_attempt(max_attempts: int | None, attempt: int, last: bool) -> None:
    assert RetryPolicy(max_attempts=max_attempts).last(attempt) is last


def test_every_draw_lies_between_the_jittered_floor_and_the_ceiling() -> None:
    """With a real random source the delays spread over [ceiling * (1 - jitter), ceiling]."""
    draws = random.Random(21)
    for attempt in range(1, 8):
        ceiling = POLICY.ceiling(attempt)
        delays = {POLICY.delay(attempt, draw=draws.random()) for _ in range(200)}
        assert all(ceiling * 0.5 <= d <= ceiling for d in delays)
        assert len(delays) > 150  # spread, not one value


@pytest.mark.parametrize("bad", [
    {"max_attempts": 0}, {"base": -1.0}, {"cap": -1.0}, {"retry_after_cap": -1.0},
    {"jitter": -0.1}, {"jitter": 1.1},
])
def test_a_policy_that_cannot_hold_is_refused(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        RetryPolicy(**bad)  # type: ignore[arg-type]


def test_the_policy_is_frozen() -> None:
    with pytest.raises(AttributeError):
        POLICY.base = 2.0  # type: ignore[misc]


# (loop, policy, attempts, base, cap, jitter, Retry-After cap): docs/reliability.md, "Retries"
LOOPS = [
    ("core client", CORE_RETRY, 4, 0.25, 8.0, 1.0, 30.0),
    ("answer outbox", OutboxPolicy().retry, None, 2.0, 300.0, 0.5, 300.0),
    ("Deliverer", SEND_RETRY, 3, 1.0, 2.0, 0.5, 0.0),
    ("worker store retries", STORE_RETRY, 7, 1.0, 30.0, 0.5, 0.0),
    ("Slack Web API", SLACK_RETRY, 4, 1.0, 30.0, 0.5, math.inf),
    ("Socket Mode URL", SOCKET_RETRY, None, 1.0, 30.0, 0.5, 0.0),
    ("Teams connector", Limits().retry, 6, 1.0, 30.0, 0.5, math.inf),
]


@pytest.mark.parametrize(("loop", "policy", "attempts", "base", "cap", "jitter", "ra_cap"),
                         LOOPS, ids=[loop[0] for loop in LOOPS])
def test_each_loops_policy_is_the_documented_one(loop: str, policy: RetryPolicy,
                                                 attempts: int | None, base: float, cap: float,
                                                 jitter: float, ra_cap: float) -> None:
    assert (policy.max_attempts, policy.base, policy.cap, policy.jitter,
            policy.retry_after_cap) == (attempts, base, cap, jitter, ra_cap)


def test_the_outbox_policy_follows_its_settings() -> None:
    """``[answers] backoff_base_seconds`` and ``backoff_cap_seconds`` feed the outbox's policy;
    ``backoff(n)`` is its ceiling."""
    policy = OutboxPolicy(backoff_base_seconds=5.0, backoff_cap_seconds=12.0)
    assert [policy.backoff(n).total_seconds() for n in (1, 2, 3, 4)] == [5.0, 10.0, 12.0, 12.0]
    assert policy.wait(2, draw=0.0).total_seconds() == 5.0
    assert policy.wait(1, draw=1.0, retry_after=60.0).total_seconds() == 12.0


def test_the_teams_limits_feed_its_policy() -> None:
    retry = Limits(attempts=3, backoff_seconds=0.5, backoff_cap_seconds=1.5).retry
    assert [retry.ceiling(n) for n in (1, 2, 3)] == [0.5, 1.0, 1.5]
    assert retry.last(3) and not retry.last(2)
