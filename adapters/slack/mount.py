"""The Slack adapter's hook into the composition (``bot.service.Platform``).

``open_channel`` makes the delivery channel on one pooled Web API session; ``mount`` adds the
callbacks: the ``/slack/events`` route in HTTP mode, or a Socket Mode connection authenticated by
the app-level token; both reach the same bolt listeners. As a distributed app
(``slack.oauth.enabled``, ``adapters.slack.distributed``) the channel takes each installation's
token from the database, and ``mount`` adds the install and redirect routes; ``prepare`` checks
the database's schema before anything is served.
"""

from __future__ import annotations

from dataclasses import dataclass

import aiohttp
from slack_bolt.adapter.socket_mode.aiohttp import AsyncSocketModeHandler
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack import distributed
from adapters.slack.app import SlackAdapter, build_slack_adapter
from adapters.slack.channel import SlackChannel
from bot.service import Base, Parts, Service, credentials_check
from bot.settings import Settings

NAME = "slack"


def open_channel(settings: Settings, base: Base) -> SlackChannel:
    # one pooled session for every Web API call: without it slack_sdk opens a session, a
    # connection and a TLS context per call, which under a burst costs more than the call
    session = aiohttp.ClientSession()
    base.stack.push_async_callback(session.close)
    if settings.slack.distributed:
        return distributed.open_channel(settings, base, session)
    client = AsyncWebClient(token=settings.secrets.require("slack_bot_token"),
                            base_url=settings.slack.api_url, session=session)
    return SlackChannel(client=client, codec=base.codec, store=base.store, clock=base.clock,
                        rates=settings.slack.rates)


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
        limits=parts.limits, flow=distributed.mount(app, parts, settings, channel))
    distributed.register(adapter.app, channel)
    handler = None
    if socket:
        handler = AsyncSocketModeHandler(adapter.app, secrets.require("slack_app_token"))
        parts.base.stack.push_async_callback(handler.close_async)
    else:
        app.web_app.add_routes(adapter.routes())
    app.hosted.append(Hosted(adapter=adapter, socket=handler))
    app.readiness.checks.append(credentials_check(NAME, channel.check_credentials))
    app.engine.worker.also_check(channel.check_credentials)


prepare = distributed.prepare
tenants = distributed.tenants


@dataclass
class Hosted:
    """What Slack keeps running beside the web server: Socket Mode's connection, if chosen, and
    the work its listeners started after acknowledging."""

    adapter: SlackAdapter
    socket: AsyncSocketModeHandler | None
    name: str = NAME

    async def connect(self) -> None:
        if self.socket is not None:
            await self.socket.connect_async()

    async def disconnect(self) -> None:
        if self.socket is not None:
            await self.socket.close_async()

    async def drain(self) -> None:
        await self.adapter.drain()
