"""Headless Chromium on the Playground's web UI, with Playwright from PyPI and Debian's chromium.

Never ``playwright install`` (it downloads a browser build, which fails here): the browser is
``/usr/bin/chromium`` (``.ci/setup-teams.sh`` installs it where it can). Every request that is
not to 127.0.0.1 is blocked (the UI asks a font CDN), and the flags keep Chromium from calling
home (docs/teams.md, "Local testing with the Agents Playground").
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from tests.support.browser import CHROMIUM, FLAGS, missing

__all__ = ["missing", "opened", "close_log_panel"]


@dataclass
class Tab:
    page: Any  # playwright.async_api.Page
    blocked: list[str] = field(default_factory=list)  # hosts refused, for the test to see


@contextlib.asynccontextmanager
async def opened(url: str, *, width: int = 1280, height: int = 900) -> AsyncIterator[Tab]:
    """A headless Chromium page on ``url``; only 127.0.0.1 (and data/blob URLs) is reachable."""
    from playwright.async_api import Route, async_playwright

    async with async_playwright() as driver:
        browser = await driver.chromium.launch(executable_path=CHROMIUM, headless=True,
                                               args=FLAGS)
        try:
            context = await browser.new_context(viewport={"width": width, "height": height})
            tab = Tab(page=None)

            async def only_local(route: Route) -> None:
                target = urlsplit(route.request.url)
                if target.scheme in ("data", "blob") or target.hostname == "127.0.0.1":
                    await route.continue_()
                else:
                    tab.blocked.append(target.hostname or target.scheme)
                    await route.abort()

            await context.route("**/*", only_local)
            tab.page = await context.new_page()
            # the page shows only what arrives over its WebSocket once it is open: wait for it
            # (and for the page's first requests) before the test makes anything to show
            async with tab.page.expect_websocket(timeout=60_000):
                await tab.page.goto(url)
            await tab.page.wait_for_load_state("networkidle", timeout=60_000)
            yield tab
        finally:
            await browser.close()


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
