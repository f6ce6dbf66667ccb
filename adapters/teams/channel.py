"""The Teams channel: Adaptive Cards in each person's 1:1 chat with the bot, through the Bot
Connector (``adapters.teams.connector``).

A proactive card continues the conversation reference the inbound side stored when the person
installed the app or last wrote (``Store.conversation_get``); with none stored it opens the 1:1
conversation from the person's AAD object id and tenant, which the connector allows only where
the app is installed for them (admin pre-install makes that everyone). Where it is not, the
bot installs it for them through Microsoft Graph (``adapters.teams.installs``) and opens the
chat once the install has reached Teams; with installs off, or refused, nobody can reach them on
Teams until an operator acts: NotReachable, a NO_DELIVERY_ALIAS skip whose reason says so. A
403 with ``MessageWritesBlocked`` (the person blocked or removed the bot) fails the delivery
with that cause.

Crash reconciliation has no history to search: the connector offers no lookup of what a bot sent
and does not deduplicate sends by any key of ours (``can_find`` and ``idempotent`` are False).
What the engine keeps is the reservation and, once the connector answered, the activity id in the
message reference; a reservation without one is uncertain and never sent again.
"""

from __future__ import annotations

import asyncio
import json
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import structlog
from microsoft_agents.activity import (
    Activity,
    Attachment,
    ChannelAccount,
    ConversationAccount,
    ConversationParameters,
    ConversationReference,
)
from pydantic import ValidationError

from adapters.pacing import Lane
from adapters.teams.away import AwayReader
from adapters.teams.connector import (
    BLOCKED_CODES,
    Connector,
    ConnectorHosts,
    ConnectorRefused,
    Limits,
    TokenProvider,
)
from adapters.teams.graph import Graph, GraphTokens
from adapters.teams.installs import Installer
from adapters.teams.render import CARD_CONTENT_TYPE, render
from bot.channel import (
    Address,
    Away,
    ChannelError,
    CredentialsRejected,
    Message,
    NotReachable,
    Profile,
    TeamsReach,
)
from bot.clock import Clock
from bot.core.models import Channel as ContractChannel
from bot.core.models import IdentityKind
from bot.reach.causes import APP_NOT_INSTALLED, BLOCKED_OR_UNINSTALLED
from bot.settings import TeamsSettings
from bot.store.base import Conversations, DeliveryKey, Store
from cards import teams as adaptive
from cards import text as card_text
from cards.actions import ActionCodec
from cards.views import OutcomeView, QuestionView, ReminderView, Viewer, with_locale

log = structlog.get_logger("clarify.teams")

# Where 1:1 conversations are opened when no reference says otherwise (Microsoft's global
# service URL for Teams proactive messages, as ``teams.service_url``'s default; a stored
# reference's own service URL wins)
DEFAULT_SERVICE_URL = "https://smba.trafficmanager.net/teams/"
NOT_INSTALLED = ("the Teams app is not installed for this person: install it for them, or "
                 "pre-install it for the tenant, so the bot can message them")
BLOCKED = "MessageWritesBlocked: the person blocked the bot or removed the app in Teams"
READERS_KEPT = 10_000  # 1:1 conversation ids whose person is remembered, most recent first


@dataclass(frozen=True, slots=True)
class MessageRef:
    """A sent card, as the engine keeps it (``CardRecord.message_ref``): enough to update it
    with no other lookup; the inbound side names a clicked card the same way. Written as four
    space-separated fields (none can hold a space) by ``str``; ``parse`` reads it."""

    conversation_id: str
    activity_id: str
    aad_tenant_id: str
    service_url: str

    def __str__(self) -> str:
        return " ".join((self.conversation_id, self.activity_id, self.aad_tenant_id.lower(),
                         self.service_url.rstrip("/") + "/"))

    @classmethod
    def parse(cls, ref: str) -> MessageRef:
        parts = ref.split(" ")
        if len(parts) != 4 or not all(parts):
            raise ChannelError("not a Teams message reference", certain=True, retryable=False)
        return cls(*parts)


@dataclass(frozen=True, slots=True)
class _Conversation:
    service_url: str
    conversation_id: str
    stored: bool  # continued from a stored reference (it may be stale)


@dataclass
class TeamsChannel:
    connector: Connector
    codec: ActionCodec
    store: Conversations
    clock: Clock
    settings: TeamsSettings
    service_url: str = DEFAULT_SERVICE_URL
    platform: str = "teams"
    can_find: bool = False  # the connector cannot list what the bot sent
    idempotent: bool = False  # nor deduplicate a send by our delivery key
    # the core contract's words for Teams: its people are addressed by their Entra identity,
    # its answers and delivery reports say "teams"
    identity_kind: IdentityKind = IdentityKind.ENTRA
    contract_channel: ContractChannel = ContractChannel.TEAMS
    # who is away, through Microsoft Graph (None: teams.read_away is off, or no app id)
    absences: AwayReader | None = None
    # installs the app for a person with no conversation, through Microsoft Graph (None:
    # teams.install_app is off, no app id or no teams.catalog_app_id)
    installer: Installer | None = None
    # 1:1 conversation id -> the AAD object id of its person, for the ``READERS_KEPT`` most
    # recently used (a card updated later is rendered in that person's locale; a forgotten one
    # costs one members lookup at the connector)
    _readers: OrderedDict[str, str] = field(default_factory=OrderedDict, repr=False)

    # ---------------------------------------------------------------- Channel

    async def send(self, address: Address, message: Message, *, key: DeliveryKey) -> str:
        reach = _reach(address)
        activity = _card_activity(render(message, codec=self.codec))
        if isinstance(message, ReminderView):
            # a reminder's nudge, in the conversation its card is in (a 1:1 chat has no
            # threads): a new activity there notifies the person, an update does not
            # the activity's own text is markdown to Teams: the title in it stays text
            activity.text = adaptive.activity_text(card_text.reminder_text(message))
            where = MessageRef.parse(message.near)
            here = _Conversation(where.service_url, where.conversation_id, stored=False)
            self._remember_reader(where.conversation_id, address.user_id)
            try:
                return await self._post(here, TeamsReach(aad_tenant_id=where.aad_tenant_id),
                                        activity, lane=Lane.BULK)
            except ConnectorRefused as exc:
                raise _failure(exc) from None
        conversation = await self._conversation(address, reach)
        self._remember_reader(conversation.conversation_id, address.user_id)
        try:
            return await self._post(conversation, reach, activity, lane=Lane.BULK)
        except ConnectorRefused as exc:
            if not (conversation.stored and exc.status == 404):
                raise _failure(exc) from None
        # the stored conversation is gone (the app was reinstalled): open it afresh, once
        log.info("teams.reference_stale")
        fresh = await self._open(address, reach)
        self._remember_reader(fresh.conversation_id, address.user_id)
        try:
            return await self._post(fresh, reach, activity, lane=Lane.BULK)
        except ConnectorRefused as exc:
            raise _failure(exc) from None

    async def update(self, ref: str, view: OutcomeView | QuestionView) -> None:
        """Rewrite a sent card, in the Teams locale of the person whose 1:1 chat it is in (a
        card repainted later, not in a click's response, is read by them too)."""
        where = MessageRef.parse(ref)
        locale = await self._reader_locale(where)
        activity = _card_activity(render(with_locale(view, locale), codec=self.codec))
        activity.id = where.activity_id
        try:
            await self.connector.call(
                "update", where.service_url, tenant=where.aad_tenant_id,
                conversation=where.conversation_id, resend_safe=True,
                op=lambda ops: ops.update_activity(where.conversation_id, where.activity_id,
                                                   activity))
        except ConnectorRefused as exc:
            raise _failure(exc) from None

    async def note(self, near: str, user_id: str, view: OutcomeView | None) -> None:
        """A message in the 1:1 chat of ``near``: nobody but that person is in it; in their
        Teams locale when it is known."""
        where = MessageRef.parse(near)
        locale = await self._reader_locale(where)
        if view is None:
            activity = Activity(type="message", text=card_text.catalog_of(
                Viewer(locale=locale or "en")).text("answer.not_available"))
        else:
            activity = _card_activity(render(with_locale(view, locale), codec=self.codec))
        conversation = _Conversation(where.service_url, where.conversation_id, stored=False)
        try:
            await self._post(conversation, TeamsReach(aad_tenant_id=where.aad_tenant_id),
                             activity)
        except ConnectorRefused as exc:
            raise _failure(exc) from None

    async def find(self, address: Address, key: DeliveryKey) -> str | None:
        raise ChannelError("Teams cannot look up sent messages", certain=False, retryable=False)

    async def profile(self, address: Address) -> Profile | None:
        """The ``localTimezone`` and ``locale`` of the person's latest activity, kept with
        their conversation reference; an empty profile when they never wrote (the
        engine then takes the core's zone or the tenant's default)."""
        reach = address.reach
        if not isinstance(reach, TeamsReach):
            return Profile()
        return await self._kept_profile(self._tenant(reach), address.user_id)

    async def away(self, address: Address) -> Away | None:
        """Whether Teams says the person is away now (``adapters.teams.away``): None when it
        says they are not, or when the reads are off (``teams.read_away``; nobody is then known
        to be away); ChannelError when it cannot tell now."""
        if self.absences is None:
            return None
        return await self.absences.away(address)

    async def check_credentials(self) -> None:
        """A connector token, once (MSAL caches it): CredentialsRejected when refused."""
        await self.connector.token()

    # ---------------------------------------------------------------- whose chat

    async def _kept_profile(self, tenant: str, aad_object_id: str) -> Profile:
        raw = await self.store.conversation_get(tenant, aad_object_id)
        try:
            kept = json.loads(raw) if raw is not None else {}
        except ValueError:
            kept = {}
        tz = kept.get("localTimezone") if isinstance(kept, dict) else None
        locale = kept.get("locale") if isinstance(kept, dict) else None
        return Profile(time_zone=tz if isinstance(tz, str) and tz else None,
                       locale=locale if isinstance(locale, str) and locale else None)

    async def _reader_locale(self, where: MessageRef) -> str | None:
        """The Teams locale of the person whose 1:1 chat ``where`` is in: the ``locale`` of
        their latest activity, kept with their conversation reference. None when it cannot be
        told now (never wrote, tenant not configured, connector unavailable): the view's own
        locale is kept."""
        tenant = self.settings.tenant_for(where.aad_tenant_id)
        if tenant is None:
            return None
        try:
            user = self._readers.get(where.conversation_id)
            if user is None:
                user = await self._member(where)
                if user is None:
                    return None
                self._remember_reader(where.conversation_id, user)
            else:
                self._readers.move_to_end(where.conversation_id)
        except CredentialsRejected:
            raise
        except (ChannelError, ConnectorRefused, ValidationError):
            return None
        return (await self._kept_profile(tenant, user)).locale

    async def _member(self, where: MessageRef) -> str | None:
        """The one person of a 1:1 conversation, asked of the connector (a card this process
        did not send); None unless exactly one member names an AAD object id."""
        members = await self.connector.call(
            "members", where.service_url, tenant=where.aad_tenant_id,
            conversation=where.conversation_id, resend_safe=True,
            op=lambda ops: ops.get_conversation_members(where.conversation_id))
        named = {member.aad_object_id.lower() for member in members
                 if isinstance(getattr(member, "aad_object_id", None), str)
                 and member.aad_object_id}
        return named.pop() if len(named) == 1 else None

    def _remember_reader(self, conversation_id: str, aad_object_id: str) -> None:
        self._readers[conversation_id] = aad_object_id
        self._readers.move_to_end(conversation_id)
        while len(self._readers) > READERS_KEPT:
            self._readers.popitem(last=False)

    # ---------------------------------------------------------------- conversations

    async def _post(self, conversation: _Conversation, reach: TeamsReach,
                    activity: Activity, *, lane: Lane = Lane.INTERACTIVE) -> str:
        """Send ``activity``: a card of bulk delivery (``Lane.BULK``), or a note to someone who
        just acted (interactive: ahead of every waiting card)."""
        response = await self.connector.call(
            "send", conversation.service_url, tenant=reach.aad_tenant_id,
            conversation=conversation.conversation_id, resend_safe=False, lane=lane,
            op=lambda ops: ops.send_to_conversation(conversation.conversation_id, activity))
        if not response.id:  # accepted, but nothing to update it by: do not send again
            raise ChannelError("connector_no_activity_id", certain=False, retryable=False)
        return str(MessageRef(conversation.conversation_id, response.id, reach.aad_tenant_id,
                              conversation.service_url))

    async def _conversation(self, address: Address, reach: TeamsReach) -> _Conversation:
        """The person's 1:1 conversation: given by the address, stored, or opened now."""
        if reach.service_url and reach.conversation_id:
            return _Conversation(reach.service_url, reach.conversation_id, stored=False)
        stored = await self._stored(address, reach)
        return stored if stored is not None else await self._open(address, reach)

    async def _stored(self, address: Address, reach: TeamsReach) -> _Conversation | None:
        raw = await self.store.conversation_get(self._tenant(reach), address.user_id)
        if raw is None:
            return None
        try:
            reference = ConversationReference.model_validate_json(raw)
        except ValidationError:
            log.warning("teams.reference_unreadable")
            return None
        if not reference.service_url or reference.conversation is None:
            return None
        return _Conversation(reference.service_url, reference.conversation.id, stored=True)

    async def _open(self, address: Address, reach: TeamsReach) -> _Conversation:
        """Open the 1:1 conversation (the same one again if it exists) and store its reference
        for the next send. Where the app is not installed for the person, it is installed
        through Graph (``adapters.teams.installs``; NotYet while it is on its way), or, with
        installs off, NotReachable."""
        if not self.settings.app_id:
            # anonymous (local) runs cannot open one
            raise NotReachable(NOT_INSTALLED, lasting=True, cause=APP_NOT_INSTALLED)
        opened = await self._create(address, reach)
        if opened is not None:
            return opened
        if self.installer is None:
            raise NotReachable(NOT_INSTALLED, lasting=True, cause=APP_NOT_INSTALLED)

        async def found() -> _Conversation | None:
            # the install's own installationUpdate stores the reference; else the connector
            # opens the chat once the install has reached it
            return await self._stored(address, reach) or await self._create(address, reach)

        return await self.installer.reach(reach.aad_tenant_id, address.user_id, found)

    async def _create(self, address: Address, reach: TeamsReach) -> _Conversation | None:
        """The connector opens the 1:1 conversation and its reference is stored; None where the
        app is not installed for the person (403, 404)."""
        bot = ChannelAccount(id=f"28:{self.settings.app_id}")
        params = ConversationParameters(
            is_group=False, bot=bot, members=[ChannelAccount(id=address.user_id)],
            tenant_id=reach.aad_tenant_id, channel_data={"tenant": {"id": reach.aad_tenant_id}})
        try:
            created = await self.connector.call(
                "create_conversation", self.service_url, tenant=reach.aad_tenant_id,
                conversation=None, resend_safe=True, lane=Lane.BULK,
                op=lambda ops: ops.create_conversation(params))
        except ConnectorRefused as exc:
            if exc.status in (403, 404):
                return None
            raise _failure(exc) from None
        service_url = created.service_url or self.service_url
        reference = ConversationReference(
            channel_id="msteams", service_url=service_url, agent=bot,
            user=ChannelAccount(id=address.user_id, aad_object_id=address.user_id),
            conversation=ConversationAccount(id=created.id, tenant_id=reach.aad_tenant_id,
                                             conversation_type="personal", is_group=False))
        await self.store.conversation_put(
            self._tenant(reach), address.user_id,
            reference.model_dump_json(by_alias=True, exclude_none=True), now=self.clock.now())
        return _Conversation(service_url, created.id, stored=False)

    def _tenant(self, reach: TeamsReach) -> str:
        tenant = self.settings.tenant_for(reach.aad_tenant_id)
        if tenant is None:  # routing never gives such an address; refuse rather than guess
            raise ChannelError("Teams tenant not configured", certain=True, retryable=False)
        return tenant


def open_teams_channel(settings: TeamsSettings, *, session: aiohttp.ClientSession,
                       tokens: TokenProvider, store: Store, clock: Clock, codec: ActionCodec,
                       sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
                       local_connectors: tuple[str, ...] = (),
                       graph_tokens: GraphTokens | None = None) -> TeamsChannel:
    """The channel as the mount builds it: one aiohttp session (with a timeout; its owner
    closes it) for every connector call, the SDK's token provider (``MsalAuth``; the anonymous
    one for a local run without an app id), the store's shared rate buckets. The token goes to
    Microsoft's connector hosts only, and to ``local_connectors`` (exact origins such as the
    Agents Playground's ``http://127.0.0.1:56150``), which a production mount leaves empty.
    ``graph_tokens``: the app's Graph tokens, for reading who is away (``teams.read_away``)
    and installing the app for people (``teams.install_app``); None: neither."""
    connector = Connector(
        session=session, tokens=tokens, store=store, clock=clock, sleep=sleep,
        hosts=ConnectorHosts(local=local_connectors),
        limits=Limits.of(settings))
    absences = installer = None
    if graph_tokens is not None:
        graph = Graph(session=session, tokens=graph_tokens, clock=clock,
                      base_url=settings.graph_url, concurrency=settings.graph_concurrency,
                      sleep=sleep)
        if settings.read_away:
            absences = AwayReader(graph=graph, settings=settings, clock=clock)
        if settings.install_app and settings.catalog_app_id:
            installer = Installer(graph=graph, store=store, settings=settings, clock=clock,
                                  catalog_app_id=settings.catalog_app_id, sleep=sleep)
    return TeamsChannel(connector=connector, codec=codec, store=store, clock=clock,
                        settings=settings, service_url=settings.service_url, absences=absences,
                        installer=installer)


def _reach(address: Address) -> TeamsReach:
    if not isinstance(address.reach, TeamsReach):
        raise ChannelError("not a Teams address", certain=True, retryable=False)
    return address.reach


def _card_activity(card: dict[str, Any]) -> Activity:
    return Activity(type="message",
                    attachments=[Attachment(content_type=CARD_CONTENT_TYPE, content=card)])


def _failure(exc: ConnectorRefused) -> ChannelError:
    """A final refusal, as the engine takes it: nothing was sent, and sending the same again
    would be refused again."""
    if exc.status == 403 and exc.code in BLOCKED_CODES:  # holds for later questions too
        return ChannelError(BLOCKED, certain=True, retryable=False, lasting=True,
                            cause=BLOCKED_OR_UNINSTALLED)
    reason = f"connector_{exc.status}" + (f": {exc.code}" if exc.code else "")
    return ChannelError(reason, certain=True, retryable=False)
