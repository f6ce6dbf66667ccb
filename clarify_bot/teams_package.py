"""The Teams app package (``clarify-bot teams-package``): manifest.json from the committed template
and the settings, the two icons, zipped; checked before anything is written.

The manifest is validated against the vendored JSON schema (``manifest/teams/schema``, from
Microsoft's ``@microsoft/app-manifest`` npm package), so a package that Teams would refuse at
upload is refused here, with the setting to change named. The zip is byte-for-byte reproducible
(fixed timestamps), so an unchanged configuration gives an unchanged package.
"""

from __future__ import annotations

import io
import json
import re
import struct
import sys
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from jsonschema import Draft4Validator

from bot.settings import Settings, env_var

# a checkout's manifest/teams, else the copy an install puts under its prefix (pyproject.toml's
# data-files; the container image has it there)
_CHECKOUT = Path(__file__).resolve().parents[1] / "manifest" / "teams"
MANIFEST_DIR = _CHECKOUT if _CHECKOUT.is_dir() else \
    Path(sys.prefix) / "share" / "clarify-bot" / "manifest" / "teams"
SCHEMA_FILE = "schema/MicrosoftTeams.v1.22.schema.json"
ICONS = {"color.png": 192, "outline.png": 32}
_PLACEHOLDER = re.compile(r"\$\{\{([A-Z_]+)\}\}")
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)


class PackageError(Exception):
    """The package cannot be built; ``problems`` says what to change, one line each."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class Package:
    path: Path
    manifest: dict
    messaging_endpoint: str


PACKAGE_KEYS = ("website_url", "privacy_url", "terms_url", "public_url")


def unset_package_keys(raw_teams: dict[str, object], environ: dict[str, str]) -> list[str]:
    """The package's keys neither the file's [teams.package] nor a variable sets: named beside
    a settings error, so every key the package needs is said at once."""
    given = raw_teams.get("package") if isinstance(raw_teams.get("package"), dict) else {}
    assert isinstance(given, dict)
    return [_setting(f"package.{key}") for key in PACKAGE_KEYS
            if not given.get(key) and not environ.get(env_var(f"teams.package.{key}"))]


def _setting(key: str) -> str:
    return f"set teams.{key} ({env_var('teams.' + key)})"


def manifest_values(settings: Settings) -> dict[str, str]:
    """The template's placeholders filled from the settings; every unset one is a problem."""
    teams, package = settings.teams, settings.teams.package
    missing = [] if teams.app_id else [_setting("app_id")]
    if not teams.app_id and teams.app_type != "multi-tenant" and teams.app_tenant_id is None:
        missing.append(_setting("app_tenant_id") + f", the app registration's Entra tenant (a "
                       f"{teams.app_type} app needs it)")
    for key in PACKAGE_KEYS:
        if getattr(package, key) is None:
            missing.append(_setting(f"package.{key}"))
    if missing:
        raise PackageError(missing)
    return {
        "APP_VERSION": package.version,
        "TEAMS_APP_ID": str(package.teams_app_id or teams.app_id),
        "BOT_ID": str(teams.app_id),
        "DEVELOPER_NAME": package.developer,
        "WEBSITE_URL": str(package.website_url),
        "PRIVACY_URL": str(package.privacy_url),
        "TERMS_URL": str(package.terms_url),
        "APP_NAME": package.name,
        "APP_FULL_NAME": package.full_name,
        "ACCENT_COLOR": package.accent_color,
        "BOT_DOMAIN": urlsplit(str(package.public_url)).hostname or "",
    }


def fill_template(template: str, values: dict[str, str]) -> dict:
    """The template with each ``${{NAME}}`` replaced (JSON-escaped); an unknown name fails."""
    unknown = sorted(set(_PLACEHOLDER.findall(template)) - set(values))
    if unknown:
        raise PackageError([f"the manifest template has unknown placeholders: {unknown}"])
    filled = _PLACEHOLDER.sub(lambda m: json.dumps(values[m.group(1)])[1:-1], template)
    manifest: dict = json.loads(filled)
    return manifest


def schema_problems(manifest: dict, schema: dict) -> list[str]:
    """Every place where ``manifest`` breaks the Teams manifest schema, as ``path: message``."""
    validator = Draft4Validator(schema)
    return [f"manifest.json {'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}"
            for e in sorted(validator.iter_errors(manifest), key=lambda e: list(e.path))]


def icon_problems(name: str, data: bytes, size: int) -> list[str]:
    """A PNG of ``size`` x ``size``; the outline icon only white and transparent pixels."""
    try:
        width, height, pixels = read_png(data)
    except ValueError as exc:
        return [f"{name}: {exc}"]
    if (width, height) != (size, size):
        return [f"{name}: {width}x{height}, must be {size}x{size}"]
    if name == "outline.png" and pixels is not None:
        if any(p[3] != 0 and p[:3] != (255, 255, 255) for p in pixels):
            return [f"{name}: must be white on a transparent background"]
    return []


def read_png(data: bytes) -> tuple[int, int, list[tuple[int, ...]] | None]:
    """Width, height and, for 8-bit RGBA without interlacing, the pixels (else None)."""
    if not data.startswith(b"\x89PNG\r\n\x1a\n") or data[12:16] != b"IHDR":
        raise ValueError("not a PNG file")
    width, height, depth, kind, _, _, interlaced = struct.unpack(">IIBBBBB", data[16:29])
    if (depth, kind, interlaced) != (8, 6, 0):
        return width, height, None
    chunks, at = [], 8
    while at < len(data):
        length, tag = struct.unpack(">I4s", data[at:at + 8])
        if tag == b"IDAT":
            chunks.append(data[at + 8:at + 8 + length])
        at += 12 + length
    return width, height, _unfilter(zlib.decompress(b"".join(chunks)), width, height)


def _unfilter(raw: bytes, width: int, height: int) -> list[tuple[int, ...]]:
    stride, previous, pixels = width * 4, bytearray(width * 4), []
    for y in range(height):
        start = y * (stride + 1)
        kind, row = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        for i in range(stride):
            left = row[i - 4] if i >= 4 else 0
            up, corner = previous[i], previous[i - 4] if i >= 4 else 0
            row[i] = (row[i] + _predict(kind, left, up, corner)) & 0xFF
        pixels += [tuple(row[i:i + 4]) for i in range(0, stride, 4)]
        previous = row
    return pixels


def _predict(kind: int, left: int, up: int, corner: int) -> int:
    if kind == 0:
        return 0
    if kind == 1:
        return left
    if kind == 2:
        return up
    if kind == 3:
        return (left + up) // 2
    guess = left + up - corner  # Paeth
    near = min((abs(guess - left), 0, left), (abs(guess - up), 1, up),
               (abs(guess - corner), 2, corner))
    return near[2]


def build_package(settings: Settings, out: Path, *, source: Path = MANIFEST_DIR) -> Package:
    """Checks everything, then writes the zip (manifest.json and both icons at its root)."""
    manifest = fill_template((source / "manifest.json").read_text(encoding="utf-8"),
                             manifest_values(settings))
    schema = json.loads((source / SCHEMA_FILE).read_text(encoding="utf-8"))
    problems = schema_problems(manifest, schema)
    icons = {name: (source / name).read_bytes() for name in ICONS}
    for name, size in ICONS.items():
        problems += icon_problems(name, icons[name], size)
    if problems:
        raise PackageError(problems)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        files = {"manifest.json": (json.dumps(manifest, indent=2, ensure_ascii=False)
                                   + "\n").encode("utf-8"), **icons}
        for name, data in files.items():
            info = zipfile.ZipInfo(name, date_time=_ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(buffer.getvalue())
    base = str(settings.teams.package.public_url).rstrip("/")
    return Package(path=out, manifest=manifest, messaging_endpoint=f"{base}/api/messages")
