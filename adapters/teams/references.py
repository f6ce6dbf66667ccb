"""What the Teams adapter reads of a verified activity, once: who acts, in which AAD tenant, and
the references a later send or update needs (the 1:1 conversation, the clicked card).

A conversation reference is kept per (tenant, AAD object id) in the store (``conversation_put``):
installing the app, a conversation update and every personal message store it again;
uninstalling removes it. Only personal (1:1) conversations are kept: the bot asks people
privately, never in a channel or group chat.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime

from microsoft_agents.activity import Activity, ConversationReference

from adapters.errors import AdapterError
from adapters.teams.channel import MessageRef
from bot.chat import ChatUser
from bot.clock import zone_named
from bot.engine.lasting import LastingRefusals
from bot.store.base import Conversations

_GUID = re.compile(r"^[0-9a-fA-F]{8}-([0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}$")
PERSONAL = "personal"
UNINSTALLED = ("remove", "remove-upgrade")


@dataclass(frozen=True, slots=True)
class Actor:
    """Who an activity is from: the AAD object id (None when Teams sent none or not a GUID)
    and the AAD tenant both the conversation and the channel data agree on."""

    aad_tenant_id: str
    aad_object_id: str | None

    def user(self) -> ChatUser | None:
        if self.aad_object_id is None:
            return None
        return ChatUser(platform="teams", user_id=self.aad_object_id,
                        aad_tenant_id=self.aad_tenant_id)


class NoTenant(AdapterError):
    """The activity names no AAD tenant, or two different ones (conversation, channel data)."""


def aad_tenant(activity: Activity) -> str:
    """The activity's AAD tenant: ``conversation.tenantId`` and ``channelData.tenant.id``, which
    must agree where both are given; raises NoTenant."""
    named = {t.lower() for t in (_conversation_tenant(activity), _channel_tenant(activity))
             if isinstance(t, str) and t}
    if len(named) != 1:
        raise NoTenant()
    tenant = named.pop()
    if not _GUID.fullmatch(tenant):
        raise NoTenant()
    return tenant


def actor(activity: Activity) -> Actor:
    sender = activity.from_property
    aad = getattr(sender, "aad_object_id", None) if sender is not None else None
    return Actor(aad_tenant_id=aad_tenant(activity),
                 aad_object_id=aad.lower() if isinstance(aad, str) and _GUID.fullmatch(aad)
                 else None)


def _conversation_tenant(activity: Activity) -> object:
    return getattr(activity.conversation, "tenant_id", None) if activity.conversation else None


def _channel_tenant(activity: Activity) -> object:
    data = activity.channel_data
    if isinstance(data, dict):
        tenant = data.get("tenant")
        return tenant.get("id") if isinstance(tenant, dict) else None
    tenant = getattr(data, "tenant", None)
    return tenant.get("id") if isinstance(tenant, dict) else getattr(tenant, "id", None)


def personal(activity: Activity) -> bool:
    conversation = activity.conversation
    return conversation is not None and conversation.conversation_type == PERSONAL


PROFILE_KEYS = ("localTimezone", "locale")  # kept beside the reference


def reference_json(activity: Activity, before: str | None = None) -> str:
    """The activity's conversation reference as the store keeps it (Bot Framework's JSON),
    with the person's ``localTimezone`` and ``locale`` beside it
    (``TeamsChannel.profile``; a reference reader ignores the extra keys): this latest
    activity's, or, where it states none (the Agents Playground's ``conversationUpdate`` has no
    ``locale``; a ``localTimezone`` that names no IANA zone states none), those kept ``before``
    with the last reference: saying nothing of them is no reason to forget them.
    """
    reference = activity.get_conversation_reference()
    kept = reference.model_dump(mode="json", by_alias=True, exclude_none=True)
    previous = _profile_keys(before)
    # a zone that names no IANA zone (a Windows zone name) states none either
    zone = activity.local_timezone if zone_named(activity.local_timezone) else None
    for key, stated in zip(PROFILE_KEYS, (zone, activity.locale), strict=True):
        value = stated if isinstance(stated, str) and stated else previous.get(key)
        if value:
            kept[key] = value
    return json.dumps(kept, separators=(",", ":"))


def _profile_keys(raw: str | None) -> dict[str, str]:
    try:
        kept = json.loads(raw) if raw is not None else {}
    except ValueError:
        return {}
    if not isinstance(kept, dict):
        return {}
    return {k: v for k in PROFILE_KEYS if isinstance(v := kept.get(k), str) and v}


def load_reference(raw: str) -> ConversationReference:
    return ConversationReference.model_validate_json(raw)


async def keep(conversations: Conversations, refusals: LastingRefusals, *, tenant_id: str,
               who: Actor, activity: Activity, now: datetime) -> bool:
    """Store the 1:1 conversation with this person (True when kept): they installed the app or
    wrote to the bot, so a remembered lasting refusal of Teams for them ends
    (``bot.engine.lasting``)."""
    if who.aad_object_id is None or not personal(activity):
        return False
    before = await conversations.conversation_get(tenant_id, who.aad_object_id)
    await conversations.conversation_put(tenant_id, who.aad_object_id,
                                 reference_json(activity, before), now=now)
    await refusals.clear("teams", who.aad_object_id)
    return True


async def forget(conversations: Conversations, *, tenant_id: str, who: Actor) -> None:
    if who.aad_object_id is not None:
        await conversations.conversation_delete(tenant_id, who.aad_object_id)


def clicked(activity: Activity, aad_tenant_id: str) -> MessageRef | None:
    """The card an invoke came from (its ``replyToId``), as the channel updates it; or None."""
    conversation = activity.conversation
    fields = (conversation.id if conversation else None, activity.reply_to_id,
              aad_tenant_id, activity.service_url)
    if not all(isinstance(f, str) and f and " " not in f for f in fields):
        return None
    return MessageRef(*fields)  # type: ignore[arg-type]  # all str, checked above
