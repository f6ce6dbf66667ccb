"""What the core wrote is text on the operator's terminal too: `clarify ls` and `show` print
titles, questions, labels and event messages without the control characters that would drive
the terminal (an ESC sequence can set the window title, write the clipboard or clear the
screen), reverse the rest of a line (a bidirectional override) or break a table row (a
newline); and the command `ls` prints to list the next ones quotes the core's cursor, so
running it as printed runs nothing else."""

from __future__ import annotations

import shlex
from typing import Any

from devcore import paging
from tests.cli.conftest import Cli, LiveCore
from tests.cli.test_clarify_cli import CRITICAL, SARAH

# a window title, the clipboard (OSC 52), a colour, a C1 CSI, a bell, a carriage return that
# lets the rest overwrite the line, a right-to-left override and a line break
HOSTILE = ("Qx7 \x1b]0;owned\x07 \x1b]52;c;ZXZpbA==\x07 \x1b[31mred\x1b[0m \x9b2J "
           "\rback \u202eevil\u202c\nnext")
# each control character gone, the carriage return and the line break a space each
SHOWN = "Qx7 ]0;owned ]52;c;ZXZpbA== [31mred[0m 2J  back evil next"
DRIVING = set("\x1b\x07\x9b\r\u202e\u202c")


def _hostile(live: LiveCore) -> None:
    c = live.core.records[CRITICAL].model
    c.question = HOSTILE
    c.document.title = HOSTILE
    for candidate in c.candidates:
        candidate.label = HOSTILE


def test_ls_and_show_print_what_the_core_wrote_as_text(cli: Cli, live: LiveCore) -> None:
    _hostile(live)
    listed = cli(SARAH, "ls")
    assert listed.exit_code == 0, listed.output
    assert not DRIVING & set(listed.output)
    rows = listed.output.splitlines()
    assert len(rows) == 1 + 4  # the header and one line per clarification
    row = next(row for row in rows if row.startswith(CRITICAL))
    assert SHOWN in row or live.contract == "baseline"  # a baseline list names no title
    shown = cli(SARAH, "show", CRITICAL)
    assert shown.exit_code == 0, shown.output
    assert not DRIVING & set(shown.output)
    assert f"question: {SHOWN}" in shown.output.splitlines()
    if live.contract == "full":  # a baseline record names no title
        assert f"document: {SHOWN}" in shown.output.splitlines()


def test_the_next_ones_command_quotes_the_cores_cursor(cli: Cli, live: LiveCore,
                                                       monkeypatch: Any) -> None:
    """A core's cursor is opaque: one holding shell syntax is printed quoted, and the
    printed command, split as a shell would, lists the next ones."""
    encode, decode = paging._encode, paging._decode
    tail = " $(touch pwned);x"
    monkeypatch.setattr(paging, "_encode", lambda listing, key: encode(listing, key) + tail)
    monkeypatch.setattr(paging, "_decode",
                        lambda cursor, listing: decode(cursor.removesuffix(tail), listing))
    live.core.largest_page = 1
    first = cli(SARAH, "ls", "--limit", "1")
    assert first.exit_code == 0, first.output
    hint = first.output.splitlines()[-1]
    command = hint.removeprefix("more: ").removesuffix(" lists the next ones")
    words = shlex.split(command)
    assert words[:6] == ["clarify-bot", "clarify", "ls", "--limit", "1", "--cursor"]
    assert len(words) == 7 and words[6].endswith(tail)
    again = cli(SARAH, *words[2:])
    assert again.exit_code == 0, again.output


def test_a_refusal_prints_the_cores_message_as_text(cli: Cli, monkeypatch: Any) -> None:
    """The core's error message (promised value-free, but the core's words) is one line of
    text too: no ESC sequence reaches the terminal."""
    from devcore import faults

    monkeypatch.setattr(faults, "message_of", lambda code: HOSTILE)
    refused = cli(SARAH, "show", "clr-99999")
    assert refused.exit_code == 1
    assert "refused by the core: 404 CLARIFICATION_NOT_FOUND: Qx7" in refused.output
    assert not DRIVING & set(refused.output)
