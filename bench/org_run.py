"""One run of bench/org.py: the company's weeks through the real engine, on a moved clock.

A fresh reference core (the company's scenario, served over HTTP in this process), a memory
store, the engine as production wires it (``build_engine``) on the company's platform
(``org_platform.OrgPlatform``), and a manual clock moved in steps from the run's start: at each
step the questions that arrived and the answers given meanwhile are applied at their own
simulated time (the clock set to each), then the worker does whatever is due
(``run_burst``). Nobody sleeps.
"""

from __future__ import annotations

import heapq
import itertools
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from org_model import TEAM, TENANT, Company, Person, Question, reply, request, scenario
from org_platform import OrgPlatform, kind_of

from bot.audit import AuditEvent
from bot.channels.recording import SentMessage
from bot.chat import Callback
from bot.clock import ManualClock
from bot.core.client import CoreClient, RetryPolicy
from bot.core.models import (
    CreateClarificationRequest,
    JobState,
    ResolvedPerson,
    SlackIdentity,
    TeamsIdentity,
)
from bot.engine import evidence
from bot.process.runtime import EngineParts, build_engine
from bot.process.worker import WorkerConfig
from bot.settings import ClarifySettings, SlackSettings, SlackWorkspace
from bot.store.memory import MemoryStore
from cards.views import DigestView, QuestionView, ReminderView
from devcore.client import DevCoreClient
from devcore.core import ReferenceCore, load_scenario
from devcore.demo import answer_now
from devcore.directory import Directory
from devcore.server import serve

CLARIFY_TOKEN = "org-bench-clarify-token"
DEV_TOKEN = "org-bench-dev-token"
SLACK = SlackSettings(workspaces=(SlackWorkspace(team_id=TEAM, tenant=TENANT),))


@dataclass
class CountingSink:
    """The audit sink: counts each skip by its reason code (nothing else is kept)."""

    skips: Counter[str] = field(default_factory=Counter)
    digested: int = 0

    def write(self, event: AuditEvent) -> None:
        if event.type == "skipped":
            self.skips[event.reason_code.value if event.reason_code else "-"] += 1
        elif event.type == "digested":
            self.digested += 1


@dataclass
class Outcome:
    """What became of one question by the end of the run."""

    n: int
    severity: str
    created: datetime
    zone: str  # the first ranked person's: its working hours count the time to bound
    status: str  # bound, conflicted, dead_lettered, escalated, open, not_asked (low)
    bound_at: datetime | None


@dataclass
class Raw:
    """A run's record, measured by ``org_measure``."""

    name: str
    outcomes: list[Outcome]
    platform: OrgPlatform
    skips: Counter[str]
    digested: int
    taps: Counter[str]
    seconds: float
    simulated_days: float
    away_asked: int
    numbers: dict[str, int]  # clarification id -> question n


class IndexedDirectory(Directory):
    """The reference core's directory with its people indexed by chat user: ``resolve`` finds
    what the directory's own scan of every person finds (the same matches, so the same person
    or the same refusal) without reading thousands of people per call. The run never changes
    the directory after loading it."""

    __slots__ = ("by_user",)

    def __init__(self, directory: Directory) -> None:
        super().__init__(tenants=directory.tenants, workspaces=directory.workspaces,
                         people=directory.people, tokens=directory.tokens,
                         dev_tokens=directory.dev_tokens)
        self.by_user: dict[str, list[tuple[str, str]]] = defaultdict(list)
        for key, person in self.people.items():
            for user in {*(a.user_id for a in person.aliases.slack),
                         *(a.aad_object_id for a in person.aliases.teams)}:
                self.by_user[user].append(key)

    def resolve(self, *, tenant_id: str, identity: SlackIdentity | TeamsIdentity
                ) -> ResolvedPerson:
        user = identity.user_id if isinstance(identity, SlackIdentity) \
            else identity.aad_object_id
        scoped = Directory(people={k: self.people[k] for k in self.by_user.get(user, ())
                                   if k[0] == tenant_id})
        return scoped.resolve(tenant_id=tenant_id, identity=identity)


async def _no_sleep(_: float) -> None:
    return None


@dataclass
class People:
    """The people's side of the run: what each was sent, and when each answers."""

    org: Company
    clock: ManualClock
    end: datetime
    heap: list[tuple[datetime, int, str, Any]] = field(default_factory=list)
    seq: itertools.count[int] = field(default_factory=itertools.count)
    number: dict[str, int] = field(default_factory=dict)  # clarification id -> question n
    cards: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)
    pending: dict[tuple[str, str], datetime] = field(default_factory=dict)
    done: set[tuple[str, str]] = field(default_factory=set)

    def push(self, at: datetime, what: str, data: Any) -> None:
        heapq.heappush(self.heap, (at, next(self.seq), what, data))

    def sent(self, sent: SentMessage, person: Person) -> None:
        """A message reached the person: each question in it may be answered later."""
        now = self.clock.now()
        message = sent.message
        if isinstance(message, QuestionView | DigestView):
            views = message.questions if isinstance(message, DigestView) else (message,)
            for view in views:
                key = (person.person_id, view.clarification_id)
                self.cards[key] = (view.card_ref, sent.ref)
                self._schedule(key, reply(self.org, person, self.number[key[1]], now,
                                          reminded=False))
        elif isinstance(message, ReminderView):
            key = (person.person_id, message.clarification_id)
            if key in self.cards:
                self._schedule(key, reply(self.org, person, self.number[key[1]], now,
                                          reminded=True))

    def _schedule(self, key: tuple[str, str], when: datetime | None) -> None:
        if when is None or when >= self.end or key in self.done:
            return
        earlier = self.pending.get(key)
        if earlier is not None and earlier <= when:
            return
        self.pending[key] = when
        self.push(when, "answer", key)


async def run(org: Company, name: str, clarify: dict[str, Any], *, step: timedelta,
              drain: timedelta) -> Raw:
    started = time.perf_counter()
    knobs = org.knobs
    clock = ManualClock(knobs.start)
    core = ReferenceCore(clock=clock)
    load_scenario(core, scenario(org, clarify_token=CLARIFY_TOKEN, dev_token=DEV_TOKEN))
    core.directory = IndexedDirectory(core.directory)
    end = knobs.end + drain
    people = People(org=org, clock=clock, end=end)
    platform = OrgPlatform(org=org, clock=clock, on_sent=people.sent)
    sink = CountingSink()
    taps: Counter[str] = Counter()
    created: dict[int, str] = {}
    for q in org.questions:
        people.push(q.at, "arrive", q)
    async with serve(core) as url, DevCoreClient(base_url=url, token=DEV_TOKEN) as dev, \
            CoreClient(base_url=url, token=CLARIFY_TOKEN, retry=RetryPolicy(max_attempts=1),
                       clock=clock) as client:
        engine = build_engine(EngineParts(
            core=client, store=MemoryStore(clock=clock), channels={"slack": platform},
            clarify=ClarifySettings(enabled=True, channels=("slack",), **clarify),
            clock=clock, audit_sink=sink, slack=SLACK, sleep=_no_sleep,
            worker=WorkerConfig(concurrency=8, heartbeat_seconds=3600)))
        away = getattr(engine, "away", None)  # a build without [clarify.away] has none
        if away is not None:
            # the away lookups' memory (10 minutes a person) counted on the simulated clock:
            # the engine keeps it by time.monotonic, which moving the clock does not move, so a
            # lookup would otherwise stand for days of the simulation
            away.monotonic = lambda: clock.now().timestamp()

        async def arrive(q: Question) -> None:
            made = await dev.create_clarification(
                request=CreateClarificationRequest.model_validate(request(q)))
            created[q.n] = made.clarification.id
            people.number[made.clarification.id] = q.n

        async def answer(key: tuple[str, str]) -> None:
            person_id, cid = key
            people.pending.pop(key, None)
            c = core.records[cid].model
            if evidence.settled(c) or any(r.responder == person_id for r in c.responses):
                taps["not needed"] += 1  # their card shows it settled: nothing to answer
                return
            card_ref, message_ref = people.cards[key]
            person = org.by_id[person_id]
            receipt = await answer_now(engine.answers, Callback(
                platform="slack", tenant_id=TENANT, user_id=person.user_id, team_id=TEAM,
                enterprise_id=None, aad_tenant_id=None, clarification_id=cid,
                card_ref=card_ref, message_ref=message_ref, answer_index=0,
                received_at=clock.now()))
            people.done.add(key)
            taps[receipt.verdict.value] += 1

        now = knobs.start
        await engine.worker.run_burst()
        while now < end:
            now = min(now + step, end)
            while people.heap and people.heap[0][0] <= now:
                at, _, what, data = heapq.heappop(people.heap)
                if what == "answer" and people.pending.get(data) != at:
                    continue  # a reminder brought it forward: answered at the earlier time
                clock.set(max(at, clock.now()))
                await (arrive(data) if what == "arrive" else answer(data))
            clock.set(now)
            await engine.worker.run_burst()
        await engine.answers.followups.drain()
    escalated = {cid for logged in platform.log if logged.kind == "escalation"
                 for cid in logged.questions}
    outcomes = [_outcome(org, core, q, created.get(q.n), escalated) for q in org.questions]
    return Raw(name=name, outcomes=outcomes, platform=platform, skips=sink.skips,
               digested=sink.digested, taps=taps, seconds=time.perf_counter() - started,
               simulated_days=(end - knobs.start).total_seconds() / 86400,
               away_asked=platform.away_lookups, numbers=dict(people.number))


def _outcome(org: Company, core: ReferenceCore, q: Question, cid: str | None,
             escalated: set[str]) -> Outcome:
    zone = org.by_id[q.candidates[0]].zone
    if cid is None:  # never created: cannot happen inside the run's days
        return Outcome(q.n, q.severity, q.at, zone, "open", None)
    c = core.records[cid].model
    job = core.jobs.jobs.get(c.job_id) if c.job_id else None
    if q.severity == "low":
        status = "not_asked"
    elif c.bound_fact_version_tx is not None:
        status = "bound"
    elif evidence.settled(c):
        status = "conflicted"
    elif job is not None and job.state is JobState.DEAD_LETTERED:
        status = "dead_lettered"
    elif cid in escalated:
        status = "escalated"
    else:
        status = "open"
    return Outcome(q.n, q.severity, q.at, zone, status, c.bound_fact_version_tx)


__all__ = ["Outcome", "Raw", "kind_of", "run"]
