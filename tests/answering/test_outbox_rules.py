"""The answer outbox's rules on the outbox itself (``bot.answering.outbox`` over the store, memory
and Redis), with no chat platform in between: answers are queued as an adapter's accept queues
them and forwarded by the consumers to the reference core.

- One person's answers to one question are forwarded one at a time, in the order she gave them,
  whatever order they arrived in; different people's go side by side.
- An entry a consumer took and never settled (the process died) comes back when its lease ends
  and reaches the core once.
- An entry that keeps failing is retried with backoff, holds up the person's later answers
  meanwhile, and is parked after ``max_failures`` (audited, counted); the next one goes at once.
"""

from __future__ import annotations

from datetime import timedelta

from bot.metrics import REGISTRY
from bot.store.base import Acceptance
from tests.engine.conftest import Rig
from tests.support.answering import click, consumers, queue, responses


async def asked(rig: Rig, *people: str, severity: str = "high") -> str:
    """A question for ``people`` (critical: all of them at once, a quorum of two), asked."""
    cid = await rig.create(authority={"named": list(people)}, severity=severity)
    await rig.burst()
    return cid


async def test_one_persons_answers_go_one_at_a_time_in_the_order_she_gave_them(rig: Rig) -> None:
    """Sarah's later tap arrives first and her earlier one after it: the earlier is forwarded
    first, and the later only once the earlier settled (never two of hers in flight)."""
    cid = await asked(rig, "p-sarah")
    later = click(rig, "p-sarah", cid, 1, after=timedelta(seconds=2))
    earlier = click(rig, "p-sarah", cid, 0, after=timedelta(seconds=1))
    assert await queue(rig, later) is Acceptance.QUEUED
    assert await queue(rig, earlier) is Acceptance.QUEUED
    outbox = consumers(rig)
    assert await outbox.claim_iteration() == 1  # four consumers free, one of her entries taken
    assert await outbox.claim_iteration() == 0  # the other waits for it
    await outbox.run_burst()
    assert await responses(rig, cid) == [("p-sarah", 0), ("p-sarah", 1)]
    assert await rig.store.outbox_size() == 0 and outbox.peak == 1


async def test_the_same_tap_queued_twice_is_forwarded_once(rig: Rig) -> None:
    cid = await asked(rig, "p-sarah")
    tap = click(rig, "p-sarah", cid, 0)
    assert await queue(rig, tap) is Acceptance.QUEUED
    assert await queue(rig, tap) is Acceptance.DUPLICATE  # a platform's retry of the same action
    await consumers(rig).run_burst()
    assert await responses(rig, cid) == [("p-sarah", 0)]


async def test_different_peoples_answers_go_side_by_side(rig: Rig) -> None:
    cid = await asked(rig, "p-sarah", "p-ahmed", severity="critical")
    await queue(rig, click(rig, "p-sarah", cid, 0))
    await queue(rig, click(rig, "p-ahmed", cid, 0))
    outbox = consumers(rig)
    assert await outbox.claim_iteration() == 2
    await outbox.run_burst()
    assert sorted(await responses(rig, cid)) == [("p-ahmed", 0), ("p-sarah", 0)]


async def test_an_entry_taken_by_a_consumer_that_died_comes_back_after_its_lease(
        rig: Rig) -> None:
    cid = await asked(rig, "p-sarah")
    await queue(rig, click(rig, "p-sarah", cid, 0))
    lease = rig.engine.answers.policy.lease_seconds
    [taken] = await rig.store.outbox_claim(now=rig.clock.now(), lease_seconds=lease, limit=1)
    outbox = consumers(rig)
    assert await outbox.run_burst() == 0  # held by the consumer that died
    rig.clock.advance(timedelta(seconds=lease))
    assert await outbox.run_burst() == 1
    assert await responses(rig, cid) == [("p-sarah", 0)]
    assert await rig.store.outbox_size() == 0 and taken.attempts == 1


async def test_a_failing_entry_holds_up_her_later_answers_until_it_is_parked(rig: Rig) -> None:
    """An entry that cannot be read, ahead of Sarah's good answer in her order: retried after
    each backoff (never before), her answer waiting behind it; parked at ``max_failures``,
    audited without its payload and counted, and her answer goes in the same pass."""
    cid = await asked(rig, "p-sarah")
    good = click(rig, "p-sarah", cid, 0, after=timedelta(seconds=1))
    await rig.store.outbox_accept("unreadable", "{}", order_key=good.order_key(),
                                  acted_at=good.acted_at - 1, now=rig.clock.now())
    await queue(rig, good)
    answers = rig.engine.answers
    answers.random = lambda: 1.0  # each wait is its ceiling
    policy, outbox = answers.policy, consumers(rig)
    parked_before = REGISTRY.value("clarify_outbox_parked_total")
    for failures in range(1, policy.max_failures):
        assert await outbox.run_burst() == 1  # the unreadable entry, failing again
        assert await responses(rig, cid) == []  # her answer waits behind it
        rig.clock.advance(policy.backoff(failures) - timedelta(milliseconds=1))
        assert await outbox.run_burst() == 0  # not before its time
        rig.clock.advance(timedelta(milliseconds=1))
    assert await outbox.run_burst() == 2  # the last failure parks it; hers goes at once
    assert await responses(rig, cid) == [("p-sarah", 0)]
    assert (await rig.store.outbox_size(), await rig.store.outbox_parked()) == (0, 1)
    [parked] = rig.sink.of("answer_parked")
    assert parked.extra["error"] == "KeyError" and "{}" not in parked.message
    assert REGISTRY.value("clarify_outbox_parked_total") == parked_before + 1
