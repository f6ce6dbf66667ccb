"""The sandbox in a real browser: Debian's chromium, driven by Playwright, clicks the cards the
real bot sent to the local Slack, and the core's record beside them shows the answer become
evidence. Every click goes page → local Slack → a signed request to the bot's ``/slack/events``
→ the outbox → the core, as in production; nothing here reaches past 127.0.0.1.

With ``CLARIFY_UPDATE_SCREENSHOTS=1`` the tests also write the screenshots in docs/sandbox/
(``scripts/gallery_screenshots.sh`` runs them so).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from clarify_bot.sandbox.run import open_sandbox
from clarify_bot.sandbox.world import Sandbox
from tests.support.browser import local_browser, missing

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(missing() is not None, reason=missing() or "")]

SHOTS = Path(__file__).resolve().parents[2] / "docs" / "sandbox"
WAIT = 20_000  # ms: the worker polls every half second; a card or a record changes within this


@dataclass
class Page:
    """The sandbox page in a browser tab, with the sandbox behind it."""

    tab: Any  # playwright Page
    box: Sandbox
    blocked: list[str]
    errors: list[str]

    async def person(self, slack_id: str) -> None:
        await self.tab.click(f'[data-person="{slack_id}"]')
        await self.tab.wait_for_selector(f'[data-person="{slack_id}"][aria-pressed="true"]')

    def card(self, clarification: str) -> Any:
        """The newest message in the shown DM about ``clarification``."""
        return self.tab.locator(f'#messages article[data-clarification="{clarification}"]').last

    def record(self, clarification: str) -> Any:
        return self.tab.locator(f'#record article[data-clarification="{clarification}"]')

    async def press(self, clarification: str, action_id: str) -> None:
        button = self.card(clarification).locator(f'button[data-action-id="{action_id}"]')
        await button.wait_for(timeout=WAIT)
        await button.click()

    async def shot(self, name: str) -> None:
        if os.environ.get("CLARIFY_UPDATE_SCREENSHOTS") == "1":
            SHOTS.mkdir(exist_ok=True)
            await self.tab.screenshot(path=str(SHOTS / f"{name}.png"))


@pytest.fixture
async def page() -> AsyncIterator[Page]:
    async with open_sandbox(port=0) as (url, box), local_browser(width=1400, height=900) as (
            _, tab):
        await tab.page.goto(url)
        await tab.page.wait_for_selector('[data-person="U0SARAH"]', timeout=WAIT)
        shown = Page(tab=tab.page, box=box, blocked=tab.blocked, errors=tab.errors)
        yield shown
        assert shown.blocked == []  # nothing fetched from another host: the page works offline
        assert shown.errors == []


def answers_at_core(box: Sandbox, clarification: str) -> Any:
    return box.core.get_clarification(clarification_id=clarification)


async def test_sandbox_a_tap_becomes_a_bound_answer(page: Page) -> None:
    """Ahmed answers the Harbor Street lease question (normal severity): one editor's answer
    binds; his card says so and the core shows the response and the fact version it bound."""
    await page.person("U0AHMED")
    await page.press("clr-00002", "clarify.answer.1")
    record = page.record("clr-00002")
    await record.locator(".pill.state", has_text="answered").wait_for(timeout=WAIT)
    await record.locator(".bound").wait_for(timeout=WAIT)
    assert "human_clarification" in await record.locator(".bound").inner_text()
    assert "Ahmed Karimi (editor): next calendar quarter · bound" in await record.inner_text()
    await page.card("clr-00002").get_by_text("Recorded as evidence").wait_for(
        timeout=WAIT)
    at_core = await answers_at_core(page.box, "clr-00002")
    assert [(r.responder, r.answer_index) for r in at_core.responses] == [("p-ahmed", 1)]
    await page.shot("answered")


async def test_sandbox_a_critical_question_needs_a_second_confirmation(page: Page) -> None:
    await page.person("U0SARAH")
    await page.shot("first-card")
    await page.press("clr-00001", "clarify.answer.1")
    await page.card("clr-00001").get_by_text("First confirmation recorded").wait_for(
        timeout=WAIT)
    record = page.record("clr-00001")
    await record.get_by_text("Quorum: 1 of 2").wait_for(timeout=WAIT)
    assert "answered" not in await record.locator(".pill.state").inner_text()
    await page.person("U0AHMED")
    await page.press("clr-00001", "clarify.answer.1")
    await record.locator(".pill.state", has_text="answered").wait_for(timeout=WAIT)
    await record.get_by_text("Quorum: 2 of 2").wait_for(timeout=WAIT)
    assert "quorum_confirmation" in await record.locator(".bound").inner_text()
    at_core = await answers_at_core(page.box, "clr-00001")
    assert sorted(r.responder for r in at_core.responses) == ["p-ahmed", "p-sarah"]
    await page.shot("quorum")


async def test_sandbox_something_else_answers_with_a_date_from_the_modal(page: Page) -> None:
    """Tom reads German: his card and its modal are in German; a date picked in the modal is
    recorded as his answer."""
    await page.person("U0TOM")
    await page.press("clr-00003", "clarify.custom")
    modal = page.tab.locator("#modal")
    await modal.wait_for(state="visible", timeout=WAIT)
    assert await page.tab.locator("#modal-title").inner_text() == "Anderes Datum"
    await page.shot("modal")
    await modal.locator('[data-block-id="custom.0.from"] input[type="date"]').fill("2026-05-25")
    await page.tab.locator("#modal-submit").click()
    await modal.wait_for(state="hidden", timeout=WAIT)
    record = page.record("clr-00003")
    await record.locator(".pill.state", has_text="answered").wait_for(timeout=WAIT)
    assert "2026-05-25" in await record.locator(".responses").inner_text()
    at_core = await answers_at_core(page.box, "clr-00003")
    assert at_core.responses[0].answer_custom is not None
    assert at_core.responses[0].answer_custom.valid_from == "2026-05-25"


async def test_sandbox_not_the_right_person_passes_the_question_on(page: Page) -> None:
    await page.person("U0AHMED")
    await page.press("clr-00002", "clarify.decline")
    await page.tab.get_by_text("passed on to someone else").wait_for(timeout=WAIT)
    record = page.record("clr-00002")
    await record.locator("summary").click()
    await record.get_by_text("CANDIDATE_DECLINED").wait_for(timeout=WAIT)
    # the next person in the ranking, Priya, is asked once the card's lease ends
    await page.person("U0PRIYA")
    await page.card("clr-00002").wait_for(timeout=WAIT)
    await record.get_by_text("delivered · Priya Natarajan").wait_for(timeout=WAIT)


async def test_sandbox_a_steward_overrides_a_conflict_from_a_question_made_on_the_page(
        page: Page) -> None:
    """A critical question created with the page's form; Sarah and Ahmed answer differently;
    Maria, Legal's steward, reading French, decides in the override modal, which first
    refuses an empty note."""
    form = page.tab.locator("#question-form")
    await page.tab.locator("#new-question summary").click()
    await form.locator('select[name="severity"]').select_option("critical")
    await form.locator('input[name="question"]').fill("When does the *Riverside* contract end?")
    await form.locator('input[name="title"]').fill("<b>Riverside</b> & _sons_ contract")
    await form.locator('input[name="authors"][value="p-ahmed"]').check()
    await form.get_by_role("button", name="Create the question").click()
    await page.tab.get_by_text("The core created").wait_for(timeout=WAIT)
    made = (await page.tab.locator("#status").inner_text()).split()[3].rstrip(";")
    await page.person("U0SARAH")
    # the title's asterisks are text, not bold: Slack shows what the core holds
    question = page.card(made).locator(".bk-rich").first
    await question.get_by_text("When does the *Riverside* contract end?").wait_for(timeout=WAIT)
    await page.press(made, "clarify.answer.0")
    await page.person("U0AHMED")
    await page.press(made, "clarify.answer.1")
    record = page.record(made)
    await record.locator(".pill.state", has_text="conflicted").wait_for(timeout=WAIT)
    await page.person("U0MARIA")
    # her App Home (published when she opens it) lists the conflict, in French
    await page.tab.locator("#tab-home").click()
    home = page.tab.locator("#home")
    await home.get_by_text("À traiter par un steward").wait_for(timeout=WAIT)
    await home.get_by_text(made).wait_for(timeout=WAIT)
    await page.shot("home")
    await page.tab.locator("#tab-messages").click()
    await page.press(made, "clarify.override.1")
    modal = page.tab.locator("#modal")
    await modal.wait_for(state="visible", timeout=WAIT)
    assert await page.tab.locator("#modal-title").inner_text() == "Décision du steward"
    # the document's title, wherever the bot puts it, is text: no tag, no italics
    notice = page.card(made)
    await notice.get_by_text("<b>Riverside</b> & _sons_ contract").first.wait_for(timeout=WAIT)
    assert await notice.locator("b:has-text('Riverside'), i:has-text('sons')").count() == 0
    note = modal.locator('[data-block-id="override.note"] textarea')
    await page.tab.locator("#modal-submit").click()  # empty: the client itself refuses, as Slack's
    assert await note.evaluate("n => n.validity.valueMissing")
    await note.fill("   ")  # blank: the bot refuses it and names the field
    await page.tab.locator("#modal-submit").click()
    refused = modal.locator('[data-block-id="override.note"] .bk-error')
    await refused.wait_for(timeout=WAIT)
    # in the language the modal was drawn in
    assert await refused.inner_text() == \
        "Une remarque est obligatoire pour une décision du steward."
    await note.fill("The amendment of 3 May governs.")
    await page.shot("override")
    await page.tab.locator("#modal-submit").click()
    await modal.wait_for(state="hidden", timeout=WAIT)
    await record.locator(".pill.state", has_text="answered").wait_for(timeout=WAIT)
    assert "steward_override" in await record.locator(".bound").inner_text()
    at_core = await answers_at_core(page.box, made)
    assert at_core.responses[-1].responder == "p-maria"


async def test_sandbox_works_by_keyboard_at_a_phones_width() -> None:
    """At 390 px wide nothing runs off the side, and an answer can be given with the keyboard
    alone: Tab to the button, Enter."""
    async with open_sandbox(port=0) as (url, box), local_browser(width=390, height=844) as (
            _, tab):
        page = Page(tab=tab.page, box=box, blocked=tab.blocked, errors=tab.errors)
        await tab.page.goto(url)
        await tab.page.wait_for_selector('[data-person="U0AHMED"]', timeout=WAIT)
        await page.person("U0AHMED")
        button = page.card("clr-00002").locator('button[data-action-id="clarify.answer.0"]')
        await button.wait_for(timeout=WAIT)
        assert await tab.page.evaluate(
            "document.documentElement.scrollWidth <= window.innerWidth")
        await button.focus()
        await tab.page.keyboard.press("Enter")
        record = page.record("clr-00002")
        await record.locator(".pill.state", has_text="answered").wait_for(timeout=WAIT)
        assert "Olga Ivanova" in await tab.page.locator("#unreachable").inner_text()
        await page.shot("phone")
        assert tab.blocked == [] and tab.errors == []


async def test_sandbox_shows_a_question_held_for_working_hours_then_sent(page: Page) -> None:
    """Lee works from Tokyo, where the sandbox's afternoon is night: a question to him is held
    (shown beside the core's record, which alone says only that nobody was asked), and the next
    working morning in his zone sends it."""
    form = page.tab.locator("#question-form")
    await page.tab.locator("#new-question summary").click()
    for box in ("p-sarah", "p-lee"):
        await form.locator(f'input[name="authors"][value="{box}"]').set_checked(box == "p-lee")
    await form.get_by_role("button", name="Create the question").click()
    await page.tab.get_by_text("The core created").wait_for(timeout=WAIT)
    made = (await page.tab.locator("#status").inner_text()).split()[3].rstrip(";")
    record = page.record(made)
    held = record.locator(".held")
    await held.wait_for(timeout=WAIT)
    assert "Held by the bot for Lee Park" in await held.inner_text()
    await page.person("U0LEE")
    assert await page.card(made).count() == 0
    await page.tab.locator("#new-question summary").click()  # the form folded, for the picture
    await page.shot("held")
    await page.tab.locator('[data-step="morning"]').click()  # Lee's next working morning
    await page.card(made).wait_for(timeout=WAIT)
    await held.wait_for(state="detached", timeout=WAIT)
