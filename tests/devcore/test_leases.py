"""Leases over HTTP: a heartbeat extends by the lease's own duration unless told otherwise."""

from __future__ import annotations

from datetime import timedelta

import pytest

from bot.clock import ManualClock
from bot.core import errors as e
from bot.core.client import CoreClient


async def test_a_heartbeat_without_lease_seconds_extends_by_the_leases_own_duration(
    bot_client: CoreClient, clock: ManualClock
) -> None:
    """Polled for 120 s, heartbeaten at 100 s with no leaseSeconds: held until 220 s."""
    job = (await bot_client.poll_jobs(kinds=["clarify:"], lease_seconds=120)).jobs[0]
    clock.advance(timedelta(seconds=100))
    beat = await bot_client.heartbeat_job(job_id=job.id, lease_token=job.lease_token)
    assert beat.lease_expires_at == clock.now() + timedelta(seconds=120)
    clock.advance(timedelta(seconds=110))  # past the first expiry, inside the extension
    again = await bot_client.heartbeat_job(job_id=job.id, lease_token=job.lease_token)
    assert again.lease_expires_at == clock.now() + timedelta(seconds=120)
    assert (await bot_client.get_job(job_id=job.id)).attempts == 0


async def test_a_given_lease_seconds_becomes_the_leases_duration(
    bot_client: CoreClient, clock: ManualClock
) -> None:
    """leaseSeconds on a heartbeat extends by that much, and later bare heartbeats keep it."""
    job = (await bot_client.poll_jobs(kinds=["clarify:"], lease_seconds=60)).jobs[0]
    short = await bot_client.heartbeat_job(job_id=job.id, lease_token=job.lease_token,
                                           lease_seconds=30)
    assert short.lease_expires_at == clock.now() + timedelta(seconds=30)
    clock.advance(timedelta(seconds=20))
    bare = await bot_client.heartbeat_job(job_id=job.id, lease_token=job.lease_token)
    assert bare.lease_expires_at == clock.now() + timedelta(seconds=30)
    clock.advance(timedelta(seconds=31))
    with pytest.raises(e.LeaseExpired):
        await bot_client.heartbeat_job(job_id=job.id, lease_token=job.lease_token)


async def test_without_a_heartbeat_the_lease_runs_out_on_time(
    bot_client: CoreClient, clock: ManualClock
) -> None:
    """The extension is a heartbeat's doing: a lease left alone expires at its own end."""
    job = (await bot_client.poll_jobs(kinds=["clarify:"], lease_seconds=120)).jobs[0]
    clock.advance(timedelta(seconds=121))
    with pytest.raises(e.LeaseExpired):
        await bot_client.heartbeat_job(job_id=job.id, lease_token=job.lease_token)
    assert (await bot_client.get_job(job_id=job.id)).attempts == 1
