"""The answer outbox's consumers: a fixed number, each taking the next due entry once it is free.

Answers in flight are bounded: at most ``consumers`` entries are being forwarded at once (sized
with the core client's connection pool, so no request queues in the pool behind thousands of
others, and the event loop that acknowledges clicks is never flooded). One feeder claims due
entries for the free consumers, as soon as one is free; it wakes when this process queues an
entry, and otherwise looks again every ``poll_seconds`` for entries other replicas queued and for
retries that became due. Where the consumers run is the service's choice (docs/operations.md).
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field

import structlog

from bot.answering.answers import AnswerService
from bot.store.base import OutboxEntry
from bot.store.errors import StoreError

log = structlog.get_logger("clarify.outbox")


@dataclass(frozen=True, slots=True)
class ConsumerConfig:
    consumers: int = 8
    poll_seconds: float = 0.5
    shutdown_grace_seconds: float = 4.0  # inside the service's 10 s from SIGTERM to exit


@dataclass
class OutboxConsumers:
    answers: AnswerService
    config: ConsumerConfig = field(default_factory=ConsumerConfig)
    _wake: asyncio.Event = field(init=False)  # the answers' ``queued``: set by an accept here
    _stopping: asyncio.Event = field(default_factory=asyncio.Event)
    _inflight: set[asyncio.Task[None]] = field(default_factory=set)
    peak: int = 0  # the most entries ever in flight at once (tests and benchmarks read it)

    def __post_init__(self) -> None:
        self._wake = self.answers.queued

    def wake(self) -> None:
        """An entry was queued in this process: claim it now rather than at the next poll."""
        self._wake.set()

    def stop(self) -> None:
        self._stopping.set()
        self._wake.set()

    def in_flight(self) -> int:
        return len(self._inflight)

    # ---------------------------------------------------------------- one claim

    async def claim_iteration(self) -> int:
        """Claim due entries for every free consumer and start them; returns how many."""
        free = self.config.consumers - len(self._inflight)
        if free <= 0 or self._stopping.is_set():
            return 0
        answers = self.answers
        try:
            entries = await answers.store.outbox_claim(
                now=answers.clock.now(), lease_seconds=answers.policy.lease_seconds, limit=free)
        except StoreError as exc:
            log.warning("outbox.claim_failed", error=type(exc).__name__)
            return 0
        for entry in entries:
            task = asyncio.create_task(self._consume(entry))
            self._inflight.add(task)
            task.add_done_callback(self._finished)
        self.peak = max(self.peak, len(self._inflight))
        return len(entries)

    async def _consume(self, entry: OutboxEntry) -> None:
        try:
            await self.answers.process(entry)
        except Exception as exc:  # the store failed while settling: the lease brings it back
            log.warning("outbox.settle_failed", error=type(exc).__name__)

    def _finished(self, task: asyncio.Task[None]) -> None:
        self._inflight.discard(task)
        self._wake.set()  # a consumer is free

    # ---------------------------------------------------------------- loops

    async def run_burst(self) -> int:
        """Forward every entry due now with the bounded consumers until none is left; never
        sleeps (tests, the demo). Returns how many entries were taken."""
        taken = 0
        while True:
            started = await self.claim_iteration()
            taken += started
            if not started and not self._inflight:
                return taken
            if self._inflight:
                await asyncio.wait(set(self._inflight), return_when=asyncio.FIRST_COMPLETED)

    async def run(self) -> None:
        """Claim as consumers become free until stopped, then let in-flight entries finish."""
        while not self._stopping.is_set():
            self._wake.clear()  # before claiming: a wake during the claim is not lost
            started = await self.claim_iteration()
            if started and len(self._inflight) < self.config.consumers:
                continue  # more may be due already
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.config.poll_seconds)
        await self.shutdown()

    async def shutdown(self) -> None:
        """Let in-flight entries finish within the grace period; the rest come back when their
        lease ends (they are still in the outbox)."""
        self._stopping.set()
        if self._inflight:
            _, pending = await asyncio.wait(set(self._inflight),
                                            timeout=self.config.shutdown_grace_seconds)
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.gather(*pending, return_exceptions=True)
        log.info("outbox.stopped", unfinished_followups=self.answers.followups.pending())
