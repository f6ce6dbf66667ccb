"""The Slack app manifest matches what the adapter needs."""

from __future__ import annotations

from pathlib import Path

import yaml

from adapters.slack.app import EVENTS_PATH
from adapters.slack.home import HOME_EVENT

MANIFEST = Path(__file__).resolve().parents[2] / "manifest" / "slack" / "manifest.yaml"


def test_slack_manifest_grants_what_the_adapter_uses() -> None:
    """Scopes for DMs and history, interactivity at the adapter's path, a bot user."""
    manifest = yaml.safe_load(MANIFEST.read_text())
    scopes = set(manifest["oauth_config"]["scopes"]["bot"])
    assert {"chat:write", "im:write", "im:history"} <= scopes
    assert manifest["features"]["bot_user"]["display_name"]
    interactivity = manifest["settings"]["interactivity"]
    assert interactivity["is_enabled"] is True
    assert interactivity["request_url"].endswith(EVENTS_PATH)
    assert manifest["settings"]["socket_mode_enabled"] in (True, False)
    assert len(manifest["display_information"]["name"]) <= 35


def test_slack_manifest_enables_the_app_home() -> None:
    """The Home tab is on and its event reaches the adapter's path (the steward's queue)."""
    manifest = yaml.safe_load(MANIFEST.read_text())
    assert manifest["features"]["app_home"]["home_tab_enabled"] is True
    assert manifest["features"]["app_home"]["messages_tab_enabled"] is True
    events = manifest["settings"]["event_subscriptions"]
    assert HOME_EVENT in events["bot_events"]
    assert events["request_url"].endswith(EVENTS_PATH)
