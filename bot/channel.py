"""The channel interface: what the engine asks of a chat platform, in platform-free terms.

The engine hands a channel a delivery address and a card's view model; the channel renders it
(cards/), sends it, and returns an opaque message reference. Adapters (adapters/slack, adapters/
teams) implement this Protocol; ``bot.channels.recording`` is the in-memory one for tests and
the demo.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from bot.store.base import CardRecord, DeliveryKey
from cards.views import (
    DeadLetterDigestView,
    DigestView,
    OutcomeView,
    QuestionView,
    StewardConflictView,
    StewardEscalationView,
    StewardNoticeView,
    StewardQuorumView,
)

Message = (
    QuestionView
    | DigestView
    | StewardEscalationView
    | StewardNoticeView
    | StewardConflictView
    | StewardQuorumView
    | DeadLetterDigestView
)


@dataclass(frozen=True, slots=True)
class Address:
    """Where one person is reached on one platform (an alias the core knows, never a table)."""

    platform: str  # "slack" | "teams"
    person_id: str
    user_id: str  # Slack user id, or Teams AAD object id
    team_id: str | None = None  # Slack team
    enterprise_id: str | None = None  # Slack Enterprise Grid org
    aad_tenant_id: str | None = None  # Teams
    verified: bool = False  # the alias maps to a verified enterprise identity


class ChannelError(Exception):
    """A send failed. ``certain`` says the message certainly does not exist (safe to retry)."""

    def __init__(self, reason: str, *, certain: bool, retryable: bool) -> None:
        super().__init__(reason)
        self.reason = reason
        self.certain = certain
        self.retryable = retryable


class CredentialsRejected(ChannelError):
    """The platform refused the bot's own credentials (wrong, revoked, inactive): nothing can be
    sent by anyone until an operator fixes ``setting`` (an environment variable's name).

    Never a reason to skip a person: the engine re-raises it untouched and the worker pauses
    delivery until a credentials check passes again.
    """

    def __init__(self, reason: str, *, setting: str) -> None:
        super().__init__(reason, certain=True, retryable=False)
        self.setting = setting


class Channel(Protocol):
    platform: str

    async def send(self, address: Address, message: Message, *, key: DeliveryKey) -> str:
        """Send one message; returns its reference. Raises ChannelError."""
        ...

    async def update(self, card: CardRecord, view: OutcomeView | QuestionView) -> None:
        """Replace a delivered card with its new state. Raises ChannelError."""
        ...

    async def note(self, near: str, user_id: str, view: OutcomeView | None) -> None:
        """Tell one person privately, next to a message (a reference this channel returned, or
        the one a verified callback came from): ``view``, or None for "this is not available".
        Nobody else sees it (Slack: an ephemeral message). Raises ChannelError."""
        ...

    async def find(self, address: Address, key: DeliveryKey) -> str | None:
        """The reference of a message already sent for this key, if any (crash reconciliation).

        Raises ChannelError when the platform cannot tell.
        """
        ...
