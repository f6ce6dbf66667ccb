"""The worker's stand-ins: a core that answers polls from a list, a handler gated per job, and
the worker built around them as ``bot.process.runtime`` builds it (its held jobs on a memory
store), so a test drives the worker's iteration alone: no HTTP, no engine, no sleeping."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import timedelta

from bot.channel import CredentialsRejected
from bot.clock import ManualClock
from bot.core.batching import JobScope
from bot.core.models import DeliveryReportItem, JobPayload, LeasedJob, PollResponse
from bot.engine.handler import JobOutcome
from bot.engine.held import HoldKeeper
from bot.process.worker import Worker, WorkerConfig
from bot.store.memory import MemoryStore


def job(n: int, clock: ManualClock) -> LeasedJob:
    return LeasedJob(id=f"job-{n}", kind="clarify:temporal",
                     payload=JobPayload(clarification_id=f"c-{n}", ranking=["p-1"]),
                     attempts=0, max_attempts=2, lease_token=f"lease-{n}",
                     lease_expires_at=clock.now() + timedelta(seconds=60))


@dataclass
class Core:
    """Polls answer the due jobs in order (or raise what ``refusals`` holds, one per poll);
    heartbeats are recorded; reports wait for ``reports_gate``."""

    due: list[LeasedJob]
    polls: list[int] = field(default_factory=list)  # max_jobs of each poll
    reported: list[str] = field(default_factory=list)  # clarification ids, as they arrive
    reports_gate: asyncio.Event = field(default_factory=asyncio.Event)
    refusals: list[Exception] = field(default_factory=list)  # the next polls' errors
    heartbeats: list[tuple[str, int]] = field(default_factory=list)  # job id, lease seconds

    async def poll_jobs(self, *, kinds: list[str], max_jobs: int, lease_seconds: int
                        ) -> PollResponse:
        self.polls.append(max_jobs)
        if self.refusals:
            raise self.refusals.pop(0)
        leased, self.due = self.due[:max_jobs], self.due[max_jobs:]
        return PollResponse(jobs=leased)

    async def heartbeat_job(self, *, job_id: str, lease_token: str, lease_seconds: int
                            ) -> None:
        self.heartbeats.append((job_id, lease_seconds))
        return None

    async def flush(self, scope: JobScope, *, linger: float = 0) -> None:
        await self.reports_gate.wait()
        self.reported.extend(d.clarification_id for d in scope.deliveries)

    def offers(self, extension: object) -> bool:
        return True


@dataclass
class Handler:
    """Each job runs until the test opens its gate, then reports one delivery (or ends as
    ``outcome`` says)."""

    clock: ManualClock
    gates: dict[str, asyncio.Event] = field(default_factory=dict)
    started: list[str] = field(default_factory=list)
    running: set[str] = field(default_factory=set)
    most_at_once: int = 0
    refuse_next: bool = False  # the platform refuses the credentials once
    outcome: JobOutcome = JobOutcome.ASKED

    def gate(self, job_id: str) -> asyncio.Event:
        return self.gates.setdefault(job_id, asyncio.Event())

    async def handle_unreported(self, job: LeasedJob) -> tuple[JobOutcome, JobScope]:
        if self.refuse_next:
            self.refuse_next = False
            raise CredentialsRejected("invalid_auth", setting="SLACK_BOT_TOKEN")
        self.started.append(job.id)
        self.running.add(job.id)
        self.most_at_once = max(self.most_at_once, len(self.running))
        try:
            await self.gate(job.id).wait()
        finally:
            self.running.discard(job.id)
        scope = JobScope()
        scope.deliveries.append(DeliveryReportItem.model_construct(
            clarification_id=job.payload.clarification_id))
        return self.outcome, scope


def worker_for(core: object, handler: object, clock: ManualClock,
               config: WorkerConfig | None = None, *, store: MemoryStore | None = None,
               **kwargs: object) -> Worker:
    """The worker around the stand-ins, its held jobs kept in ``store`` (a fresh one)."""
    config = config or WorkerConfig()
    held = HoldKeeper(core=core, store=store or MemoryStore(clock=clock),  # type: ignore[arg-type]
                    clock=clock, handler=handler,  # type: ignore[arg-type]
                    lease_seconds=config.lease_seconds, concurrency=config.concurrency)
    return Worker(core=core, handler=handler, held=held,  # type: ignore[arg-type]
                  clock=clock, config=config, outcomes=held.outcomes,
                  **kwargs)  # type: ignore[arg-type]
