"""The fuzz suites' fixtures: the Slack and Teams inbound stacks of tests/slack and tests/teams
(one stack per test, shared by its examples), and every log line the bot writes, captured."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator

import pytest

from bot.logs import HANDLER_NAME, configure_logging
from tests.slack.conftest import core, fake_slack, make_stack, stack  # noqa: F401
from tests.teams.inbound import jwks_url, make_teams, teams  # noqa: F401


class Logs:
    """Everything logged (structlog and the standard library, JSON lines) since the start."""

    def __init__(self) -> None:
        self.out = io.StringIO()

    @property
    def text(self) -> str:
        return self.out.getvalue()

    def assert_free_of(self, *values: str) -> None:
        for value in values:
            found = [line for line in self.text.splitlines() if value in line]
            assert not found, f"a log line repeats {value!r}: {found[0][:3000]}"


@pytest.fixture
def logs() -> Iterator[Logs]:
    """The bot's own logging set-up at debug, its lines also written where the test reads them
    (pytest swaps ``sys.stderr`` per phase, so the handler's formatter is borrowed instead)."""
    captured = Logs()
    configure_logging(level="debug", fmt="json")
    root = logging.getLogger()
    theirs = next(h for h in root.handlers if h.name == HANDLER_NAME)
    mine = logging.StreamHandler(captured.out)
    mine.setFormatter(theirs.formatter)
    for kept in theirs.filters:
        mine.addFilter(kept)
    root.addHandler(mine)
    yield captured
    root.removeHandler(mine)
