"""One person, one answer, in the person's order, over HTTP: the reference core's answer rules
with ``respondedAt`` (the answer-order extension).

Spec §6: a repeat submission of the same (responder, answer) is idempotent and returns the prior
outcome. A repeat is the same answer as the one the responder gave right before or right after
it, whatever platform, message or time it carries and whenever it arrives; a different answer
between two equal ones makes them two responses (A, B, A), in whatever order they arrive.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import permutations

import pytest

from bot.core.client import CoreClient
from bot.core.models import (
    AnswerOutcome,
    AnswerRequest,
    BindingStatus,
    Clarification,
    ClarificationState,
    Role,
)
from bot.core.models import (
    Channel as ContractChannel,
)

CRITICAL = "clr-00001"  # two editor confirmations: one person's answers never bind it
NORMAL = "clr-00002"  # one editor binds
T = datetime(2026, 7, 6, 9, 0, 0, 123000, tzinfo=UTC)


def sarah(index: int, ms: int, *, channel: ContractChannel = ContractChannel.SLACK,
          superseded: bool = False, request_id: str | None = None) -> AnswerRequest:
    """Sarah's answer ``index``, given ``ms`` after T, as the bot forwards it."""
    return AnswerRequest(answer_index=index, responder="p-sarah", rights=Role.EDITOR,
                         channel=channel, responded_at=T + timedelta(milliseconds=ms),
                         superseded=True if superseded else None, request_id=request_id,
                         message_ref=f"{channel.value}:{ms}")


def in_her_order(c: Clarification) -> list[tuple[int | None, str]]:
    """Sarah's responses by when she gave them: (answer, "active" or "superseded")."""
    mine = sorted((r for r in c.responses if r.responder == "p-sarah"),
                  key=lambda r: r.responded_at or T)
    return [(r.answer_index, "superseded" if r.superseded_by else "active") for r in mine]


@pytest.mark.parametrize("superseded", [False, True])
async def test_the_same_answer_given_earlier_arriving_later_is_one_response(
        bot_client: CoreClient, superseded: bool) -> None:
    """Sarah taps A on Teams and, 3 ms before, A on Slack; Teams' arrives first. The Slack one
    (sent as superseded or not) replays the Teams response's outcome: one response record."""
    first = await bot_client.answer_clarification(
        clarification_id=CRITICAL, request=sarah(0, 3, channel=ContractChannel.TEAMS))
    again = await bot_client.answer_clarification(
        clarification_id=CRITICAL, request=sarah(0, 0, superseded=superseded))
    assert again.result.replayed and again.result.response_id == first.result.response_id
    assert again.result.outcome is first.result.outcome is AnswerOutcome.PARTIALLY_CONFIRMED
    c = await bot_client.get_clarification(clarification_id=CRITICAL)
    assert [(r.channel, r.superseded_by) for r in c.responses] == [(ContractChannel.TEAMS, None)]
    assert c.quorum.confirmed_by == ["p-sarah"]


async def test_the_same_answer_after_binding_on_the_other_platform_is_one_response(
        bot_client: CoreClient) -> None:
    """The Teams tap bound the question; the Slack tap given just before it arrives after:
    the bound outcome again (200, replayed), nothing appended, no conflict."""
    bound = await bot_client.answer_clarification(
        clarification_id=NORMAL, request=sarah(1, 5, channel=ContractChannel.TEAMS))
    assert bound.result.outcome is AnswerOutcome.BOUND
    again = await bot_client.answer_clarification(clarification_id=NORMAL,
                                                  request=sarah(1, 0, superseded=True))
    assert (again.http_status, again.result.replayed) == (200, True)
    assert again.result.fact_version_tx == bound.result.fact_version_tx
    c = await bot_client.get_clarification(clarification_id=NORMAL)
    assert len(c.responses) == 1 and not any(ev.type == "post_binding_conflict"
                                             for ev in c.events)


ABA = [(0, 0, ContractChannel.SLACK), (1, 5, ContractChannel.TEAMS), (0, 10, ContractChannel.SLACK)]


@pytest.mark.parametrize("arrival", list(permutations(range(3))))
async def test_a_then_b_then_a_are_three_responses_in_any_arrival_order(
        bot_client: CoreClient, arrival: tuple[int, ...]) -> None:
    """A (Slack), B (Teams), A (Slack), 5 ms apart, reaching the core in each of the 6 orders,
    each flagged superseded when a later one went before it (as the bot sends them): three
    responses in Sarah's order, the last A the active one, and A is what counts."""
    sent: list[int] = []
    for which in arrival:
        index, ms, channel = ABA[which]
        later_sent = any(ABA[other][1] > ms for other in sent)
        await bot_client.answer_clarification(
            clarification_id=CRITICAL, request=sarah(index, ms, channel=channel,
                                                     superseded=later_sent))
        sent.append(which)
    c = await bot_client.get_clarification(clarification_id=CRITICAL)
    assert in_her_order(c) == [(0, "superseded"), (1, "superseded"), (0, "active")]
    assert c.state is ClarificationState.PARTIALLY_CONFIRMED
    assert c.quorum.confirmed_by == ["p-sarah"]
    assert not any(ev.type == "conflict_entered" for ev in c.events)


async def test_a_repeat_resent_by_request_id_still_counts_as_given_then(
        bot_client: CoreClient) -> None:
    """The bot sends a late repeat as a resend of the answer it repeats (its requestId): it is
    answered as a replay, and the B that arrives after it still finds the A given before it."""
    first = await bot_client.answer_clarification(
        clarification_id=CRITICAL, request=sarah(0, 10, request_id="ans.a3"))
    again = await bot_client.answer_clarification(
        clarification_id=CRITICAL, request=sarah(0, 0, superseded=True, request_id="ans.a3"))
    assert again.result.replayed and again.result.response_id == first.result.response_id
    await bot_client.answer_clarification(
        clarification_id=CRITICAL, request=sarah(
            1, 5, channel=ContractChannel.TEAMS, superseded=True))
    c = await bot_client.get_clarification(clarification_id=CRITICAL)
    assert in_her_order(c) == [(0, "superseded"), (1, "superseded"), (0, "active")]
    assert [r.channel for r in sorted(c.responses, key=lambda r: r.responded_at or T)] == [
        ContractChannel.SLACK, ContractChannel.TEAMS, ContractChannel.SLACK]


async def test_back_to_the_bound_answer_after_a_superseded_change_is_recorded(
        bot_client: CoreClient) -> None:
    """A bound the question; B, sent as superseded (the bot held the later A), waited; the A
    after it is Sarah's answer again, recorded as bound and active, not lost as a replay."""
    await bot_client.answer_clarification(clarification_id=NORMAL, request=sarah(0, 0))
    await bot_client.answer_clarification(
        clarification_id=NORMAL, request=sarah(
            1, 5, channel=ContractChannel.TEAMS, superseded=True))
    back = await bot_client.answer_clarification(clarification_id=NORMAL, request=sarah(0, 10))
    assert back.http_status == 200 and not back.result.replayed
    assert back.result.outcome is AnswerOutcome.BOUND
    c = await bot_client.get_clarification(clarification_id=NORMAL)
    a1, b2, a3 = c.responses
    assert [r.answer_index for r in c.responses] == [0, 1, 0]
    assert (b2.superseded_by, a3.supersedes) == (a3.response_id, b2.response_id)
    assert a1.binding_status is a3.binding_status is BindingStatus.BOUND
    assert a3.superseded_by is None and c.state is ClarificationState.ANSWERED
    assert not any(ev.type == "post_binding_conflict" for ev in c.events)


async def test_an_answer_without_a_time_repeats_only_the_latest(bot_client: CoreClient) -> None:
    """Without respondedAt (a caller without answer-order) the order is the recording order:
    A, B, A are three responses, and A again right after is a replay."""
    plain = [AnswerRequest(answer_index=i, responder="p-sarah", rights=Role.EDITOR,
                           channel=ContractChannel.SLACK) for i in (0, 1, 0, 0)]
    results = [await bot_client.answer_clarification(clarification_id=CRITICAL, request=r)
               for r in plain]
    assert [r.result.replayed for r in results] == [False, False, False, True]
    c = await bot_client.get_clarification(clarification_id=CRITICAL)
    assert [r.answer_index for r in c.responses] == [0, 1, 0]


async def test_a_superseded_answer_evaluated_by_its_repeat_is_given_at_the_repeats_time(
        bot_client: CoreClient) -> None:
    """A went as superseded (the bot held the same A, later), that A made it count and bind;
    a B given between the two and arriving last is an earlier response, and the A after it
    stays Sarah's active, bound answer: three responses, nothing left waiting."""
    await bot_client.answer_clarification(clarification_id=NORMAL,
                                          request=sarah(0, 0, superseded=True))
    bound = await bot_client.answer_clarification(clarification_id=NORMAL, request=sarah(0, 10))
    assert bound.result.outcome is AnswerOutcome.BOUND
    await bot_client.answer_clarification(
        clarification_id=NORMAL, request=sarah(
            1, 5, channel=ContractChannel.TEAMS, superseded=True))
    c = await bot_client.get_clarification(clarification_id=NORMAL)
    assert in_her_order(c) == [(0, "superseded"), (1, "superseded"), (0, "active")]
    latest = max(c.responses, key=lambda r: r.responded_at or T)
    assert latest.binding_status is BindingStatus.BOUND
    assert c.state is ClarificationState.ANSWERED
