"""Contract: the durable answer outbox (accept in order, claim one per key with a lease, retry,
park, done)."""

from __future__ import annotations

from bot.store.base import Acceptance, Outbox, OutboxEntry

from .conftest import T0, at

KEY = "clr-1|slack|acme|U1"


async def accept(store: Outbox, entry_id: str, *, acted: int, key: str = KEY, payload: str = "{}",
                 now: float = 0, answer: str = "") -> Acceptance:
    return await store.outbox_accept(entry_id, payload, order_key=key, acted_at=acted,
                                     now=at(now), answer=answer)


async def claim(store: Outbox, now: float = 0, *, limit: int = 10, lease: int = 30,
                entry_id: str | None = None) -> list[OutboxEntry]:
    return await store.outbox_claim(now=at(now), lease_seconds=lease, limit=limit,
                                    entry_id=entry_id)


async def test_accept_twice_is_a_duplicate(store: Outbox) -> None:
    """The same entry id is stored once; the second offer is a duplicate and changes nothing."""
    assert await accept(store, "a1", acted=100, payload='{"answer": 1}') is Acceptance.QUEUED
    assert await accept(store, "a1", acted=100, payload='{"answer": 2}', now=5) \
        is Acceptance.DUPLICATE
    assert await store.outbox_size() == 1
    [entry] = await claim(store, 5)
    assert (entry.payload, entry.created_at, entry.order_key, entry.acted_at) == (
        '{"answer": 1}', T0, KEY, 100)


async def test_an_action_older_than_an_accepted_one_is_queued_in_the_persons_order(
        store: Outbox) -> None:
    """An action that acted before one accepted already is kept too (every answer reaches the
    core) and goes first: the key's entries are claimed by action time, not arrival."""
    assert await accept(store, "new", acted=200) is Acceptance.QUEUED
    assert await accept(store, "old", acted=100, now=1) is Acceptance.QUEUED
    assert await accept(store, "other", acted=100, key="clr-1|slack|acme|U2") \
        is Acceptance.QUEUED
    assert await store.outbox_size() == 3
    got = await claim(store, 2)
    assert sorted((e.entry_id, e.superseded) for e in got) == [("old", True), ("other", False)]
    assert await claim(store, 3) == []  # "new" waits for "old"
    await store.outbox_done(next(e for e in got if e.entry_id == "old"))
    [new] = await claim(store, 4)
    assert (new.entry_id, new.superseded) == ("new", False)


async def test_an_action_older_than_a_settled_one_is_forwarded_as_superseded(
        store: Outbox) -> None:
    """An older action arriving after a later one was forwarded is queued and flagged
    superseded (the core records it as the earlier response it is)."""
    await accept(store, "b", acted=200)
    [b] = await claim(store)
    await store.outbox_done(b)
    assert await accept(store, "a", acted=100, now=1) is Acceptance.QUEUED
    [a] = await claim(store, 2)
    assert (a.entry_id, a.superseded) == ("a", True)


async def test_an_entry_overtaken_while_waiting_is_claimed_as_superseded(store: Outbox) -> None:
    """An entry accepted before a later action of its key is flagged superseded when claimed,
    and forwarded before it."""
    await accept(store, "a", acted=100)
    await accept(store, "b", acted=200)
    [first] = await claim(store)
    assert (first.entry_id, first.superseded) == ("a", True)
    await store.outbox_done(first)
    [second] = await claim(store, 1)
    assert (second.entry_id, second.superseded) == ("b", False)


async def settle(store: Outbox, entry_id: str, *, acted: int, answer: str, now: float = 0,
                 park: bool = False) -> None:
    """Accept one action, claim it and settle it (forwarded, or parked)."""
    await accept(store, entry_id, acted=acted, answer=answer, now=now)
    [entry] = await claim(store, now, entry_id=entry_id)
    if park:
        await store.outbox_park(entry, reason="Bug", now=at(now))
    else:
        await store.outbox_done(entry, now=at(now))


async def test_a_late_action_repeating_the_forwarded_next_one_names_it(store: Outbox) -> None:
    """The same answer given 3 ms before one already forwarded, arriving after it: claimed
    superseded and naming the forwarded entry it repeats (it goes as a resend of that one)."""
    await settle(store, "teams", acted=103_000, answer="A")
    assert await accept(store, "slack", acted=100_000, answer="A", now=1) is Acceptance.QUEUED
    [late] = await claim(store, 1)
    assert (late.entry_id, late.superseded, late.answer, late.repeats) == (
        "slack", True, "A", "teams")


async def test_a_late_action_repeats_only_its_next_one_with_the_same_answer(
        store: Outbox) -> None:
    """A late action repeats nothing when the next action after it gave another answer, when
    the next one still waits (not forwarded yet), when that one was parked (never forwarded:
    the same answer after it is not the next), or when its own answer is not known."""
    await settle(store, "b", acted=300, answer="B")
    await settle(store, "a2", acted=500, answer="A")
    await accept(store, "a1", acted=200, answer="A", now=1)  # next after it: B
    [a1] = await claim(store, 1)
    assert (a1.entry_id, a1.repeats) == ("a1", None)
    await store.outbox_done(a1, now=at(1))
    await accept(store, "c", acted=400, answer="A", now=2)  # next after it: a2, the same
    await accept(store, "x", acted=450, answer="B", now=2)  # … but x waits between them
    [c] = await claim(store, 2)
    assert (c.entry_id, c.repeats) == ("c", None)
    await store.outbox_done(c, now=at(2))
    [x] = await claim(store, 3)
    await store.outbox_done(x, now=at(3))
    await settle(store, "p", acted=900, answer="P", now=4, park=True)
    await settle(store, "r", acted=1000, answer="Q", now=4)
    await accept(store, "q", acted=800, answer="Q", now=5)  # next after it: p, parked
    await accept(store, "u", acted=600, now=5)  # no answer given: never a repeat
    for n, name in enumerate(("u", "q")):
        [entry] = await claim(store, 5 + n)
        assert (entry.entry_id, entry.repeats) == (name, None)
        await store.outbox_done(entry, now=at(5 + n))


async def test_an_entry_waits_for_its_keys_first_in_backoff(store: Outbox) -> None:
    """A key's first entry retried later holds the ones after it back: the person's order is
    kept through a core outage; other keys are not held up."""
    await accept(store, "a", acted=100)
    await accept(store, "b", acted=200)
    await accept(store, "x", acted=150, key="clr-2|slack|acme|U1")
    got = await claim(store, lease=300)
    assert sorted(e.entry_id for e in got) == ["a", "x"]
    a = next(e for e in got if e.entry_id == "a")
    await store.outbox_retry(a, at=at(60), failed=False)
    assert await claim(store, 1) == []
    assert await claim(store, 59) == []
    [a] = await claim(store, 60)
    assert a.entry_id == "a"
    await store.outbox_done(a)
    [b] = await claim(store, 61)
    assert b.entry_id == "b"


async def test_any_settled_action_replayed_is_a_duplicate(store: Outbox) -> None:
    """A replay of any settled or parked action of a key (not only the last) is a duplicate:
    it never reaches the core a second time."""
    for n, name in enumerate(("a", "b", "c")):
        await accept(store, name, acted=100 + n)
    for n in range(3):
        [entry] = await claim(store, n)
        if entry.entry_id == "b":
            await store.outbox_park(entry, reason="Bug", now=at(n))
        else:
            await store.outbox_done(entry)
    for n, name in enumerate(("a", "b", "c")):
        assert await accept(store, name, acted=100 + n, now=10) is Acceptance.DUPLICATE
    assert await store.outbox_size() == 0


async def test_a_settled_action_offered_again_is_a_duplicate(store: Outbox) -> None:
    """A retry of an action that was already settled is not stored again."""
    await accept(store, "a", acted=100)
    [entry] = await claim(store)
    await store.outbox_done(entry)
    assert await accept(store, "a", acted=100) is Acceptance.DUPLICATE
    assert await store.outbox_size() == 0
    assert await accept(store, "b", acted=101) is Acceptance.QUEUED


async def test_claim_takes_one_entry_per_key_and_skips_held_keys(store: Outbox) -> None:
    """Two entries of one key are never held at once: the second waits until the first is
    settled or retried, whichever claim asks; other keys are not held up."""
    await accept(store, "a", acted=100)
    await accept(store, "b", acted=200)
    await accept(store, "x", acted=150, key="clr-2|slack|acme|U1")
    got = await claim(store)
    assert sorted(e.entry_id for e in got) == ["a", "x"]
    assert await claim(store, 1) == []  # b's key is held by a's claim
    a = next(e for e in got if e.entry_id == "a")
    await store.outbox_done(a)
    [b] = await claim(store, 2)
    assert b.entry_id == "b"


async def test_a_held_key_is_free_again_when_the_lease_ends(store: Outbox) -> None:
    """A claim whose holder died (no retry, no done) frees its key when its lease ends."""
    await accept(store, "a", acted=100)
    await accept(store, "b", acted=200)
    [a] = await claim(store, lease=30)
    assert a.entry_id == "a"
    assert await claim(store, 29, lease=30) == []
    [a] = await claim(store, 31, lease=30)  # the first in the person's order, again
    assert (a.entry_id, a.attempts, a.superseded) == ("a", 2, True)
    await store.outbox_done(a)
    [b] = await claim(store, 32, lease=30)
    assert (b.entry_id, b.superseded) == ("b", False)


async def test_claim_leases_and_counts_attempts(store: Outbox) -> None:
    """A claimed entry is hidden for the lease, then claimable again with attempts raised."""
    await accept(store, "a1", acted=1)
    [first] = await claim(store, 0, lease=30)
    assert (first.entry_id, first.attempts, first.failures) == ("a1", 1, 0)
    assert await claim(store, 29, lease=30) == []
    [second] = await claim(store, 30, lease=30)
    assert second.attempts == 2


async def test_retry_sets_the_next_due_time_and_counts_failures(store: Outbox) -> None:
    """A retried entry comes back at the time given, not before; only failed tries count."""
    await accept(store, "a1", acted=1)
    [entry] = await claim(store)
    await store.outbox_retry(entry, at=at(100), failed=True)
    assert await claim(store, 99) == []
    [entry] = await claim(store, 100)
    assert (entry.attempts, entry.failures) == (2, 1)
    await store.outbox_retry(entry, at=at(200), failed=False)
    [entry] = await claim(store, 200)
    assert (entry.attempts, entry.failures) == (3, 1)


async def test_claim_of_one_entry_takes_only_that_one(store: Outbox) -> None:
    """A claim naming an entry takes it when it is due and its key is free, nothing else."""
    await accept(store, "a", acted=1)
    await accept(store, "x", acted=1, key="clr-2|slack|acme|U1")
    [entry] = await claim(store, entry_id="x")
    assert entry.entry_id == "x"
    assert await claim(store, entry_id="x") == []  # held now
    assert await claim(store, entry_id="missing") == []


async def test_park_sets_an_entry_aside(store: Outbox) -> None:
    """A parked entry is kept aside: never claimed again, counted apart, its key freed."""
    await accept(store, "poison", acted=1)
    await accept(store, "next", acted=2, now=1)
    [entry] = await claim(store, 1)
    assert entry.entry_id == "poison"
    await store.outbox_park(entry, reason="KeyError", now=at(1))
    assert (await store.outbox_size(), await store.outbox_parked()) == (1, 1)
    [entry] = await claim(store, 2)
    assert entry.entry_id == "next"
    await store.outbox_done(entry)
    assert await claim(store, 3600) == []
    assert await store.outbox_parked() == 1


async def test_done_removes_the_entry(store: Outbox) -> None:
    """A forwarded entry leaves the outbox and a late retry does not bring it back."""
    await accept(store, "a1", acted=1)
    [entry] = await claim(store)
    await store.outbox_done(entry)
    await store.outbox_retry(entry, at=at(1), failed=True)
    assert await store.outbox_size() == 0
    assert await claim(store, 3600) == []


async def test_claim_takes_the_earliest_up_to_the_limit(store: Outbox) -> None:
    """A claim returns at most limit entries, the earliest due first; the rest wait."""
    for n, entry_id in enumerate(["a3", "a1", "a2"]):
        await accept(store, entry_id, acted=1, key=f"k{entry_id}", now=n)
    got = await claim(store, 10, limit=2)
    assert [e.entry_id for e in got] == ["a3", "a1"]
    rest = await claim(store, 10, limit=2)
    assert [e.entry_id for e in rest] == ["a2"]
    assert await store.outbox_size() == 3


async def test_entries_are_not_claimable_before_they_are_due(store: Outbox) -> None:
    """An entry accepted at a time is not claimed by a caller whose now is earlier."""
    await accept(store, "a1", acted=1, now=10)
    assert await claim(store, 9) == []


async def test_concurrent_offers_of_one_entry_store_it_once(store: Outbox) -> None:
    """Many offers at once (Redis sends them in one pipeline): one is queued, the rest are
    duplicates, and different entries offered together are each queued."""
    import asyncio

    offers = [accept(store, "same", acted=5) for _ in range(10)]
    offers += [accept(store, f"e{n}", acted=5, key=f"k{n}") for n in range(10)]
    got = await asyncio.gather(*offers)
    assert got[:10].count(Acceptance.QUEUED) == 1
    assert got[10:] == [Acceptance.QUEUED] * 10
    assert await store.outbox_size() == 11


async def test_overdue_is_how_long_the_earliest_waiting_entry_has_been_due(store: Outbox) -> None:
    """The outbox's lag: 0 when empty or when every entry is held; else the age of the most
    overdue one, counted from when it became due (accepted, or its retry time)."""
    assert await store.outbox_overdue(now=at(0)) == 0
    await accept(store, "a", acted=100, now=10)
    await accept(store, "b", acted=100, key="clr-2|slack|acme|U1", now=20)
    assert await store.outbox_overdue(now=at(25)) == 15
    [held] = await claim(store, 25, limit=1, lease=30)
    assert held.entry_id == "a"
    assert await store.outbox_overdue(now=at(26)) == 6  # "b", due since 20; "a" held
    await store.outbox_retry(held, at=at(40), failed=False)
    await store.outbox_done((await claim(store, 27, entry_id="b"))[0])
    assert await store.outbox_overdue(now=at(30)) == 0  # "a" not due again before 40
    assert await store.outbox_overdue(now=at(45)) == 5
