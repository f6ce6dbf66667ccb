"""Reliability of the delivery engine: three workers on one Redis, crashes around a send, no span
or question text in any trail, and a graceful shutdown; the reference core over HTTP, manual clock.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
import structlog

from bot.audit import MemorySink
from bot.channel import Address, Message
from bot.channels.recording import RecordingChannel, SentMessage
from bot.clock import ManualClock
from bot.core.client import CoreClient
from bot.core.models import (
    AnswerRequest,
    Clarification,
    ClarificationState,
    DeliveryKind,
    JobState,
    Person,
    Role,
    Severity,
)
from bot.core.models import (
    Channel as ContractChannel,
)
from bot.engine.handler import JobOutcome
from bot.process.worker import WorkerConfig
from bot.settings import ClarifySettings
from bot.store.base import DeliveryKey, SlotState
from bot.store.memory import MemoryStore
from bot.store.redis import RedisStore
from cards.views import DeadLetterDigestView, DigestView, QuestionView
from devcore.client import DevCoreClient
from tests.conftest import CLARIFY_TOKEN
from tests.engine.conftest import clarify_settings
from tests.engine.kit import (
    QUESTION_MARK,
    SPAN_MARK,
    DiesBeforeSend,
    Node,
    Restart,
    TeeSink,
    crash_after,
    create,
    node,
    read_lines,
)

LEASE = timedelta(seconds=60)
WINDOW = timedelta(hours=48)  # the acme escalation window = the clarify:temporal backoff
DIGEST_WAIT = timedelta(minutes=31)
PERSON_KINDS = ("question", "digest")  # what counts against a person's cap (steward mail does not)
CLARIFICATIONS = 200  # ~35 s of CPU: most of it the engine re-scanning every dead letter
LEGAL = ["p-sarah", "p-ahmed", "p-priya", "p-lee", "p-maria", "p-olga", "p-tom"]
FINANCE = ["p-tom", "p-jonas", "p-sarah", "p-olga"]


# ---------------------------------------------------------------- parts


@pytest.fixture(autouse=True)
def _quiet_logs() -> None:
    """Thousands of requests: keep warnings and errors only (the shared fixture resets this)."""
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))


@dataclass
class TimedChannel(RecordingChannel):
    """The recording channel, noting the (manual) time each message went out."""

    clock: ManualClock | None = None
    at: dict[str, datetime] = field(default_factory=dict)

    async def send(self, address: Address, message: Message, *, key: DeliveryKey) -> str:
        ref = await super().send(address, message, key=key)
        if self.clock is not None:
            self.at[ref] = self.clock.now()
        return ref


async def settle(nodes: list[Node], *, bot: CoreClient, clock: ManualClock) -> None:
    """Run every worker's burst at once, again while any job is still there to be leased."""
    while True:
        await asyncio.gather(*(n.worker.run_burst() for n in nodes))
        if not await leasable(bot, now=clock.now()):
            return


async def leasable(bot: CoreClient, *, now: datetime) -> bool:
    """Whether a poll now would lease something (read from the job list, leasing nothing)."""
    cursor: str | None = None
    while True:
        page = await bot.list_jobs(
            state=JobState.AVAILABLE, kind="clarify:", cursor=cursor, limit=200
        )
        if any(job.visible_at <= now for job in page.items):
            return True
        cursor = page.next_cursor
        if cursor is None:
            return False


async def assert_no_text_leak(bot: CoreClient, ids: list[str], sink_path: Path) -> None:
    """Neither the audit file nor the core's event and delivery trail holds span/question text."""
    lines = read_lines(sink_path)
    assert lines, "the run audited nothing"
    for line in lines:
        json.loads(line)
        assert SPAN_MARK not in line and QUESTION_MARK not in line
    for cid in ids:
        c = await bot.get_clarification(clarification_id=cid)
        assert SPAN_MARK in c.span_excerpt and QUESTION_MARK in c.question  # the marks are there
        trail = json.dumps(
            [ev.model_dump(mode="json") for ev in c.events]
            + [d.model_dump(mode="json") for d in c.deliveries]
        )
        assert SPAN_MARK not in trail and QUESTION_MARK not in trail
        assert c.span_excerpt not in trail and c.question not in trail


# ---------------------------------------------------------------- three workers


def _authority(rng: random.Random, pool: list[str]) -> dict[str, list[str]]:
    people = rng.sample(pool, k=rng.choice([1, 2, 3, 3, 4]))
    return {"authored_by": people[:1], "named": people[1:-1], "owned_by": people[1:][-1:]}


def _severity(rng: random.Random) -> str | None:
    roll = rng.random()
    return None if roll < 0.8 else "high" if roll < 0.93 else "critical"


def _carried(sent: SentMessage) -> list[tuple[str, str]]:
    """(clarification, card ref) of every question a message puts in front of its person."""
    if isinstance(sent.message, QuestionView):
        return [(sent.message.clarification_id, sent.message.card_ref)]
    if isinstance(sent.message, DigestView):
        return [(q.clarification_id, q.card_ref) for q in sent.message.questions]
    return []


def _listed(sent: list[SentMessage]) -> Counter[tuple[str, str]]:
    """(clarification, steward) of every dead-letter digest entry."""
    return Counter(
        (item.clarification_id, s.address.person_id)
        for s in sent
        if isinstance(s.message, DeadLetterDigestView)
        for item in s.message.items
    )


@dataclass
class Run:
    """What a multi-worker run left: every message, the audit trail, the core's records."""

    settings: ClarifySettings
    channel: TimedChannel
    sink: TeeSink
    records: dict[str, Clarification]
    people: dict[str, Person]

    def local_day(self, sent: SentMessage) -> str:
        zone = ZoneInfo(self.people[sent.address.person_id].time_zone or "UTC")
        return self.channel.at[sent.ref].astimezone(zone).date().isoformat()

    def asked(self) -> set[tuple[str, str]]:
        return {(cid, s.address.person_id) for s in self.channel.sent for cid, _ in _carried(s)}


def check_no_duplicates(run: Run) -> None:
    """No key twice over all messages, and no question card (by its card ref) twice to a person."""
    sent = run.channel.sent
    assert [k for k, n in Counter(s.key for s in sent).items() if n > 1] == []
    carried = Counter((s.address.person_id, ref) for s in sent for _, ref in _carried(s))
    assert [k for k, n in carried.items() if n > 1] == []


def check_caps(run: Run) -> None:
    """Per person and local day at most the cap (a digest is one message; steward mail is not
    counted); inside a window opened by a person's first normal card, at most threshold cards."""
    per_day = Counter(
        (s.address.person_id, run.local_day(s))
        for s in run.channel.sent
        if s.key.kind in PERSON_KINDS
    )
    assert per_day and max(per_day.values()) <= run.settings.per_person_daily_cap
    normal_at: dict[str, list[datetime]] = defaultdict(list)
    for s in run.channel.sent:
        c = run.records[s.key.clarification_id] if s.key.kind == "question" else None
        if c is not None and c.severity is Severity.NORMAL:
            normal_at[s.address.person_id].append(run.channel.at[s.ref])
    for times in normal_at.values():
        opened, count = None, 0
        for at in sorted(times):
            if opened is None or at >= opened + run.settings.digest_window:
                opened, count = at, 0
            count += 1
            assert count <= run.settings.digest_threshold


def check_accounted(run: Run) -> None:
    """Each candidate was asked (card or digest) or skipped with a reason code in both trails;
    each clarification then had one redacted escalation, was dead-lettered and listed to its
    steward; and every delivery the core holds names a message that exists, to that person."""
    sent = run.channel.sent
    by_ref = {s.ref: s for s in sent}
    asked = run.asked()
    skipped = {(ev.clarification_id, ev.person_id) for ev in run.sink.of("skipped")}
    listed = _listed(sent)
    escalations = Counter(
        s.key.clarification_id for s in sent if s.key.kind == "steward_escalation"
    )
    for cid, c in run.records.items():
        core_skips = {ev.person_id for ev in c.events if ev.type == "skipped" and ev.reason_code}
        for person in c.ranking:
            assert (cid, person) in asked or ((cid, person) in skipped and person in core_skips)
        assert escalations[cid] == 1
        assert [ev.type for ev in c.events].count("escalated") == 1
        assert c.state is ClarificationState.DEAD_LETTERED
        assert listed[(cid, c.workspace.steward_id)] >= 1
        for d in c.deliveries:
            message = by_ref[d.message_ref or ""]
            assert message.address.person_id == d.person_id
            listing = {n.clarification_id for n in getattr(message.message, "notices", ())}
            assert message.key.clarification_id == cid or cid in dict(_carried(message)) \
                or cid in listing  # a steward's notices go in one message per window
    for ev in run.sink.of("digested"):  # every question held for a digest reached its person
        assert (ev.clarification_id, ev.person_id) in asked
    assert run.sink.of("escalation_failed") == [] and run.sink.of("delivery_failed") == []


async def check_first_pass(bot: CoreClient, ids: list[str], sink: TeeSink) -> None:
    """After the first pass: each clarification was delivered to someone, waits in a digest
    (DIGESTED in both trails), or was skipped through and escalated (in both trails)."""
    digested = {ev.clarification_id for ev in sink.of("digested")}
    escalated = {ev.clarification_id for ev in sink.of("escalated")}
    assert digested and escalated
    for cid in ids:
        c = await bot.get_clarification(clarification_id=cid)
        trail = {ev.type for ev in c.events}
        direct = any(d.kind is DeliveryKind.QUESTION for d in c.deliveries)
        waiting = cid in digested and "digested" in trail
        assert direct or waiting or (cid in escalated and "escalated" in trail), cid


@pytest.mark.slow
async def test_three_workers_never_duplicate_and_respect_caps(
    core_url: str,
    clock: ManualClock,
    dev_client: DevCoreClient,
    bot_client: CoreClient, truth: CoreClient,
    client_for: Callable[[str], CoreClient],
    redis_store: Callable[[], RedisStore],
    tmp_path: Path,
) -> None:
    """Three workers on one Redis and one core: no duplicate card, caps and windows hold, and
    every clarification is accounted for, from its first pass to its dead letter."""
    settings = clarify_settings()
    channel = TimedChannel(clock=clock)
    sink = TeeSink(tmp_path / "audit.jsonl")
    nodes = [
        node(
            core=client_for(CLARIFY_TOKEN),
            store=redis_store(),
            channel=channel,
            sink=sink,
            clock=clock,
            worker_id=f"worker-{i}",
            clarify=settings,
        )
        for i in range(3)
    ]
    rng = random.Random(20260706)
    ids = []
    for _ in range(CLARIFICATIONS):
        legal = rng.random() < 0.85
        ids.append(
            await create(
                dev_client,
                authority=_authority(rng, LEGAL if legal else FINANCE),
                severity=_severity(rng),
                workspace="acme-legal" if legal else "acme-finance",
            )
        )
    await settle(nodes, bot=truth, clock=clock)
    await check_first_pass(truth, ids, sink)
    clock.advance(DIGEST_WAIT)
    await settle(nodes, bot=truth, clock=clock)
    for _ in range(3):  # every candidate's window, then the steward's
        clock.advance(WINDOW)
        await settle(nodes, bot=truth, clock=clock)
        clock.advance(DIGEST_WAIT)
        await settle(nodes, bot=truth, clock=clock)

    leased = sum(n.leased for n in nodes)
    outcomes: Counter[JobOutcome] = Counter()
    for n in nodes:
        outcomes.update(n.worker.outcomes)
        assert n.leased > 0  # all three did work
    assert sum(outcomes.values()) == leased and outcomes[JobOutcome.FAILED] == 0  # none crashed
    run = Run(
        settings=settings,
        channel=channel,
        sink=sink,
        records={cid: await truth.get_clarification(clarification_id=cid) for cid in ids},
        people={p: await truth.get_person(person_id=p) for p in {*LEGAL, *FINANCE}},
    )
    check_no_duplicates(run)
    check_caps(run)
    check_accounted(run)
    await assert_no_text_leak(truth, ids[:40], sink.path)


# ---------------------------------------------------------------- crashes around a send

# (severity, ranking, the delivery the crash hits): each comes back with the same key
SAME_KEY_CASES = [
    pytest.param(
        "critical",
        ["p-sarah", "p-ahmed", "p-lee"],
        ("p-ahmed", 1, "question"),
        id="critical-second-candidate",
    ),
]
# the steward's high-severity notice goes in a batched message: its crashes around the send are
# tests/engine/test_engine_steward_notices.py's


@pytest.mark.parametrize(("severity", "ranking", "hit"), SAME_KEY_CASES)
async def test_crash_after_send_reconciles_instead_of_resending(
    restart: Callable[[RecordingChannel], Restart],
    dev_client: DevCoreClient,
    bot_client: CoreClient, truth: CoreClient,
    severity: str,
    ranking: list[str],
    hit: tuple[str, int, str],
) -> None:
    """A worker dying between send and record leaves a reservation; the restarted worker finds
    the message on the platform, records its reference, and sends no second card."""
    rig = restart(RecordingChannel())
    cid = await create(dev_client, authority={"authored_by": ranking}, severity=severity)
    target = DeliveryKey(cid, *hit)
    crash_after(rig.channel, target)
    first = rig.worker("worker-crashes")
    await first.worker.run_burst()
    assert first.worker.outcomes == {}  # the job died with the process
    (original,) = [s for s in rig.channel.sent if s.key == target]
    slot = await rig.stores[0].slot(target)
    assert slot is not None and slot.state is SlotState.RESERVED and slot.message_ref is None

    rig.clock.advance(LEASE + WINDOW + timedelta(minutes=1))  # the job comes back at attempt 1
    fresh = rig.worker("worker-restarted")
    await fresh.worker.run_burst()
    assert fresh.worker.outcomes == {JobOutcome.ASKED: 1}
    assert [s.ref for s in rig.channel.sent if s.key == target] == [original.ref]
    to_person = [s for s in rig.channel.to(target.person_id) if s.key.clarification_id == cid]
    assert to_person == [original]
    slot = await rig.stores[1].slot(target)
    assert slot is not None and slot.state is SlotState.SENT and slot.message_ref == original.ref
    assert original.ref in {card.message_ref for card in await rig.stores[1].cards(cid)}
    c = await truth.get_clarification(clarification_id=cid)
    assert (target.person_id, original.ref) in {(d.person_id, d.message_ref) for d in c.deliveries}
    await assert_no_text_leak(truth, [cid], rig.sink.path)


@pytest.mark.parametrize(("severity", "ranking", "hit"), SAME_KEY_CASES)
async def test_crash_before_send_sends_exactly_once_after_restart(
    restart: Callable[[RecordingChannel], Restart],
    dev_client: DevCoreClient,
    bot_client: CoreClient, truth: CoreClient,
    severity: str,
    ranking: list[str],
    hit: tuple[str, int, str],
) -> None:
    """A worker dying after the reservation but before the send: the platform has no such
    message, so the restarted worker sends exactly one card and records it."""
    channel = DiesBeforeSend()
    rig = restart(channel)
    cid = await create(dev_client, authority={"authored_by": ranking}, severity=severity)
    target = DeliveryKey(cid, *hit)
    channel.key = target
    await rig.worker("worker-crashes").worker.run_burst()
    assert channel.died and [s for s in channel.sent if s.key == target] == []
    slot = await rig.stores[0].slot(target)
    assert slot is not None and slot.state is SlotState.RESERVED

    rig.clock.advance(LEASE + WINDOW + timedelta(minutes=1))
    await rig.worker("worker-restarted").worker.run_burst()
    (card,) = [s for s in channel.sent if s.key == target]
    to_person = [s for s in channel.to(target.person_id) if s.key.clarification_id == cid]
    assert to_person == [card]
    slot = await rig.stores[1].slot(target)
    assert slot is not None and slot.state is SlotState.SENT and slot.message_ref == card.ref
    c = await truth.get_clarification(clarification_id=cid)
    assert (target.person_id, card.ref) in {(d.person_id, d.message_ref) for d in c.deliveries}
    await assert_no_text_leak(truth, [cid], rig.sink.path)


async def test_crash_after_first_card_never_resends_it(
    restart: Callable[[RecordingChannel], Restart],
    dev_client: DevCoreClient,
) -> None:
    """A crash right after ranking[0]'s card: the job returns at attempt 1 (the lease expiry
    counts as an attempt), so ranking[1] is asked next and ranking[0] never gets a second card."""
    rig = restart(RecordingChannel())
    cid = await create(dev_client, authority={"authored_by": ["p-sarah", "p-ahmed"]})
    crash_after(rig.channel, DeliveryKey(cid, "p-sarah", 0, "question"))
    await rig.worker("worker-crashes").worker.run_burst()
    rig.clock.advance(LEASE + WINDOW + timedelta(minutes=1))
    await rig.worker("worker-restarted").worker.run_burst()
    assert [(s.address.person_id, s.key.attempt) for s in rig.channel.sent] == [
        ("p-sarah", 0),
        ("p-ahmed", 1),
    ]


async def test_crash_after_first_card_is_reconciled_later(
    restart: Callable[[RecordingChannel], Restart],
    dev_client: DevCoreClient,
    bot_client: CoreClient, truth: CoreClient,
) -> None:
    """The card a crashed worker sent at attempt 0 ends recorded (slot SENT with its reference,
    a card record, a delivery in the core) once a fresh worker has handled the job."""
    rig = restart(RecordingChannel())
    cid = await create(dev_client, authority={"authored_by": ["p-sarah", "p-ahmed"]})
    target = DeliveryKey(cid, "p-sarah", 0, "question")
    crash_after(rig.channel, target)
    await rig.worker("worker-crashes").worker.run_burst()
    (original,) = rig.channel.sent
    rig.clock.advance(LEASE + WINDOW + timedelta(minutes=1))
    fresh = rig.worker("worker-restarted")
    await fresh.worker.run_burst()
    slot = await rig.stores[1].slot(target)
    assert slot is not None and slot.state is SlotState.SENT and slot.message_ref == original.ref
    assert original.ref in {card.message_ref for card in await rig.stores[1].cards(cid)}
    c = await truth.get_clarification(clarification_id=cid)
    assert ("p-sarah", original.ref) in {(d.person_id, d.message_ref) for d in c.deliveries}


async def test_crash_after_digest_send_reconciles_the_digest(
    restart: Callable[[RecordingChannel], Restart],
    dev_client: DevCoreClient,
    bot_client: CoreClient, truth: CoreClient, contract: str,
) -> None:
    """A worker dying right after a digest went out: once the batch claim lapses a fresh worker
    finds the digest, records it for every question, and sends no second digest."""
    rig = restart(RecordingChannel())
    ids = [await create(dev_client, authority={"authored_by": ["p-ahmed"]}) for _ in range(5)]
    first = rig.worker("worker-crashes")
    await first.worker.run_burst()
    assert [s.key.kind for s in rig.channel.sent] == ["question"] * 3
    direct = {s.key.clarification_id for s in rig.channel.sent}

    def hook(sent: SentMessage) -> None:
        if sent.key.kind == "digest":
            raise RuntimeError("process died after the platform accepted the digest")

    rig.channel.after_send = hook
    rig.clock.advance(DIGEST_WAIT)
    # the flush dies between send and record; the worker survives it, the batch stays claimed
    await first.worker.run_burst()
    rig.channel.after_send = None
    (digest,) = [s for s in rig.channel.sent if s.key.kind == "digest"]
    assert isinstance(digest.message, DigestView)
    held = [q.clarification_id for q in digest.message.questions]
    assert sorted(held) == sorted(set(ids) - direct)

    rig.clock.advance(timedelta(minutes=6))  # past the batch claim (5 minutes)
    await rig.worker("worker-restarted").worker.run_burst()
    assert [s for s in rig.channel.sent if s.key.kind == "digest"] == [digest]
    for cid in held:
        slot = await rig.stores[1].slot(DeliveryKey(cid, "p-ahmed", 0, "question"))
        assert slot is not None and slot.state is SlotState.SENT and slot.message_ref == digest.ref
        c = await truth.get_clarification(clarification_id=cid)
        # a baseline delivery report names no kind: the core counts the person as asked
        kind = DeliveryKind.DIGEST if contract == "full" else DeliveryKind.QUESTION
        assert [(d.kind, d.message_ref) for d in c.deliveries] == [(kind, digest.ref)]
    await assert_no_text_leak(truth, ids, rig.sink.path)


@dataclass
class Interleaved(RecordingChannel):
    """The first send of ``kind`` first runs ``meanwhile`` (another worker), before it exists."""

    kind: str = ""
    meanwhile: Callable[[], Awaitable[object]] | None = None

    async def send(self, address: Address, message: Message, *, key: DeliveryKey) -> str:
        if key.kind == self.kind and self.meanwhile is not None:
            run, self.meanwhile = self.meanwhile, None
            await run()
        return await super().send(address, message, key=key)


async def test_dead_letters_listed_once_when_two_workers_report_at_once(
    restart: Callable[[RecordingChannel], Restart],
    dev_client: DevCoreClient,
) -> None:
    """Two workers reporting dead letters at the same moment list each one to its steward once."""
    channel = Interleaved(kind="dead_letter")
    rig = restart(channel)
    ids = [await create(dev_client, authority={"authored_by": ["p-olga"]}) for _ in range(2)]
    first, second = rig.worker("worker-a"), rig.worker("worker-b")
    await first.worker.run_burst()  # nobody reachable: escalated at once, last attempt
    rig.clock.advance(LEASE + timedelta(seconds=1))  # its lease runs out: dead letters
    channel.meanwhile = second.engine.dead_letters.report
    await first.engine.dead_letters.report()
    listed = _listed(channel.sent)
    assert listed == {(cid, "p-maria"): 1 for cid in ids}, listed


# ---------------------------------------------------------------- no text in any trail


async def test_no_span_or_question_text_in_audit_or_core_trail(
    dev_client: DevCoreClient,
    bot_client: CoreClient, truth: CoreClient,
    clock: ManualClock,
    tmp_path: Path,
) -> None:
    """Across cards, digests, skips, high notices, conflicts, escalations and dead letters, the
    JSON-lines audit file and the core's event trail never carry span or question text."""
    channel = RecordingChannel()
    sink = TeeSink(tmp_path / "audit.jsonl")
    rig = node(
        core=bot_client,
        store=MemoryStore(clock=clock),
        channel=channel,
        sink=sink,
        clock=clock,
        worker_id="worker-1",
    )
    ids = [await create(dev_client, authority={"authored_by": ["p-sarah"]}) for _ in range(5)]
    ids.append(await create(dev_client, authority={"authored_by": ["p-tom", "p-olga"]}))
    ids.append(await create(dev_client, authority={"authored_by": ["p-ahmed"]}, severity="high"))
    critical = await create(
        dev_client, authority={"authored_by": ["p-ahmed", "p-priya", "p-lee"]}, severity="critical"
    )
    ids.append(critical)
    await rig.worker.run_burst()
    for person, index in (("p-ahmed", 0), ("p-lee", 1)):  # two editors disagree: conflicted
        await bot_client.answer_clarification(
            clarification_id=critical,
            request=AnswerRequest(
                answer_index=index, responder=person, rights=Role.EDITOR,
                channel=ContractChannel.SLACK
            ),
        )
    for _ in range(4):
        clock.advance(DIGEST_WAIT)
        await rig.worker.run_burst()
        clock.advance(WINDOW)
        await rig.worker.run_burst()
    kinds = {s.key.kind for s in channel.sent}
    assert {
        "question",
        "digest",
        "steward_escalation",
        "steward_notices",
        "steward_conflict",
        "dead_letter",
    } <= kinds
    assert {ev.type for ev in sink.memory.events} >= {
        "skipped",
        "digested",
        "escalated",
        "dead_letter_reported",
        "delivery",
    }
    await assert_no_text_leak(truth, ids, sink.path)


# ---------------------------------------------------------------- graceful shutdown


@dataclass
class GatedChannel(RecordingChannel):
    """A send that waits until the test lets it through."""

    entered: asyncio.Event = field(default_factory=asyncio.Event)
    gate: asyncio.Event = field(default_factory=asyncio.Event)

    async def send(self, address: Address, message: Message, *, key: DeliveryKey) -> str:
        self.entered.set()
        await self.gate.wait()
        return await super().send(address, message, key=key)


async def test_stop_finishes_the_in_flight_job_and_leases_nothing_more(
    dev_client: DevCoreClient,
    bot_client: CoreClient, truth: CoreClient,
    clock: ManualClock,
) -> None:
    """``stop()`` during a send: ``run()`` leases nothing more, waits for the job, then returns."""
    channel = GatedChannel()
    store = MemoryStore(clock=clock)
    config = WorkerConfig(
        concurrency=1, poll_interval_seconds=0.01, heartbeat_seconds=3600, housekeeping_every=1
    )
    rig = node(
        core=bot_client,
        store=store,
        channel=channel,
        sink=MemorySink(),
        clock=clock,
        worker_id="worker-1",
        config=config,
    )
    cid = await create(dev_client, authority={"authored_by": ["p-sarah"]})
    running = asyncio.create_task(rig.worker.run())
    await asyncio.wait_for(channel.entered.wait(), timeout=10)  # a guard, not a pacing sleep
    rig.worker.stop()
    waiting = await create(dev_client, authority={"authored_by": ["p-ahmed"]})
    for _ in range(50):
        await asyncio.sleep(0)
    assert not running.done()  # held by the in-flight send
    assert channel.sent == []
    channel.gate.set()
    await asyncio.wait_for(running, timeout=10)
    assert [(s.key.clarification_id, s.address.person_id) for s in channel.sent] == [
        (cid, "p-sarah")
    ]
    assert rig.worker.outcomes == {JobOutcome.ASKED: 1} and rig.leased == 1
    slot = await store.slot(DeliveryKey(cid, "p-sarah", 0, "question"))
    assert slot is not None and slot.state is SlotState.SENT
    c = await truth.get_clarification(clarification_id=cid)
    assert [d.person_id for d in c.deliveries] == ["p-sarah"]
    later = await truth.get_clarification(clarification_id=waiting)
    job = await truth.get_job(job_id=later.job_id or "")
    assert (job.state, job.attempts) == (JobState.AVAILABLE, 0)
