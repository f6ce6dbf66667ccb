"""Draws the Teams app icons into manifest/teams/: a 192x192 colour icon and a 32x32 outline icon
(white on transparent, as Teams requires), as PNGs.

Pure standard library (no imaging package to install) and deterministic, so the committed files
can be checked against a fresh drawing: ``python scripts/teams_icons.py --check``.

The picture is a calendar page with one day marked: the bot asks which date a document means.
"""

from __future__ import annotations

import argparse
import struct
import sys
import zlib
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "manifest" / "teams"
Pixel = tuple[int, int, int, int]
WHITE: Pixel = (255, 255, 255, 255)
CLEAR: Pixel = (0, 0, 0, 0)
ACCENT: Pixel = (0x2E, 0x5A, 0xAC, 255)
MARK: Pixel = (0xF2, 0xA3, 0x3A, 255)


class Canvas:
    """A square RGBA picture drawn with filled rectangles."""

    def __init__(self, size: int, background: Pixel) -> None:
        self.size = size
        self.rows = [[background] * size for _ in range(size)]

    def fill(self, left: int, top: int, right: int, bottom: int, colour: Pixel) -> None:
        """Fills the rectangle [left, right) x [top, bottom)."""
        for y in range(max(top, 0), min(bottom, self.size)):
            for x in range(max(left, 0), min(right, self.size)):
                self.rows[y][x] = colour

    def frame(self, left: int, top: int, right: int, bottom: int, width: int,
              colour: Pixel) -> None:
        self.fill(left, top, right, top + width, colour)
        self.fill(left, bottom - width, right, bottom, colour)
        self.fill(left, top, left + width, bottom, colour)
        self.fill(right - width, top, right, bottom, colour)

    def png(self) -> bytes:
        raw = b"".join(b"\x00" + bytes(v for pixel in row for v in pixel) for row in self.rows)
        header = struct.pack(">IIBBBBB", self.size, self.size, 8, 6, 0, 0, 0)  # 8-bit RGBA
        return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header)
                + _chunk(b"IDAT", zlib.compress(raw, 9)) + _chunk(b"IEND", b""))


def _chunk(kind: bytes, data: bytes) -> bytes:
    crc = zlib.crc32(kind + data) & 0xFFFFFFFF
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)


def colour_icon() -> bytes:
    """192x192, full bleed: a white calendar page on the accent colour, one day in orange."""
    c = Canvas(192, ACCENT)
    c.fill(36, 48, 156, 160, WHITE)  # the page
    c.fill(36, 48, 156, 76, (0xD6, 0xE0, 0xF2, 255))  # its header band
    for x in (62, 122):  # the binding rings
        c.fill(x, 34, x + 10, 60, WHITE)
    for row in range(3):
        for col in range(4):
            left, top = 48 + col * 26, 86 + row * 24
            c.fill(left, top, left + 18, top + 16, MARK if (row, col) == (1, 2) else ACCENT)
    return c.png()


def outline_icon() -> bytes:
    """32x32, white on transparent: the same calendar as lines, the marked day filled."""
    c = Canvas(32, CLEAR)
    c.frame(4, 7, 28, 28, 2, WHITE)
    c.fill(4, 12, 28, 14, WHITE)  # under the header
    for x in (9, 21):  # the binding rings
        c.fill(x, 4, x + 2, 10, WHITE)
    c.fill(17, 18, 23, 24, WHITE)  # the marked day
    return c.png()


ICONS = {"color.png": colour_icon, "outline.png": outline_icon}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="compare the committed icons with a fresh drawing; write nothing")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    stale = []
    for name, draw in ICONS.items():
        path, data = args.out / name, draw()
        if args.check:
            if not path.is_file() or path.read_bytes() != data:
                stale.append(name)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
    if stale:
        print("stale icons (run scripts/teams_icons.py): " + ", ".join(stale), file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    raise SystemExit(main())
