"""End to end: reference core + worker + Slack adapter + fake Slack, people clicking signed."""

from __future__ import annotations

import copy
import json
from datetime import timedelta
from typing import Any

from bot.core.models import (
    AnswerRequest,
    BindingStatus,
    ClarificationState,
    DeliveryKind,
    EvidenceClass,
    JobState,
    QuorumState,
    ReasonCode,
)
from bot.core.models import (
    Channel as ContractChannel,
)
from cards.actions import ActionCodec
from devslack import Message
from tests.engine.conftest import clarify_settings
from tests.slack.conftest import CODEC_KEY, Stack


async def test_normal_question_answered_in_one_tap(stack: Stack) -> None:
    """A DM card with candidate buttons; one tap binds; the card says what the answer did."""
    cid = await stack.create(authority={"authored_by": ["p-ahmed"]})
    await stack.burst()
    card = stack.card("U0AHMED", cid)
    assert "When does the Harbor Street lease renewal take effect?" in stack.text_of(card)
    response = await stack.click("U0AHMED", card, "clarify.answer.0")
    assert response.status == 200
    await stack.settle()
    c = await stack.bot.get_clarification(clarification_id=cid)
    assert c.state is ClarificationState.ANSWERED
    assert [(r.responder, r.channel) for r in c.responses] == [("p-ahmed", ContractChannel.SLACK)]
    shown = stack.text_of(card)
    assert "Recorded as evidence" in shown and "Ahmed Karimi" in shown
    assert "clarify.answer.0" not in shown  # no buttons left to press


# ---------------------------------------------------------------- helpers

SPAN_TEXT = "The renewed term is effective next quarter."
QUESTION = "When does the Harbor Street lease renewal take effect?"
FIRST = "1 July – 30 September"  # candidate 0 as the en-GB cards write it (end exclusive)
SECOND = "1 October – 31 December"  # candidate 1


def shown(stack: Stack, message: Message) -> str:
    """What a person reads in the message now (text and blocks)."""
    return stack.text_of(message)


def snapshot(stack: Stack, message: Message) -> Message:
    """The message as it looks now, kept for a click on what the person still sees."""
    current = next(sent for sent in stack.slack.messages
                   if sent.channel == message.channel and sent.ts == message.ts)
    return copy.deepcopy(current)


def slot_of(message: Message, clarification_id: str) -> int:
    """Which question slot of a digest message asks about ``clarification_id``."""
    codec = ActionCodec(CODEC_KEY)
    for block in message.blocks:
        for element in block.get("elements", []) if block.get("type") == "actions" else []:
            ref = codec.decode(element["value"])
            if ref.clarification_id == clarification_id:
                return ref.slot
    raise AssertionError(f"{clarification_id} is not in the message")


def in_slot(stack: Stack, message: Message, slot: int, action_id: str) -> Any:
    """A payload edit pressing ``action_id`` of question ``slot`` (ids repeat per question)."""
    current = snapshot(stack, message)
    block = next(b for b in current.blocks if b.get("block_id") == f"q{slot}.answers.0")
    element = next(e for e in block["elements"] if e["action_id"] == action_id)

    def edit(payload: dict[str, Any]) -> None:
        payload["actions"][0].update(block_id=block["block_id"], value=element["value"],
                                     text=element["text"])

    return edit


def date_input(day: str | None) -> dict[str, Any]:
    return {"value": {"type": "datepicker", "selected_date": day}}


def note_input(note: str | None) -> dict[str, Any]:
    return {"value": {"type": "plain_text_input", "value": note}}


# ---------------------------------------------------------------- quorum and attestation


async def test_critical_question_binds_on_two_editors_confirmations(stack: Stack) -> None:
    """Both editors are asked at once; the first tap is recorded as one of two confirmations
    (the other card shows it and stays answerable); the second binds and both cards say so."""
    cid = await stack.create(authority={"authored_by": ["p-sarah"], "named": ["p-ahmed"]},
                             severity="critical")
    await stack.burst()
    sarah, ahmed = stack.card("U0SARAH", cid), stack.card("U0AHMED", cid)
    notice = "This clarification affects a high-stakes date and requires two confirmations."
    assert notice in shown(stack, sarah) and notice in shown(stack, ahmed)
    # Ahmed is the ranking's last turn: after him, the steward (the 48 h window, 8 July)
    steward_next = "Goes to the workspace steward on 8 July at "
    assert steward_next in shown(stack, ahmed)

    await stack.click("U0SARAH", sarah, "clarify.answer.0")
    await stack.settle()
    assert f"First confirmation recorded: {FIRST} (Sarah Chen)." in shown(stack, sarah)
    assert "One more confirmation is required before the correction becomes binding." \
        in shown(stack, sarah)
    assert "clarify.answer.0" not in shown(stack, sarah)
    assert "⏳" not in shown(stack, sarah)  # hers no longer waits on her
    banner = f"First confirmation recorded: {FIRST} (Sarah Chen). Do you agree?"
    assert banner in shown(stack, ahmed) and "clarify.answer.0" in shown(stack, ahmed)
    assert steward_next in shown(stack, ahmed)  # his still does: it still says when it moves on
    c = await stack.bot.get_clarification(clarification_id=cid)
    assert c.state is ClarificationState.PARTIALLY_CONFIRMED
    assert (c.quorum.state, c.quorum.remaining) == (QuorumState.PENDING, 1)

    await stack.click("U0AHMED", ahmed, "clarify.answer.0")
    await stack.settle()
    bound = (f"✓ Recorded as binding evidence: {FIRST}, confirmed by Sarah Chen and "
             "Ahmed Karimi, 6 Jul 2026.")
    assert bound in shown(stack, sarah) and bound in shown(stack, ahmed)
    assert "clarify.answer" not in shown(stack, ahmed) and "⏳" not in shown(stack, ahmed)
    c = await stack.bot.get_clarification(clarification_id=cid)
    assert (c.state, c.quorum.state) == (ClarificationState.ANSWERED, QuorumState.SATISFIED)
    assert [(r.responder, r.binding_status) for r in c.responses] == [
        ("p-sarah", BindingStatus.BOUND), ("p-ahmed", BindingStatus.BOUND)]
    fact = await stack.bot.get_fact(logical_id=c.target)
    assert fact.provenance.evidence_class is EvidenceClass.QUORUM_CONFIRMATION
    assert fact.provenance.confirmed_by == ["p-sarah", "p-ahmed"]
    assert len(stack.slack.dm_of("U0SARAH")) == len(stack.slack.dm_of("U0AHMED")) == 1


async def test_viewer_attestation_then_editor_confirmation(stack: Stack) -> None:
    """A viewer's tap is an attestation; after the window the editor is asked, her same answer
    binds, and the viewer's card shows the recorded outcome."""
    cid = await stack.create(authority={"authored_by": ["p-priya"], "named": ["p-sarah"]})
    await stack.burst()
    priya = stack.card("U0PRIYA", cid)
    assert not stack.cards_of("U0SARAH", cid)  # one person at a time for a normal question

    await stack.click("U0PRIYA", priya, "clarify.answer.0")
    await stack.settle()
    assert "Your answer is recorded as an attestation. A steward or editor must confirm it " \
        "before the fact is corrected." in shown(stack, priya)
    c = await stack.bot.get_clarification(clarification_id=cid)
    assert c.state is ClarificationState.ATTESTED
    assert [r.binding_status for r in c.responses] == [BindingStatus.ATTESTATION]
    pending = await stack.bot.get_fact(logical_id=c.target)
    assert pending.pending_clarification_id == cid

    await stack.later(timedelta(hours=49))
    sarah = stack.card("U0SARAH", cid)
    await stack.click("U0SARAH", sarah, "clarify.answer.0")
    await stack.settle()
    recorded = f"✓ Recorded as evidence: {FIRST}, confirmed by Sarah Chen, 8 Jul 2026."
    assert recorded in shown(stack, sarah)
    # Priya reads US English: the same outcome, in her own date forms
    assert "✓ Recorded as evidence:" in shown(stack, priya)
    assert "confirmed by Sarah Chen" in shown(stack, priya)
    c = await stack.bot.get_clarification(clarification_id=cid)
    assert c.state is ClarificationState.ANSWERED
    assert [(r.responder, r.binding_status) for r in c.responses] == [
        ("p-priya", BindingStatus.ATTESTATION), ("p-sarah", BindingStatus.BOUND)]
    fact = await stack.bot.get_fact(logical_id=c.target)
    assert fact.pending_clarification_id is None
    assert fact.provenance.evidence_class is EvidenceClass.HUMAN_CLARIFICATION


async def test_disagreeing_editors_put_it_to_the_steward(stack: Stack) -> None:
    """Two editors answering a critical question differently: both cards show the conflict,
    nothing binds, and the steward gets a conflict notice at once (no span text, no question;
    the candidates' dates only as override choices, tests/slack/test_slack_override.py)."""
    cid = await stack.create(authority={"authored_by": ["p-sarah"], "named": ["p-ahmed"]},
                             severity="critical")
    await stack.burst()
    sarah, ahmed = stack.card("U0SARAH", cid), stack.card("U0AHMED", cid)
    await stack.click("U0SARAH", sarah, "clarify.answer.0")
    await stack.settle()
    await stack.click("U0AHMED", ahmed, "clarify.answer.1")
    await stack.settle()

    conflict = ("A conflicting answer has been recorded. This clarification now requires "
                "steward review.")
    assert conflict in shown(stack, sarah) and conflict in shown(stack, ahmed)
    assert f"Your answer: {SECOND}" in shown(stack, ahmed)
    c = await stack.bot.get_clarification(clarification_id=cid)
    assert (c.state, c.quorum.state) == (ClarificationState.CONFLICTED,
                                         QuorumState.CONFLICTED)
    assert c.bound_interval is None
    fact = await stack.bot.get_fact(logical_id=c.target)
    assert fact.pending_clarification_id == cid  # no corrected version

    to_maria = stack.slack.dm_of("U0MARIA")
    assert len(to_maria) == 1
    notice = shown(stack, to_maria[0])
    assert "Conflicting answers need review" in notice
    assert "Sarah Chen and Ahmed Karimi answered the same clarification" in notice
    for secret in (SPAN_TEXT, QUESTION):
        assert secret not in notice
    assert [ev.person_id for ev in stack.sink.of("steward_notified")] == ["p-maria"]

    await stack.later(timedelta(hours=49))  # the job comes back: the steward is not told twice
    assert len(stack.slack.dm_of("U0MARIA")) == 1
    job = await stack.bot.get_job(job_id=c.job_id or "")
    assert job.state is JobState.COMPLETED


# ---------------------------------------------------------------- "Something else…"


async def test_something_else_modal_binds_a_valid_range_and_refuses_bad_ones(stack: Stack
                                                                           ) -> None:
    """The modal opens with date pickers; an end before the start, a missing start and dates
    the core cannot normalise come back as field errors with nothing recorded; a valid range
    binds as a custom interval and the card says so."""
    cid = await stack.create(authority={"authored_by": ["p-ahmed"]})
    await stack.burst()
    card = stack.card("U0AHMED", cid)
    response = await stack.click("U0AHMED", card, "clarify.custom")
    await stack.settle()
    assert response.status == 200
    assert [c.error for c in stack.slack.calls_to("views.open")] == [None]
    (view,) = stack.slack.views.values()
    pickers = {b["block_id"]: b for b in view["blocks"] if b["type"] == "input"}
    assert pickers["custom.0.from"]["element"]["type"] == "datepicker"
    assert pickers["custom.0.from"]["optional"] is False
    assert pickers["custom.0.to"]["element"]["type"] == "datepicker"

    refused = [
        ({"custom.0.from": date_input("2026-09-30"), "custom.0.to": date_input("2026-08-15")},
         "custom.0.to", "The end date must be on or after the start date."),
        # the picker is required, so only a crafted submission lacks it: still refused
        ({"custom.0.from": date_input(None), "custom.0.note": note_input("Q3 2026")},
         "custom.0.from", "Choose a start date."),
        # a date the picker allows but the core will not normalise (year out of range)
        ({"custom.0.from": date_input("1850-01-01")},
         "custom.0.from", "These dates could not be read. Pick them from the calendar."),
    ]
    for values, field, words in refused:
        response = await stack.submit("U0AHMED", view, values)
        assert response.status == 200
        assert await response.json() == {"response_action": "errors", "errors": {field: words}}
        await stack.settle()
        c = await stack.bot.get_clarification(clarification_id=cid)
        assert (c.state, c.responses) == (ClarificationState.OPEN, [])
    assert "clarify.answer.0" in shown(stack, card)  # still answerable

    response = await stack.submit("U0AHMED", view, {
        "custom.0.from": date_input("2026-08-15"), "custom.0.to": date_input("2026-09-30"),
        "custom.0.note": note_input("Letter, page 2")})
    assert response.status == 200
    assert not await response.read()  # a plain acknowledgement closes the modal
    await stack.settle()
    c = await stack.bot.get_clarification(clarification_id=cid)
    assert c.state is ClarificationState.ANSWERED
    (record,) = c.responses
    assert record.answer_index is None and record.answer_custom is not None
    assert (record.answer_custom.valid_from, record.answer_custom.valid_to,
            record.answer_custom.source_text) == ("2026-08-15", "2026-10-01", "Letter, page 2")
    assert c.bound_interval is not None
    assert c.bound_interval.valid_from.isoformat() == "2026-08-15T00:00:00+00:00"
    assert c.bound_interval.valid_to is not None
    assert c.bound_interval.valid_to.isoformat() == "2026-10-01T00:00:00+00:00"  # exclusive end
    assert ("✓ Recorded as evidence: 15 August – 30 September, confirmed by Ahmed Karimi, "
            "6 Jul 2026.") in shown(stack, card)


# ---------------------------------------------------------------- after binding


async def test_answer_after_binding_is_told_it_moved_on_and_recorded_as_conflicting(
        stack: Stack) -> None:
    """A tap on a card that was settled meanwhile says the clarification moved on (and when it
    was settled); a different date is kept as a conflicting attestation, the same date adds
    nothing, and the bound fact stays as it was."""
    cid = await stack.create(authority={"authored_by": ["p-ahmed"], "named": ["p-sarah"]})
    await stack.burst()
    ahmed = stack.card("U0AHMED", cid)
    as_ahmed_saw_it = snapshot(stack, ahmed)
    await stack.later(timedelta(hours=49))
    sarah = stack.card("U0SARAH", cid)
    await stack.click("U0SARAH", sarah, "clarify.answer.0")
    await stack.settle()
    assert "✓ Recorded as evidence" in shown(stack, ahmed)  # his card was refreshed...
    target = (await stack.bot.get_clarification(clarification_id=cid)).target
    before = await stack.bot.get_fact_history(logical_id=target)

    stack.clock.advance(timedelta(days=1))  # ...but he answers from the card he still had open
    response = await stack.click("U0AHMED", ahmed, "clarify.answer.1", seen=as_ahmed_saw_it)
    assert response.status == 200
    await stack.settle()
    moved_on = ("This clarification has moved on: it was settled or replaced before your answer "
                f"arrived, so there is nothing more to do. It was settled as {FIRST} on "
                "8 Jul 2026.")
    assert moved_on in shown(stack, ahmed)
    c = await stack.bot.get_clarification(clarification_id=cid)
    assert c.state is ClarificationState.ANSWERED
    assert [(r.responder, r.answer_index, r.binding_status) for r in c.responses] == [
        ("p-sarah", 0, BindingStatus.BOUND), ("p-ahmed", 1, BindingStatus.CONFLICTING)]
    assert "post_binding_conflict" in [ev.type for ev in c.events]

    await stack.click("U0AHMED", ahmed, "clarify.answer.0", seen=as_ahmed_saw_it)
    await stack.settle()
    assert moved_on in shown(stack, ahmed)
    c = await stack.bot.get_clarification(clarification_id=cid)
    assert len(c.responses) == 2  # agreeing with the bound date after the fact adds nothing
    after = await stack.bot.get_fact_history(logical_id=c.target)
    assert after.versions == before.versions


async def test_late_disagreeing_answer_tells_the_steward_once_per_responder(
        stack: Stack) -> None:
    """A different date tapped after binding DMs the steward a post-binding notice (names and
    the document link, no dates, no question, no span text); the same late tap again tells her
    nothing new, another person's late answer does, and the bound fact never changes."""
    cid = await stack.create(authority={"authored_by": ["p-priya"], "named": ["p-ahmed"],
                                        "owned_by": ["p-sarah"]})
    await stack.burst()
    priya = snapshot(stack, stack.card("U0PRIYA", cid))
    await stack.later(timedelta(hours=49))
    ahmed = snapshot(stack, stack.card("U0AHMED", cid))
    await stack.later(timedelta(hours=49))
    await stack.click("U0SARAH", stack.card("U0SARAH", cid), "clarify.answer.0")
    await stack.settle()
    c = await stack.bot.get_clarification(clarification_id=cid)
    assert c.state is ClarificationState.ANSWERED
    before = await stack.bot.get_fact_history(logical_id=c.target)
    assert stack.slack.dm_of("U0MARIA") == []

    await stack.click("U0AHMED", ahmed, "clarify.answer.1", seen=ahmed)
    await stack.settle()
    (notice,) = stack.slack.dm_of("U0MARIA")
    words = shown(stack, notice)
    assert "A late answer differs from the bound date" in words
    assert "A date is already bound for this clarification in" in words
    assert "Ahmed Karimi answered differently" in words
    assert "the bound date stays as it is until a steward decides" in words
    assert "No correction has been made" not in words
    for secret in (SPAN_TEXT, QUESTION, FIRST, SECOND, "July", "October"):
        assert secret not in words
    assert [ev.person_id for ev in stack.sink.of("steward_notified")] == ["p-maria"]

    await stack.click("U0AHMED", ahmed, "clarify.answer.1", seen=ahmed)  # the same late tap
    await stack.settle()
    assert len(stack.slack.dm_of("U0MARIA")) == 1
    assert len(stack.sink.of("steward_notified")) == 1

    await stack.click("U0PRIYA", priya, "clarify.answer.1", seen=priya)  # someone else, late
    await stack.settle()
    to_maria = stack.slack.dm_of("U0MARIA")
    assert len(to_maria) == 2
    assert "Priya Natarajan answered differently" in shown(stack, to_maria[-1])
    assert len(stack.sink.of("steward_notified")) == 2

    c = await stack.bot.get_clarification(clarification_id=cid)
    assert c.state is ClarificationState.ANSWERED
    assert [(r.responder, r.binding_status) for r in c.responses] == [
        ("p-sarah", BindingStatus.BOUND), ("p-ahmed", BindingStatus.CONFLICTING),
        ("p-priya", BindingStatus.CONFLICTING)]
    after = await stack.bot.get_fact_history(logical_id=c.target)
    assert after.versions == before.versions


# ---------------------------------------------------------------- the redacted escalation


async def test_nobody_eligible_sends_the_steward_a_redacted_escalation(stack: Stack) -> None:
    """A Legal question ranked only to Finance people reaches the Legal steward as a redacted
    message: the document link and each skip reason in plain words, no question, no span."""
    cid = await stack.create(authority={"authored_by": ["p-tom"], "named": ["p-jonas"]})
    await stack.burst()
    assert stack.slack.dm_of("U0TOM") == stack.slack.dm_of("U0JONAS") == []
    (escalation,) = stack.slack.dm_of("U0MARIA")
    words = shown(stack, escalation)
    assert "A date needs a steward" in words
    title = ("Harbor Street office lease: renewal letter" if stack.contract == "full"
             else "the source document")  # a baseline core gives no title
    link = {"type": "link", "url": "https://docs.acme.example/legal/harbor-lease-renewal",
            "text": title}
    assert json.dumps(link, ensure_ascii=False) in words  # a link element of rich text
    for name in ("Tom Becker", "Jonas Weber"):
        assert f"• {name} cannot read this document, so the question was not sent to them." \
            in words
    for secret in (SPAN_TEXT, QUESTION, "next quarter after signing", "next calendar quarter",
                   "clarify.answer", "NO_READ_PERMISSION"):
        assert secret not in words
    c = await stack.bot.get_clarification(clarification_id=cid)
    # a baseline delivery report names no kind: the core counts the steward as asked
    kind = (DeliveryKind.STEWARD_ESCALATION if stack.contract == "full"
            else DeliveryKind.QUESTION)
    assert [(d.person_id, d.kind) for d in c.deliveries] == [("p-maria", kind)]
    assert [(ev.person_id, ev.reason_code) for ev in c.events if ev.type == "skipped"] == [
        ("p-tom", ReasonCode.NO_READ_PERMISSION), ("p-jonas", ReasonCode.NO_READ_PERMISSION)]


# ---------------------------------------------------------------- the digest


async def test_digest_questions_are_answered_in_place_without_wiping_it(make_stack: Any
                                                                        ) -> None:
    """Past the threshold the questions wait for one digest DM; answering one there records it
    and tells the person privately, and the digest keeps every other question answerable."""
    stack: Stack = await make_stack(clarify=clarify_settings(digest_threshold=1))
    ids = [await stack.create(authority={"authored_by": ["p-sarah"]}) for _ in range(4)]
    await stack.burst()
    assert len(stack.slack.dm_of("U0SARAH")) == 1  # the first one directly, the rest wait
    await stack.later(timedelta(minutes=31))
    direct, digest = stack.slack.dm_of("U0SARAH")
    assert stack.cards_of("U0SARAH", ids[0]) == [direct]
    assert "3 questions need a quick answer; one tap each is enough." in shown(stack, digest)
    before = snapshot(stack, digest)

    first, second = ids[2], ids[3]
    await stack.click("U0SARAH", digest, "clarify.answer.0",
                      payload_edit=in_slot(stack, digest, slot_of(digest, first),
                                           "clarify.answer.0"))
    await stack.settle()
    c = await stack.bot.get_clarification(clarification_id=first)
    assert c.state is ClarificationState.ANSWERED
    assert [r.responder for r in c.responses] == ["p-sarah"]
    (told,) = stack.slack.ephemerals
    assert told["user"] == "U0SARAH" and told["channel"] == digest.channel
    assert told["text"].startswith("✓ Recorded as evidence")
    now = snapshot(stack, digest)
    assert (now.blocks, now.edited_ts) == (before.blocks, None)  # not wiped

    await stack.click("U0SARAH", digest, "clarify.answer.1",
                      payload_edit=in_slot(stack, digest, slot_of(digest, second),
                                           "clarify.answer.1"))
    await stack.settle()
    c = await stack.bot.get_clarification(clarification_id=second)
    assert c.state is ClarificationState.ANSWERED
    assert c.responses[0].answer_index == 1
    for untouched in (ids[0], ids[1]):
        c = await stack.bot.get_clarification(clarification_id=untouched)
        assert c.responses == [] and c.state is not ClarificationState.ANSWERED
    assert len(stack.slack.ephemerals) == 2


async def test_digest_overflow_shows_the_next_page_in_place_on_request(make_stack: Any) -> None:
    """A digest of twelve shows ten and a "Show the next questions" button that shows the rest,
    answerable, in place of the page clicked (a chat.update, not a new post)."""
    stack: Stack = await make_stack(clarify=clarify_settings(digest_threshold=1))
    ids = [await stack.create(authority={"authored_by": ["p-sarah"]}) for _ in range(13)]
    await stack.burst()
    await stack.later(timedelta(minutes=31))
    _, digest = stack.slack.dm_of("U0SARAH")
    words = shown(stack, digest)
    assert "12 questions need a quick answer" in words
    assert "2 more questions are waiting." in words and "Show the next questions" in words
    first_page = {slot_of(digest, cid) for cid in ids[1:11]}
    assert first_page == set(range(10))

    posts = len(stack.slack.calls_to("chat.postMessage"))
    response = await stack.click("U0SARAH", digest, "clarify.digest.next")
    assert response.status == 200
    await stack.settle()
    _, page = stack.slack.dm_of("U0SARAH")
    assert (page.channel, page.ts) == (digest.channel, digest.ts)
    assert len(stack.slack.calls_to("chat.postMessage")) == posts
    assert "2 questions need a quick answer" in shown(stack, page)
    assert {slot_of(page, cid) for cid in ids[11:]} == {0, 1}
    await stack.click("U0SARAH", page, "clarify.answer.0",
                      payload_edit=in_slot(stack, page, slot_of(page, ids[12]),
                                           "clarify.answer.0"))
    await stack.settle()
    c = await stack.bot.get_clarification(clarification_id=ids[12])
    assert c.state is ClarificationState.ANSWERED


async def test_a_digest_is_not_rewritten_when_someone_else_settles_one_of_its_questions(
        make_stack: Any) -> None:
    """When a question that waits in one person's digest is answered by the next person asked,
    the digest message keeps its other questions (only the answerer's card changes)."""
    stack: Stack = await make_stack(clarify=clarify_settings(digest_threshold=1))
    await stack.create(authority={"authored_by": ["p-sarah"]})
    shared = await stack.create(authority={"authored_by": ["p-sarah"], "named": ["p-ahmed"]})
    await stack.create(authority={"authored_by": ["p-sarah"]})
    await stack.burst()
    await stack.later(timedelta(minutes=31))
    _, digest = stack.slack.dm_of("U0SARAH")
    before = snapshot(stack, digest)
    assert "2 questions need a quick answer" in shown(stack, digest)

    await stack.later(timedelta(hours=49))  # Sarah did not answer: Ahmed is asked next
    ahmed = stack.card("U0AHMED", shared)
    await stack.click("U0AHMED", ahmed, "clarify.answer.0")
    await stack.settle()
    assert "✓ Recorded as evidence" in shown(stack, ahmed)
    now = snapshot(stack, digest)
    assert (now.blocks, now.edited_ts) == (before.blocks, None)


async def test_cards_follow_a_decision_made_outside_the_bot(stack: Stack) -> None:
    """A steward settles a conflict with the core's CLI; at the next lease every card shows it."""
    from bot.core.client import CoreClient

    cid = await stack.create(authority={"authored_by": ["p-sarah"], "named": ["p-ahmed"]},
                             severity="critical")
    await stack.burst()
    sarah, ahmed = stack.card("U0SARAH", cid), stack.card("U0AHMED", cid)
    await stack.click("U0SARAH", sarah, "clarify.answer.0")
    await stack.click("U0AHMED", ahmed, "clarify.answer.1")
    await stack.settle()
    assert "requires steward review" in stack.text_of(sarah)
    steward = CoreClient(base_url=stack.core_url, token="acme-key-maria-steward")
    async with steward:
        await steward.answer_clarification(clarification_id=cid, request=AnswerRequest(
            answer_index=1, steward_override=True, channel=ContractChannel.CLI))
    await stack.later(timedelta(hours=49))
    for card in (sarah, ahmed):
        shown = stack.text_of(card)
        assert "Recorded as a steward decision" in shown and "Maria Lopez" in shown


async def test_card_in_the_person_slack_locale(stack: Stack) -> None:
    """Slack says the person reads de-DE (``users.info`` with ``include_locale``): the card is
    German with German dates, the spec's words stay English; the answer's card too."""
    stack.slack.users["U0AHMED"].locale = "de-DE"
    cid = await stack.create(authority={"authored_by": ["p-ahmed"]})
    await stack.burst()
    card = stack.card("U0AHMED", cid)
    text = stack.text_of(card)
    assert "1. Juli – 30. September" in text and FIRST not in text
    assert "Ich bin nicht die richtige Person" in text and "Something else…" in text
    asked = [c for c in stack.slack.calls if c.method == "users.info"]
    assert asked and all(str(c.args.get("include_locale")).lower() == "true" for c in asked)


async def test_the_answered_card_stays_in_the_person_slack_locale(stack: Stack) -> None:
    """After the tap, the card updated in place is German too (its dates and words), with
    the spec's outcome sentence in English."""
    stack.slack.users["U0AHMED"].locale = "de-DE"
    cid = await stack.create(authority={"authored_by": ["p-ahmed"]})
    await stack.burst()
    card = stack.card("U0AHMED", cid)
    response = await stack.click("U0AHMED", card, "clarify.answer.0")
    assert response.status == 200
    await stack.settle()
    shown = stack.text_of(card)
    assert "Recorded as evidence: 1. Juli – 30. September" in shown
    assert "Frage:" in shown and "Quelle:" in shown and FIRST not in shown
