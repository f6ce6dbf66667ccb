"""The platforms this build mounts: a platform plugs in with one line in ``PLATFORMS``, its name
(as ``clarify.channels`` writes it) and its adapter package's ``mount`` module
(``bot.process.service.Platform``), imported only when configured, so a deployment without a
platform never loads its SDK (docs/architecture.md, "Where a new platform plugs in").

``clarify.channels`` takes any platform name; ``unmounted`` is where a name no platform answers
to (a typo) is refused, by ``serve`` and ``check-config`` alike (``clarify_bot.preflight``).
"""

from __future__ import annotations

import importlib

from bot.process.service import Platform
from bot.settings import Problem, Settings

PLATFORMS = {"slack": "adapters.slack.mount", "teams": "adapters.teams.mount"}


def platform(name: str) -> Platform:
    module: Platform = importlib.import_module(PLATFORMS[name])  # type: ignore[assignment]
    return module


def unmounted(settings: Settings) -> Problem | None:
    """``clarify.channels`` naming a platform this build does not mount, said with the names
    it does."""
    written = [str(name) for name in settings.clarify.channels]
    unknown = [name for name in written if name not in PLATFORMS]
    if not unknown:
        return None
    return Problem(key="clarify.channels", value=",".join(written),
                   reason=f"expected one or more of: {', '.join(PLATFORMS)} (comma-separated, no "
                          f"duplicates); no platform is named {', '.join(unknown)}")
