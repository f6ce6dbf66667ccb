"""`clarify ls` and `clarify queue` against a core that serves its lists one item a page: ls
follows the cursors up to --limit and prints the command that lists the next ones; queue
follows every list to its end, or says how to list the rest when it cannot."""

from __future__ import annotations

from typing import Any

from bot.core.models import ClarificationState
from bot.core.paging import Bound
from clarify_bot import steward
from tests.cli.conftest import Cli, LiveCore
from tests.cli.test_clarify_cli import LOW, MARIA, NORMAL, SARAH, parsed


def ids(doc: dict[str, Any]) -> list[str]:
    return [i["id"] for i in doc["items"]]


def test_ls_follows_a_core_that_pages_by_one_up_to_the_limit(cli: Cli, live: LiveCore) -> None:
    """Pages of one: the default limit lists the whole list, as a core serving it in one page
    does, with no "more" line."""
    everything = ids(parsed(cli(SARAH, "ls", json_out=True)))
    live.core.largest_page = 1
    doc = parsed(cli(SARAH, "ls", json_out=True))
    assert ids(doc) == everything and len(everything) == 4
    assert doc["complete"] is True and "nextCursor" not in doc
    text = cli(SARAH, "ls")
    assert text.exit_code == 0 and "more:" not in text.output


def test_ls_cut_at_its_limit_prints_the_command_for_the_next_ones(cli: Cli,
                                                                 live: LiveCore) -> None:
    """--limit 3 with pages of one: three items, then the command that lists the next ones
    (the same options and the cursor); running it lists the rest, nothing twice."""
    everything = ids(parsed(cli(SARAH, "ls", json_out=True)))
    live.core.largest_page = 1
    first = cli(SARAH, "ls", "--limit", "3")
    assert first.exit_code == 0, first.output
    rows = [line.split()[0] for line in first.output.splitlines()[1:-1]]
    hint = first.output.splitlines()[-1]
    assert rows == everything[:3]
    assert hint.startswith("more: clarify-bot clarify ls --limit 3 --cursor ")
    assert hint.endswith(" lists the next ones")
    again = hint.removeprefix("more: clarify-bot clarify ").removesuffix(" lists the next ones")
    rest = parsed(cli(SARAH, *again.split(), json_out=True))
    assert rows + ids(rest) == everything and rest["complete"] is True


def test_queue_is_whole_from_a_core_that_pages_by_one(cli: Cli, live: LiveCore) -> None:
    """Pages of one give the queue every item a core serving whole pages gives."""
    for cid in (NORMAL, LOW):
        live.core.records[cid].model.state = ClarificationState.EXPIRED
    everything = ids(parsed(cli(MARIA, "queue", json_out=True)))
    live.core.largest_page = 1
    doc = parsed(cli(MARIA, "queue", json_out=True))
    assert sorted(ids(doc)) == sorted(everything) and len(everything) == 4
    assert doc["complete"] is True
    assert "and more" not in cli(MARIA, "queue").output


def test_queue_cut_at_its_bound_says_how_to_list_the_rest(cli: Cli, live: LiveCore,
                                                         monkeypatch: Any) -> None:
    """A list that goes on past the command's bound (one page here): the items read, then
    one line saying the list goes on and how to list each state; JSON says not complete."""
    monkeypatch.setattr(steward, "QUEUE_BOUND", Bound(pages=1, items=100, seconds=60))
    for cid in (NORMAL, LOW):  # two in one list, so a baseline core's list goes on too
        live.core.records[cid].model.state = ClarificationState.EXPIRED
    live.core.largest_page = 1
    text = cli(MARIA, "queue")
    assert text.exit_code == 0, text.output
    last = text.output.strip().splitlines()[-1]
    assert last.startswith("…and more: the core's list did not end within")
    assert "(1 pages or 60 s)" in last and "clarify-bot clarify ls --state STATE" in last
    doc = parsed(cli(MARIA, "queue", json_out=True))
    assert doc["complete"] is False and 0 < len(doc["items"]) < 4
