"""The dead-letter digest against a core that serves its lists in small pages: each pass
follows the list within its bound, the next pass takes it up where the last one stopped, every
dead letter is listed once, and a digest from a pass that did not reach the end says more may
follow (the job list with jobs-read, the clarification list without it)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from bot.core.models import ClarificationState
from bot.core.paging import Bound
from bot.engine import deadletters
from bot.metrics import REGISTRY
from cards.views import DeadLetterDigestView
from tests.engine.conftest import Rig

WINDOW = timedelta(hours=48)


async def dead_letters(rig: Rig, count: int) -> list[str]:
    """``count`` clarifications nobody can be asked (Olga has no chat alias), dead-lettered."""
    made = [await rig.create(authority={"authored_by": ["p-olga"]}) for _ in range(count)]
    await rig.burst()
    rig.clock.advance(WINDOW + timedelta(minutes=5))
    for cid in made:  # the core's clock read reaps the last leases: the jobs are dead letters
        c = await rig.bot.get_clarification(clarification_id=cid)
        assert c.state is ClarificationState.DEAD_LETTERED
    return made


def digests(rig: Rig) -> list[DeadLetterDigestView]:
    found = [s.message for s in rig.channel.sent if s.key.kind == deadletters.KIND]
    assert all(isinstance(d, DeadLetterDigestView) for d in found)
    return found  # type: ignore[return-value]


async def test_every_dead_letter_is_listed_once_from_a_core_that_pages_by_one(
        rig: Rig, monkeypatch: Any) -> None:
    """Five dead letters, pages of one, two pages a pass: the passes list 2, 2 and 1 in turn,
    each clarification once; the first two digests say more may follow, the third does not;
    later passes list nothing again; each cut pass is counted."""
    monkeypatch.setattr(deadletters, "PASS_BOUND", Bound(pages=2, items=100, seconds=60))
    made = await dead_letters(rig, 5)
    rig.core.largest_page = 1
    cut = REGISTRY.value("clarify_lists_cut_total", list="dead_letters")
    for _ in range(6):
        await rig.engine.dead_letters.report()
    sent = digests(rig)
    listed = [item.clarification_id for d in sent for item in d.items]
    assert sorted(listed) == sorted(made) and len(listed) == len(set(listed))
    assert [(len(d.items), d.whole) for d in sent] == [(2, False), (2, False), (1, True)]
    assert "More may follow" in rig.rendered(
        next(s for s in rig.channel.sent if s.key.kind == deadletters.KIND))
    # six passes: three of them stopped before the end (the fourth starts over, and so on)
    assert REGISTRY.value("clarify_lists_cut_total", list="dead_letters") == cut + 4


async def test_a_walk_whose_cursor_the_core_forgot_starts_over(rig: Rig,
                                                              monkeypatch: Any) -> None:
    """A pass resumes from a cursor the core no longer accepts (422): it reads the list from
    its start instead, and the dead letters past the cut are still listed."""
    monkeypatch.setattr(deadletters, "PASS_BOUND", Bound(pages=1, items=100, seconds=60))
    made = await dead_letters(rig, 3)
    rig.core.largest_page = 1
    await rig.engine.dead_letters.report()
    reporter = rig.engine.dead_letters
    assert len(reporter._resume) == 1  # the first pass stopped after one page
    for name in reporter._resume:
        reporter._resume[name] = "not-a-cursor-of-this-core"
    for _ in range(4):
        await reporter.report()
    listed = [item.clarification_id for d in digests(rig) for item in d.items]
    assert sorted(listed) == sorted(made) and len(listed) == len(set(listed))
