"""`clarify-bot preview` writes every state in both formats plus the offline gallery."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from cards.fixtures import states
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
    assert len(json.loads(data)) == len(states())


def test_cli_preview(tmp_path: Path) -> None:
    """The console command calls write_preview and reports the count."""
    result = CliRunner().invoke(main, ["preview", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "gallery.html").is_file()
