"""Contract: admissions and digest batches (``bot.store.admissions``): the per-person daily cap
and digest batching decided by ``admit``, and the batches claimed, on memory, a real Redis and a
real Redis Cluster."""

from __future__ import annotations

from typing import Any

from bot.store.base import Decision, DigestItem, SlotState, Store

from .conftest import DAY, T0, WINDOW, admit, at, delivery


async def decisions(store: Store, names: list[str], **kwargs: Any) -> list[Decision]:
    return [(await admit(store, name, **kwargs)).decision for name in names]


async def test_direct_cards_stop_at_the_cap(store: Store) -> None:
    """High-severity cards are DIRECT until the daily cap is used, then CAPPED."""
    got = await decisions(store, ["c1", "c2", "c3", "c4"], cap=3, batched=False)
    assert got == [Decision.DIRECT] * 3 + [Decision.CAPPED]


async def test_unbatched_cards_are_never_digested(store: Store) -> None:
    """High and critical cards stay DIRECT past the digest threshold inside one window."""
    got = await decisions(store, [f"c{n}" for n in range(5)], threshold=1, batched=False)
    assert got == [Decision.DIRECT] * 5


async def test_threshold_then_one_digest(store: Store) -> None:
    """The first threshold normal cards are DIRECT; the rest join one digest due at window end."""
    direct = await decisions(store, ["c1", "c2", "c3"])
    digested = [await admit(store, f"d{n}", now=at(60 * n)) for n in range(4)]
    assert direct == [Decision.DIRECT] * 3
    assert {a.decision for a in digested} == {Decision.DIGESTED}
    assert len({a.batch_id for a in digested}) == 1
    assert {a.due_at for a in digested} == {at(WINDOW)}
    assert digested[0].batch_id is not None and digested[0].batch_id.startswith("p1|")


async def test_a_digest_costs_one_unit_of_the_cap(store: Store) -> None:
    """With cap 5 and threshold 3, three cards and a digest of any size use 4 units."""
    await decisions(store, ["c1", "c2", "c3"])
    digested = await decisions(store, [f"d{n}" for n in range(10)])
    assert digested == [Decision.DIGESTED] * 10
    high = await decisions(store, ["h1", "h2"], batched=False)
    assert high == [Decision.DIRECT, Decision.CAPPED]
    # the digest was already paid for: more normal cards still join it
    assert (await admit(store, "d10")).decision is Decision.DIGESTED


async def test_a_digest_cannot_start_past_the_cap(store: Store) -> None:
    """When the cap is used up before the first digest item, normal cards are CAPPED."""
    await decisions(store, ["h1", "h2"], batched=False, cap=3)
    got = await decisions(store, ["c1", "c2"], cap=3, threshold=1)
    assert got == [Decision.DIRECT, Decision.CAPPED]


async def test_a_new_window_starts_after_the_window_ends(store: Store) -> None:
    """At the window's end a normal card opens a new window and is DIRECT again."""
    first = await decisions(store, ["c1", "c2"], threshold=1)
    just_before = await admit(store, "c3", threshold=1, now=at(WINDOW - 1))
    at_end = await admit(store, "c4", threshold=1, now=at(WINDOW))
    after = await admit(store, "c5", threshold=1, now=at(WINDOW + 1))
    assert first == [Decision.DIRECT, Decision.DIGESTED]
    assert just_before.decision is Decision.DIGESTED and just_before.due_at == at(WINDOW)
    assert at_end.decision is Decision.DIRECT
    assert after.decision is Decision.DIGESTED and after.due_at == at(2 * WINDOW)
    assert after.batch_id != just_before.batch_id


async def test_windows_are_per_person(store: Store) -> None:
    """One person's window and digest do not affect another person's cards."""
    await decisions(store, ["c1", "c2"], threshold=1)
    other = await decisions(store, ["c1", "c2"], threshold=1, person_id="p2")
    assert other == [Decision.DIRECT, Decision.DIGESTED]


async def test_replay_returns_the_first_decision_without_charging(store: Store) -> None:
    """Admitting the same delivery again replays its decision and costs nothing."""
    first = await admit(store, "c1", cap=2, batched=False)
    again = await admit(store, "c1", cap=2, batched=False, now=at(5))
    assert (first.decision, first.replayed) == (Decision.DIRECT, False)
    assert (again.decision, again.replayed) == (Decision.DIRECT, True)
    assert await decisions(store, ["c2", "c3"], cap=2, batched=False) == [
        Decision.DIRECT, Decision.CAPPED]


async def test_replay_of_a_digested_card_names_the_same_batch(store: Store) -> None:
    """A replayed DIGESTED admission carries the same batch and due time."""
    await admit(store, "c1", threshold=1)
    first = await admit(store, "c2", threshold=1)
    again = await admit(store, "c2", threshold=1, now=at(WINDOW + 60))
    assert again.replayed and not first.replayed
    assert (again.decision, again.batch_id, again.due_at) == (
        first.decision, first.batch_id, first.due_at)


async def test_replay_of_a_capped_card_stays_capped(store: Store) -> None:
    """A CAPPED decision is remembered too, even if the cap is larger on the second call."""
    await admit(store, "c1", cap=1, batched=False)
    await admit(store, "c2", cap=1, batched=False)
    again = await admit(store, "c2", cap=10, batched=False)
    assert (again.decision, again.replayed) == (Decision.CAPPED, True)


async def test_the_day_key_separates_caps(store: Store) -> None:
    """A cap used up on one local day leaves the next day's cap whole."""
    await decisions(store, ["c1", "c2"], cap=2, batched=False)
    assert (await admit(store, "c3", cap=2, batched=False)).decision is Decision.CAPPED
    next_day = await admit(store, "c3", cap=2, batched=False, day="2026-07-07", attempt=1)
    assert next_day.decision is Decision.DIRECT


async def test_a_clarification_joins_a_batch_once(store: Store) -> None:
    """The same clarification admitted at two attempts appears once in the person's digest."""
    await admit(store, "c0", threshold=1)
    await admit(store, "c1", threshold=1)
    again = await admit(store, "c1", threshold=1, attempt=1)
    batch = await store.claim_batch(again.batch_id or "", now=at(WINDOW), lease_seconds=60)
    assert again.decision is Decision.DIGESTED
    assert batch is not None and [i.clarification_id for i in batch.items] == ["c1"]
    assert (batch.items[0].attempt, batch.items[0].job_id) == (0, "job-c1")


async def test_due_batches_only_after_the_window(store: Store) -> None:
    """A batch is due at its window's end, not before."""
    await admit(store, "c1", threshold=1)
    batch_id = (await admit(store, "c2", threshold=1)).batch_id
    assert await store.due_batches(now=at(WINDOW - 1)) == []
    assert await store.due_batches(now=at(WINDOW)) == [batch_id]


async def test_claimed_batch_holds_its_items_in_order(store: Store) -> None:
    """A claimed batch names its person, due time and items in the order they joined."""
    await admit(store, "c0", threshold=1)
    for n, name in enumerate(["c9", "c3", "c5"]):
        await admit(store, name, threshold=1, now=at(n))
    batch_id = (await store.due_batches(now=at(WINDOW)))[0]
    batch = await store.claim_batch(batch_id, now=at(WINDOW), lease_seconds=60)
    assert batch is not None
    assert (batch.batch_id, batch.person_id, batch.due_at) == (batch_id, "p1", at(WINDOW))
    assert [i.clarification_id for i in batch.items] == ["c9", "c3", "c5"]


async def test_claim_is_exclusive_until_the_lease_passes(store: Store) -> None:
    """A claimed batch is hidden from others until its lease ends, then it may be re-claimed."""
    await admit(store, "c1", threshold=1)
    batch_id = (await admit(store, "c2", threshold=1)).batch_id or ""
    assert await store.claim_batch(batch_id, now=at(WINDOW - 1), lease_seconds=60) is None
    assert await store.claim_batch(batch_id, now=at(WINDOW), lease_seconds=60) is not None
    assert await store.claim_batch(batch_id, now=at(WINDOW + 30), lease_seconds=60) is None
    assert await store.due_batches(now=at(WINDOW + 59)) == []
    assert await store.due_batches(now=at(WINDOW + 60)) == [batch_id]
    assert await store.claim_batch(batch_id, now=at(WINDOW + 60), lease_seconds=60) is not None


async def test_finish_forgets_the_batch(store: Store) -> None:
    """A finished batch is neither due nor claimable."""
    await admit(store, "c1", threshold=1)
    batch_id = (await admit(store, "c2", threshold=1)).batch_id or ""
    await store.claim_batch(batch_id, now=at(WINDOW), lease_seconds=60)
    await store.finish_batch(batch_id)
    assert await store.due_batches(now=at(10 * WINDOW)) == []
    assert await store.claim_batch(batch_id, now=at(10 * WINDOW), lease_seconds=60) is None


async def test_due_batches_respects_the_limit(store: Store) -> None:
    """due_batches returns at most limit ids, the earliest due first."""
    for offset, person in enumerate(["p1", "p2", "p3"]):
        await admit(store, "c1", person_id=person, threshold=0, now=at(offset))
    due = await store.due_batches(now=at(2 * WINDOW), limit=2)
    assert [batch_id.split("|")[0] for batch_id in due] == ["p1", "p2"]


async def test_a_claimed_batch_takes_no_more_items(store: Store) -> None:
    """A replica with a late clock cannot add to a batch already claimed for sending."""
    await admit(store, "c1", threshold=1)
    claimed_id = (await admit(store, "c2", threshold=1)).batch_id or ""
    await store.claim_batch(claimed_id, now=at(WINDOW), lease_seconds=60)
    late = await admit(store, "c3", threshold=1, now=at(WINDOW - 1))
    assert late.decision is Decision.DIRECT  # a fresh window opened at the late clock's now
    assert late.batch_id is None


async def test_a_direct_admission_reserves_the_delivery_in_the_same_step(store: Store) -> None:
    """``reserve_for``: a fresh DIRECT decision comes back with the reservation ``reserve``
    would have made; a replay, or a digested card, reserves nothing."""
    key = delivery("clar-r", "p9")
    item = DigestItem("clar-r", "p9", 0, job_id="job-r")
    first = await store.admit(key, item=item, day=DAY, now=T0, cap=5, threshold=3,
                              window_seconds=WINDOW, batched=False, reserve_for="w1")
    assert first.decision is Decision.DIRECT and first.created
    assert first.reserved is not None and first.reserved.worker_id == "w1"
    assert first.reserved.state is SlotState.RESERVED
    assert await store.slot(key) == first.reserved
    _, created = await store.reserve(key, worker_id="w2", now=T0)
    assert not created  # the admission's reservation holds
    again = await store.admit(key, item=item, day=DAY, now=T0, cap=5, threshold=3,
                              window_seconds=WINDOW, batched=False, reserve_for="w1")
    assert again.replayed and again.reserved is None
