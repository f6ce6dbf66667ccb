"""The channel interface: what the engine asks of a chat platform, in platform-free terms.

The engine hands a channel a delivery address and a card's view model; the channel renders it
(cards/), sends it, and returns an opaque message reference, by which the engine later updates the
card. An address's platform part is opaque to the engine too: Slack's workspace ids, or a Teams
conversation reference (service URL and conversation id). Adapters (adapters/slack, adapters/
teams) implement this Protocol; ``bot.channels.recording`` is the in-memory one for tests and
the demo.

After a crash between reserving a delivery and recording its reference, the engine asks a channel
that ``can_find`` whether the message exists; a channel that cannot look up what it sent but whose
platform deduplicates sends by the delivery key (``idempotent``) is simply sent to again with the
same key; with neither, the delivery counts as uncertain and is never sent twice
(``bot.engine.delivery``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, runtime_checkable

from bot.chat import ChatUser
from bot.core.models import Channel as ContractChannel
from bot.core.models import IdentityKind, RecordedChannel
from bot.errors import BotError
from bot.reach.causes import FIXES
from bot.store.base import DeliveryKey
from cards.reach_views import ReachReportView
from cards.views import (
    DeadLetterDigestView,
    DigestView,
    OutcomeView,
    QuestionView,
    ReminderView,
    StewardConflictView,
    StewardEscalationView,
    StewardNoticesView,
    StewardNoticeView,
    StewardQuorumView,
)

Message = (
    QuestionView
    | DigestView
    | ReminderView
    | StewardEscalationView
    | StewardNoticeView
    | StewardNoticesView
    | StewardConflictView
    | StewardQuorumView
    | DeadLetterDigestView
    | ReachReportView
)


@dataclass(frozen=True, slots=True)
class SlackReach:
    """Slack's part of an address: the workspace and Grid org the user is reached in."""

    team_id: str | None = None
    enterprise_id: str | None = None


@dataclass(frozen=True, slots=True)
class TeamsReach:
    """Teams' part of an address: the user's AAD tenant and, once a conversation with them
    exists, its reference (a Bot Framework send or update needs both)."""

    aad_tenant_id: str
    service_url: str | None = None
    conversation_id: str | None = None


@dataclass(frozen=True, slots=True)
class Profile:
    """What a platform says about a person's own settings: an IANA time zone name
    and a locale such as ``en-US``, either unknown (None). A channel may offer it
    (``Profiles``)."""

    time_zone: str | None = None
    locale: str | None = None


@dataclass(frozen=True, slots=True)
class Address:
    """Where one person is reached on one platform (an alias the core knows, never a table).

    ``reach`` is the platform's own part (``SlackReach``, ``TeamsReach``, or another platform's):
    only routing, which builds it from the core's aliases, and that platform's channel look
    inside it."""

    platform: str  # "slack" | "teams" | …
    person_id: str
    user_id: str  # Slack user id, or Teams AAD object id
    reach: object = None
    verified: bool = False  # the alias maps to a verified enterprise identity


def address_of(user: ChatUser, person_id: str) -> Address:
    """Where a verified chat user is reached: an identity with an Entra tenant in that tenant
    (``TeamsReach``), any other in its workspace and org (``SlackReach``)."""
    reach: SlackReach | TeamsReach = (
        TeamsReach(aad_tenant_id=user.aad_tenant_id) if user.aad_tenant_id is not None
        else SlackReach(team_id=user.team_id, enterprise_id=user.enterprise_id))
    return Address(platform=user.platform, person_id=person_id, user_id=user.user_id,
                   reach=reach)


class ChannelError(BotError):
    """A send failed. ``certain`` says the message certainly does not exist (safe to retry).
    ``lasting``: the platform refused in a way that will hold for the person's later questions
    too (they blocked the bot, no DM can be opened with them); which refusals do is the
    platform's adapter's knowledge, and the engine tries that platform last for them
    (``bot.engine.lasting``). ``cause``: the group of the refusal where the adapter knows it, a
    value-free code of the reach report's cause groups (``bot.reach.causes.FIXES``:
    ``blocked_or_uninstalled``, ``deactivated``, ``app_not_installed``...), carried into the
    skip's reach entry; None: not classified (the report then reads ``reason``'s words)."""

    def __init__(self, reason: str, *, certain: bool, retryable: bool,
                 lasting: bool = False, cause: str | None = None) -> None:
        if cause is not None and cause not in FIXES:
            raise ValueError(f"not a cause group of the reach report: {cause}")
        super().__init__(reason)
        self.reason = reason
        self.certain = certain
        self.retryable = retryable
        self.lasting = lasting
        self.cause = cause


class NotReachable(ChannelError):
    """The platform cannot reach this person at all until an operator acts for them (Teams: the
    app is not installed for them, so no conversation with them can exist). ``reason`` says
    what to do, without values. The engine skips them as NO_DELIVERY_ALIAS, not as a failed
    send: nothing was sent, and sending again will not help until someone acts."""

    def __init__(self, reason: str, *, lasting: bool = False, cause: str | None = None
                 ) -> None:
        super().__init__(reason, certain=True, retryable=False, lasting=lasting, cause=cause)


class NotYet(ChannelError):
    """The platform is making the person reachable and cannot take the card yet (Teams: its app
    is being installed for them, or Microsoft Graph asked to wait). Nothing was sent; the engine
    keeps the person's turn and asks them again at ``at`` (the job is held, as for working
    hours), unless another platform of theirs takes the card now."""

    def __init__(self, reason: str, *, at: datetime) -> None:
        super().__init__(reason, certain=True, retryable=False)
        self.at = at


class CredentialsRejected(ChannelError):
    """The platform refused the bot's own credentials (wrong, revoked, inactive): nothing can be
    sent by anyone until an operator fixes ``setting`` (an environment variable's name).

    Never a reason to skip a person: the engine re-raises it untouched and the worker pauses
    delivery until a credentials check passes again. With a ``scope`` (one installation of a
    platform that holds a token per installation: ``slack:T0ACME``) only that scope's
    deliveries pause (``bot.process.pauses``); the others go on.
    """

    def __init__(self, reason: str, *, setting: str, scope: str | None = None) -> None:
        super().__init__(reason, certain=True, retryable=False)
        self.setting = setting
        self.scope = scope


@runtime_checkable
class Profiles(Protocol):
    """The optional part of a channel: the person's own settings on the platform
    (``profile``), None when it cannot tell now. A channel without it leaves the person's zone
    to the core and the tenant's default (``bot.engine.zones``). A channel whose
    ``keeps_profiles`` is True keeps what it read in the store itself, for every replica; the
    engine then keeps no copy of its own."""

    async def profile(self, address: Address) -> Profile | None: ...


@dataclass(frozen=True, slots=True)
class Away:
    """What a platform says of a person being away now (on holiday, ill, out of office, not to
    be disturbed): ``until`` when they are back, as the platform states it (None: it does not
    say), and ``source``, a value-free word for where it was read (``slack_status``,
    ``slack_dnd``, ``teams_presence``, ``teams_auto_reply``). Never the status's own text."""

    until: datetime | None
    source: str


@runtime_checkable
class Absences(Protocol):
    """The optional part of a channel that can tell whether a person is away now
    (``bot.engine.away`` decides what follows): an ``Away`` while they are, None when the
    platform says they are not. Raises ``ChannelError`` when it cannot tell now (a refusal,
    a permission the bot lacks): the person is then treated as not away, never held."""

    async def away(self, address: Address) -> Away | None: ...


@runtime_checkable
class Housekeeping(Protocol):
    """The optional part of a channel with work of its own in the worker's housekeeping pass
    (Slack's listing of each workspace's people, refreshed when due); it returns at once,
    whatever it starts in the background."""

    async def keep_house(self) -> None: ...


class Channel(Protocol):
    platform: str
    can_find: bool  # ``find`` can look up a message sent for a delivery key
    idempotent: bool  # the platform deduplicates sends by the delivery key it is given

    @property
    def identity_kind(self) -> IdentityKind | None:
        """Which of the core contract's identity kinds addresses the platform's people (their
        aliases, the reverse check); None: the core keeps no aliases it reaches."""
        ...

    @property
    def contract_channel(self) -> ContractChannel:
        """The contract's channel word the platform's answers and delivery reports carry."""
        ...

    async def send(self, address: Address, message: Message, *, key: DeliveryKey) -> str:
        """Send one message; returns its reference. Raises ChannelError."""
        ...

    async def update(self, ref: str, view: OutcomeView | QuestionView) -> None:
        """Replace a delivered card (the reference ``send`` returned) with its new state.
        Raises ChannelError."""
        ...

    async def note(self, near: str, user_id: str, view: OutcomeView | None) -> None:
        """Tell one person privately, next to a message (a reference this channel returned, or
        the one a verified callback came from): ``view``, or None for "this is not available".
        Nobody else sees it (Slack: an ephemeral message). Raises ChannelError."""
        ...

    async def find(self, address: Address, key: DeliveryKey) -> str | None:
        """The reference of a message already sent for this key, if any (crash reconciliation);
        asked only when ``can_find``. Raises ChannelError when the platform cannot tell now.
        """
        ...


@dataclass(frozen=True, slots=True)
class ContractWords:
    """How the mounted platforms map onto the core contract's words (``Channel.identity_kind``,
    ``Channel.contract_channel``): what the bot sends the core and reads back from it. The bot's
    own records (cards, store keys, metrics, logs) keep the platform's own name. A channel
    that declares neither maps as its name does when the contract names it."""

    kinds: Mapping[str, IdentityKind | None]
    channels: Mapping[str, ContractChannel]

    @classmethod
    def of(cls, channels: Mapping[str, object]) -> ContractWords:
        kinds: dict[str, IdentityKind | None] = {}
        words: dict[str, ContractChannel] = {}
        for name, channel in channels.items():
            word = getattr(channel, "contract_channel", None) or _named(name)
            if word is not None:
                words[name] = word
            kinds[name] = getattr(channel, "identity_kind", word.identity_kind if word else None)
        return cls(kinds=kinds, channels=words)

    def channel(self, platform: str) -> ContractChannel:
        """The contract's channel word for a platform's answers and delivery reports."""
        return self.channels.get(platform) or ContractChannel(platform)

    def kind(self, platform: str) -> IdentityKind | None:
        """The identity kind that addresses a platform's people."""
        if platform in self.kinds:
            return self.kinds[platform]
        word = _named(platform)
        return word.identity_kind if word is not None else None

    def platform(self, recorded: RecordedChannel) -> str | None:
        """The platform a channel word the core recorded came from: the one mounted platform
        that declares it, else the chat channel the word names; None for a word no mounted
        platform declares that names no chat channel (``cli``, ``api``, ``erased``)."""
        declaring = [name for name, word in self.channels.items() if word.value == recorded.value]
        if len(declaring) == 1:
            return declaring[0]
        return recorded.value if recorded.chat and not declaring else None


def _named(platform: str) -> ContractChannel | None:
    """The contract's channel word a platform's own name is, if it is one."""
    try:
        return ContractChannel(platform)
    except ValueError:
        return None
