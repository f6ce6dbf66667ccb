"""A clone is complete in itself, and what a newcomer reads first is true.

No document or file the first hour touches points outside the repository (the spec's
requirements are summarised in docs/requirements.md); every relative link in the docs resolves;
the README lists every command; the quickstart names every `request_url` the Slack manifest
has; what `init` writes cites nothing a clone lacks; and following the demo's "Next:" suggestion
leaves no untracked files in a checkout.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from clarify_bot.cli import main
from devcore.demo import NEXT_STEPS

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md"),
               *(ROOT / "deploy").rglob("*.md")])
OUTSIDE = re.compile(r"\.\./shared|(?<![\w/])shared/|\b(DESIGN|PLATFORMS|STYLE)\.md\b")
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_no_document_points_outside_the_clone() -> None:
    tracked = subprocess.run(["git", "-C", str(ROOT), "ls-files"], capture_output=True,
                             text=True, check=False).stdout.split() if shutil.which("git") else []
    files = DOCS + [ROOT / f for f in tracked if f.endswith((".py", ".md", ".toml", ".sh",
                                                             ".yaml", ".yml"))]
    here = Path(__file__).resolve()  # this file names what it looks for
    found = [f"{path.relative_to(ROOT)}: {m.group(0)}" for path in files
             if path.is_file() and path.resolve() != here
             for m in OUTSIDE.finditer(path.read_text(encoding="utf-8"))]
    assert found == []


def test_every_relative_link_in_the_docs_resolves() -> None:
    broken = []
    for doc in DOCS:
        for target in LINK.findall(doc.read_text(encoding="utf-8")):
            if "://" in target or target.startswith("mailto:"):
                continue
            if not (doc.parent / target).exists():
                broken.append(f"{doc.relative_to(ROOT)} -> {target}")
    assert broken == []


def test_the_readme_lists_every_command() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = readme[readme.index("## Commands"):]
    missing = [name for name in main.commands if f"`clarify-bot {name}" not in commands]
    assert missing == []
    assert "`clarify-bot --version`" in commands
    opening = readme.split("```")[1].strip().splitlines()
    assert opening == ["sh", "./dev demo", "./dev test"]


def _request_urls(node: Any, at: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    if isinstance(node, dict):
        found = [(*at, key) for key in node if key == "request_url"]
        for key, value in node.items():
            found += _request_urls(value, (*at, key))
        return found
    return []


def test_the_quickstart_names_every_request_url_of_the_manifest() -> None:
    manifest = yaml.safe_load((ROOT / "manifest/slack/manifest.yaml").read_text())
    places = _request_urls(manifest)
    assert len(places) == 2  # events and interactivity
    quickstart = (ROOT / "docs/quickstart.md").read_text(encoding="utf-8")
    step = quickstart[quickstart.index("## 3. Create the Slack app"):
                      quickstart.index("## 4.")]
    assert "two `request_url` lines" in step and "replace both" in step
    for place in places:
        assert f"`{'.'.join(place[:-1])}`" in step, place


def test_init_writes_and_says_nothing_a_clone_lacks(tmp_path: Path) -> None:
    config = tmp_path / "clarify-bot.toml"
    result = CliRunner().invoke(main, ["init", "--platform", "both", "--store", "redis",
                                       "--out", str(config)])
    assert result.exit_code == 0, result.output
    for text in (config.read_text(), result.output):
        assert "§" not in text and "spec" not in text.lower()
        assert not OUTSIDE.search(text)


@pytest.mark.skipif(not (ROOT / ".git").exists() or shutil.which("git") is None,
                    reason="not a git checkout")
def test_the_demos_next_step_leaves_nothing_untracked() -> None:
    folder = re.search(r"preview --out (\S+)", NEXT_STEPS)
    assert folder is not None
    written = f"{folder.group(1).rstrip('/')}/gallery.html"
    ignored = subprocess.run(["git", "-C", str(ROOT), "check-ignore", "-q", written],
                             check=False)
    assert ignored.returncode == 0, f"{written} would be untracked in a checkout"
