"""Golden files: every state in both formats and in each language, compared byte for byte.

``golden/<language>/<state>.<platform>.json`` for English (``en``, read as British English),
German (``de-DE``) and French (``fr-FR``). Regenerate after an intended change with
``UPDATE_GOLDENS=1 .venv/bin/python -m pytest tests/cards/test_cards_goldens.py`` and review
the diff by eye before committing.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cards.fixtures import LOCALES, states
from cards.preview import dump, rendered_states

GOLDEN = Path(__file__).with_name("golden")
UPDATE = os.environ.get("UPDATE_GOLDENS") == "1"
PLATFORMS = ("slack", "teams")
CASES = [(language, state["name"], platform, state[platform])
         for language, locale in LOCALES.items()
         for state in rendered_states(locale) for platform in PLATFORMS]


@pytest.mark.parametrize(("language", "name", "platform", "payload"), CASES,
                         ids=[f"{lang}/{n}.{p}" for lang, n, p, _ in CASES])
def test_rendering_matches_golden(language: str, name: str, platform: str,
                                  payload: object) -> None:
    """The renderer's output for this state and language equals the reviewed golden file."""
    path = GOLDEN / language / f"{name}.{platform}.json"
    if UPDATE:
        path.parent.mkdir(exist_ok=True)
        path.write_text(dump(payload), encoding="utf-8")
    assert path.is_file(), f"no golden for {language}/{name}.{platform}: run UPDATE_GOLDENS=1"
    assert dump(payload) == path.read_text(encoding="utf-8")


def test_no_stale_goldens() -> None:
    """Every golden file belongs to a current state and language, so nothing is orphaned."""
    expected = {f"{language}/{s.name}.{p}.json" for language in LOCALES for s in states()
                for p in PLATFORMS}
    assert {str(p.relative_to(GOLDEN)) for p in GOLDEN.rglob("*.json")} == expected
