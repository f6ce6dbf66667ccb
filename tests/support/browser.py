"""Headless Chromium for the browser tests, with Playwright from PyPI and Debian's chromium.

Never ``playwright install`` (it downloads a browser build, which fails here): the browser is
``/usr/bin/chromium`` (``.ci/setup-teams.sh`` installs it where it can). Every request that is
not to 127.0.0.1 is refused and recorded, so a page that would fetch anything from another host
(a CDN, a font) shows it, and the flags keep Chromium from calling home.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def missing() -> str | None:
    """Why the browser cannot run here, or None."""
    if shutil.which("chromium") is None:
        return "Debian's chromium is not installed (.ci/setup-teams.sh installs it as root)"
    try:
        import playwright.async_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (the dev extra has it)"
    return None


@dataclass
class Tab:
    page: Any  # playwright.async_api.Page
    blocked: list[str] = field(default_factory=list)  # hosts refused, for the test to see
    errors: list[str] = field(default_factory=list)  # the page's uncaught errors


@contextlib.asynccontextmanager
async def local_browser(*, width: int = 1280, height: int = 900,
                        locale: str | None = "en-GB") -> AsyncIterator[tuple[Any, Tab]]:
    """A headless Chromium context where only 127.0.0.1 (and data/blob URLs) is reachable, and
    the tab to use (its page opened by the caller); ``locale`` None: the browser's own."""
    from playwright.async_api import Route, async_playwright

    async with async_playwright() as driver:
        browser = await driver.chromium.launch(executable_path=CHROMIUM, headless=True,
                                               args=FLAGS)
        try:
            options: dict[str, Any] = {"viewport": {"width": width, "height": height}}
            if locale is not None:
                options["locale"] = locale
            context = await browser.new_context(**options)
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
            tab.page.on("pageerror", lambda exc: tab.errors.append(str(exc)))
            yield context, tab
        finally:
            await browser.close()
