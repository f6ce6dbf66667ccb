"""Who is talking to the bot: the verified chat identity, a verified answer, and the tenant map.

Both sides of a tap import these: the adapters build a ``ChatUser`` or a ``Callback`` from what
a verified request says, and ``bot.answering`` and ``bot.interaction`` decide with them.

``SlackTenants`` says which tenant a Slack workspace belongs to, however the deployment knows it.
A single-workspace deployment lists its workspaces in the settings (``SlackSettings.tenant_for``
over ``[[slack.workspaces]]``); a distributed app knows them from its installations, each bound
to a tenant by its install link (the Slack adapter's ``Installations.tenant_for``). Routing and
interactions take either: deny by default (None) for a workspace neither knows.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, fields
from datetime import date, datetime
from typing import Protocol, runtime_checkable

from bot.core.models import SlackIdentity, TeamsIdentity

# a card reference that names its recipient: their order token and, for the chat identity the
# card was sent to, a tag (``bot.engine.views.card_ref``, ``for_recipient``)
_PERSON_REF = re.compile(r"^d\.[0-9a-f]{24}\.([0-9a-f]{16})\.([0-9a-f]{12})$")


def person_order_token(person_id: str) -> str:
    """The pseudonymous token that a person's cards carry (on every platform) so that their
    answers to one clarification are one stream: a keyed hash, never the person id."""
    from bot.pseudonym import digest  # the process's key

    return digest(person_id, purpose="order")[:16]


def recipient_tag(token: str, platform: str, user_id: str) -> str:
    """Binds a card's order token to the chat identity the card was sent to (keyed hash): only
    that identity's clicks join the person's stream, so a button value copied to someone else
    can neither supersede the person's answers nor be taken for one of them."""
    from bot.pseudonym import digest

    return digest(f"{token}|{platform}|{user_id.lower()}", purpose="recipient")[:12]


def for_recipient(card_ref: str, platform: str, user_id: str) -> str:
    """A card reference (``d.<hash>.<token>``) tagged for the chat identity it is sent to."""
    parts = card_ref.split(".")
    if len(parts) != 3 or parts[0] != "d" or len(parts[2]) != 16:
        return card_ref
    return f"{card_ref}.{recipient_tag(parts[2], platform, user_id)}"


def base_ref(card_ref: str) -> str:
    """A card reference without its recipient tag: the delivery it names."""
    parts = card_ref.split(".")
    return ".".join(parts[:3]) if len(parts) == 4 and parts[0] == "d" else card_ref


class SlackTenants(Protocol):
    def tenant_for(self, *, team_id: str | None, enterprise_id: str | None) -> str | None: ...


class UserTenants(Protocol):
    """Which tenant a verified chat user of one platform acts in, or None (deny by default).
    Each platform's mount supplies its own (``bot.process.service.Platform.tenants``: the
    settings' list, or a distributed Slack app's installations); ``bot.interaction`` asks the
    one of the user's platform and decides nothing per platform itself."""

    def tenant_of(self, user: ChatUser) -> str | None: ...


@dataclass(frozen=True, slots=True)
class WorkspaceTenants:
    """``UserTenants`` over a map of Slack workspaces (``SlackTenants``): the engine's default
    for Slack when no mount gave one (tests, the demo)."""

    workspaces: SlackTenants

    def tenant_of(self, user: ChatUser) -> str | None:
        return self.workspaces.tenant_for(team_id=user.team_id, enterprise_id=user.enterprise_id)


@runtime_checkable
class ConfirmingTenants(SlackTenants, Protocol):
    """A tenant map read from a store that other processes write (a distributed app's
    installations): its view may be seconds old. ``confirm`` asks the store about one workspace
    and refreshes the view when it differs; True when it did (decide again with
    ``tenant_for``)."""

    async def confirm(self, *, team_id: str | None, enterprise_id: str | None) -> bool: ...


@dataclass(frozen=True, slots=True)
class ChatUser:
    """A verified chat identity: the user, and the workspace or tenant the callback came from."""

    platform: str  # the adapter's platform name ("slack", "teams", …)
    user_id: str  # Slack user id, or Teams AAD object id
    team_id: str | None = None  # Slack workspace
    enterprise_id: str | None = None  # Slack Enterprise Grid org
    aad_tenant_id: str | None = None  # Teams

    def identity(self) -> SlackIdentity | TeamsIdentity:
        """The identity as the core's resolve takes it: of the core's two kinds, the one its
        verified ids make (an Entra tenant: an Entra identity; a workspace or none: a Slack one)."""
        if self.aad_tenant_id is not None:
            return TeamsIdentity(aad_object_id=self.user_id, tenant_id=self.aad_tenant_id)
        return SlackIdentity(user_id=self.user_id, team_id=self.team_id,
                             enterprise_id=self.enterprise_id)


@dataclass(frozen=True, slots=True)
class Callback:
    """A verified callback, reduced to facts: whom it is from, which card, which answer, when."""

    platform: str  # "slack" | "teams"
    tenant_id: str | None  # from the verified workspace → tenant mapping; None: unmapped
    user_id: str
    team_id: str | None  # Slack team, or None
    enterprise_id: str | None  # Slack Enterprise Grid, or None
    aad_tenant_id: str | None  # Teams
    clarification_id: str
    card_ref: str
    message_ref: str | None  # the clicked card, in the adapter's own form
    answer_index: int | None = None
    custom_from: date | None = None
    custom_to: date | None = None
    custom_note: str = ""
    received_at: datetime | None = None
    # the platform's time of the action (Slack: action_ts, or the signed request timestamp of a
    # form submission), microseconds since the epoch; 0: unknown, the time of receipt is used
    acted_at: int = 0
    # a steward's override from a steward card: sent with ``stewardOverride`` and the required
    # note; the core reads the steward's rights at answer time and refuses anyone else
    steward_override: bool = False
    override_note: str = ""

    @classmethod
    def from_user(cls, user: ChatUser, *, tenant_id: str | None, clarification_id: str,
                  card_ref: str, message_ref: str | None, answer_index: int | None = None,
                  custom: tuple[date | None, date | None, str] | None = None,
                  received_at: datetime | None = None, acted_at: int = 0,
                  override_note: str | None = None) -> Callback:
        """The answer a verified chat user gave: a candidate (``answer_index``), or "Something
        else…"'s dates and note (``custom``); with ``override_note``, a steward's override of
        that candidate. The one way a callback is built from a person."""
        start, end, note = custom or (None, None, "")
        return cls(platform=user.platform, tenant_id=tenant_id, user_id=user.user_id,
                   team_id=user.team_id, enterprise_id=user.enterprise_id,
                   aad_tenant_id=user.aad_tenant_id, clarification_id=clarification_id,
                   card_ref=card_ref, message_ref=message_ref, answer_index=answer_index,
                   custom_from=start, custom_to=end, custom_note=note,
                   received_at=received_at, acted_at=acted_at,
                   steward_override=override_note is not None,
                   override_note=override_note or "")

    def user(self) -> ChatUser:
        """The verified chat user who answered."""
        return ChatUser(platform=self.platform, user_id=self.user_id, team_id=self.team_id,
                        enterprise_id=self.enterprise_id, aad_tenant_id=self.aad_tenant_id)

    def identity(self) -> SlackIdentity | TeamsIdentity:
        return self.user().identity()

    def fingerprint(self) -> str:
        """The answer itself, hashed: equal answers from one person are one answer."""
        if self.answer_index is not None:
            raw = f"i:{self.answer_index}"
        else:
            raw = f"c:{self.custom_from}:{self.custom_to}:{self.custom_note}"
        if self.steward_override:
            raw = f"o:{raw}:{self.override_note}"
        return hashlib.sha256(raw.encode()).hexdigest()[:32]

    def who(self) -> tuple[str, str, str, str | None, str | None]:
        """The verified chat identity, as the key of what the core said about it."""
        return (self.tenant_id or "-", self.platform, self.user_id, self.team_id,
                self.enterprise_id or self.aad_tenant_id)

    def order_key(self) -> str:
        """One person's answers to one clarification: accepted, and forwarded, in the order
        they were given. A question card names its recipient by a pseudonymous token
        (``card_ref``), the same on their Slack and Teams cards, tagged for the chat identity it
        was sent to: a click by that identity joins the person's stream, so one person's
        answers on both platforms are one stream; any other click (a copied button value, a
        card without the tag) orders by its own chat user.
        A steward's overrides are a stream of their own: a form submission carries only the
        signed request's whole second, which must not make it "older" than the same person's
        earlier tap on a question card. No chat identifier is in the key: it names Redis keys."""
        token = _PERSON_REF.match(self.card_ref)
        if token is not None and token.group(2) == recipient_tag(
                token.group(1), self.platform, self.user_id):
            key = f"{self.clarification_id}|p|{token.group(1)}"
        else:
            key = (f"{self.clarification_id}|{self.platform}|{self.tenant_id or '-'}|"
                   f"{self.user_id}")
        return f"{key}|override" if self.steward_override else key

    def entry_id(self) -> str:
        """The same action (a retry or replay of it) is the same entry, whenever it arrives."""
        return f"{self.order_key()}|{self.acted_at}|{self.fingerprint()}"

    def to_json(self) -> str:
        # field by field: dataclasses.asdict deep-copies, a cost paid before every ack
        body = {f.name: getattr(self, f.name) for f in fields(self)}
        for name in ("custom_from", "custom_to", "received_at"):
            value = body[name]
            body[name] = value.isoformat() if value is not None else None
        return json.dumps(body)

    @classmethod
    def from_json(cls, raw: str) -> Callback:
        body = json.loads(raw)
        for name in ("custom_from", "custom_to"):
            if body[name] is not None:
                body[name] = date.fromisoformat(body[name])
        if body["received_at"] is not None:
            body["received_at"] = datetime.fromisoformat(body["received_at"])
        return cls(**body)
