"""`clarify-bot preview` writes every state in both formats and three languages plus the offline
gallery, whose language switch shows each language's cards on both platforms."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from cards.fixtures import LOCALES, states
from cards.preview import RENDERER, write_preview
from clarify_bot.cli import main


def test_preview_writes_one_file_per_state_and_format(tmp_path: Path) -> None:
    """Each state gets a .slack.json and a .teams.json, and gallery.html names them all."""
    written = write_preview(tmp_path / "out")
    names = {p.name for p in written}
    for state in states():
        for platform in ("slack", "teams"):
            path = tmp_path / "out" / f"{state.name}.{platform}.json"
            assert path.name in names
            assert json.loads(path.read_text())
    gallery = (tmp_path / "out" / "gallery.html").read_text()
    assert all(s.name in gallery for s in states())
    assert "block-kit-builder" in gallery and 'src="adaptivecards.min.js"' in gallery
    assert "https://cdn" not in gallery  # the page works offline
    assert (tmp_path / "out" / RENDERER.name).is_file()  # drawn with nothing installed first


def test_gallery_data_cannot_close_its_script(tmp_path: Path) -> None:
    """The inline JSON is escaped so that no "</script>" can end the data block early."""
    write_preview(tmp_path)
    gallery = (tmp_path / "gallery.html").read_text()
    data = gallery.split('type="application/json">', 1)[1].split("</script>", 1)[0]
    languages = json.loads(data)
    assert [lang["language"] for lang in languages] == list(LOCALES)
    assert all(len(lang["states"]) == len(states()) for lang in languages)


def test_preview_writes_each_language_in_its_folder(tmp_path: Path) -> None:
    """English at the top, German and French under de/ and fr/, each state in both formats,
    with the language's own words and date format."""
    write_preview(tmp_path)
    for language, button in (("de", "12. Juni (signature)"), ("fr", "12 juin (signature)")):
        for state in states():
            for platform in ("slack", "teams"):
                assert json.loads((tmp_path / language / f"{state.name}.{platform}.json")
                                  .read_text())
        question = (tmp_path / language / "question_normal.slack.json").read_text()
        assert button in question and "12 June" not in question


ROOT = Path(__file__).resolve().parents[2]
NODE_MODULES = ROOT / "cards" / "js" / "node_modules"


def _switch(gallery: Path) -> dict:
    """gallery.html run in jsdom, each language button clicked (tests/cards/gallery_switch.js)."""
    if shutil.which("node") is None or not (NODE_MODULES / "jsdom").is_dir():
        if os.environ.get("CI"):
            pytest.fail("node and cards/js (jsdom) are needed: run .ci/setup-cards.sh")
        pytest.skip("node or cards/js/node_modules/jsdom is missing")
    done = subprocess.run(["node", str(Path(__file__).with_name("gallery_switch.js")),
                           str(gallery)], capture_output=True, text=True, timeout=120,
                          check=True, env={**os.environ, "NODE_PATH": str(NODE_MODULES)})
    return json.loads(done.stdout)


@pytest.mark.slow
def test_gallery_switches_language_on_both_platforms(tmp_path: Path) -> None:
    """The page opens in English; each button of the switch redraws every state in its
    language, the Block Kit sketch and the Adaptive Card (Microsoft's renderer) alike."""
    write_preview(tmp_path)
    page = _switch(tmp_path / "gallery.html")
    assert page["buttons"] == [["en", "English"], ["de", "Deutsch"], ["fr", "Français"]]
    opening, *clicks = page["shown"]
    assert opening["lang"] == "en" and opening["pressed"] == ["en"]
    words = {"en": ("12 June (signature)", "Not the right person", "You were asked"),
             "de": ("12. Juni (signature)", "Ich bin nicht die richtige Person",
                    "Sie werden gefragt"),
             "fr": ("12 juin (signature)", "Je ne suis pas la bonne personne",
                    "Cette question vous est posée")}
    others = {lang: {w for other, ws in words.items() if other != lang for w in ws}
              for lang in words}
    assert [c["clicked"] for c in clicks] == ["en", "de", "fr"]
    for shown in [opening, *clicks]:
        lang = shown["lang"]
        assert shown["pressed"] == [lang] and shown["html_lang"] == lang
        assert shown["states"] == len(states())
        for column in ("slack", "teams"):
            assert all(w in shown[column] for w in words[lang]), (lang, column)
            assert not any(w in shown[column] for w in others[lang]), (lang, column)
            assert "Something else…" in shown[column]  # the spec's words, in every language


def test_cli_preview(tmp_path: Path) -> None:
    """The console command calls write_preview and reports the count."""
    result = CliRunner().invoke(main, ["preview", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "gallery.html").is_file()
