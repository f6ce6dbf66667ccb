"""The Slack adapter's hook into the composition (``bot.process.service.Platform``).

``open_channel`` makes the delivery channel on one pooled Web API session; ``mount`` adds the
callbacks: the ``/slack/events`` route in HTTP mode, or a Socket Mode connection authenticated by
the app-level token; both reach the same bolt listeners. In Socket Mode the connection is a
readiness check of its own (``slack_socket``): ``connecting`` until it is made, ``rejected:
SLACK_APP_TOKEN`` when Slack refuses the app-level token (logged once, with that setting, and not
retried: the token is read at start), ``unavailable`` while it is down. As a distributed app
(``slack.oauth.enabled``, ``adapters.slack.distributed``) the channel takes each installation's
token from the database, and ``mount`` adds the install and redirect routes; ``prepare`` checks
the database's schema before anything is served.
"""

from __future__ import annotations

import asyncio
import random as _random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import aiohttp
import structlog
from slack_bolt.adapter.socket_mode.aiohttp import AsyncSocketModeHandler
from slack_sdk.errors import SlackApiError

from adapters.slack import distributed
from adapters.slack.app import SlackAdapter, build_slack_adapter
from adapters.slack.away import away_reading
from adapters.slack.channel import SlackChannel
from adapters.slack.web import web_client
from adapters.slack.webapi import CREDENTIAL_ERRORS
from bot.channel import CredentialsRejected, SlackReach
from bot.engine.lasting import LastingRefusals
from bot.process.health import Check, Connecting
from bot.process.service import Base, Parts, Service, credentials_check
from bot.retry import RetryPolicy
from bot.settings import Settings

NAME = "slack"
APP_TOKEN_SETTING = "SLACK_APP_TOKEN"
# apps.connections.open answers that mean the app-level token itself is wrong
APP_TOKEN_ERRORS = CREDENTIAL_ERRORS | {"not_allowed_token_type", "invalid_token"}
# between attempts to get a Socket Mode URL: until it comes (or the token is refused), 1 s
# doubling to 30 s, half of each wait random, so replicas that lost Slack together spread out
SOCKET_RETRY = RetryPolicy(max_attempts=None, base=1.0, cap=30.0, retry_after_cap=0.0,
                           jitter=0.5)

log = structlog.get_logger("clarify.slack")


def open_channel(settings: Settings, base: Base) -> SlackChannel:
    # one pooled session for every Web API call: without it slack_sdk opens a session, a
    # connection and a TLS context per call, which under a burst costs more than the call
    session = aiohttp.ClientSession()
    base.stack.push_async_callback(session.close)
    if settings.slack.distributed:
        return distributed.open_channel(settings, base, session)
    client = web_client(token=settings.secrets.require("slack_bot_token"),
                            base_url=settings.slack.api_url, session=session)
    channel = SlackChannel(client=client, codec=base.codec, store=base.store, clock=base.clock,
                           rates=settings.slack.rates, people=base.store,
                           **away_reading(settings.clarify.away))
    for served in settings.slack.workspaces:  # listed from the first housekeeping pass on
        if served.team_id:
            channel.serves(SlackReach(team_id=served.team_id, enterprise_id=served.enterprise_id))
    return channel


def mount(app: Service, parts: Parts, settings: Settings) -> None:
    channel = parts.channel
    assert isinstance(channel, SlackChannel)
    secrets = settings.secrets
    socket = settings.slack.mode == "socket"
    adapter = build_slack_adapter(
        # Socket Mode requests are authenticated by the app-level token, not signed
        signing_secret=secrets.require("slack_signing_secret") if not socket else "unused",
        client=channel.client, answers=parts.answers, interactions=parts.interactions,
        channel=channel, codec=parts.base.codec, audit=parts.audit, clock=parts.base.clock,
        limits=parts.limits, refusals=LastingRefusals(parts.base.store),
        flow=distributed.mount(app, parts, settings, channel))
    distributed.register(adapter.kit.app, channel)
    handler = None
    if socket:
        handler = AsyncSocketModeHandler(adapter.kit.app, secrets.require("slack_app_token"))
        parts.base.stack.push_async_callback(handler.close_async)
    else:
        app.web_app.add_routes(adapter.routes())
    hosted = Hosted(adapter=adapter, socket=handler)
    app.hosted.append(hosted)
    app.readiness.checks.append(credentials_check(NAME, channel.check_credentials,
                                                  setting="slack.api_url",
                                                  address=settings.slack.api_url))
    if handler is not None:
        app.readiness.checks.append(Check("slack_socket", hosted.connected, ttl_seconds=5))
    app.engine.worker.also_check(channel.check_credentials)


prepare = distributed.prepare
tenants = distributed.tenants
pauses = distributed.pauses


@dataclass
class Hosted:
    """What Slack keeps running beside the web server: Socket Mode's connection, if chosen, and
    the work its listeners started after acknowledging."""

    adapter: SlackAdapter
    socket: AsyncSocketModeHandler | None
    name: str = NAME
    rejected: str | None = None  # Slack's error for the app-level token, once refused
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep  # tests: no real waiting
    random: Callable[[], float] = _random.random  # the retries' jitter draws

    async def connect(self) -> None:
        """Socket Mode: a WebSocket URL from ``apps.connections.open`` (retried while Slack
        cannot be asked; given up, once logged, when it refuses the token), then slack_sdk's
        own connection, which reconnects by itself."""
        if self.socket is None:
            return
        client = self.socket.client
        attempt = 0  # failed so far
        while client.wss_uri is None:
            try:
                opened = await client.web_client.apps_connections_open(app_token=client.app_token)
                client.wss_uri = str(opened["url"])
            except SlackApiError as exc:
                error = str(exc.response.get("error", "unknown"))
                if error in APP_TOKEN_ERRORS:
                    self.rejected = error
                    log.error("slack.socket_token_rejected", error=error,
                              setting=APP_TOKEN_SETTING)
                    return
                log.warning("slack.socket_url_failed", error=error, attempt=attempt + 1)
            except (aiohttp.ClientError, OSError, TimeoutError) as exc:
                log.warning("slack.socket_url_failed", error=type(exc).__name__,
                            attempt=attempt + 1)
            if client.wss_uri is None:
                attempt += 1
                await self.sleep(SOCKET_RETRY.delay(attempt, draw=self.random()))
        await self.socket.connect_async()

    async def connected(self) -> None:
        """The readiness probe of Socket Mode's connection."""
        if self.rejected is not None:
            raise CredentialsRejected(self.rejected, setting=APP_TOKEN_SETTING)
        if self.socket is None or await self.socket.client.is_connected():
            return
        raise Connecting() if self.socket.client.wss_uri is None else ConnectionError("down")

    async def disconnect(self) -> None:
        if self.socket is not None:
            await self.socket.close_async()

    async def drain(self) -> None:
        await self.adapter.drain()
