"""Writes every card state in both formats, plus an offline HTML gallery (``clarify-bot preview``).

The only module of ``cards`` that touches the file system.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from cards.fixtures import preview_codec, states
from cards.gallery_template import PAGE

JS_DIR = Path(__file__).with_name("js")
INSTALLED = JS_DIR / "node_modules" / "adaptivecards" / "dist" / "adaptivecards.min.js"
# Microsoft's renderer (MIT, version pinned by cards/js/package-lock.json), shipped with the
# package so that the gallery draws the Teams cards with nothing installed beforehand.
VENDORED = Path(__file__).with_name("vendor") / "adaptivecards.min.js"
RENDERER = INSTALLED if INSTALLED.is_file() else VENDORED


def rendered_states() -> list[dict]:
    """Every state as ``{name, title, slack, teams}``, rendered with the preview key."""
    codec = preview_codec()
    return [{"name": s.name, "title": s.title, "slack": s.slack(codec), "teams": s.teams(codec)}
            for s in states()]


def dump(payload: object) -> str:
    """The canonical JSON text of a payload (also the golden file format)."""
    return json.dumps(payload, ensure_ascii=False, indent=2) + "\n"


def _gallery(rendered: list[dict]) -> str:
    # "</" would end the inline <script> early; the JSON escape keeps the data intact.
    data = json.dumps(rendered, ensure_ascii=False).replace("</", "<\\/")
    return PAGE.replace("__STATES__", data)


def write_preview(out_dir: Path) -> list[Path]:
    """Writes ``<state>.slack.json``, ``<state>.teams.json`` and ``gallery.html`` to out_dir.

    The Adaptive Cards renderer is copied beside the gallery (the one ``cards/js`` installed
    when ``.ci/setup-cards.sh`` ran, else the copy shipped in ``cards/vendor``), so the page
    draws both platforms offline, with no CDN and no set-up.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    rendered = rendered_states()
    written: list[Path] = []
    for state in rendered:
        for platform in ("slack", "teams"):
            path = out_dir / f"{state['name']}.{platform}.json"
            path.write_text(dump(state[platform]), encoding="utf-8")
            written.append(path)
    gallery = out_dir / "gallery.html"
    gallery.write_text(_gallery(rendered), encoding="utf-8")
    written.append(gallery)
    if RENDERER.is_file():
        written.append(Path(shutil.copyfile(RENDERER, out_dir / RENDERER.name)))
    return written
