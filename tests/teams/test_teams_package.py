"""``clarify-bot teams-package``: the Teams app zip built from the settings, checked against
Microsoft's manifest schema, with the icons Teams requires."""

from __future__ import annotations

import io
import json
import runpy
import struct
import zipfile
import zlib
from pathlib import Path

import pytest
from click.testing import CliRunner

from bot.settings import load_settings
from clarify_bot.cli import main
from clarify_bot.teams_package import (
    ICONS,
    MANIFEST_DIR,
    SCHEMA_FILE,
    PackageError,
    build_package,
    icon_problems,
    read_png,
    schema_problems,
)

ROOT = Path(__file__).resolve().parents[2]
APP_ID = "6f1c2a34-5b6d-4e7f-8a9b-0c1d2e3f4a5b"
COMPLETE = f"""
[teams]
app_id = "{APP_ID}"
app_tenant_id = "5f3c1a2b-7d4e-4c1a-9b2e-0a11ce000001"
[teams.package]
website_url = "https://example.com/clarify"
privacy_url = "https://example.com/clarify/privacy"
terms_url = "https://example.com/clarify/terms"
public_url = "https://clarify.example.com:443/"
version = "1.4.2"
"""


def _config(tmp_path: Path, text: str = COMPLETE) -> Path:
    path = tmp_path / "clarify-bot.toml"
    path.write_text(text, encoding="utf-8")
    return path


def _schema() -> dict:
    return json.loads((MANIFEST_DIR / SCHEMA_FILE).read_text(encoding="utf-8"))


def test_teams_package_builds_the_app_zip(tmp_path: Path) -> None:
    """The command writes a zip with manifest.json and both icons at its root; the manifest
    passes the schema, names the bot in personal scope and the bot's host as valid domain."""
    out = tmp_path / "app.zip"
    result = CliRunner().invoke(main, ["teams-package", "--config", str(_config(tmp_path)),
                                       "--out", str(out)], env={})
    assert result.exit_code == 0, result.output
    assert "https://clarify.example.com:443/api/messages" in result.output
    with zipfile.ZipFile(out) as archive:
        assert sorted(archive.namelist()) == ["color.png", "manifest.json", "outline.png"]
        manifest = json.loads(archive.read("manifest.json"))
        for name in ICONS:
            assert archive.read(name) == (MANIFEST_DIR / name).read_bytes()
    assert schema_problems(manifest, _schema()) == []
    assert tuple(map(int, manifest["manifestVersion"].split("."))) >= (1, 17)
    assert manifest["id"] == APP_ID and manifest["version"] == "1.4.2"
    (bot,) = manifest["bots"]
    commands = bot.pop("commandLists")
    assert bot == {"botId": APP_ID, "scopes": ["personal"], "supportsFiles": False,
                   "isNotificationOnly": False}
    assert [c["title"] for c in commands[0]["commands"]] == ["queue", "reach"]
    assert manifest["validDomains"] == ["clarify.example.com"]
    assert manifest["developer"]["privacyUrl"] == "https://example.com/clarify/privacy"
    assert "${{" not in json.dumps(manifest)


def test_teams_package_is_reproducible(tmp_path: Path) -> None:
    """The same settings give the same bytes (no timestamps), so a rebuild is no new upload."""
    settings = load_settings(_config(tmp_path), {})
    first = build_package(settings, tmp_path / "a.zip").path.read_bytes()
    assert build_package(settings, tmp_path / "b.zip").path.read_bytes() == first


def test_teams_app_id_can_differ_from_the_bot(tmp_path: Path) -> None:
    """teams.package.teams_app_id names the Teams app; the bot stays the Entra app."""
    other = "0b1c2d3e-4f50-4172-8394-a5b6c7d8e9f0"
    settings = load_settings(_config(tmp_path, COMPLETE + f'teams_app_id = "{other}"\n'), {})
    manifest = build_package(settings, tmp_path / "a.zip").manifest
    assert (manifest["id"], manifest["bots"][0]["botId"]) == (other, APP_ID)


def test_teams_package_names_every_missing_setting(tmp_path: Path) -> None:
    """Without an app id and the public URLs nothing is written, and each key is named with
    its environment variable."""
    out = tmp_path / "app.zip"
    result = CliRunner().invoke(main, ["teams-package", "--config",
                                       str(_config(tmp_path, "")), "--out", str(out)], env={})
    assert result.exit_code != 0 and not out.exists()
    for key in ("app_id", "package.website_url", "package.privacy_url", "package.terms_url",
                "package.public_url"):
        assert f"teams.{key}" in result.output
    assert "CLARIFY_BOT_TEAMS__PACKAGE__PUBLIC_URL" in result.output


def test_teams_package_refuses_what_the_schema_refuses(tmp_path: Path) -> None:
    """A template Teams would reject at upload (a scope it does not know) is refused with the
    manifest path, and no zip is written."""
    source = tmp_path / "teams"
    source.mkdir()
    (source / "schema").mkdir()
    (source / SCHEMA_FILE).write_bytes((MANIFEST_DIR / SCHEMA_FILE).read_bytes())
    for name in ICONS:
        (source / name).write_bytes((MANIFEST_DIR / name).read_bytes())
    template = (MANIFEST_DIR / "manifest.json").read_text(encoding="utf-8")
    (source / "manifest.json").write_text(template.replace('["personal"]', '["everywhere"]'),
                                          encoding="utf-8")
    settings = load_settings(_config(tmp_path), {})
    with pytest.raises(PackageError) as caught:
        build_package(settings, tmp_path / "a.zip", source=source)
    assert any(p.startswith("manifest.json bots/0/scopes/0:") for p in caught.value.problems)
    assert not (tmp_path / "a.zip").exists()


def test_settings_refuse_bad_package_values(tmp_path: Path) -> None:
    """Plain http, a 31-character name and a non-semver version are refused at load time."""
    from bot.settings import SettingsError

    bad = COMPLETE.replace("https://example.com/clarify/terms", "http://example.com/t")
    bad += 'name = "' + "x" * 31 + '"\n'
    with pytest.raises(SettingsError) as caught:
        load_settings(_config(tmp_path, bad.replace('"1.4.2"', '"1.4"')), {})
    text = str(caught.value)
    assert "terms_url" in text and "name" in text and "version" in text


# ---------------------------------------------------------------- the icons


def test_committed_icons_are_the_script_drawing() -> None:
    """manifest/teams/*.png are exactly what scripts/teams_icons.py draws."""
    script = runpy.run_path(str(ROOT / "scripts" / "teams_icons.py"))
    assert script["main"](["--check"]) == 0


def test_icons_have_the_sizes_and_colours_teams_requires() -> None:
    """192x192 opaque colour icon; 32x32 outline icon of white on transparent only."""
    for name, size in ICONS.items():
        assert icon_problems(name, (MANIFEST_DIR / name).read_bytes(), size) == []
    _, _, colour = read_png((MANIFEST_DIR / "color.png").read_bytes())
    assert colour is not None and all(p[3] == 255 for p in colour)
    _, _, outline = read_png((MANIFEST_DIR / "outline.png").read_bytes())
    assert outline is not None and {p for p in outline} == {(0, 0, 0, 0), (255, 255, 255, 255)}


def _png(rows: list[list[tuple[int, int, int, int]]], filters: list[int]) -> bytes:
    """A PNG whose rows use the given filter types (a reference encoder for the reader)."""
    raw, previous = b"", bytes(len(rows[0]) * 4)
    for row, kind in zip(rows, filters, strict=True):
        line = bytes(v for p in row for v in p)
        out = bytearray()
        for i, value in enumerate(line):
            a = line[i - 4] if i >= 4 else 0
            b, c = previous[i], previous[i - 4] if i >= 4 else 0
            p = a + b - c
            paeth = min((abs(p - a), 0, a), (abs(p - b), 1, b), (abs(p - c), 2, c))[2]
            out.append((value - [0, a, b, (a + b) // 2, paeth][kind]) & 0xFF)
        raw += bytes([kind]) + bytes(out)
        previous = line
    def chunk(tag: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + tag + data
                + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF))
    header = struct.pack(">IIBBBBB", len(rows[0]), len(rows), 8, 6, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw))
            + chunk(b"IEND", b""))


def test_icon_check_reads_every_png_filter_and_catches_bad_icons() -> None:
    """An outline icon from another tool (any row filter) is read right; one grey pixel, a
    wrong size or a file that is no PNG is refused."""
    white, clear, grey = (255, 255, 255, 255), (0, 0, 0, 0), (128, 128, 128, 255)
    rows = [[white if (x + y) % 3 else clear for x in range(32)] for y in range(32)]
    filters = [n % 5 for n in range(32)]
    assert read_png(_png(rows, filters))[2] == [p for row in rows for p in row]
    assert icon_problems("outline.png", _png(rows, filters), 32) == []
    rows[7][9] = grey
    assert icon_problems("outline.png", _png(rows, filters), 32) == [
        "outline.png: must be white on a transparent background"]
    assert icon_problems("color.png", _png(rows, filters), 192) == [
        "color.png: 32x32, must be 192x192"]
    assert icon_problems("color.png", io.BytesIO(b"GIF89a").getvalue(), 192) == [
        "color.png: not a PNG file"]


def test_the_documented_playground_config_is_the_tests_one() -> None:
    """docs/teams.md's local run uses the same Playground config (Sarah, acme's tenant) as the
    end-to-end tests, so the documented commands cannot drift from what is tested."""
    import yaml

    from tests.teams_playground import playground as pg
    from tests.teams_playground.conftest import ACME_AAD, SARAH

    path = ROOT / "tests" / "teams_playground" / "npm" / "acme-sarah.m365agentsplayground.yml"
    assert yaml.safe_load(path.read_text(encoding="utf-8")) == pg._config(
        SARAH, tenant_id=ACME_AAD, chat_id="a:personal-sarah")
    assert "acme-sarah.m365agentsplayground.yml" in (ROOT / "docs" / "teams.md").read_text()
