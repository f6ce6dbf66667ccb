"""The Teams adapter's hook into the composition (``bot.process.service.Platform``).

``open_channel`` makes the delivery channel (``adapters.teams.channel``) on one pooled session,
with the app's connection from settings and its tokens through msal, and its Graph tokens for
reading who is away (``adapters.teams.away``); ``mount`` adds ``POST /api/messages`` with its
token gate, the SDK's outbound host validator on and the same token provider (one msal cache),
the channel's credentials check to readiness and who-is-away's permissions to its details;
``prepare`` checks those permissions once, in the background. Nothing of Teams keeps a
connection of its own beside the web server.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

import aiohttp
from microsoft_agents.authentication.msal import MsalAuth
from microsoft_agents.hosting.core import (
    AccessTokenProviderBase,
    AgentAuthConfiguration,
    AnonymousTokenProvider,
    ConnectionManager,
    OutboundHostValidator,
)
from yarl import URL

from adapters.teams.app import TeamsAdapter, build_teams_adapter
from adapters.teams.auth import KeyDirectory, TokenGate, connection
from adapters.teams.away import off_status
from adapters.teams.channel import TeamsChannel, open_teams_channel
from adapters.teams.graph import (
    ClientCredentials,
    GraphTokens,
    ProviderTokens,
    graph_resource,
)
from adapters.teams.installs import off_status as installs_off
from adapters.teams.invokes import Invokes
from bot.channel import Channel
from bot.engine.lasting import LastingRefusals
from bot.process.pauses import Pauses
from bot.process.service import Base, Parts, Service, credentials_check
from bot.settings import Settings, SettingsError, TeamsSettings

NAME = "teams"
ProviderFactory = Callable[[AgentAuthConfiguration], AccessTokenProviderBase]


def open_channel(settings: Settings, base: Base) -> TeamsChannel:
    problem = settings.teams.connection_problem()
    if problem is not None:
        raise SettingsError([problem])
    session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30))
    base.stack.push_async_callback(session.close)
    anonymous = settings.teams.app_id is None
    secret = settings.secrets.value("teams_app_password")
    tokens = AnonymousTokenProvider() if anonymous \
        else MsalAuth(connection(settings.teams, secret))
    # a local run's connector is the Agents Playground on this machine (teams.service_url)
    local = (_origin(settings.teams.service_url),) if anonymous else ()
    return open_teams_channel(settings.teams, session=session, tokens=tokens, store=base.store,
                              clock=base.clock, codec=base.codec, local_connectors=local,
                              graph_tokens=graph_tokens(settings, session, tokens, base))


def graph_tokens(settings: Settings, session: aiohttp.ClientSession,
                 tokens: AccessTokenProviderBase, base: Base) -> GraphTokens | None:
    """Where the app's Graph tokens come from: client credentials at ``teams.login_url`` (the
    app's id and TEAMS_APP_PASSWORD), or a managed identity's msal provider; None without an
    app id (a local run: nobody is known to be away, and no app is installed) or with neither
    read_away nor install_app."""
    teams = settings.teams
    if teams.app_id is None or not (teams.read_away or teams.install_app):
        return None
    resource = graph_resource(teams.graph_url)
    if teams.app_type == "managed-identity":
        return ProviderTokens(tokens, resource=resource)
    return ClientCredentials(session=session, login_url=teams.login_url, app_id=teams.app_id,
                             secret=settings.secrets.require("teams_app_password"),
                             clock=base.clock, resource=resource)


def _origin(url: str) -> str:
    parts = URL(url)
    return str(parts.origin())


def mount(app: Service, parts: Parts, settings: Settings, *, keys: KeyDirectory | None = None,
          tokens: ProviderFactory | None = None) -> TeamsAdapter:
    """``keys`` and ``tokens``: where signing keys and the bot's own tokens come from (tests
    point them at 127.0.0.1; production uses Microsoft's, and the channel's msal provider)."""
    channel = parts.channel
    assert isinstance(channel, TeamsChannel)
    gate = TokenGate.build(settings.teams, keys=keys)
    provider = channel.connector.tokens
    connections = ConnectionManager(provider_factory=tokens or (lambda _: provider),  # type: ignore[arg-type,return-value]
                                    connections_configurations={"SERVICE_CONNECTION": gate.config})
    invokes = Invokes(answers=parts.answers, interactions=parts.interactions,
                      codec=parts.base.codec, clock=parts.base.clock)
    adapter = build_teams_adapter(
        gate=gate, connections=connections, invokes=invokes, interactions=parts.interactions,
        host_validator=OutboundHostValidator(enabled=not gate.anonymous),
        conversations=parts.base.store, refusals=LastingRefusals(parts.base.store),
        audit=parts.audit, clock=parts.base.clock, limits=parts.limits)
    app.web_app.add_routes(adapter.routes())
    app.hosted.append(Hosted(adapter=adapter))
    app.readiness.checks.append(credentials_check(NAME, channel.check_credentials))
    # who is away: shown, never counted (without the reads nobody is known to be away)
    app.readiness.details.append(channel.absences.status if channel.absences is not None
                                 else off_status)
    app.readiness.details.append(channel.installer.status if channel.installer is not None
                                 else installs_off)
    app.engine.worker.also_check(channel.check_credentials)
    return adapter


def tenants(channel: Channel, settings: Settings) -> TeamsSettings:
    """Which tenant a verified Teams user acts in: their Entra tenant's
    (``[[teams.tenants]]``)."""
    return settings.teams


def pauses(channel: Channel, settings: Settings, base: Base) -> Pauses | None:
    """One app credential for every tenant: nothing to pause per installation."""
    return None


async def prepare(app: Service, base: Base) -> None:
    """Before serving: the Graph permissions for reading who is away and for installing the
    app for people, asked of each served tenant's token in the background (start-up never
    waits on Microsoft; a missing one is logged once and shown in /readyz). The credentials
    are a readiness check."""
    channel = app.engine.channels.get(NAME)
    if not isinstance(channel, TeamsChannel):
        return
    checks = [asyncio.create_task(part.check_in_time())
              for part in (channel.absences, channel.installer) if part is not None]

    async def stop() -> None:
        for check in checks:
            check.cancel()
        await asyncio.gather(*checks, return_exceptions=True)

    base.stack.push_async_callback(stop)


@dataclass
class Hosted:
    """Teams keeps no connection of its own; what its invokes started is finished on stop."""

    adapter: TeamsAdapter
    name: str = NAME

    async def connect(self) -> None:
        return None

    async def disconnect(self) -> None:
        return None

    async def drain(self) -> None:
        await self.adapter.drain()
