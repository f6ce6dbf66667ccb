"""One reminder per question card, before the question moves on (docs/delivery.md, "Reminders").

On the injected clock (the tests' start is Monday 6 July 2026, 09:00 UTC; Sarah is in London,
10:00 there): the reminder goes once at 75 % of the card's window, never in the person's quiet
hours (moved to their next working hour, or skipped when the window ends first), never after an
answer or a decline, never against the daily cap, and exactly once when two workers race on one
Redis or a worker dies between claiming it and sending it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from bot.channels.recording import RecordingChannel, SentMessage
from bot.core.models import (
    AnswerRequest,
    DeliveryKind,
    ReasonCode,
    Role,
)
from bot.core.models import (
    Channel as ContractChannel,
)
from bot.engine.hours import WorkingHours
from bot.engine.reminders import REMINDER_KIND, Reminder, due_at
from bot.engine.trail import Skip
from bot.metrics import REGISTRY
from bot.store.base import DeliveryKey, SlotState
from cards.views import QuestionView, ReminderView
from tests.conftest import CLARIFY_TOKEN
from tests.engine.conftest import REDIS_URL, Rig, clarify_settings, with_hours
from tests.engine.kit import Node, Restart, create, node
from tests.engine.reminder_victim import WINDOW_HOURS, FileChannel, sent_lines

ROOT = Path(__file__).resolve().parents[2]


def _exists(path: str) -> bool:
    return os.path.exists(path)

MONDAY = datetime(2026, 7, 6, 9, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def _people_with_zones(request: pytest.FixtureRequest) -> None:
    """The hours are the person's own: a baseline core tells no time zone (everyone is in
    UTC there), so the timed cases run against the full contract."""
    if "contract" in request.fixturenames and request.getfixturevalue("contract") == "baseline":
        pytest.skip("the baseline contract has no time zones: the cases are timed in London")


def reminders(rig: Rig | RecordingChannel, person_id: str = "p-sarah") -> list[SentMessage]:
    channel = rig if isinstance(rig, RecordingChannel) else rig.channel
    return [s for s in channel.to(person_id) if isinstance(s.message, ReminderView)]


def questions(rig: Rig, person_id: str = "p-sarah") -> list[SentMessage]:
    return [s for s in rig.channel.to(person_id) if isinstance(s.message, QuestionView)]


def counted(outcome: str) -> float:
    return REGISTRY.value("clarify_reminders_total", outcome=outcome)


async def test_reminder_once_at_75_percent_in_place_and_in_the_conversation(
        make_rig: Callable[..., Rig]) -> None:
    rig = make_rig(clarify=with_hours(escalation_window_hours=8))
    await rig.create(authority={"authored_by": ["p-sarah", "p-ahmed"]}, severity="high")
    await rig.burst()
    [card] = questions(rig)
    assert isinstance(card.message, QuestionView)
    # the lease (60 s) runs out, then the 8 h window: the card says when, in London time
    moves_on = MONDAY + timedelta(hours=8, seconds=60)
    assert card.message.moves_on_at == moves_on
    assert "Moves on to the next person on 6 July at 18:01." in rig.rendered(card)
    sent_before = counted("sent")

    await rig.later(timedelta(hours=5, minutes=59))  # 74.8 %: not yet
    assert reminders(rig) == [] and rig.channel.updates == []
    await rig.later(timedelta(minutes=2))  # past 75 % (15:00:45 UTC, 16:00 in London)
    [nudge] = reminders(rig)
    assert isinstance(nudge.message, ReminderView)
    assert nudge.message.near == card.ref  # in the card's conversation
    assert nudge.key == card.key.__class__(card.key.clarification_id, "p-sarah", 0,
                                          REMINDER_KIND)
    [update] = rig.channel.updates
    assert update.ref == card.ref and isinstance(update.view, QuestionView)
    assert update.view.reminded and update.view.moves_on_at == moves_on
    assert update.view.card_ref == card.message.card_ref  # its buttons still answer
    assert counted("sent") == sent_before + 1
    assert [ev.person_id for ev in rig.events("reminder_sent")] == ["p-sarah"]

    for _ in range(3):  # later passes, up to the window's end: nothing more
        await rig.later(timedelta(minutes=30))
    assert len(reminders(rig)) == 1 and len(rig.channel.updates) == 1
    assert len(reminders(rig, "p-ahmed")) == 0


async def test_reminder_lands_at_three_quarters_of_her_working_time(
        make_rig: Callable[..., Rig]) -> None:
    """48 h from Monday 10:00 in London: Sarah's working time before the question moves on is
    Monday 10-18, Tuesday 8-18 and Wednesday 8-10: about 20 h. Three quarters of it is spent on
    Tuesday at about 15:00 London, while she still has a working afternoon to answer (75 % of
    the wall time would be Tuesday 22:00, then Wednesday 08:00, two hours before it moves on)."""
    rig = make_rig(clarify=with_hours())
    await rig.create(authority={"authored_by": ["p-sarah", "p-ahmed"]}, severity="high")
    await rig.burst()
    deferred = counted("deferred")
    rig.clock.set(datetime(2026, 7, 7, 13, 59, tzinfo=UTC))  # Tuesday 14:59 London
    await rig.burst()
    assert reminders(rig) == []
    rig.clock.set(datetime(2026, 7, 7, 14, 2, tzinfo=UTC))  # 15:02 London
    await rig.burst()
    assert len(reminders(rig)) == 1
    assert counted("deferred") == deferred  # inside her hours already: never deferred


async def test_a_short_windows_reminder_lands_in_its_working_hours(
        make_rig: Callable[..., Rig]) -> None:
    """12 h from Monday 10:00 London: the question moves on at 22:00, after her day ends at
    18:00; three quarters of her 8 working hours is 16:00, so she is reminded then (75 % of the
    wall time, 19:00, was quiet, and the reminder was skipped)."""
    rig = make_rig(clarify=with_hours(escalation_window_hours=12))
    skipped = counted("quiet_hours")
    await rig.create(authority={"authored_by": ["p-sarah", "p-ahmed"]}, severity="high")
    await rig.burst()
    rig.clock.set(datetime(2026, 7, 6, 14, 59, tzinfo=UTC))  # 15:59 London
    await rig.burst()
    assert reminders(rig) == []
    rig.clock.set(datetime(2026, 7, 6, 15, 2, tzinfo=UTC))  # 16:02 London
    await rig.burst()
    assert len(reminders(rig)) == 1
    for _ in range(13):
        await rig.later(timedelta(hours=1))
    assert len(reminders(rig)) == 1  # never twice
    assert counted("quiet_hours") == skipped


async def test_reminder_due_while_the_workers_were_down_is_not_sent_in_quiet_hours(
        make_rig: Callable[..., Rig]) -> None:
    """10 h: due at 16:30 London, but no pass runs until 18:30 London (quiet), and the window
    ends at 20:01 London: no reminder, counted."""
    rig = make_rig(clarify=with_hours(escalation_window_hours=10))
    await rig.create(authority={"authored_by": ["p-sarah", "p-ahmed"]}, severity="high")
    await rig.burst()
    skipped = counted("quiet_hours")
    rig.clock.set(datetime(2026, 7, 6, 17, 30, tzinfo=UTC))
    await rig.burst()
    assert reminders(rig) == [] and rig.channel.updates == []
    assert counted("quiet_hours") == skipped + 1
    assert [ev.extra for ev in rig.events("reminder_skipped")] == [
        {"outcome": "quiet hours until it moves on"}]


async def test_no_reminder_after_an_answer(make_rig: Callable[..., Rig]) -> None:
    rig = make_rig(clarify=with_hours(escalation_window_hours=8))
    cid = await rig.create(authority={"authored_by": ["p-sarah", "p-ahmed"]}, severity="high")
    await rig.burst()
    await rig.bot.answer_clarification(clarification_id=cid, request=AnswerRequest(
        answer_index=0, responder="p-sarah", rights=Role.EDITOR, channel=ContractChannel.SLACK))
    settled = counted("settled")
    await rig.later(timedelta(hours=7))
    assert reminders(rig) == []
    assert counted("settled") == settled + 1


async def test_only_the_person_who_has_not_answered_is_reminded(
        make_rig: Callable[..., Rig]) -> None:
    """A critical question asks two at once; one confirms, the other gets the reminder."""
    rig = make_rig(clarify=with_hours(escalation_window_hours=8))
    cid = await rig.create(authority={"named": ["p-sarah", "p-ahmed"]}, severity="critical")
    await rig.burst()
    assert len(questions(rig)) == 1 and len(questions(rig, "p-ahmed")) == 1
    await rig.bot.answer_clarification(clarification_id=cid, request=AnswerRequest(
        answer_index=0, responder="p-sarah", rights=Role.EDITOR, channel=ContractChannel.SLACK))
    await rig.later(timedelta(hours=6, minutes=1))  # 17:01 in Berlin: still working hours
    assert reminders(rig) == []
    assert len(reminders(rig, "p-ahmed")) == 1


async def test_reminder_does_not_count_against_the_daily_cap(
        make_rig: Callable[..., Rig]) -> None:
    """A cap of two: card A, A's reminder, then card B still goes out (a counted reminder
    would have used the second message)."""
    rig = make_rig(clarify=with_hours(escalation_window_hours=8, per_person_daily_cap=2))
    await rig.create(authority={"authored_by": ["p-sarah", "p-ahmed"]}, severity="high")
    await rig.burst()
    await rig.later(timedelta(hours=6, minutes=1))
    assert len(reminders(rig)) == 1
    second = await rig.create(authority={"authored_by": ["p-sarah", "p-ahmed"]}, severity="high")
    await rig.burst()
    assert [s.key.clarification_id for s in questions(rig)][-1] == second
    assert rig.events("skipped") == []  # nobody DAILY_CAP_EXCEEDED
    # and the cap still holds for cards: a third is capped
    await rig.create(authority={"authored_by": ["p-sarah", "p-ahmed"]}, severity="high")
    await rig.burst()
    assert len(questions(rig)) == 2
    assert [ev.reason_code for ev in rig.events("skipped")] == [
        ReasonCode.DAILY_CAP_EXCEEDED]


async def test_no_reminder_after_a_decline(make_rig: Callable[..., Rig]) -> None:
    """The decline is on the core's trail: the reminder finds it and sends nothing."""
    rig = make_rig(clarify=with_hours(escalation_window_hours=8))
    cid = await rig.create(authority={"authored_by": ["p-sarah", "p-ahmed"]}, severity="high")
    await rig.burst()
    c = await rig.bot.get_clarification(clarification_id=cid)
    await rig.engine.trail.skipped(
        c, Skip("p-sarah", ReasonCode.CANDIDATE_DECLINED, "declined"), attempt=0,
        job_id=c.job_id)
    await rig.later(timedelta(hours=6, minutes=1))
    assert reminders(rig) == []


async def test_two_workers_racing_on_one_redis_send_one_reminder(
        restart: Callable[[RecordingChannel], Restart], dev_client: object) -> None:
    rig = restart(RecordingChannel())
    first, second = rig.worker("worker-a"), rig.worker("worker-b")
    await create(dev_client,  # type: ignore[arg-type]
                 authority={"authored_by": ["p-sarah", "p-ahmed"]}, severity="high")
    await first.worker.run_burst()
    rig.clock.set(datetime(2026, 7, 8, 7, 0, tzinfo=UTC))  # Wednesday 08:00 London
    await asyncio.gather(first.engine.reminders.flush(), second.engine.reminders.flush(),
                         first.engine.reminders.flush(), second.engine.reminders.flush())
    assert len(reminders(rig.channel)) == 1
    assert len(rig.channel.updates) == 1


class DiesSendingReminder(RecordingChannel):
    """The first reminder's send dies as a killed process does: before the platform has it
    (``before``), or after the platform took it but before the store recorded it."""

    def __init__(self, *, before: bool, can_find: bool = True) -> None:
        super().__init__(can_find=can_find)
        self.before = before
        self.died = False

    async def send(self, address, message, *, key):  # type: ignore[no-untyped-def]
        if key.kind == REMINDER_KIND and not self.died:
            self.died = True
            if self.before:
                raise asyncio.CancelledError  # killed: nothing reached the platform
            await super().send(address, message, key=key)
            raise asyncio.CancelledError  # killed right after the platform took it
        return await super().send(address, message, key=key)


@pytest.mark.parametrize(("before", "can_find", "expected"), [
    (True, True, 1),  # Slack: looked up, certainly absent: sent once by the next worker
    (False, True, 1),  # Slack: found by its metadata: recorded, not sent again
    (True, False, 0),  # Teams cannot look up: never sent twice (at most once)
    (False, False, 1),  # Teams: it went out before the crash; not sent again
])
async def test_reminder_never_twice_after_a_worker_dies_between_claim_and_send(
        restart: Callable[[RecordingChannel], Restart], dev_client: object,
        before: bool, can_find: bool, expected: int) -> None:
    channel = DiesSendingReminder(before=before, can_find=can_find)
    rig = restart(channel)
    killed = rig.worker("worker-killed")
    await create(dev_client,  # type: ignore[arg-type]
                 authority={"authored_by": ["p-sarah", "p-ahmed"]}, severity="high")
    await killed.worker.run_burst()
    rig.clock.set(datetime(2026, 7, 8, 7, 0, tzinfo=UTC))
    with pytest.raises(asyncio.CancelledError):
        await killed.engine.reminders.flush()
    successor = rig.worker("worker-next")
    await successor.engine.reminders.flush()  # the claim's lease still holds: nothing
    assert len(reminders(channel)) == (0 if before else 1)
    rig.clock.advance(timedelta(minutes=6))  # the claim's lease (300 s) ran out
    await successor.engine.reminders.flush()
    await successor.engine.reminders.flush()
    assert len(reminders(channel)) == expected


class DiesAfterTheQuestion(RecordingChannel):
    """The first question card reaches the platform, then the worker is killed: nothing after
    the send (its record, the job's report) happens in that process."""

    def __init__(self) -> None:
        super().__init__(can_find=True)
        self.died = False

    async def send(self, address, message, *, key):  # type: ignore[no-untyped-def]
        ref = await super().send(address, message, key=key)
        if key.kind == DeliveryKind.QUESTION.value and not self.died:
            self.died = True
            raise asyncio.CancelledError  # killed right after the platform took the card
        return ref


async def test_a_worker_killed_right_after_the_card_went_out_leaves_its_reminder_due(
        restart: Callable[[RecordingChannel], Restart], dev_client: object) -> None:
    channel = DiesAfterTheQuestion()
    rig = restart(channel)
    killed = rig.worker("worker-killed")
    await create(dev_client,  # type: ignore[arg-type]
                 authority={"authored_by": ["p-sarah", "p-ahmed"]}, severity="high")
    with contextlib.suppress(asyncio.CancelledError):
        await killed.worker.run_burst()
    assert len([s for s in channel.to("p-sarah") if isinstance(s.message, QuestionView)]) == 1
    successor = rig.worker("worker-next")
    await successor.worker.run_burst()  # the job's lease still holds
    rig.clock.set(datetime(2026, 7, 8, 7, 0, tzinfo=UTC))  # past 75 %, in working hours
    await successor.engine.reminders.flush()
    await successor.engine.reminders.flush()
    assert len(reminders(channel)) == 1  # reminded once, though the card was never recorded
    assert len([s for s in channel.to("p-sarah") if isinstance(s.message, QuestionView)]) == 1


def test_due_at_is_three_quarters_of_the_working_time_in_the_window() -> None:
    hours = WorkingHours()
    london, berlin = ZoneInfo("Europe/London"), ZoneInfo("Europe/Berlin")
    sent = MONDAY  # 10:00 in London
    # inside one working day: exactly 75 %
    assert due_at(sent, sent + timedelta(hours=8), percent=75, hours=hours,
                  zone=london) == sent + timedelta(hours=6)
    # 48 h: 20 working hours (Mon 10-18, Tue 8-18, Wed 8-10); 15 of them end Tue 15:00 London
    assert due_at(sent, sent + timedelta(hours=48), percent=75, hours=hours,
                  zone=london) == datetime(2026, 7, 7, 14, 0, tzinfo=UTC)
    # in New York the card came at 05:00: its hours are Mon 8-18, Tue 8-18, Wed 8-05:00 (none):
    # 20 h again, 15 of them end Tuesday 13:00 New York
    assert due_at(sent, sent + timedelta(hours=48), percent=75, hours=hours,
                  zone=ZoneInfo("America/New_York")) == datetime(2026, 7, 7, 17, 0, tzinfo=UTC)
    # a Friday 16:00 card (Berlin) with 48 h: only Friday 16-18 is working time before it moves
    # on on Sunday: reminded Friday 17:30, not never
    friday = datetime(2026, 7, 10, 14, 0, tzinfo=UTC)
    assert due_at(friday, friday + timedelta(hours=48), percent=75, hours=hours,
                  zone=berlin) == datetime(2026, 7, 10, 15, 30, tzinfo=UTC)
    # no working time before it moves on (Saturday to Sunday): none; reminders off: none
    saturday = datetime(2026, 7, 11, 9, 0, tzinfo=UTC)
    assert due_at(saturday, saturday + timedelta(hours=24), percent=75, hours=hours,
                  zone=berlin) is None
    assert due_at(sent, sent + timedelta(hours=8), percent=0, hours=hours, zone=london) is None
    # the working hours off (``working=False``): the wall-time point, moved to an open hour
    assert due_at(sent, sent + timedelta(hours=48), percent=75, hours=hours, zone=london,
                  working=False) == datetime(2026, 7, 8, 7, 0, tzinfo=UTC)


def test_the_index_names_nobody_and_reads_back() -> None:
    reminder = Reminder("clr-1|x", 2, datetime(2026, 7, 8, 9, 1, tzinfo=UTC), True)
    assert "p-" not in reminder.member
    assert Reminder.parse(reminder.member) == reminder
    assert Reminder.parse("garbage") is None
    json.dumps(reminder.member)


async def test_the_index_is_read_once_a_minute_at_most_yet_nothing_is_missed(
        make_rig: Callable[..., Rig]) -> None:
    """Housekeeping passes in a row read the due index once a minute at most (one store
    command), and a reminder this worker indexed meanwhile still goes out at its due time."""
    rig = make_rig(clarify=with_hours(escalation_window_hours=8))
    reminders_of = rig.engine.reminders
    calls: list[object] = []
    scan = rig.store.reminders_due

    async def counted_scan(**kwargs: object) -> list[str]:
        calls.append(kwargs)
        return await scan(**kwargs)  # type: ignore[arg-type]

    rig.store.reminders_due = counted_scan  # type: ignore[method-assign]
    await reminders_of.flush()
    await reminders_of.flush()
    assert len(calls) == 1
    await rig.create(authority={"authored_by": ["p-sarah", "p-ahmed"]}, severity="high")
    await rig.burst()  # this worker indexes the card's reminder, due at 15:00:45 UTC
    rig.clock.set(datetime(2026, 7, 6, 15, 0, 45, tzinfo=UTC))
    await reminders_of.flush()
    assert len(reminders(rig)) == 1


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["before", "after"])
async def test_reminder_never_twice_after_a_worker_process_is_sigkilled(
        restart: Callable[[RecordingChannel], Restart], dev_client: object, core_url: str,
        tmp_path: Path, mode: str) -> None:
    """A real worker process claims the due reminder, reserves it and is SIGKILLed at the
    nudge: before the "platform" has it, or after. The next worker, once the claim's lease ran
    out, sends it exactly once (not found: sent; found by its key: recorded, not sent)."""
    sent = tmp_path / "sent.jsonl"
    channel = FileChannel(path=sent)
    rig = restart(channel)

    def worker(name: str) -> Node:
        store = rig.make_store()
        rig.stores.append(store)
        return node(core=rig.client_for(CLARIFY_TOKEN), store=store, channel=channel,
                    sink=rig.sink, clock=rig.clock, worker_id=name,
                    clarify=clarify_settings(escalation_window_hours=WINDOW_HOURS))

    first = worker("worker-1")
    cid = await create(dev_client,  # type: ignore[arg-type]
                       authority={"authored_by": ["p-sarah", "p-ahmed"]}, severity="high")
    await first.worker.run_burst()
    assert [line["reminder"] for line in sent_lines(sent)] == [False]
    rig.clock.set(datetime(2026, 7, 6, 15, 1, tzinfo=UTC))  # past 75 %, 16:01 in London
    prefix = rig.stores[0]._keys.prefix
    victim = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.engine.reminder_victim", core_url, REDIS_URL, prefix,
        rig.clock.now().isoformat(), str(sent), mode, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
    hanging = f"{sent}.hanging"
    for _ in range(600):  # the process's own start-up: waited for, never timed
        if _exists(hanging) or victim.returncode is not None:
            break
        await asyncio.sleep(0.05)
    assert _exists(hanging), (await victim.communicate())[1].decode()[-2000:]
    victim.send_signal(signal.SIGKILL)
    await victim.wait()
    assert victim.returncode == -signal.SIGKILL
    nudges = [line for line in sent_lines(sent) if line["reminder"]]
    assert len(nudges) == (1 if mode == "after" else 0)
    slot = await rig.stores[0].slot(DeliveryKey(cid, "p-sarah", 0, REMINDER_KIND))
    assert slot is not None and slot.state is SlotState.RESERVED  # claimed, never recorded

    successor = worker("worker-2")
    await successor.engine.reminders.flush()  # the dead worker's claim still holds
    assert len([line for line in sent_lines(sent) if line["reminder"]]) == len(nudges)
    rig.clock.advance(timedelta(minutes=6))
    await successor.engine.reminders.flush()
    rig.clock.advance(timedelta(minutes=6))
    await successor.engine.reminders.flush()
    assert len([line for line in sent_lines(sent) if line["reminder"]]) == 1
