"""Shared fixtures for the card tests: the codec, and Microsoft's renderer run under node."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from slack_sdk.models.blocks import Block
from slack_sdk.models.views import View

from cards import platform_limits as limits
from cards.actions import ActionCodec
from cards.fixtures import preview_codec

ROOT = Path(__file__).resolve().parents[2]
JS_DIR = ROOT / "cards" / "js"


@pytest.fixture
def codec() -> ActionCodec:
    return preview_codec()


def _renderer_missing() -> str | None:
    if shutil.which("node") is None:
        return "node is not installed"
    if not _installed() and shutil.which("npm") is not None:
        # a fresh checkout: install the pinned renderer once, as .ci/run does
        subprocess.run(["bash", str(ROOT / ".ci" / "setup-cards.sh")], capture_output=True,
                       timeout=600, check=False)
    if not _installed():
        return "cards/js is not installed: run .ci/setup-cards.sh"
    return None


def _installed() -> bool:
    return (JS_DIR / "node_modules" / "adaptivecards" / "dist" / "adaptivecards.js").is_file()


@pytest.fixture(scope="session")
def adaptive_validator() -> Callable[[dict[str, dict]], dict[str, list[str]]]:
    """Runs cards/js/validate.js (Microsoft's renderer) over named cards; returns problems."""
    missing = _renderer_missing()
    if missing:
        # CI installs the renderer, so there a missing one is a failure, not a skip.
        if os.environ.get("CI"):
            pytest.fail(missing)
        pytest.skip(missing)

    def validate(cards: dict[str, dict]) -> dict[str, list[str]]:
        done = subprocess.run(["node", str(JS_DIR / "validate.js")], input=json.dumps(cards),
                              capture_output=True, text=True, timeout=120, check=True)
        return json.loads(done.stdout)

    return validate


def _assert_valid_slack(payload: dict) -> None:
    if payload.get("response_action") == "errors":
        assert all(len(k) <= limits.SLACK_ID for k in payload["errors"])
        return
    if payload.get("type") == "modal":
        view = View(**payload)
        view.validate_json()
        assert view.to_dict() == payload
        assert limits.slack_modal_problems(payload) == []
        return
    blocks = Block.parse_all(payload["blocks"])
    for block in blocks:
        block.validate_json()
    # A dropped or renamed field would mean slack_sdk did not understand what we sent.
    assert [b.to_dict() for b in blocks] == payload["blocks"]
    assert limits.slack_message_problems(payload) == []


@pytest.fixture(scope="session")
def slack_validator() -> Callable[[dict], None]:
    """Asserts that slack_sdk.models accepts a payload unchanged and it keeps every limit."""
    return _assert_valid_slack
