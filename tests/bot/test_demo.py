"""The README's first command: the demo runs the loop end to end on embedded defaults."""

from __future__ import annotations

from click.testing import CliRunner

from bot.cli import main
from bot.demo import run_demo


async def test_demo_walks_the_loop_to_the_documented_states() -> None:
    """The demo binds by override and by confirmation, records a late conflict, dead-letters."""
    lines: list[str] = []
    summary = await run_demo(echo=lines.append)
    assert ("clr-00001", "steward_override", 200) in summary.outcomes
    assert ("clr-00002", "attestation", 202) in summary.outcomes
    assert ("clr-00002", "bound", 200) in summary.outcomes
    assert ("clr-00002", "conflicting_attestation", 202) in summary.outcomes
    assert summary.dead_letters == ["clr-00003"]
    assert summary.states == {
        "clr-00001": "answered",
        "clr-00002": "answered",
        "clr-00003": "dead_lettered",
        "clr-00004": "open",
    }
    assert any("redacted steward escalation" in line for line in lines)


def test_demo_command_exits_cleanly() -> None:
    """`clarify-bot demo` runs with no Slack, Teams, Redis or core configured."""
    result = CliRunner().invoke(main, ["demo"])
    assert result.exit_code == 0, result.output
    assert "Final states:" in result.output
