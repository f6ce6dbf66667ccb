"""The Web API client every Slack call goes through, without slack_sdk's own retries.

``AsyncWebClient`` retries a dropped or reset connection once by default, sleeping on
``asyncio.sleep`` with its own random jitter. That resend is blind: a ``chat.postMessage`` whose
connection broke after Slack took it would be posted again. So its handlers are turned off and
the channel's one policy (``adapters.slack.channel.SLACK_RETRY``, ``bot.retry``) decides, on
the injected sleep, looking a post up before it is sent again.
"""

from __future__ import annotations

from typing import Any

from slack_sdk.web.async_client import AsyncWebClient


def web_client(**kwargs: Any) -> AsyncWebClient:
    """An ``AsyncWebClient`` (``token``, ``base_url``, ``session`` ...) that never retries on
    its own."""
    return AsyncWebClient(retry_handlers=[], **kwargs)
