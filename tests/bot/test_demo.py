"""The README's first command: the demo runs the bot's whole job on embedded defaults."""

from __future__ import annotations

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


def test_demo_command_exits_cleanly() -> None:
    """`clarify-bot demo` runs with no Slack, Teams, Redis or core configured."""
    result = CliRunner().invoke(main, ["demo"])
    assert result.exit_code == 0, result.output
    assert "Final states:" in result.output
