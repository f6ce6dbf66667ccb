"""Callbacks from a workspace no installation serves: acknowledged, counted, and dropped quietly.

As a distributed app, Bolt authorizes every callback with the token of the installation serving
its workspace, and logs an error (and answers a "reinstall this app" text) when there is none.
A workspace no install serves (never installed, or uninstalled) is not an error of the bot's:
before Bolt sees such a callback, ``screen`` asks the installations (a look-up in the database
on a miss, so a workspace installed a moment ago by another process is served), and, still
unserved, it is acknowledged with a 200 (Slack does not retry it), logged at info level without
ids (``slack.unserved_skipped``; an App Home open: ``slack.home_skipped``, as
``adapters.slack.home`` documents) and counted (``clarify_slack_unserved_total{kind}``; an App
Home open also ``clarify_slack_home_total{outcome="not_served"}``).

``app_uninstalled``, ``tokens_revoked`` and ``team_access_revoked`` are not screened: Bolt takes
them without a token, and they are how an installation is removed.
"""

from __future__ import annotations

from typing import Any

import structlog
from slack_bolt.request.async_request import AsyncBoltRequest

from adapters.slack.installations import REMOVED
from adapters.slack.tokens import Installations
from bot.channel import SlackReach
from bot.metrics import REGISTRY

log = structlog.get_logger("clarify.slack")
HOME_EVENT = "app_home_opened"
# the events Bolt takes without authorizing them (slack_bolt's no_auth_test_events)
UNAUTHORIZED_EVENTS = frozenset({"app_uninstalled", "tokens_revoked", "team_access_revoked"})
# the kinds counted, a closed list: anything else is "other_event" or "other"
EVENT_KINDS = ("app_home_opened", "message", "app_mention")
INTERACTION_KINDS = ("block_actions", "view_submission", "view_closed", "shortcut",
                     "message_action")
KINDS = (*EVENT_KINDS, "other_event", *INTERACTION_KINDS, "other")
REGISTRY.preset("clarify_slack_unserved_total", kind=KINDS)


def kind_of(body: dict[str, Any]) -> str:
    kind = body.get("type")
    if kind == "event_callback":
        event = body.get("event")
        inner = event.get("type") if isinstance(event, dict) else None
        return inner if inner in EVENT_KINDS else "other_event"
    return kind if kind in INTERACTION_KINDS else "other"


def _authorized(body: dict[str, Any]) -> bool:
    """Whether Bolt would authorize this callback (ask for its installation's token)."""
    kind = body.get("type")
    if kind in ("url_verification", "ssl_check"):
        return False
    event = body.get("event")
    return not (kind == "event_callback" and isinstance(event, dict)
                and event.get("type") in UNAUTHORIZED_EVENTS)


async def served(installations: Installations, request: AsyncBoltRequest) -> bool:
    """Whether an installation serves the callback's workspace, as Bolt's authorize will look
    for it (``AuthorizeStore``): from the snapshot, confirmed against the database first."""
    if not _authorized(request.body):
        return True
    context = request.context
    org_wide = bool(context.is_enterprise_install)
    reach = SlackReach(team_id=None if org_wide else context.team_id,
                       enterprise_id=context.enterprise_id)
    if reach.team_id is None and reach.enterprise_id is None:
        return True  # names no workspace: Bolt's own checks answer it
    # confirmed against the database either way: a miss may be an install a moment old, and a
    # hit an installation another process removed a moment ago (`slack installations remove`,
    # an uninstall), which Bolt's authorize would then not find (an error line, uncounted)
    await installations.confirm(team_id=reach.team_id, enterprise_id=reach.enterprise_id)
    found = installations.resolve(reach)
    return found is not None and found.state != REMOVED


def skipped(body: dict[str, Any]) -> None:
    """The quiet line and the count of a callback dropped as unserved (no ids, no values)."""
    kind = kind_of(body)
    REGISTRY.inc("clarify_slack_unserved_total", kind=kind)
    if kind == HOME_EVENT:
        log.info("slack.home_skipped", reason="workspace_not_served")
        REGISTRY.inc("clarify_slack_home_total", outcome="not_served")
        return
    log.info("slack.unserved_skipped", reason="workspace_not_served", kind=kind)
