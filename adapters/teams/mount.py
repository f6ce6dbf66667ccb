"""The Teams adapter's hook into the composition (``bot.service.Platform``).

``open_channel`` makes the delivery channel; ``mount`` adds ``POST /api/messages`` with its token
gate (the app's connection from settings, tokens through msal) and the SDK's outbound host
validator on. Nothing of Teams keeps a connection of its own beside the web server.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from microsoft_agents.authentication.msal import MsalAuth
from microsoft_agents.hosting.core import (
    AccessTokenProviderBase,
    AgentAuthConfiguration,
    ConnectionManager,
    OutboundHostValidator,
)

from adapters.teams.app import TeamsAdapter, build_teams_adapter
from adapters.teams.auth import KeyDirectory, TokenGate
from adapters.teams.invokes import Invokes
from bot.channel import Address, ChannelError, Message
from bot.service import Base, Parts, Service
from bot.settings import Settings, SettingsError
from bot.store.base import DeliveryKey
from cards.views import OutcomeView, QuestionView

NAME = "teams"
ProviderFactory = Callable[[AgentAuthConfiguration], AccessTokenProviderBase]


def open_channel(settings: Settings, base: Base) -> PendingChannel:
    problem = settings.teams.connection_problem()
    if problem is not None:
        raise SettingsError([problem])
    return PendingChannel()


def mount(app: Service, parts: Parts, settings: Settings, *, keys: KeyDirectory | None = None,
          tokens: ProviderFactory = MsalAuth) -> TeamsAdapter:
    """``keys`` and ``tokens``: where signing keys and the bot's own tokens come from (tests
    point them at 127.0.0.1; production uses Microsoft's, through msal)."""
    gate = TokenGate.build(settings.teams, keys=keys)
    connections = ConnectionManager(provider_factory=tokens,
                                    connections_configurations={"SERVICE_CONNECTION": gate.config})
    invokes = Invokes(answers=parts.answers, interactions=parts.interactions,
                      codec=parts.base.codec, clock=parts.base.clock)
    adapter = build_teams_adapter(
        gate=gate, connections=connections, invokes=invokes, interactions=parts.interactions,
        host_validator=OutboundHostValidator(enabled=not gate.anonymous),
        store=parts.base.store, audit=parts.audit, clock=parts.base.clock)
    app.web_app.add_routes(adapter.routes())
    app.hosted.append(Hosted(adapter=adapter))
    return adapter


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


class PendingChannel:
    """Stands in until the Teams channel (proactive sends, updates) is merged: every send fails
    certainly, so the engine skips Teams for the person and tries their next platform."""

    platform = NAME
    can_find = False
    idempotent = False

    async def send(self, address: Address, message: Message, *, key: DeliveryKey) -> str:
        raise ChannelError("teams_delivery_unavailable", certain=True, retryable=False)

    async def update(self, ref: str, view: OutcomeView | QuestionView) -> None:
        raise ChannelError("teams_delivery_unavailable", certain=True, retryable=False)

    async def note(self, near: str, user_id: str, view: OutcomeView | None) -> None:
        raise ChannelError("teams_delivery_unavailable", certain=True, retryable=False)

    async def find(self, address: Address, key: DeliveryKey) -> str | None:
        return None
