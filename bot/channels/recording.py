"""An in-memory channel that records every message: the delivery log tests assert on."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

from bot.channel import Address, Away, ChannelError, Message
from bot.core.models import Channel as ContractChannel
from bot.core.models import IdentityKind
from bot.store.base import DeliveryKey
from cards.views import OutcomeView, QuestionView


@dataclass(frozen=True, slots=True)
class SentMessage:
    ref: str
    address: Address
    key: DeliveryKey
    message: Message


@dataclass(frozen=True, slots=True)
class Updated:
    ref: str
    view: OutcomeView | QuestionView


@dataclass(frozen=True, slots=True)
class Noted:
    near: str
    user_id: str
    view: OutcomeView | None


@dataclass
class RecordingChannel:
    """Records sends and updates; can be told to fail, or to crash right after a send."""

    platform: str = "slack"
    can_find: bool = True
    idempotent: bool = False
    sent: list[SentMessage] = field(default_factory=list)
    updates: list[Updated] = field(default_factory=list)
    notes: list[Noted] = field(default_factory=list)
    fail_for: set[str] = field(default_factory=set)  # person ids whose sends fail
    fail_reason: str = "send refused"  # the platform's value-free cause of those failures
    fail_lasting: bool = False  # those failures will hold for later questions too
    fail_cause: str | None = None  # their cause group (``ChannelError.cause``), if any
    after_send: Callable[[SentMessage], None] | None = None  # e.g. raise to simulate a crash
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    # the contract's words for the platform (``bot.channel.Channel``); None: as its name says
    # where the contract names it, else ``api`` and no identity kind
    declared_channel: ContractChannel | None = None
    declared_kind: IdentityKind | None = None
    # who the platform says is away now (``bot.channel.Absences``), by person id; for a person
    # in ``away_unknown`` it cannot tell (the look-up fails); each look-up is kept in
    # ``away_asked``
    away_for: dict[str, Away] = field(default_factory=dict)
    away_unknown: set[str] = field(default_factory=set)
    away_asked: list[str] = field(default_factory=list)

    @property
    def contract_channel(self) -> ContractChannel:
        if self.declared_channel is not None:
            return self.declared_channel
        if self.platform in set(ContractChannel):
            return ContractChannel(self.platform)
        return ContractChannel.API

    @property
    def identity_kind(self) -> IdentityKind | None:
        return self.declared_kind or self.contract_channel.identity_kind

    async def send(self, address: Address, message: Message, *, key: DeliveryKey) -> str:
        if address.person_id in self.fail_for:
            raise ChannelError(self.fail_reason, certain=True, retryable=True,
                               lasting=self.fail_lasting, cause=self.fail_cause)
        record = SentMessage(
            ref=f"{self.platform}-msg-{next(self._ids):05d}",
            address=address,
            key=key,
            message=message,
        )
        self.sent.append(record)
        if self.after_send is not None:
            self.after_send(record)
        return record.ref

    async def away(self, address: Address) -> Away | None:
        self.away_asked.append(address.person_id)
        if address.person_id in self.away_unknown:
            raise ChannelError("away_unknown", certain=True, retryable=True)
        return self.away_for.get(address.person_id)

    async def update(self, ref: str, view: OutcomeView | QuestionView) -> None:
        self.updates.append(Updated(ref=ref, view=view))

    async def note(self, near: str, user_id: str, view: OutcomeView | None) -> None:
        self.notes.append(Noted(near=near, user_id=user_id, view=view))

    async def find(self, address: Address, key: DeliveryKey) -> str | None:
        return next((s.ref for s in self.sent if s.key == key), None)

    def to(self, person_id: str) -> list[SentMessage]:
        return [s for s in self.sent if s.address.person_id == person_id]
