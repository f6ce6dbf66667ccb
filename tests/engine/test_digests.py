"""Digests (``bot.engine.digests``): normal questions held back past the person's threshold go
out as one message when the window ends. At the window's end each question is read again: one
answered meanwhile is left out, and a digest with nothing left is not sent; each question keeps
its own delivery key; its further pages are the person's alone and leave out what was answered
since."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from bot.core.models import AnswerRequest, Role
from bot.core.models import Channel as ContractChannel
from cards.views import DigestView
from tests.engine.conftest import Rig, clarify_settings

WINDOW = timedelta(minutes=30)


async def digested_for_ahmed(make_rig: Callable[..., Rig], count: int) -> tuple[Rig, list[str]]:
    """Ahmed asked ``count`` normal questions with a threshold of one: the first is a card, the
    rest wait for the window's end. Returns the rig and the waiting ones."""
    rig = make_rig(clarify=clarify_settings(digest_threshold=1,
                                            digest_window_minutes=WINDOW.seconds // 60))
    made = [await rig.create(authority={"authored_by": ["p-ahmed"]}) for _ in range(count)]
    await rig.burst()
    [card] = rig.channel.to("p-ahmed")
    assert card.key.kind == "question"
    waiting = [cid for cid in made if cid != card.key.clarification_id]
    assert sorted(ev.clarification_id for ev in rig.events("digested")) == sorted(waiting)
    return rig, waiting


def digests_to(rig: Rig, person_id: str) -> list[DigestView]:
    return [s.message for s in rig.channel.to(person_id)  # type: ignore[misc]
            if s.key.kind == "digest"]


async def answered_elsewhere(rig: Rig, clarification_id: str) -> None:
    await rig.bot.answer_clarification(clarification_id=clarification_id, request=AnswerRequest(
        answer_index=0, responder="p-ahmed", rights=Role.EDITOR, channel=ContractChannel.CLI))


async def test_the_digest_goes_out_when_its_window_ends_not_before(
        make_rig: Callable[..., Rig]) -> None:
    rig, waiting = await digested_for_ahmed(make_rig, 3)
    await rig.later(WINDOW - timedelta(minutes=1))
    assert digests_to(rig, "p-ahmed") == []
    await rig.later(timedelta(minutes=2))
    [digest] = digests_to(rig, "p-ahmed")
    assert sorted(q.clarification_id for q in digest.questions) == sorted(waiting)
    # each question keeps its own delivery key: answers and card updates work as for a card
    assert len({q.card_ref for q in digest.questions}) == len(waiting)
    assert sorted(ev.clarification_id for ev in rig.events("digest_sent")) == sorted(waiting)


async def test_a_question_answered_while_it_waited_is_left_out(
        make_rig: Callable[..., Rig]) -> None:
    rig, waiting = await digested_for_ahmed(make_rig, 3)
    await answered_elsewhere(rig, waiting[0])
    await rig.later(WINDOW + timedelta(minutes=1))
    [digest] = digests_to(rig, "p-ahmed")
    assert [q.clarification_id for q in digest.questions] == [waiting[1]]
    assert [ev.clarification_id for ev in rig.events("digest_sent")] == [waiting[1]]


async def test_a_digest_with_nothing_left_to_ask_is_not_sent(
        make_rig: Callable[..., Rig]) -> None:
    rig, waiting = await digested_for_ahmed(make_rig, 2)
    await answered_elsewhere(rig, waiting[0])
    await rig.later(WINDOW + timedelta(minutes=1))
    assert digests_to(rig, "p-ahmed") == [] and rig.events("digest_sent") == []
    assert len(rig.channel.to("p-ahmed")) == 1  # the first question's card, nothing more


async def test_a_page_is_the_persons_alone_and_leaves_out_what_was_answered_since(
        make_rig: Callable[..., Rig]) -> None:
    rig, waiting = await digested_for_ahmed(make_rig, 4)
    await rig.later(WINDOW + timedelta(minutes=1))
    [digest] = digests_to(rig, "p-ahmed")
    ahmed = await rig.bot.get_person(person_id="p-ahmed", tenant_id="acme")
    sarah = await rig.bot.get_person(person_id="p-sarah", tenant_id="acme")
    digests = rig.engine.digests
    assert await digests.page(digest_ref=digest.digest_ref, person=sarah, offset=0) is None
    whole = await digests.page(digest_ref=digest.digest_ref, person=ahmed, offset=0)
    assert whole is not None and [q.clarification_id for q in whole.questions] == [
        q.clarification_id for q in digest.questions]
    await answered_elsewhere(rig, digest.questions[1].clarification_id)
    rest = await digests.page(digest_ref=digest.digest_ref, person=ahmed, offset=1)
    assert rest is not None and rest.offset == 1
    assert [q.clarification_id for q in rest.questions] == [
        q.clarification_id for q in digest.questions[2:]]
