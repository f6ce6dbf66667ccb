"""A store that lost its data while a question was held (docs/reliability.md, "A store that lost its
data"), on the injected clock: the reference core over HTTP, the engine as production wires it,
memory and Redis.

The clock starts on Tuesday 1 December 2026 at 01:00 UTC (02:00 in Berlin, where Ahmed is): a
normal question for him is held for 08:00 there. The store then loses everything (Redis
restarted without persistence: every key under the prefix gone; memory: ``forget``), and the
worker's watch notices it at its next housekeeping pass (bot.process.storewatch).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest
import redis.asyncio as aioredis

from bot.clock import ManualClock
from bot.core.extensions import Extension
from bot.core.models import ReasonCode
from bot.engine.holds import HOLD_LEASE_SECONDS, LOST_TURN, Hold
from bot.metrics import REGISTRY
from bot.process.storewatch import StoreWatch
from bot.store.base import Store
from bot.store.memory import MemoryStore
from bot.store.redis import RedisStore
from cards.views import QuestionView, ReminderView
from tests.engine.conftest import Rig, clarify_settings
from tests.engine.test_working_hours import (
    BERLIN_8AM,
    STEP,
    TUESDAY_1AM,
    first_card,
    hours_rig,
    until_sent,
)

pytestmark = pytest.mark.full_contract
WINDOW = timedelta(hours=48)  # acme's escalation window


async def lose(store: Store, *, remembering: bool = True) -> None:
    """Everything the store held is gone; the process remembers what it remembered (or, with
    ``remembering=False``, nothing: a process that never saw the hold)."""
    if isinstance(store, MemoryStore):
        store.forget()
        if not remembering:
            store._memory_holds.clear()
        return
    assert isinstance(store, RedisStore)
    client: aioredis.Redis = store._redis  # type: ignore[assignment]
    async for name in client.scan_iter(match=f"{store._keys.prefix}:*", count=500):
        await client.delete(name)
    if not remembering:
        store._remembered_holds.clear()


def watch_of(rig: Rig) -> StoreWatch:
    watch = rig.engine.storewatch
    assert watch is not None
    return watch


class Mono:
    """The watch's monotonic clock, moved by the test."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def held(rig: Rig, authority: dict[str, list[str]]) -> tuple[str, str]:
    """A question held for Ahmed's 08:00; the watch has seen the store's generation."""
    cid = await rig.create(authority=authority, severity="normal")
    await rig.burst()
    [(job_id, text)] = await rig.store.holds_due(now=BERLIN_8AM + timedelta(days=1))
    assert Hold.loads(text).due == BERLIN_8AM and rig.channel.sent == []
    assert watch_of(rig).generation is not None
    return cid, job_id


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(TUESDAY_1AM)


def value(name: str, **labels: str) -> float:
    return REGISTRY.value(name, **labels)


async def test_a_held_question_given_back_after_the_store_lost_it_goes_out_at_8_once(
        make_rig: Callable[..., Rig]) -> None:
    rig = hours_rig(make_rig)
    lost, recovered = (value("clarify_store_data_lost_total", kind="emptied"),
                       value("clarify_holds_recovered_total"))
    holds_lost = value("clarify_holds_lost_total")
    cid, job_id = await held(rig, {"authored_by": ["p-ahmed"]})
    before = watch_of(rig).generation
    assert before is not None

    await lose(rig.store)
    assert await rig.store.hold_text(job_id) is None
    await rig.later(STEP)  # the next housekeeping pass notices, then looks at the holds
    assert value("clarify_store_data_lost_total", kind="emptied") == lost + 1
    assert value("clarify_holds_recovered_total") == recovered + 1
    assert await rig.store.hold_text(job_id) is not None
    after = watch_of(rig).generation
    assert after is not None and after.id != before.id and after.origin == "after_loss"
    [loss] = rig.events("store_data_lost")
    assert loss.extra["kind"] == "emptied" and loss.extra["holds"] == "1"
    assert loss.extra["previous"] == before.id and loss.extra["generation"] == after.id
    [given] = rig.events("hold_recovered", cid)
    assert given.person_id == "p-ahmed" and given.attempt == 0

    assert await until_sent(rig, "p-ahmed", by=BERLIN_8AM + STEP) == BERLIN_8AM
    for _ in range(4):
        await rig.later(STEP)
    assert len(rig.channel.to("p-ahmed")) == 1
    c = await rig.bot.get_clarification(clarification_id=cid)
    assert [(d.person_id, d.attempt, d.delivered_at) for d in c.deliveries] == [
        ("p-ahmed", 0, BERLIN_8AM)]
    assert not [ev for ev in c.events if ev.type == "skipped"]
    assert value("clarify_holds_lost_total") == holds_lost
    # the loss is audited once, however many passes follow
    assert len(rig.events("store_data_lost")) == 1


async def test_a_hold_no_process_remembers_is_counted_lost_with_the_true_reason(
        make_rig: Callable[..., Rig]) -> None:
    """The store lost the hold and no worker remembers it (its worker died too): the core
    still says the bot holds the job on a held lease. After two more checks with nobody giving
    it back it is counted lost and audited; when the lease has run out and the core hands the
    job again, Ahmed's skip says the store lost its data, and Sarah is asked at her 08:00."""
    rig = hours_rig(make_rig)
    mono = Mono()
    watch_of(rig).monotonic = mono
    holds_lost = value("clarify_holds_lost_total")
    cid, job_id = await held(rig, {"authored_by": ["p-ahmed"], "named": ["p-sarah"]})
    job = rig.core.jobs.jobs[job_id]
    lease_end = job.lease_expires_at
    assert lease_end is not None

    await lose(rig.store, remembering=False)
    await rig.later(STEP)  # noticed; the core's leased job is a suspect, not yet lost
    assert len(rig.events("store_data_lost")) == 1
    assert value("clarify_holds_lost_total") == holds_lost
    mono.now += 2 * watch_of(rig).interval_seconds
    await rig.later(STEP)
    assert value("clarify_holds_lost_total") == holds_lost + 1
    [gone] = rig.events("hold_lost", cid)
    assert gone.person_id == "p-ahmed" and gone.attempt == 0 and gone.job_id == job_id
    assert "lost its data" in gone.message
    assert await rig.store.kv_get(LOST_TURN, f"{cid}|0") == "1"
    c = await rig.bot.get_clarification(clarification_id=cid)
    assert any(ev.type == "hold_lost" and ev.person_id == "p-ahmed" for ev in c.events)

    # nobody extends the lease: it runs out, the core's backoff brings the job back
    rig.clock.set(lease_end + WINDOW + STEP)
    await rig.burst()
    london_8am = BERLIN_8AM + timedelta(days=2, hours=1)
    assert await until_sent(rig, "p-sarah", by=london_8am + STEP) == london_8am
    assert first_card(rig.channel.sent, "p-ahmed") is None
    c = await rig.bot.get_clarification(clarification_id=cid)
    [skip] = [ev for ev in c.events if ev.type == "skipped"]
    assert (skip.person_id, skip.reason_code) == ("p-ahmed", ReasonCode.DELIVERY_FAILED)
    assert "store (Redis) lost its data" in skip.message
    assert "a worker stopped" not in skip.message
    assert skip.message.startswith("Candidate was not asked")


async def test_a_card_on_the_core_record_is_never_sent_again_after_a_loss(
        make_rig: Callable[..., Rig]) -> None:
    """A hold that comes back after its card went out (an older snapshot restored, a stale
    memory) finds the store without the card's record; the core has it: not sent again, and
    its record is kept again for the card's refresh."""
    rig = hours_rig(make_rig)
    cid, job_id = await held(rig, {"authored_by": ["p-ahmed"]})
    text = await rig.store.hold_text(job_id)
    assert text is not None
    recovered = value("clarify_store_recovered_total", what="card")
    assert await until_sent(rig, "p-ahmed", by=BERLIN_8AM + STEP) == BERLIN_8AM
    assert await rig.store.hold_text(job_id) is None

    await lose(rig.store)
    await rig.store.hold_put(job_id, text, at=rig.clock.now())  # the older hold, back
    await rig.burst()
    assert len(rig.channel.to("p-ahmed")) == 1
    assert value("clarify_store_recovered_total", what="card") == recovered + 1
    [card] = await rig.store.cards(cid)
    assert card.delivery.person_id == "p-ahmed" and card.platform == "slack"
    assert any(ev.extra.get("recovered") == "core_record" for ev in rig.events("delivery", cid))


async def test_a_worker_whose_store_never_lost_anything_counts_nothing(
        make_rig: Callable[..., Rig]) -> None:
    rig = hours_rig(make_rig)
    lost = sum(value("clarify_store_data_lost_total", kind=k)
               for k in ("emptied", "replaced", "reset", "rolled_back"))
    await held(rig, {"authored_by": ["p-ahmed"]})
    assert await until_sent(rig, "p-ahmed", by=BERLIN_8AM + STEP) == BERLIN_8AM
    assert sum(value("clarify_store_data_lost_total", kind=k)
               for k in ("emptied", "replaced", "reset", "rolled_back")) == lost
    assert rig.events("store_data_lost") == [] and rig.events("hold_lost") == []
    assert HOLD_LEASE_SECONDS > 0


async def test_on_a_core_that_does_not_list_its_jobs_the_skip_still_says_the_store_lost_it(
        make_rig: Callable[..., Rig]) -> None:
    """Without the jobs-read extension the bot cannot ask which jobs it holds: the lost hold
    is found when the core hands the job again, its turn expired within a held lease's life
    after the loss; counted lost then, and the skip says the store lost its data."""
    rig = hours_rig(make_rig)
    offered = rig.engine.core.offered
    offered._offered = offered._offered - {Extension.JOBS_READ}  # as a core without it
    holds_lost = value("clarify_holds_lost_total")
    cid, job_id = await held(rig, {"authored_by": ["p-ahmed"], "named": ["p-sarah"]})
    lease_end = rig.core.jobs.jobs[job_id].lease_expires_at
    assert lease_end is not None

    await lose(rig.store, remembering=False)
    await rig.later(STEP)
    assert len(rig.events("store_data_lost")) == 1
    assert value("clarify_holds_lost_total") == holds_lost  # nothing to find it by yet
    rig.clock.set(lease_end + WINDOW + STEP)
    await rig.burst()
    london_8am = BERLIN_8AM + timedelta(days=2, hours=1)
    assert await until_sent(rig, "p-sarah", by=london_8am + STEP) == london_8am
    assert value("clarify_holds_lost_total") == holds_lost + 1
    c = await rig.bot.get_clarification(clarification_id=cid)
    [skip] = [ev for ev in c.events if ev.type == "skipped"]
    assert (skip.person_id, skip.reason_code) == ("p-ahmed", ReasonCode.DELIVERY_FAILED)
    assert "store (Redis) lost its data" in skip.message
    assert "a worker stopped" not in skip.message


async def test_a_reminder_not_yet_due_is_made_again_from_the_core_record_and_goes_once(
        make_rig: Callable[..., Rig]) -> None:
    """Sarah's card went out at 01:00 (hours off, an 8-hour window): its reminder is due at
    75 % of the window. The store loses it at 01:22; the core still has the card on record and
    the job waiting out the window, so the reminder is made again and goes once, at its time."""
    rig = make_rig(clarify=clarify_settings(escalation_window_hours=8))
    made = value("clarify_reminders_recovered_total")
    cid = await rig.create(authority={"authored_by": ["p-sarah"]}, severity="high")
    await rig.burst()
    [card] = [s for s in rig.channel.to("p-sarah") if isinstance(s.message, QuestionView)]
    await rig.later(timedelta(minutes=2))  # the lease (60 s) ran out: the window runs
    assert await rig.store.reminders_due(now=TUESDAY_1AM + timedelta(hours=9)) != []

    await lose(rig.store)
    await rig.later(STEP)
    assert value("clarify_reminders_recovered_total") == made + 1
    [again] = rig.events("reminder_recovered", cid)
    assert again.person_id == "p-sarah" and again.attempt == 0
    [kept] = await rig.store.cards(cid)
    assert kept.message_ref == card.ref and kept.delivery == card.key

    moves_on = TUESDAY_1AM + timedelta(hours=8, seconds=60)
    while rig.clock.now() < moves_on - STEP:
        await rig.later(STEP)
    nudges = [s for s in rig.channel.to("p-sarah") if isinstance(s.message, ReminderView)]
    assert len(nudges) == 1
    assert nudges[0].message.near == card.ref
    assert len([s for s in rig.channel.to("p-sarah") if isinstance(s.message, QuestionView)]) == 1


async def test_a_reminder_that_may_have_gone_out_is_not_made_again(
        make_rig: Callable[..., Rig]) -> None:
    rig = make_rig(clarify=clarify_settings(escalation_window_hours=8))
    made = value("clarify_reminders_recovered_total")
    await rig.create(authority={"authored_by": ["p-sarah"]}, severity="high")
    await rig.burst()
    await rig.later(timedelta(hours=6, minutes=10))  # past 75 %: the reminder went
    assert len([s for s in rig.channel.to("p-sarah") if isinstance(s.message, ReminderView)]) == 1
    await lose(rig.store)
    for _ in range(4):
        await rig.later(STEP)
    assert value("clarify_reminders_recovered_total") == made
    assert len([s for s in rig.channel.to("p-sarah") if isinstance(s.message, ReminderView)]) == 1


async def test_a_hold_given_back_after_each_of_two_losses_is_audited_twice_under_two_ids(
        make_rig: Callable[..., Rig]) -> None:
    """The store loses its data twice while Ahmed's question is held: the hold is given back
    each time, and each giving back is its own audit event (a consumer that deduplicates by
    ``event_id`` keeps both), as each loss is."""
    rig = hours_rig(make_rig)
    cid, job_id = await held(rig, {"authored_by": ["p-ahmed"]})
    for _ in range(2):
        await lose(rig.store)
        await rig.later(STEP)
        assert await rig.store.hold_text(job_id) is not None
    losses = rig.events("store_data_lost")
    given = rig.events("hold_recovered", cid)
    assert len(losses) == 2 and len(given) == 2, (losses, given)
    assert len({e.event_id for e in losses}) == 2
    assert len({e.event_id for e in given}) == 2, [e.event_id for e in given]
