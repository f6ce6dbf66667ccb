"""Headless Chromium on the Playground's web UI, with Playwright from PyPI and Debian's chromium.

Never ``playwright install`` (it downloads a browser build, which fails here): the browser is
``/usr/bin/chromium`` (``.ci/setup-teams.sh`` installs it where it can). Every request that is
not to 127.0.0.1 is blocked (the UI asks a font CDN), and the flags keep Chromium from calling
home (docs/teams.md, "Local testing with the Agents Playground").
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from tests.support.browser import Tab, local_browser, missing

__all__ = ["Tab", "missing", "opened", "close_log_panel"]


@contextlib.asynccontextmanager
async def opened(url: str, *, width: int = 1280, height: int = 900) -> AsyncIterator[Tab]:
    """A headless Chromium page on ``url``; only 127.0.0.1 (and data/blob URLs) is reachable."""
    async with local_browser(width=width, height=height, locale=None) as (_, tab):
        # the page shows only what arrives over its WebSocket once it is open: wait for it
        # (and for the page's first requests) before the test makes anything to show
        async with tab.page.expect_websocket(timeout=60_000):
            await tab.page.goto(url)
        await tab.page.wait_for_load_state("networkidle", timeout=60_000)
        yield tab


async def close_log_panel(page: Any) -> None:
    """Close the Playground's log panel (its lines name the run's temporary files), so a
    screenshot shows the chat alone; the page is left as it was where the panel is not found."""
    header = page.get_by_text("Log Panel", exact=True)
    if await header.count() == 0:
        return
    panel = header.locator("xpath=ancestor::*[.//button][1]")
    buttons = panel.get_by_role("button")
    if await buttons.count():
        await buttons.last.click()
        await header.wait_for(state="hidden", timeout=5_000)
