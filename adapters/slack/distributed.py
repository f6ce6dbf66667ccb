"""Slack as a distributed app, assembled: the database, the installations, the install flow.

Used by ``adapters.slack.mount`` when ``slack.oauth.enabled``: ``open_channel`` opens the
installation database (``CLARIFY_BOT_DATABASE_URL``) and makes the channel take each
installation's token (``adapters.slack.tokens``); ``mount`` adds the install and redirect routes
(``adapters.slack.oauth``), the ``app_uninstalled``/``tokens_revoked`` listeners, the worker's
per-installation pauses and the installations' part of ``/readyz``; ``prepare`` (before the
service runs) refuses a database whose schema is behind this release, reads the installations
and starts the loops that keep reading them and refreshing tokens ahead of their expiry.
"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import timedelta

import aiohttp
import structlog

from adapters.slack import database, revocation, schema
from adapters.slack.away import away_reading
from adapters.slack.channel import SlackChannel
from adapters.slack.installations import InstallationDB
from adapters.slack.links import LinkSigner
from adapters.slack.oauth import InstallFlow, build_flow
from adapters.slack.sealing import Sealer
from adapters.slack.tokens import Installations
from adapters.slack.web import web_client
from bot.channel import Channel
from bot.process.pauses import Pauses
from bot.process.service import Base, Parts, Service
from bot.settings import Problem, Settings, SettingsError, SlackSettings

DATABASE_SETTING = "CLARIFY_BOT_DATABASE_URL"
log = structlog.get_logger("clarify.slack")


def open_installations(settings: Settings, clock: object, session: aiohttp.ClientSession,
                       stack: contextlib.AsyncExitStack) -> Installations:
    oauth, secrets = settings.slack.oauth, settings.secrets
    engine = schema.open_engine(secrets.require("database_url"))
    stack.push_async_callback(engine.dispose)
    assert oauth.client_id is not None
    db = InstallationDB(engine=engine, client_id=oauth.client_id,
                        sealer=Sealer.from_setting(secrets.require("slack_token_key")))
    return Installations(
        db=db, clock=clock, client_id=oauth.client_id,  # type: ignore[arg-type]
        client_secret=secrets.require("slack_client_secret"), api_url=settings.slack.api_url,
        session=session, refresh_before=timedelta(minutes=oauth.refresh_before_minutes),
        refresh_retry_seconds=oauth.refresh_check_seconds,
        directory_seconds=oauth.directory_seconds)


def open_channel(settings: Settings, base: Base, session: aiohttp.ClientSession
                 ) -> SlackChannel:
    installations = open_installations(settings, base.clock, session, base.stack)
    client = web_client(base_url=settings.slack.api_url, session=session)  # no token
    return SlackChannel(client=client, codec=base.codec, store=base.store, clock=base.clock,
                        rates=settings.slack.rates,
                        **away_reading(settings.clarify.away), installations=installations,
                        people=base.store)


def mount(app: Service, parts: Parts, settings: Settings, channel: SlackChannel
          ) -> InstallFlow | None:
    installations = channel.installations
    if installations is None:
        return None
    flow = build_flow(oauth=settings.slack.oauth,
                      client_secret=settings.secrets.require("slack_client_secret"),
                      client=channel.client, db=installations.db, installations=installations,
                      signer=LinkSigner(settings.secrets.require("install_link_key").encode()),
                      clock=parts.base.clock, audit=parts.audit)
    app.web_app.add_routes(flow.routes())
    app.readiness.details.append(installations.readiness)
    return flow


def pauses(channel: Channel, settings: Settings, base: Base) -> Pauses | None:
    """A distributed app pauses delivery per installation whose token is refused."""
    installations = channel.installations if isinstance(channel, SlackChannel) else None
    if installations is None:
        return None
    return Pauses(clock=base.clock, check=installations.check,
                  max_held=4 * settings.worker.concurrency)


def tenants(channel: Channel, settings: Settings) -> Installations | SlackSettings:
    """Which tenant a workspace (and a verified user in it) belongs to: its installation's,
    else the settings' list."""
    installations = channel.installations if isinstance(channel, SlackChannel) else None
    return installations or settings.slack


def register(adapter_app: object, channel: SlackChannel) -> None:
    if channel.installations is not None:
        revocation.register(adapter_app, channel.installations)  # type: ignore[arg-type]


async def prepare(service: Service, base: Base) -> None:
    """Before the service runs: the schema is this release's, the installations are read,
    and the loops that keep them fresh run until the service closes."""
    channel = service.engine.channels.get("slack")
    if not isinstance(channel, SlackChannel) or channel.installations is None:
        return
    installations = channel.installations
    url = service.settings.secrets.require("database_url")
    # the same check, in the same words, as `clarify-bot check-config` (clarify_bot.preflight)
    problem, plain = await database.ready(installations.db, url)
    if problem is None:
        try:
            await installations.load()
        except Exception as exc:  # unreachable, refused, a wrong password: named, never a value
            problem = Problem(DATABASE_SETTING, None, database.failure(exc, url))
    if problem is not None:
        raise SettingsError([problem]) from None
    if plain:  # written by an earlier release still running during the upgrade
        log.warning("slack.tokens_in_plain_text", tokens=plain,
                    fix="run `clarify-bot slack rotate-token-key` (docs/slack.md)")
    loops = [asyncio.create_task(installations.keep_loading()),
             asyncio.create_task(installations.keep_refreshing())]

    async def stop() -> None:
        for loop in loops:
            loop.cancel()
        await asyncio.gather(*loops, return_exceptions=True)

    base.stack.push_async_callback(stop)
