"""The core client's retries: which calls are sent again after which answers or failures, after
how long (full jitter, a Retry-After as a capped floor, on the injected clock), and which never
are (a call that is not retry-safe, a 4xx but 429)."""

from __future__ import annotations

from datetime import timedelta
from email.utils import format_datetime

import pytest

from bot.core.client import RetryPolicy
from bot.core.errors import CoreError, LeaseMismatch, RateLimited, Unavailable

from . import faults
from .conftest import answer_result, error_body, job_view, respond
from .test_client import ANSWER, CASES, CREATE


async def test_idempotent_route_retries_503_with_full_jitter(core, sleeps, client):
    """A 503 on an idempotent route is resent after exponentially growing jittered delays."""
    core.script(respond(503, json=error_body("UNAVAILABLE", 503)),
                respond(503, json=error_body("UNAVAILABLE", 503)),
                respond(200, json=job_view()))
    job = await client.get_job(job_id="job-1")
    assert job.id == "job-1"
    assert len(core.requests) == 3
    assert sleeps.calls == [0.5 * 0.25, 0.5 * 0.5]


async def test_retries_stop_after_the_limit_and_raise_the_last_error(core, sleeps, client):
    """After max_attempts failures the last error is raised and no further request is sent."""
    core.script(respond(503, json=error_body("UNAVAILABLE", 503)))
    with pytest.raises(Unavailable):
        await client.heartbeat_job(job_id="job-1", lease_token="lease-1")
    assert len(core.requests) == 4
    assert len(sleeps.calls) == 3


@pytest.mark.parametrize("status", [502, 504])
async def test_gateway_errors_are_retried(status, core, sleeps, client):
    """502 and 504 from a proxy are resent on an idempotent route."""
    core.script(respond(status), respond(200, json=job_view()))
    await client.get_job(job_id="job-1")
    assert len(core.requests) == 2


async def test_429_honours_retry_after_seconds(core, sleeps, client):
    """A 429 with Retry-After waits exactly that long before resending."""
    core.script(respond(429, headers={"Retry-After": "7"},
                               json=error_body("RATE_LIMITED", 429)),
                respond(200, json=answer_result()))
    receipt = await client.answer_clarification(clarification_id="clar-1", request=ANSWER)
    assert receipt.http_status == 200
    assert sleeps.calls == [7.0]
    assert core.requests[0].content == core.requests[1].content


async def test_retry_after_http_date_is_measured_on_the_injected_clock(core, sleeps, clock, client):
    """A Retry-After HTTP date becomes the seconds between the clock's now and that date."""
    when = format_datetime(clock.now() + timedelta(seconds=12), usegmt=True)
    core.script(respond(429, headers={"Retry-After": when}),
                respond(200, json=job_view()))
    await client.get_job(job_id="job-1")
    assert sleeps.calls == [12.0]


async def test_retry_after_is_capped_and_reported(core, sleeps, client):
    """A huge Retry-After is capped by the policy; the final error carries the server's value."""
    core.script(respond(429, headers={"Retry-After": "3600"},
                               json=error_body("RATE_LIMITED", 429)))
    with pytest.raises(RateLimited) as info:
        await client.get_job(job_id="job-1")
    assert sleeps.calls == [30.0, 30.0, 30.0]
    assert info.value.retry_after == 3600.0


@pytest.mark.parametrize("raw", ["inf", "Infinity", "1e999", "nan", "-inf"])
async def test_a_retry_after_that_is_no_number_of_seconds_is_ignored(raw, core, sleeps, client):
    """A Retry-After that is no finite number (``inf``, ``1e999``, ``nan``: not delta-seconds,
    not a date) is read as absent: the backoff alone is waited, and the error carries no
    infinity into the worker's waits and its JSON log lines (``Infinity`` is not JSON)."""
    core.script(*[respond(429, headers={"Retry-After": raw},
                                 json=error_body("RATE_LIMITED", 429))] * 4)
    with pytest.raises(RateLimited) as info:
        await client.get_job(job_id="job-1")
    assert sleeps.calls == [0.125, 0.25, 0.5]
    assert info.value.retry_after is None


async def test_a_retry_after_date_in_the_past_asks_for_no_wait(core, sleeps, clock, client):
    """An HTTP date already past (a proxy's stale header) is 0 s: the backoff alone."""
    when = format_datetime(clock.now() - timedelta(days=3), usegmt=True)
    core.script(respond(503, headers={"Retry-After": when}),
                respond(200, json=job_view()))
    await client.get_job(job_id="job-1")
    assert sleeps.calls == [0.125]


async def test_a_retry_after_shorter_than_the_backoff_is_a_floor(core, sleeps, client):
    """Retry-After never shortens the backoff (``bot.retry``): a 503 asking for 0 s still
    waits the jittered backoff (0.5 of 0.25 s, then of 0.5 s), a 503 asking for 3 s waits 3 s."""
    core.script(respond(503, headers={"Retry-After": "0"}),
                respond(503, headers={"Retry-After": "0"}),
                respond(503, headers={"Retry-After": "3"}),
                respond(200, json=job_view()))
    await client.get_job(job_id="job-1")
    assert sleeps.calls == [0.125, 0.25, 3.0]


async def test_client_errors_other_than_429_are_not_retried(core, sleeps, client):
    """A 409 on an idempotent route is final: one request, no sleep."""
    core.script(respond(409, json=error_body("LEASE_MISMATCH", 409)))
    with pytest.raises(LeaseMismatch):
        await client.complete_job(job_id="job-1", lease_token="lease-1")
    assert len(core.requests) == 1 and sleeps.calls == []


NOT_RETRIED = [
    ("poll_jobs", {"kinds": ["clarify:"]}, False),
    ("fail_job", {"job_id": "job-1", "lease_token": "lease-1"}, False),
    ("create_clarification", {"request": CREATE}, True),
    ("move_clock", {"advance_seconds": 1}, True),
    ("load_scenario", {"scenario": {}}, True),
]


@pytest.mark.parametrize(("method", "kwargs", "dev"), NOT_RETRIED,
                         ids=[name for name, *_ in NOT_RETRIED])
@pytest.mark.parametrize("failure", [
    respond(503, json=error_body("UNAVAILABLE", 503)),
    faults.refused(),
], ids=["503", "connect"])
async def test_non_idempotent_routes_are_sent_once(method, kwargs, dev, failure, core, sleeps,
                                                   make_client):
    """Routes without retry=True are never resent after a failure that may have reached the
    core (a 5xx, a transport failure)."""
    core.script(failure)
    async with make_client(dev=dev) as client:
        with pytest.raises(CoreError):
            await getattr(client, method)(**kwargs)
    assert len(core.requests) == 1 and sleeps.calls == []


@pytest.mark.parametrize(("method", "kwargs", "dev"), NOT_RETRIED,
                         ids=[name for name, *_ in NOT_RETRIED])
async def test_a_429_is_resent_after_its_retry_after_except_the_poll(method, kwargs, dev, core,
                                                                      sleeps, make_client):
    """A 429 says the core refused the request and did nothing: a call that is not retry-safe
    is sent again after its Retry-After too; the poll is not (its loop waits instead), and
    raises with the Retry-After for the loop."""
    core.script(respond(429, headers={"Retry-After": "6"},
                               json=error_body("RATE_LIMITED", 429)),
                respond(200, json=next(c.reply for c in CASES if c.method == method)))
    async with make_client(dev=dev) as client:
        if method == "poll_jobs":
            with pytest.raises(RateLimited) as info:
                await getattr(client, method)(**kwargs)
            assert info.value.retry_after == 6.0
            assert len(core.requests) == 1 and sleeps.calls == []
            return
        await getattr(client, method)(**kwargs)
    assert len(core.requests) == 2 and sleeps.calls == [6.0]


def test_backoff_is_capped():
    """Full jitter never exceeds the cap however many attempts have failed."""
    policy = RetryPolicy(base=1.0, cap=5.0)
    assert policy.delay(10, draw=0.999) < 5.0
    assert policy.delay(1, draw=0.0) == 0.0


