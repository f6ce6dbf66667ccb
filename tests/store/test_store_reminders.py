"""Contract: the reminders' due index (add, due, claim, later, done) and the reminder's own
reservation, on memory, a real Redis and a real Redis Cluster."""

from __future__ import annotations

import asyncio

from bot.store.base import ReminderIndex, SlotState

from .conftest import Backend, at, delivery

LEASE = 300


async def test_reminders_come_due_in_order_and_a_member_keeps_its_first_due_time(
        store: ReminderIndex) -> None:
    await store.reminder_add("0|100|0|c2", due=at(20))
    await store.reminder_add("0|100|0|c1", due=at(10))
    await store.reminder_add("0|100|0|c1", due=at(5))  # indexed already: not moved
    assert await store.reminders_due(now=at(9)) == []
    assert await store.reminders_due(now=at(10)) == ["0|100|0|c1"]
    assert await store.reminders_due(now=at(20)) == ["0|100|0|c1", "0|100|0|c2"]
    assert await store.reminders_due(now=at(20), limit=1) == ["0|100|0|c1"]


async def test_one_claim_wins_and_a_dead_holders_claim_comes_due_again(
        backend: Backend) -> None:
    """Two stores (two replicas' clients) race for one due reminder: one wins; when its
    lease ends without a done, the reminder is due again and can be claimed again."""
    first, second = backend.open(), backend.open()
    await first.reminder_add("1|100|0|c1", due=at(10))
    won = await asyncio.gather(*(s.reminder_claim("1|100|0|c1", now=at(10), lease_seconds=LEASE)
                                 for s in (first, second, first, second)))
    assert sorted(won) == [False, False, False, True]
    assert await first.reminders_due(now=at(10 + LEASE - 1)) == []
    assert not await second.reminder_claim("1|100|0|c1", now=at(10 + LEASE - 1),
                                           lease_seconds=LEASE)
    assert await second.reminders_due(now=at(10 + LEASE)) == ["1|100|0|c1"]
    assert await second.reminder_claim("1|100|0|c1", now=at(10 + LEASE), lease_seconds=LEASE)


async def test_a_claim_needs_the_member_due(store: ReminderIndex) -> None:
    assert not await store.reminder_claim("0|1|0|never", now=at(0), lease_seconds=LEASE)
    await store.reminder_add("0|1|0|c1", due=at(10))
    assert not await store.reminder_claim("0|1|0|c1", now=at(9), lease_seconds=LEASE)


async def test_later_moves_a_member_and_done_forgets_it(store: ReminderIndex) -> None:
    await store.reminder_add("0|1|0|c1", due=at(10))
    assert await store.reminder_claim("0|1|0|c1", now=at(10), lease_seconds=LEASE)
    await store.reminder_later("0|1|0|c1", due=at(1000))  # the next working hour
    assert await store.reminders_due(now=at(999)) == []
    assert await store.reminders_due(now=at(1000)) == ["0|1|0|c1"]
    await store.reminder_done("0|1|0|c1")
    assert await store.reminders_due(now=at(10_000)) == []
    await store.reminder_later("0|1|0|c1", due=at(20))  # forgotten: not brought back
    assert await store.reminders_due(now=at(10_000)) == []


async def test_the_reminders_reservation_is_taken_once(backend: Backend) -> None:
    """The durable mark before the nudge is sent: the reminder's own delivery key, reserved
    once across replicas; a second reservation sees the first (reconciled, never resent)."""
    first, second = backend.open(), backend.open()
    key = delivery("c1", "p1", attempt=1, kind="reminder")
    taken = await asyncio.gather(first.reserve(key, worker_id="a", now=at(0)),
                                 second.reserve(key, worker_id="b", now=at(0)))
    assert sorted(created for _, created in taken) == [False, True]
    slot = await second.slot(key)
    assert slot is not None and slot.state is SlotState.RESERVED
