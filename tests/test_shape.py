"""The code's shape rules (docs/architecture.md), checked on the real tree and shown failing on a
bad file:

- every module of the shipped packages (``bot``, ``adapters``, ``cards``, ``clarify_bot``,
  ``devcore``, ``devslack``) has at most ``MAX_LINES`` lines: past that a module holds more
  than one concern and is split along a seam;
- no comment, docstring, string or name in the shipped packages, the benches or the tests cites
  an issue ("issue 26", "issues 12 and 14", ``test_issue_13_…``) or the code's past ("as
  before"): each says the rule itself, in the present tense, so it reads true to someone who
  never saw the issue. A line that links an external tracker (``https://…/issues/…``) is a
  reference, not a citation, and is allowed; so is this file, which names what it looks for.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Iterable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("bot", "adapters", "cards", "clarify_bot", "devcore", "devslack")
WORDED = (*PACKAGES, "bench", "tests")
MAX_LINES = 450
# "issue 26", "Issues 12 and 14", "issue #7", "test_issue_13_declines"; "as before"
CITATION = re.compile(r"(?<![a-z])issues?[\s_]+#?\d|(?<![\w])as\s+before\b", re.IGNORECASE)
WORDS = {tokenize.COMMENT, tokenize.STRING, tokenize.NAME, tokenize.FSTRING_MIDDLE}


def sources(root: Path, folders: Iterable[str]) -> Iterator[Path]:
    for folder in folders:
        yield from sorted((root / folder).rglob("*.py"))


def too_long(root: Path, folders: Iterable[str] = PACKAGES) -> list[str]:
    """Each module over ``MAX_LINES`` lines, as "path: N lines"."""
    found = []
    for path in sources(root, folders):
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_LINES:
            found.append(f"{path.relative_to(root)}: {lines} lines")
    return found


def citations(root: Path, folders: Iterable[str] = WORDED) -> list[str]:
    """Each comment, string or name that cites an issue or the past, as "path:line: text"."""
    found = []
    for path in sources(root, folders):
        if path == Path(__file__).resolve():
            continue
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type not in WORDS or not CITATION.search(token.string):
                continue
            first, last = token.start[0], token.end[0]
            for number in range(first, last + 1):
                line = lines[number - 1]
                if CITATION.search(line) and "://" not in line:
                    found.append(f"{path.relative_to(root)}:{number}: {line.strip()}")
    return sorted(set(found))


def test_every_shipped_module_is_at_most_the_limit() -> None:
    assert too_long(ROOT) == []


def test_no_comment_string_or_name_cites_an_issue() -> None:
    assert citations(ROOT) == []


def test_a_long_module_is_found(tmp_path: Path) -> None:
    package = tmp_path / "bot"
    package.mkdir()
    (package / "short.py").write_text("x = 1\n" * MAX_LINES, encoding="utf-8")
    (package / "long.py").write_text("x = 1\n" * (MAX_LINES + 1), encoding="utf-8")
    assert too_long(tmp_path, ["bot"]) == [f"bot/long.py: {MAX_LINES + 1} lines"]


def test_each_kind_of_citation_is_found(tmp_path: Path) -> None:
    folder = tmp_path / "tests"
    folder.mkdir()
    (folder / "bad.py").write_text(
        '"""Held for the working hours (issue 26).\n\nMore text."""\n'
        "x = 1  # the same as before\n"
        'y = "Additive (Issue 13, \\"Not me\\")"\n'
        'z = f"{x} issues 12 and 14"\n'
        "def test_issue_13_declines() -> None: ...\n"
        '"""A docstring over lines,\nthe second naming issue #7."""\n',
        encoding="utf-8")
    found = [line.split(":", 2)[1] for line in citations(tmp_path, ["tests"])]
    assert found == ["1", "4", "5", "6", "7", "9"]


def test_what_is_no_citation_is_let_through(tmp_path: Path) -> None:
    folder = tmp_path / "cards"
    folder.mkdir()
    (folder / "fine.py").write_text(
        "# a known limit of the platform: https://github.com/org/repo/issues/1616\n"
        'COLOR = "#242424"  # the issuer 3 times; tissues 4; reissued\n'
        '"""The installation as it was before the move; the earlier answer is superseded."""\n'
        "def issue_token(item: int) -> None: ...  # item 2 of the list\n",
        encoding="utf-8")
    assert citations(tmp_path, ["cards"]) == []
