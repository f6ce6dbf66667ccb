"""Golden files: every state in both formats and in each language, compared byte for byte.

``golden/<language>/<state>.<platform>.json`` for English (``en``, read as British English),
German (``de-DE``) and French (``fr-FR``). Regenerate after an intended change with
``UPDATE_GOLDENS=1 .venv/bin/python -m pytest tests/cards/test_cards_goldens.py`` and review
the diff by eye before committing.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from cards import slack, teams
from cards.fixtures import LOCALES, preview_codec, states
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


# Rendered by the product but not yet a gallery state (so no goldens): the steward's batched
# notices, tested in test_cards_steward_notices.py. Remove a name once its state is added.
NOT_IN_GALLERY = {"render_steward_notices"}


def test_every_renderer_draws_a_gallery_state(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each public render function of both platforms is called by some state of the fixtures,
    so a new kind of message cannot miss the gallery, the goldens and the screenshots."""
    called: set[tuple[str, str]] = set()

    def spying(function: Callable[..., dict], key: tuple[str, str]) -> Callable[..., dict]:
        def spy(*args: object, **kwargs: object) -> dict:
            called.add(key)
            return function(*args, **kwargs)
        return spy

    for module in (slack, teams):
        for name in [n for n in dir(module) if n.startswith("render_")]:
            monkeypatch.setattr(module, name, spying(getattr(module, name),
                                                     (module.__name__, name)))
    codec = preview_codec()
    for state in states():
        state.slack(codec)
        state.teams(codec)
    renderers = {(m.__name__, n) for m in (slack, teams) for n in dir(m) if n.startswith("render_")}
    missing = {key for key in renderers - called if key[1] not in NOT_IN_GALLERY}
    assert renderers and called and not missing
    assert not {key for key in called if key[1] in NOT_IN_GALLERY}, "drop it from NOT_IN_GALLERY"
