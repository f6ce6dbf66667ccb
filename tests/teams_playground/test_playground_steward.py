"""The steward's override and "Not the right person" end to end in the Agents Playground's own
web UI (headless Chromium): the bot assembled as ``serve`` assembles it, the reference core over
HTTP, one Playground per person, and the buttons pressed in the page as a person presses them.

- Override: Sarah and Ahmed disagree on a critical question; Maria, the steward, gets the
  conflict card, presses "Decide: …", writes the required note in the confirmation card and
  records it; the core holds it as a steward override with her note, and her card says so.
  Maria, demoted to editor before she submits, is refused: nothing recorded.
- Not me: Ahmed presses "Not the right person"; the core has the ``CANDIDATE_DECLINED`` skip,
  Ahmed's card says it was passed on, and Sarah's card arrives with no clock move past the
  escalation window.
"""

from __future__ import annotations

import os
import time
from datetime import timedelta
from typing import Any

import pytest

from bot.core.models import (
    BindingStatus,
    ClarificationState,
    JobState,
    ReasonCode,
    Role,
)
from bot.core.models import (
    Channel as ContractChannel,
)
from cards.actions import ActionKind
from tests.support.processes import wait_until
from tests.teams_playground import browser
from tests.teams_playground import playground as pg
from tests.teams_playground.conftest import (
    AHMED,
    MARIA,
    SARAH,
    TeamsStack,
    needs_the_teams_adapter,
)
from tests.teams_playground.test_playground_e2e import QUESTION, button, press

# slow: the Agents Playground (Node)
pytestmark = [needs_the_teams_adapter(), pytest.mark.slow]

SECOND = "October 1 – December 31"  # candidate 1 as the en-US cards write it (PLAYGROUND_LOCALE)
CONFLICT = "Conflicting answers need review"
DECIDE = f"Decide: {SECOND}"
NOTE = "Countersigned letter of 2 July"
STEWARD_DECISION = "Recorded as a steward decision"
REFUSED = "Only the workspace steward can record an override here; nothing was recorded."
PASSED_ON = "Thanks, this question has been passed on to someone else."
WHY_NAMED = "You were asked because you are named in this document."
LEASE = timedelta(seconds=61)  # past the worker's lease (60 s), far inside the 48 h window
UI_SECONDS = 30_000  # ms: what the page may take to show a card (another process renders it)


@pytest.fixture
def chromium() -> None:
    problem = browser.missing()
    if problem:
        if os.environ.get("CI"):
            pytest.fail(problem)
        pytest.skip(problem)


async def conflicted(stack: TeamsStack, maria: pg.Playground) -> str:
    """A critical question Sarah and Ahmed answer differently (their taps as Teams sends them);
    Maria's Playground shows the conflict card. (The Playground's page shows what arrives
    while it is open: open it first.)"""
    sarah, ahmed = await stack.person(SARAH), await stack.person(AHMED)
    cid = await stack.create(authority={"authored_by": ["p-sarah"], "named": ["p-ahmed"]},
                             severity="critical")
    for person, index in ((sarah, 0), (ahmed, 1)):
        card = await person.card_with(QUESTION)
        status, _ = await press(person, card, button(card, cid, ActionKind.ANSWER,
                                                     candidate=index))
        assert status == 200
    await stack.until_recorded(cid, 2)
    c = await stack.bot.get_clarification(clarification_id=cid)
    assert c.state is ClarificationState.CONFLICTED
    notice = await maria.card_with(CONFLICT)
    button(notice, cid, ActionKind.OVERRIDE_OPEN, candidate=1)  # the card offers the override
    return cid


async def override_in_the_page(page: Any, note: str) -> None:
    """In the Playground's UI: "Decide: …" on the conflict card, the note typed into the
    confirmation card that replaces it, "Record decision"."""
    notice = page.locator(".ac-adaptiveCard", has_text=CONFLICT).last
    await notice.wait_for(timeout=UI_SECONDS)
    await notice.get_by_role("button", name=DECIDE).first.click()
    form = page.locator(".ac-adaptiveCard", has_text="Steward override").last
    await form.wait_for(timeout=UI_SECONDS)
    await form.locator("textarea").first.fill(note)
    await form.get_by_role("button", name="Record decision").first.click()


async def test_playground_steward_override_from_the_conflict_card(
        make_teams_stack: Any, chromium: None) -> None:
    stack: TeamsStack = await make_teams_stack()
    maria = await stack.person(MARIA)
    async with browser.opened(maria.url) as tab:
        cid = await conflicted(stack, maria)
        await override_in_the_page(tab.page, NOTE)
        await tab.page.locator(".ac-adaptiveCard", has_text=STEWARD_DECISION).last.wait_for(
            timeout=UI_SECONDS)
    records = await stack.until_recorded(cid, 3)
    last = records[-1]
    assert (last.responder, last.answer_index, last.channel) == (
        "p-maria", 1, ContractChannel.TEAMS)
    assert last.binding_status is BindingStatus.STEWARD_OVERRIDE
    assert last.rights_at_answer_time is Role.STEWARD and last.note == NOTE
    c = await stack.bot.get_clarification(clarification_id=cid)
    assert c.state is ClarificationState.ANSWERED and c.bound_interval is not None
    # the askees' cards stop asking: the follow-ups repaint them through the connector
    sarah = stack.playgrounds[SARAH.user_id]
    hers = sarah.posted(lambda p: QUESTION in p.text)[-1]
    await sarah.wait_for(lambda: STEWARD_DECISION in hers.text, "Sarah's card to show it")


async def test_playground_steward_override_refused_for_a_non_steward(
        make_teams_stack: Any, chromium: None) -> None:
    """Maria got the card as the steward and is an editor when she submits: the rights are
    read at answer time, the core refuses, the page tells her, nothing is recorded."""
    stack: TeamsStack = await make_teams_stack()
    maria = await stack.person(MARIA)
    async with browser.opened(maria.url) as tab:
        cid = await conflicted(stack, maria)
        before = await stack.bot.get_clarification(clarification_id=cid)
        key = next(k for k in stack.core.directory.people if k[1] == "p-maria")
        person = stack.core.directory.people[key]
        stack.core.directory.people[key] = person.model_copy(update={"memberships": [
            ms.model_copy(update={"role": Role.EDITOR}) for ms in person.memberships]})
        await override_in_the_page(tab.page, "Mine")
        await tab.page.get_by_text(REFUSED).first.wait_for(timeout=UI_SECONDS)
    c = await stack.bot.get_clarification(clarification_id=cid)
    assert c.state is ClarificationState.CONFLICTED
    assert c.responses == before.responses
    assert not any(r.binding_status is BindingStatus.STEWARD_OVERRIDE for r in c.responses)


async def test_playground_not_the_right_person(make_teams_stack: Any, chromium: None) -> None:
    stack: TeamsStack = await make_teams_stack()
    ahmed, sarah = await stack.person(AHMED), await stack.person(SARAH)
    async with browser.opened(ahmed.url) as tab:
        cid = await stack.create(authority={"authored_by": ["p-ahmed"], "named": ["p-sarah"]})
        await ahmed.card_with(QUESTION)
        c = await stack.bot.get_clarification(clarification_id=cid)
        assert c.job_id is not None
        await stack.later(LEASE)  # the lease ran out: the job now waits out the 48 h window

        async def waiting() -> bool:
            job = await stack.bot.get_job(job_id=str(c.job_id))
            return job.state is JobState.AVAILABLE
        await wait_until(waiting, "the job to wait out its window")
        assert not sarah.posted(lambda p: QUESTION in p.text)
        moved = stack.clock.now()
        card = tab.page.locator(".ac-adaptiveCard", has_text=QUESTION).last
        await card.wait_for(timeout=UI_SECONDS)
        started = time.monotonic()
        await card.get_by_role("button", name="Not the right person").first.click()
        await tab.page.locator(".ac-adaptiveCard", has_text=PASSED_ON).last.wait_for(
            timeout=UI_SECONDS)
        hers = await sarah.card_with(QUESTION)  # no clock movement since the decline
        took = time.monotonic() - started
    assert stack.clock.now() == moved and took < 20
    assert WHY_NAMED in hers.text
    c = await stack.bot.get_clarification(clarification_id=cid)
    declined = [(ev.person_id, ev.attempt) for ev in c.events if ev.type == "skipped"
                and ev.reason_code is ReasonCode.CANDIDATE_DECLINED]
    assert declined == [("p-ahmed", 0)]
    assert stack.clock.now() - c.created_at < timedelta(hours=1)
