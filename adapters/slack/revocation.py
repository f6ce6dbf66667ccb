"""``app_uninstalled`` and ``tokens_revoked``: an installation removed, its deliveries stopped.

Slack sends both as signed events to ``/slack/events`` (Bolt needs no token for them). The
installation's tokens are deleted from slack_sdk's store and its row marked ``removed`` with the
event as its reason (``Installations.removed``); every process sees it within
``slack.oauth.directory_seconds``. Its tenant binding stays: a candidate whose Slack alias is in
that workspace is skipped with ``NO_DELIVERY_ALIAS`` ("the Slack app was uninstalled from the
person's workspace"), and the workspace can be installed again for the same tenant only.
``tokens_revoked`` that names only user tokens (the bot holds none) changes nothing.
"""

from __future__ import annotations

from typing import Any

from slack_bolt.async_app import AsyncApp

from adapters.slack.tokens import Installations


def register(app: AsyncApp, installations: Installations) -> None:
    async def removed(context: Any, reason: str) -> None:
        await installations.removed(enterprise_id=context.enterprise_id,
                                    team_id=context.team_id,
                                    is_enterprise_install=bool(context.is_enterprise_install),
                                    reason=reason)

    async def on_uninstalled(ack: Any, context: Any) -> None:
        await ack()
        await removed(context, "app_uninstalled")

    async def on_tokens_revoked(ack: Any, context: Any, event: dict[str, Any]) -> None:
        await ack()
        if (event.get("tokens") or {}).get("bot"):
            await removed(context, "tokens_revoked")

    app.event("app_uninstalled")(on_uninstalled)
    app.event("tokens_revoked")(on_tokens_revoked)
