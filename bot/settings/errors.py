"""Settings errors: ``Problem`` is one bad key, ``SettingsError`` the one exception start-up raises,
listing every problem without ever echoing a secret.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from bot.errors import BotError


@dataclass(frozen=True)
class Problem:
    """One bad key: ``value`` is already rendered, and None whenever it must not be shown."""

    key: str
    value: str | None
    reason: str
    source: str | None = None

    def __str__(self) -> str:
        shown = f" = {self.value}" if self.value is not None else ""
        where = f" (from {self.source})" if self.source else ""
        return f"{self.key}{shown}: {self.reason}{where}"


class SettingsError(BotError, ValueError):
    """The settings cannot be used; the message names every bad key, never a secret."""

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems = tuple(problems)
        if len(self.problems) == 1:  # one line, as a log line or a terminal shows it
            super().__init__(f"invalid clarify-bot settings: {self.problems[0]}")
            return
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"invalid clarify-bot settings ({len(self.problems)}):\n{lines}")

