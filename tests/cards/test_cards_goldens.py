"""Golden files: every state in both formats, compared byte for byte.

Regenerate after an intended change with ``UPDATE_GOLDENS=1 .venv/bin/python -m pytest
tests/cards/test_cards_goldens.py`` and review the diff by eye before committing.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cards.fixtures import states
from cards.preview import dump, rendered_states

GOLDEN = Path(__file__).with_name("golden")
UPDATE = os.environ.get("UPDATE_GOLDENS") == "1"
CASES = [(state["name"], platform, state[platform])
         for state in rendered_states() for platform in ("slack", "teams")]


@pytest.mark.parametrize(("name", "platform", "payload"), CASES,
                         ids=[f"{n}.{p}" for n, p, _ in CASES])
def test_rendering_matches_golden(name: str, platform: str, payload: object) -> None:
    """The renderer's output for this state equals the reviewed golden file."""
    path = GOLDEN / f"{name}.{platform}.json"
    if UPDATE:
        path.write_text(dump(payload), encoding="utf-8")
    assert path.is_file(), f"no golden for {name}.{platform}: run with UPDATE_GOLDENS=1"
    assert dump(payload) == path.read_text(encoding="utf-8")


def test_no_stale_goldens() -> None:
    """Every golden file belongs to a current state, so removed states leave no orphans."""
    expected = {f"{s.name}.{p}.json" for s in states() for p in ("slack", "teams")}
    assert {p.name for p in GOLDEN.glob("*.json")} == expected
