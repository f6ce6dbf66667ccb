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


def test_the_distributed_manifest_rotates_tokens_and_redirects_to_the_bot() -> None:
    """The distributed app's manifest: token rotation and org deploys on, the redirect URL at
    the bot's redirect path, the revocation events subscribed, the same scopes as the bot asks
    for at install; the single-workspace manifest keeps rotation off (its one token has no
    refresh token)."""
    from bot.settings import SlackOAuthSettings

    distributed = yaml.safe_load((MANIFEST.parent / "manifest.distributed.yaml").read_text())
    settings = distributed["settings"]
    assert settings["token_rotation_enabled"] is True
    assert settings["org_deploy_enabled"] is True
    assert settings["socket_mode_enabled"] is False
    oauth = SlackOAuthSettings()
    assert [u.endswith(oauth.redirect_path) for u in distributed["oauth_config"]["redirect_urls"]
            ] == [True]
    assert set(distributed["oauth_config"]["scopes"]["bot"]) == set(oauth.scopes)
    assert {"app_uninstalled", "tokens_revoked"} <= set(
        settings["event_subscriptions"]["bot_events"])
    single = yaml.safe_load(MANIFEST.read_text())
    assert single["settings"]["token_rotation_enabled"] is False
