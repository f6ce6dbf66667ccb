"""The README's first command: the demo runs the bot's whole job on embedded defaults."""

from __future__ import annotations

import re

from click.testing import CliRunner

from clarify_bot.cli import main
from devcore.demo import run_demo


async def test_demo_walks_the_loop_to_the_documented_states() -> None:
    """Cards go out, two confirmations bind, a late tap has moved on, an invoice dead-letters."""
    lines: list[str] = []
    summary = await run_demo(echo=lines.append)
    assert summary.states == {"clr-00001": "answered", "clr-00002": "answered",
                              "clr-00003": "dead_lettered", "clr-00004": "open"}
    assert summary.dead_letters == ["clr-00003"]
    assert summary.fact_versions == 2
    assert [o for o in summary.outcomes if o[0] == "clr-00001"] == [
        ("clr-00001", "p-sarah", "forwarded"), ("clr-00001", "p-ahmed", "forwarded"),
        ("clr-00001", "p-sarah", "forwarded")]
    joined = "\n".join(lines)
    assert "requires two confirmations" in joined
    assert "Recorded as binding evidence" in joined and "Sarah Chen and Ahmed Karimi" in joined
    assert "has moved on" in joined
    assert "redacted escalation" in joined and "dead-letter digest" in joined
    # one reminder, to the one person still asked at 75 % of their window, saying when it
    # moves on; and the steward's batched notice in words
    reminders = [line for line in lines if "Reminder:" in line]
    assert len(reminders) == 1 and "DM to Tom Becker" in reminders[0], reminders
    assert "Moves on to the next person on 8 July at 09:01" in reminders[0]
    assert "notices: a high question went to Tom Becker" in joined


async def test_demo_reads_as_a_story() -> None:
    """No class names; each event under its own day; a pointer to what to try next."""
    lines: list[str] = []
    await run_demo(echo=lines.append)
    joined = "\n".join(lines)
    assert not re.search(r"\b[A-Z][a-z]+(View|Record|Summary|Class)\b", joined), joined
    assert "quorum_confirmation" not in joined and "clr-0000" not in joined
    days = [line.split(" — ")[0].strip() for line in lines if " — " in line]
    assert days[:4] == ["Monday 6 July, 09:00", "Monday 6 July, 11:00",
                        "Monday 6 July, 12:00", "Tuesday 7 July, 12:00"]
    assert len(set(days)) == len(days)  # every event under its own day and time
    conflict = lines.index(next(x for x in lines if x.strip().startswith("Tuesday")))
    assert "Maria Lopez" in lines[conflict + 2]  # the steward's notice, on the day it went out
    assert "clarify-bot preview" in joined and "Agents Playground" in joined
    assert "docs/quickstart.md" in joined


def test_demo_command_exits_cleanly() -> None:
    """`clarify-bot demo` runs with no Slack, Teams, Redis or core configured."""
    result = CliRunner().invoke(main, ["demo"])
    assert result.exit_code == 0, result.output
    assert "Where every question stands:" in result.output
