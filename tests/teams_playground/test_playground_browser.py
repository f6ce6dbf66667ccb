"""The Playground's own web UI in headless Chromium: Sarah sees the question card Teams would
render, presses a date, and the card changes to what her answer did. A screenshot of the card
goes to docs/teams-playground.png (docs/teams.md shows it) when it is missing or
CLARIFY_UPDATE_SCREENSHOTS is set.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.teams_playground import browser
from tests.teams_playground.conftest import SARAH, TeamsStack, needs_the_teams_adapter
from tests.teams_playground.test_playground_e2e import FIRST, QUESTION

# slow: the Agents Playground (Node) and chromium
pytestmark = [needs_the_teams_adapter(), pytest.mark.slow]
SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "teams-playground.png"


@pytest.fixture
def chromium() -> None:
    problem = browser.missing()
    if problem:
        if os.environ.get("CI"):
            pytest.fail(problem)
        pytest.skip(problem)


async def test_a_card_in_the_playground_ui_answered_with_a_click(
        make_teams_stack: Any, chromium: None, tmp_path: Path) -> None:
    """The card renders in the Playground's UI with its date buttons; one click records the
    answer and the card in the UI says so; nothing left 127.0.0.1."""
    stack: TeamsStack = await make_teams_stack()
    sarah = await stack.person(SARAH)
    async with browser.opened(sarah.url) as tab:
        page = tab.page
        cid = await stack.create(authority={"authored_by": ["p-sarah"]})
        card = page.locator(".ac-adaptiveCard", has_text=QUESTION).last
        await card.wait_for(timeout=30_000)
        await browser.close_log_panel(page)  # it shows the run's temporary config path
        await card.scroll_into_view_if_needed()
        shot = tmp_path / "teams-playground.png"
        await page.screenshot(path=str(shot))
        assert shot.read_bytes().startswith(b"\x89PNG") and shot.stat().st_size > 10_000
        # docs/ keeps the committed one unless asked to refresh it (or it is missing), so a
        # test run leaves the work tree clean
        if os.environ.get("CLARIFY_UPDATE_SCREENSHOTS") or not SCREENSHOT.exists():
            SCREENSHOT.write_bytes(shot.read_bytes())
        await card.get_by_role("button", name=FIRST).first.click()
        await page.locator(".ac-adaptiveCard", has_text="Recorded as evidence").last.wait_for(
            timeout=30_000)
        (record,) = await stack.until_recorded(cid, 1)
        assert (record.responder, record.answer_index) == ("p-sarah", 0)
    # what the UI asked of other hosts (a font CDN) was refused, and it worked without it
    assert "127.0.0.1" not in tab.blocked
