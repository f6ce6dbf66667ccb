"""A core the worker cannot poll (away, refusing connections): the log names the setting and the
URL it tried, at the first failure and then every 30th, not at every poll; and says when the core
answers again. The core is a stand-in that fails a set number of polls."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import structlog

from bot.clock import ManualClock
from bot.core import errors as e
from bot.core.models import PollResponse
from bot.process.worker import Worker, WorkerConfig
from tests.process.doubles import worker_for

CORE_URL = "http://core.internal:8700"


@dataclass
class AwayCore:
    failing: int  # polls that fail before the core answers
    worker: Worker | None = None
    polls: int = 0

    async def poll_jobs(self, *, kinds: list[str], max_jobs: int, lease_seconds: int
                        ) -> PollResponse:
        self.polls += 1
        if self.polls <= self.failing:
            raise e.CoreConnectError("connection refused")
        if self.polls == self.failing + 3 and self.worker is not None:
            self.worker.stop()
        return PollResponse(jobs=[])


class Handler:
    """No job is leased here."""


async def test_an_unreachable_core_is_logged_with_its_url_once_every_30_polls() -> None:
    core = AwayCore(failing=65)
    worker = worker_for(core, Handler(), ManualClock(),
                        WorkerConfig(poll_interval_seconds=0, core_url=CORE_URL))
    core.worker = worker
    with structlog.testing.capture_logs() as logs:
        await asyncio.wait_for(worker.run(), 30)
    assert core.polls == 68
    failed = [line for line in logs if line["event"] == "worker.poll_failed"]
    assert [line["failures"] for line in failed] == [1, 31, 61]  # not 65 lines
    assert {(line["setting"], line["url"], line["error"]) for line in failed} == {
        ("core.url", CORE_URL, "CoreConnectError")}
    recovered = [line for line in logs if line["event"] == "worker.poll_recovered"]
    assert [line["failures"] for line in recovered] == [65]
