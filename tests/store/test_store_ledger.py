"""Contract: the delivery ledger (``bot.store.ledger``): idempotent delivery slots and the
cards sent, to update; on memory, a real Redis and a real Redis Cluster."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bot.store.base import CardRecord, DeliveryLedger, SlotState
from bot.store.errors import SlotNotFound

from .conftest import T0, at, delivery


async def test_reserve_twice_returns_the_first_slot_uncreated(store: DeliveryLedger) -> None:
    """A second reservation of the same delivery does not create one and sees the first."""
    key = delivery("c1")
    first, created = await store.reserve(key, worker_id="w1", now=T0)
    second, again = await store.reserve(key, worker_id="w2", now=at(5))
    assert created and not again
    assert second == first
    assert first.state is SlotState.RESERVED
    assert (first.worker_id, first.reserved_at, first.key) == ("w1", T0, key)


async def test_other_attempts_and_kinds_are_other_slots(store: DeliveryLedger) -> None:
    """The attempt and the kind are part of the delivery key."""
    await store.reserve(delivery("c1"), worker_id="w1", now=T0)
    _, next_attempt = await store.reserve(delivery("c1", attempt=1), worker_id="w1", now=T0)
    _, other_kind = await store.reserve(delivery("c1", kind="digest"), worker_id="w1", now=T0)
    assert next_attempt and other_kind


async def test_reserved_at_keeps_microseconds(store: DeliveryLedger) -> None:
    """Times round-trip exactly, microseconds included."""
    now = at(0.123457)
    slot, _ = await store.reserve(delivery("c1"), worker_id="w1", now=now)
    assert slot.reserved_at == now
    assert (await store.slot(delivery("c1"))) == slot


async def test_mark_sent_records_the_message_ref(store: DeliveryLedger) -> None:
    """After a send the slot is SENT with its reference, and reading it back agrees."""
    key = delivery("c1")
    await store.reserve(key, worker_id="w1", now=T0)
    sent = await store.mark_sent(key, message_ref="D1:1720000000.1")
    assert sent.state is SlotState.SENT
    assert sent.message_ref == "D1:1720000000.1"
    assert (sent.worker_id, sent.reserved_at) == ("w1", T0)
    assert await store.slot(key) == sent


async def test_mark_digested_records_the_batch(store: DeliveryLedger) -> None:
    """A digested delivery's slot names its batch."""
    key = delivery("c1")
    await store.reserve(key, worker_id="w1", now=T0)
    slot = await store.mark_digested(key, batch_id="p1|1", worker_id="w1", now=T0)
    assert (slot.state, slot.batch_id, slot.message_ref) == (SlotState.DIGESTED, "p1|1", None)
    assert await store.slot(key) == slot


async def test_release_lets_the_delivery_be_reserved_again(store: DeliveryLedger) -> None:
    """A released reservation is forgotten, so the next reserve creates a new slot."""
    key = delivery("c1")
    await store.reserve(key, worker_id="w1", now=T0)
    await store.release(key)
    assert await store.slot(key) is None
    slot, created = await store.reserve(key, worker_id="w2", now=at(60))
    assert created and slot.worker_id == "w2"


async def test_mark_sent_without_a_reservation_fails(store: DeliveryLedger) -> None:
    """Recording a send for a slot never reserved (or released) raises SlotNotFound."""
    with pytest.raises(SlotNotFound):
        await store.mark_sent(delivery("c1"), message_ref="m")
    assert await store.slot(delivery("c1")) is None


async def test_mark_digested_without_a_reservation_creates_the_slot(store: DeliveryLedger) -> None:
    """A digested card needs no reservation first: marking it records a DIGESTED slot."""
    key = delivery("c1")
    slot = await store.mark_digested(key, batch_id="p1|1", worker_id="w1", now=T0)
    assert (slot.state, slot.batch_id, slot.worker_id) == (SlotState.DIGESTED, "p1|1", "w1")
    assert slot.reserved_at == T0
    assert await store.slot(key) == slot
    again, created = await store.reserve(key, worker_id="w1", now=T0)
    assert not created and again == slot


def _card(clarification_id: str, person_id: str, ref: str, *, attempt: int = 0) -> CardRecord:
    return CardRecord(delivery(clarification_id, person_id, attempt=attempt), "slack", ref)


async def test_cards_are_listed_per_clarification(store: DeliveryLedger) -> None:
    """Cards come back for their own clarification only, in attempt order."""
    await store.add_card(_card("c1", "p2", "m2", attempt=1))
    await store.add_card(_card("c1", "p1", "m1"))
    await store.add_card(_card("c2", "p1", "m3"))
    assert await store.cards("c1") == [_card("c1", "p1", "m1"), _card("c1", "p2", "m2", attempt=1)]
    assert await store.cards("c2") == [_card("c2", "p1", "m3")]
    assert await store.cards("c3") == []


async def test_adding_a_card_twice_keeps_one(store: DeliveryLedger) -> None:
    """The same delivery recorded again replaces its card instead of listing it twice."""
    await store.add_card(_card("c1", "p1", "m1"))
    await store.add_card(_card("c1", "p1", "m1-moved"))
    assert await store.cards("c1") == [_card("c1", "p1", "m1-moved")]


async def test_a_card_keeps_when_it_moves_on_and_its_reminder(store: DeliveryLedger) -> None:
    """A question card's record keeps when the question moves on (to the microsecond), whether
    to the steward, the zone it was written in, and, replaced by its reminder, that it was
    reminded; other cards of the clarification are left as they were."""
    moves_on = at(8 * 3600 + 60.123457)
    sent = CardRecord(delivery("c1"), "teams", "m1", moves_on_at=moves_on,
                      moves_on_to_steward=True, time_zone="Asia/Kathmandu")
    await store.add_card(sent)
    await store.add_card(_card("c1", "p2", "m2"))
    assert await store.cards("c1") == [sent, _card("c1", "p2", "m2")]
    reminded = replace(sent, reminded=True)
    assert await store.replace_card(reminded)
    assert await store.cards("c1") == [reminded, _card("c1", "p2", "m2")]


async def test_replacing_a_card_never_writes_back_one_not_kept(store: DeliveryLedger) -> None:
    """A card not (or no longer) on record is not recreated by its replacement: an erased or
    expired card stays gone."""
    assert not await store.replace_card(CardRecord(delivery("c1"), "slack", "m1", reminded=True))
    assert await store.cards("c1") == []
    await store.add_card(_card("c1", "p2", "m2"))
    assert not await store.replace_card(replace(_card("c1", "p1", "m1"), reminded=True))
    assert await store.cards("c1") == [_card("c1", "p2", "m2")]


async def test_record_sent_marks_the_slot_and_remembers_the_card_at_once(
        store: DeliveryLedger) -> None:
    """The reserving worker records its send in one step: SENT with the reference, and the card
    among the clarification's; whoever reads or reserves the slot later finds it sent."""
    key = delivery("clar-rec")
    slot, created = await store.reserve(key, worker_id="w1", now=T0)
    assert created
    card = CardRecord(delivery=key, platform="slack", message_ref="D1:1.0")
    sent = await store.record_sent(slot, card)
    assert sent.state is SlotState.SENT and sent.message_ref == "D1:1.0"
    stored = await store.slot(key)
    assert stored is not None and stored.state is SlotState.SENT
    assert stored.message_ref == "D1:1.0" and stored.worker_id == "w1"
    assert await store.cards(key.clarification_id) == [card]
    again = await store.record_sent(slot, card)  # recorded twice: still one card
    assert again.state is SlotState.SENT
    assert await store.cards(key.clarification_id) == [card]
    # a worker that finds the slot taken (a retried job) sees the send, not a reservation
    held, created = await store.reserve(key, worker_id="w2", now=T0)
    assert not created and held.state is SlotState.SENT and held.message_ref == "D1:1.0"
    await store.mark_sent(key, message_ref="D1:2.0")  # an explicit update still wins
    stored = await store.slot(key)
    assert stored is not None and stored.message_ref == "D1:2.0"


async def test_a_card_marked_unreported_keeps_its_mark_until_it_is_cleared(
        store: DeliveryLedger) -> None:
    """A card recorded as not yet reported reads so, since its reservation, until its mark is
    cleared. The mark is no card of its own, and a reminder's rewrite of the card does not bring
    it back."""
    key, other = delivery("clar-u"), delivery("clar-u", "p2")
    slot, _ = await store.reserve(key, worker_id="w1", now=at(1.5))
    card = CardRecord(delivery=key, platform="slack", message_ref="D1:1.0")
    await store.record_sent(slot, card, unreported=True)
    await store.add_card(CardRecord(delivery=other, platform="teams", message_ref="a:1"))
    listed = await store.cards("clar-u")
    assert [(c.delivery, c.unreported_since) for c in listed] == [(key, at(1.5)), (other, None)]
    assert listed[0].unreported and not listed[1].unreported
    await store.clear_unreported([key, other, delivery("clar-none")])
    assert [(c.delivery, c.unreported) for c in await store.cards("clar-u")] == \
        [(key, False), (other, False)]
    assert await store.replace_card(replace(listed[0], reminded=True))
    assert [c.unreported for c in await store.cards("clar-u")] == [False, False]
    await store.clear_unreported([])
