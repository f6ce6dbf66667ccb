"""`clarify-bot serve` on a clock the test moves, for process tests about time.

Run: python -m tests.support.clocked_serve CLOCK_FILE serve --config ... --role worker

Everything after CLOCK_FILE is the console script's own command line (``clarify_bot.cli.main``,
unchanged); the one difference is the clock: ``open_service`` falls back to the system clock,
and here that fallback reads CLOCK_FILE instead (one ISO 8601 time, written by the test with
``ClockFile.set``). The process then works exactly as ``clarify-bot serve`` does, polling,
heartbeating and keeping house in real time, while every "now" it reads is the test's, so a
test moves hours in a few calls instead of sleeping for them.
"""

from __future__ import annotations

import os
import sys
from datetime import datetime
from pathlib import Path


class FileClock:
    """The time in a file, read at every call (a few microseconds); never goes backwards."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._last: datetime | None = None

    def now(self) -> datetime:
        read = datetime.fromisoformat(self.path.read_text(encoding="utf-8").strip())
        if read.tzinfo is None:
            raise ValueError("the clock file holds a timezone-aware time")
        if self._last is None or read > self._last:
            self._last = read
        return self._last


class ClockFile:
    """The test's side: a manual clock (the reference core's, in the test's process) and the
    file the bot's processes read, moved together (the file is replaced whole, never half
    written)."""

    def __init__(self, path: Path, clock: object) -> None:
        self.path, self.clock = path, clock
        self._write()

    def now(self) -> datetime:
        return self.clock.now()  # type: ignore[attr-defined,no-any-return]

    def set(self, when: datetime) -> datetime:
        self.clock.set(when)  # type: ignore[attr-defined]
        self._write()
        return self.now()

    def _write(self) -> None:
        tmp = self.path.with_name(f".{self.path.name}.tmp")
        tmp.write_text(self.now().isoformat(), encoding="utf-8")
        os.replace(tmp, self.path)


def main(argv: list[str]) -> None:
    from clarify_bot import app, cli

    path = Path(argv[0])

    def system_clock() -> FileClock:
        return FileClock(path)

    app.SystemClock = system_clock  # type: ignore[assignment,misc]
    cli.main(argv[1:], prog_name="clarify-bot")


if __name__ == "__main__":
    main(sys.argv[1:])
