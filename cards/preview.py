"""Writes every card state in both formats and three languages, plus an offline HTML gallery
with a language switch (``clarify-bot preview``).

The only module of ``cards`` that touches the file system.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from cards.fixtures import LOCALES, preview_codec, states
from cards.gallery_template import PAGE

JS_DIR = Path(__file__).with_name("js")
INSTALLED = JS_DIR / "node_modules" / "adaptivecards" / "dist" / "adaptivecards.min.js"
# Microsoft's renderer (MIT, version pinned by cards/js/package-lock.json), shipped with the
# package so that the gallery draws the Teams cards with nothing installed beforehand.
VENDORED = Path(__file__).with_name("vendor") / "adaptivecards.min.js"
RENDERER = INSTALLED if INSTALLED.is_file() else VENDORED


# the switch's labels, each in its own language
LANGUAGE_NAMES = {"en": "English", "de": "Deutsch", "fr": "Français"}


def rendered_states(locale: str = "en") -> list[dict]:
    """Every state as ``{name, title, slack, teams}`` for a person reading ``locale``,
    rendered with the preview key."""
    codec = preview_codec()
    return [{"name": s.name, "title": s.title, "slack": s.slack(codec), "teams": s.teams(codec)}
            for s in states(locale)]


def rendered_locales() -> list[dict]:
    """Every language of the gallery as ``{language, locale, label, states}``."""
    return [{"language": language, "locale": locale, "label": LANGUAGE_NAMES[language],
             "states": rendered_states(locale)} for language, locale in LOCALES.items()]


def dump(payload: object) -> str:
    """The canonical JSON text of a payload (also the golden file format)."""
    return json.dumps(payload, ensure_ascii=False, indent=2) + "\n"


def _gallery(rendered: list[dict]) -> str:
    # ``rendered``: rendered_locales()
    # "</" would end the inline <script> early; the JSON escape keeps the data intact.
    data = json.dumps(rendered, ensure_ascii=False).replace("</", "<\\/")
    return PAGE.replace("__STATES__", data)


def write_preview(out_dir: Path) -> list[Path]:
    """Writes ``<state>.slack.json``, ``<state>.teams.json`` (English) and the same under
    ``de/`` and ``fr/``, and ``gallery.html`` (all three, with a language switch) to out_dir.

    The Adaptive Cards renderer is copied beside the gallery (the one ``cards/js`` installed
    when ``.ci/setup-cards.sh`` ran, else the copy shipped in ``cards/vendor``), so the page
    draws both platforms offline, with no CDN and no set-up.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    rendered = rendered_locales()
    written: list[Path] = []
    for language in rendered:
        folder = out_dir if language["language"] == "en" else out_dir / language["language"]
        folder.mkdir(exist_ok=True)
        for state in language["states"]:
            for platform in ("slack", "teams"):
                path = folder / f"{state['name']}.{platform}.json"
                path.write_text(dump(state[platform]), encoding="utf-8")
                written.append(path)
    gallery = out_dir / "gallery.html"
    gallery.write_text(_gallery(rendered), encoding="utf-8")
    written.append(gallery)
    if RENDERER.is_file():
        written.append(Path(shutil.copyfile(RENDERER, out_dir / RENDERER.name)))
    return written
