"""What the operator's docs say, each held to what the code does: the CLI is the bot's own, the
image says its commit only when built with one, Compose v2 is said, the quickstart's second
card waits for working hours like any other, and the image's size is the one measured since
its dependencies last grew."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from clarify_bot import build

ROOT = Path(__file__).resolve().parents[2]


def _doc(name: str) -> str:
    return " ".join((ROOT / name).read_text(encoding="utf-8").split())


def test_the_steward_cli_is_the_bots_own_in_every_doc() -> None:
    for name in ("docs/operations.md", "docs/cards.md", "docs/delivery.md", "README.md"):
        text = _doc(name)
        assert "telha clarify" not in text, name
        assert "the core's CLI" not in text, name
    assert "are the bot's own CLI, `clarify-bot clarify ls|show|answer|review`" in \
        _doc("docs/operations.md")


def test_version_shows_a_commit_only_when_the_image_is_built_with_one() -> None:
    deploy = _doc("docs/deploy.md")
    assert "docker build --build-arg COMMIT=$(git rev-parse --short=12 HEAD)" in deploy
    assert "`--version` says `(commit unknown)`" in deploy
    # the code: no commit given and no checkout is exactly "unknown"
    assert build.UNKNOWN == "unknown"
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "ARG COMMIT=unknown" in dockerfile and "CLARIFY_BOT_COMMIT=${COMMIT}" in dockerfile


def test_compose_v2_is_said_where_compose_is_used() -> None:
    assert "Compose v2" in _doc("docs/deploy.md")
    assert "v2: `docker compose`" in (ROOT / "compose.yaml").read_text().split("name:")[0]


def test_the_quickstarts_second_card_waits_for_working_hours() -> None:
    text = _doc("docs/quickstart.md")
    said = re.search(r"A second card arrives within a few seconds([^.]*)", text)
    assert said is not None and "working hours" in said[1]
    assert "weekend" in text


def test_the_image_size_is_not_the_one_measured_before_the_database_deps() -> None:
    deploy = _doc("docs/deploy.md")
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert any(d.startswith("sqlalchemy==") for d in deps)
    assert "The image is about 200 MB" not in deploy
    assert "The image is about 237 MB" in deploy
