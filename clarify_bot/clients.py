"""The core client as the settings describe it: one place for the service
(``clarify_bot.app``) and the start-up checks (``clarify_bot.preflight``)."""

from __future__ import annotations

import httpx

from bot.clock import Clock
from bot.core.client import CoreClient
from bot.settings import Settings


def core_client(settings: Settings, clock: Clock | None = None) -> CoreClient:
    extensions = settings.core.extension_set()
    return CoreClient(
        base_url=settings.core.url, token=settings.secrets.require("core_token"),
        timeout=httpx.Timeout(settings.core.read_timeout_seconds,
                              connect=settings.core.connect_timeout_seconds),
        limits=httpx.Limits(max_connections=settings.core.max_connections,
                            max_keepalive_connections=settings.core.max_keepalive_connections),
        extensions=extensions, fixed_extensions=extensions is not None, clock=clock,
        extensions_refresh_seconds=settings.core.extensions_refresh_seconds)
