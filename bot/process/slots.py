"""The worker's coordination state: its slots, the jobs leased ahead, the reports under way, and
whether it is paused or stopping; no I/O.

``bot.process.worker`` starts the tasks (a job's handling, its heartbeat, its reports) and asks
this object what may happen next; every change goes through one of its transitions:

- ``leased`` puts a job (with its heartbeat running) among the ``ready``; ``next_ready`` takes
  the next one when a slot is free and delivery is not paused; ``started`` gives it its slot and
  ``finished`` frees it (then ``wake`` tells the poll loop when the worker is ``hungry``);
- ``set_aside`` takes a held job out of its slot (one installation's token is refused: the
  other installations' jobs go on) and ``take_back`` returns it;
- ``reporting`` counts a handled job's reports under way after its slot freed, until
  ``reported``;
- ``pause`` / ``resume`` (the platform refuses the bot's credentials) and ``stop`` (which
  ``release_ready`` follows on shutdown, for jobs that never started).

Invariants: no job starts while ``concurrency`` jobs are running (a held job taken back may
run beside them: it was started once, and holding it must not cost its turn); nothing leased
while paused or stopping, nor beyond ``concurrency + ahead`` jobs in hand; nothing started
while paused.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass, field

from bot.channel import CredentialsRejected
from bot.core.models import LeasedJob

Ready = tuple[LeasedJob, asyncio.Task[None]]  # a job leased ahead, and its heartbeat


@dataclass
class Slots:
    concurrency: int
    ahead: int = 0  # jobs held leased beyond the slots
    paused: CredentialsRejected | None = None  # why delivery is paused, if it is
    running: set[asyncio.Task[None]] = field(default_factory=set)  # jobs being handled
    ready: deque[Ready] = field(default_factory=deque)  # leased, waiting for a slot
    under_way: set[asyncio.Task[None]] = field(default_factory=set)  # handled jobs' reports
    stopping: asyncio.Event = field(default_factory=asyncio.Event)
    resumed: asyncio.Event = field(default_factory=asyncio.Event)  # set while not paused
    pausing: asyncio.Event = field(default_factory=asyncio.Event)  # set while paused
    freed: asyncio.Event = field(default_factory=asyncio.Event)  # hungry since the last idle

    def __post_init__(self) -> None:
        if self.paused is None:
            self.resumed.set()
        else:
            self.pausing.set()

    # ---------------------------------------------------------------- queries

    @property
    def room(self) -> int:
        """How many more jobs may be leased: free slots, and ``ahead`` beyond them."""
        return self.concurrency + self.ahead - len(self.running) - len(self.ready)

    @property
    def hungry(self) -> bool:
        """Worth a poll: room for half as many jobs as there are slots, or room and no job left
        ahead to start when a slot frees (one poll for several jobs, not one per job, and no
        slot waits for a poll while jobs are due)."""
        free = self.room
        return free >= max(1, self.concurrency // 2) or (free > 0 and not self.ready)

    @property
    def stopped(self) -> bool:
        return self.stopping.is_set()

    @property
    def may_lease(self) -> int:
        """How many jobs a poll may lease now (0: none, paused or stopping)."""
        if self.stopped or self.paused is not None:
            return 0
        return max(self.room, 0)

    @property
    def may_report_aside(self) -> bool:
        """A handled job's reports may go after its slot frees: fewer than ``concurrency``
        jobs' reports are under way (beyond that the slot waits for its own)."""
        return len(self.under_way) < self.concurrency

    @property
    def idle(self) -> bool:
        """Nothing running, leased ahead or reporting."""
        return not self.running and not self.ready and not self.under_way

    def unfinished(self) -> list[asyncio.Task[None]]:
        """Running jobs and handled jobs' reports under way."""
        return [t for t in (*self.running, *self.under_way) if not t.done()]

    # ---------------------------------------------------------------- jobs

    def leased(self, job: LeasedJob, heartbeat: asyncio.Task[None]) -> None:
        self.ready.append((job, heartbeat))

    def next_ready(self) -> Ready | None:
        """The next job leased ahead, when a slot is free and delivery is not paused; the caller
        starts it and gives it its slot (``started``) before asking again."""
        if not self.ready or self.paused is not None or len(self.running) >= self.concurrency:
            return None
        return self.ready.popleft()

    def started(self, task: asyncio.Task[None]) -> None:
        if len(self.running) >= self.concurrency:
            raise RuntimeError("no free slot")
        self.running.add(task)

    def finished(self, task: asyncio.Task[None]) -> None:
        """The job's slot is free (start the next ready, then ``wake``)."""
        self.running.discard(task)

    def set_aside(self, task: asyncio.Task[None] | None) -> None:
        """A held job leaves its slot while it waits (start the next ready, then ``wake``)."""
        if task is not None:
            self.running.discard(task)

    def take_back(self, task: asyncio.Task[None] | None) -> None:
        """The held job goes on in a slot again, even beyond ``concurrency``."""
        if task is not None and not task.done():
            self.running.add(task)

    def wake(self) -> None:
        """Tell the poll loop waiting for room that there is (when the worker is hungry)."""
        if self.hungry:
            self.freed.set()

    def expect_room(self) -> None:
        """The poll loop is about to wait for ``freed``: only room made from now on wakes it."""
        self.freed.clear()

    def release_ready(self) -> list[Ready]:
        """Shutdown: the jobs leased ahead that never started, taken out (their heartbeats are
        the caller's to cancel; their leases run out)."""
        released = list(self.ready)
        self.ready.clear()
        return released

    # ---------------------------------------------------------------- reports

    def reporting(self, task: asyncio.Task[None]) -> None:
        """A handled job's reports went under way; ``reported`` when the task ends."""
        self.under_way.add(task)
        task.add_done_callback(self.reported)

    def reported(self, task: asyncio.Task[None]) -> None:
        self.under_way.discard(task)

    # ---------------------------------------------------------------- pause, stop

    def pause(self, refused: CredentialsRejected) -> bool:
        """Delivery pauses (``refused`` says why); True when it was not paused before."""
        first = self.paused is None
        self.paused = refused
        self.resumed.clear()
        self.pausing.set()
        return first

    def resume(self) -> CredentialsRejected | None:
        """Delivery goes on (start the ready jobs); returns why it was paused, if it was."""
        was, self.paused = self.paused, None
        self.pausing.clear()
        self.resumed.set()
        return was

    def stop(self) -> None:
        self.stopping.set()
