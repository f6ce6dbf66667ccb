"""An unreachable Slack is named by its setting and address in `serve`'s start-up line, as an
unreachable core is: the line says which setting to fix and where it points."""

from __future__ import annotations

from typing import Any

import pytest

from devslack import LocalSlack
from tests.bot.test_serve import healthy, slack, start
from tests.slack.conftest import fake_slack
from tests.support.processes import free_port, wait_until

pytestmark = pytest.mark.slow  # `clarify-bot serve` and `devcore` processes

FIXTURES = (start, slack, fake_slack)  # test_serve's, shared (fake_slack: slack's)


async def test_an_unreachable_slack_is_named_by_setting_and_address(
        start: Any, slack: LocalSlack, devcore_url: str) -> None:
    away = f"http://127.0.0.1:{free_port()}/api/"
    bot = await start(core=devcore_url, slack=slack, env={"CLARIFY_BOT_SLACK__API_URL": away})
    await wait_until(lambda: healthy(bot), "the bot to listen")
    await wait_until(lambda: any(x["event"] == "service.check_failed" and x["check"] == "slack"
                            for x in bot.lines()), "the start-up check's line")
    code, _ = await bot.terminate()
    assert code == 0
    check = next(x for x in bot.lines()
                 if x["event"] == "service.check_failed" and x["check"] == "slack")
    assert (check["setting"], check["address"]) == ("slack.api_url", away)
    assert check["result"] in ("unavailable", "timeout")
