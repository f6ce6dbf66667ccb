"""Alias resolution: a ranked PERSON to one delivery address, tenant-scoped, via the core.

The bot keeps no routing table: aliases come from the core's person record, under the identity
kind each platform declares (``bot.channel.ContractWords``: Slack users, or Entra identities);
each platform's tenant map (the settings' Slack workspaces, or a distributed app's installations;
the map an Entra-addressed platform's mount supplies) says which workspace or org belongs to
which tenant (the deny-by-default scope).
ALIAS_AMBIGUOUS holds in both directions: one person with several chat users on a platform, and
one chat user claimed by several people of the tenant, or about which the core's sources
disagree (``bot.engine.aliases``); neither is delivered to, since a card sent there could be
read, and answered, by the wrong person.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from pydantic import ValidationError

from bot.channel import Address, ContractWords, SlackReach, TeamsReach
from bot.chat import ChatUser, ConfirmingTenants, SlackTenants, UserTenants
from bot.core import errors as e
from bot.core.batching import JobScope
from bot.core.client import CoreClient
from bot.core.models import (
    Channel as ContractChannel,
)
from bot.core.models import (
    IdentityKind,
    Person,
    ReasonCode,
    SlackIdentity,
    TeamsIdentity,
)
from bot.engine import aliases


@dataclass(frozen=True, slots=True)
class Unroutable:
    reason: ReasonCode
    why: str
    platform: str | None = None  # the platforms tried ("slack+teams"), where any was


@dataclass(frozen=True, slots=True)
class Routing:
    # the platforms sent on, in order; a person's aliases on each are the ones the core's
    # contract keeps for the identity kind it declares (``words``); one that declares none
    # reaches nobody
    channels: tuple[str, ...]
    slack: SlackTenants  # the workspaces of a Slack-addressed platform
    teams: UserTenants  # the Entra orgs of an Entra-addressed platform whose mount supplied none
    # the tenant map each platform's mount supplied: an Entra-addressed platform's own
    tenants: Mapping[str, UserTenants] = field(default_factory=dict)
    words: ContractWords = field(default_factory=lambda: ContractWords.of({}))

    def address(self, person: Person, *, tenant_id: str, besides: tuple[str, ...] = ()
                ) -> Address | Unroutable:
        """The person's address on the first channel in order that has one; ``besides`` names
        platforms not to try (one that said it cannot reach them)."""
        if person.tenant_id != tenant_id:
            return Unroutable(ReasonCode.TENANT_SCOPE_MISMATCH, "person of another tenant")
        foreign = False
        for channel in self.channels:
            if str(channel) in besides:
                continue
            found = self._read(person, tenant_id, str(channel))
            if isinstance(found, Address):
                return found
            if found is not None and found.reason is not ReasonCode.TENANT_SCOPE_MISMATCH:
                return found
            foreign = foreign or found is not None
        if foreign:
            return Unroutable(
                ReasonCode.TENANT_SCOPE_MISMATCH,
                "the person's chat aliases belong to another tenant's workspace",
            )
        return Unroutable(ReasonCode.NO_DELIVERY_ALIAS, self._none_of(person),
                          platform="+".join(str(c) for c in self.channels) or None)

    def _read(self, person: Person, tenant_id: str, platform: str
              ) -> Address | Unroutable | None:
        """The person's address on a platform, by the aliases of the identity kind it
        declares; None: the person has none of that kind (or the platform declares none)."""
        kind = self.words.kind(platform)
        if kind is IdentityKind.SLACK:
            return self._slack(person, tenant_id, platform)
        if kind is IdentityKind.ENTRA:
            return self._entra(person, tenant_id, platform)
        return None

    def _reads(self, kind: IdentityKind | None) -> bool:
        """Some platform sent on is addressed by this identity kind."""
        return any(self.words.kind(str(c)) is kind for c in self.channels)

    def _none_of(self, person: Person) -> str:
        """Why nobody is reachable, naming the platforms tried, in order, and any alias the
        person has on a platform this deployment does not send to."""
        tried = ", ".join(str(c) for c in self.channels) or "none"
        held = {ContractChannel.SLACK: person.aliases.slack,
                ContractChannel.TEAMS: person.aliases.teams}
        unused = [str(c) for c, aliases in held.items()
                  if aliases and not self._reads(c.identity_kind)]
        why = f"the person has no alias on the platforms tried ({tried})"
        if unused:
            names = " and ".join(unused)
            why += f"; their {names} alias is unused: this bot does not send on {names}"
        return why

    async def reach(self, core: CoreClient, person_id: str, *, tenant_id: str,
                    scope: JobScope | None, role: str) -> tuple[Person, Address] | Unroutable:
        """The person of ``tenant_id`` and their address (``route``), or why they cannot be
        reached: not a person of that tenant (``role`` names them in the reason), or
        unroutable."""
        try:
            person = await core.get_person(person_id=person_id, tenant_id=tenant_id, scope=scope)
        except e.PersonNotFound:
            return Unroutable(ReasonCode.TENANT_SCOPE_MISMATCH,
                              f"the {role} is not a person of this tenant")
        address = await self.route(core, person, tenant_id=tenant_id, scope=scope)
        if isinstance(address, Unroutable):
            return address
        return person, address

    async def route(self, core: CoreClient, person: Person, *, tenant_id: str,
                    besides: tuple[str, ...] = (), scope: JobScope | None = None
                    ) -> Address | Unroutable:
        """``address``, then the reverse check: the chat user must map back to this person
        alone, by every source the job's ``scope`` holds and only then by the core's resolve
        (``bot.engine.aliases``, the one precedence). Core errors other than the resolve's
        answers propagate (the job is retried)."""
        address = self.address(person, tenant_id=tenant_id, besides=besides)
        asked: set[tuple[str | None, str | None]] = set()
        if isinstance(address, Unroutable) and await self._confirmed(person, tenant_id, asked):
            address = self.address(person, tenant_id=tenant_id, besides=besides)
        if isinstance(address, Address) and await self._still_bound(address, asked):
            address = self.address(person, tenant_id=tenant_id, besides=besides)
        if isinstance(address, Unroutable):
            return address
        try:
            chat_user = identity(address)
        except ValidationError:  # an alias the contract's id rules refuse: never sent to
            return Unroutable(ReasonCode.NO_DELIVERY_ALIAS,
                              f"the {address.platform} alias is malformed",
                              platform=address.platform)
        said = aliases.statements(scope, tenant_id=tenant_id, person_id=person.person_id,
                                  user=chat_user)
        if not said:
            said = [await aliases.resolved(core, tenant_id=tenant_id,
                                           person_id=person.person_id, user=chat_user)]
        refused = aliases.weigh(said, platform=address.platform)
        if refused is not None:
            return Unroutable(refused.reason, refused.why, platform=address.platform)
        return address

    async def _still_bound(self, address: Address,
                           asked: set[tuple[str | None, str | None]]) -> bool:
        """Before a question is sent into a Slack workspace: where the tenant map is a view of a
        store other processes write, the workspace's binding is confirmed against the store
        (an operator's ``rebind`` or ``remove`` a moment ago is seen at once, so the old tenant's
        question never goes there). True when the view changed: the caller decides again."""
        reach = address.reach
        if not isinstance(self.slack, ConfirmingTenants) or not isinstance(reach, SlackReach):
            return False
        where = (reach.team_id, reach.enterprise_id)
        if where in asked:  # looked up a moment ago, in this decision
            return False
        asked.add(where)
        return await self.slack.confirm(team_id=reach.team_id, enterprise_id=reach.enterprise_id)

    async def _confirmed(self, person: Person, tenant_id: str,
                         asked: set[tuple[str | None, str | None]]) -> bool:
        """Before a person is skipped because their Slack aliases are in no workspace of the
        tenant: where the tenant map is a view of a store other processes write, each such
        alias's workspace is confirmed against the store (a workspace installed a moment ago
        is seen at once). True when the view changed: the caller decides again by the same
        rules, so a workspace of another tenant never serves this one."""
        if not isinstance(self.slack, ConfirmingTenants) \
                or not self._reads(IdentityKind.SLACK) or person.tenant_id != tenant_id:
            return False
        changed = False
        for a in person.aliases.slack:
            where = (a.team_id, a.enterprise_id)
            if where in asked or self.slack.tenant_for(team_id=a.team_id,
                                                       enterprise_id=a.enterprise_id) == tenant_id:
                continue
            asked.add(where)
            changed = await self.slack.confirm(team_id=a.team_id,
                                               enterprise_id=a.enterprise_id) or changed
        return changed

    def _slack(self, person: Person, tenant_id: str, platform: str
               ) -> Address | Unroutable | None:
        aliases = person.aliases.slack
        if not aliases:
            return None
        mine = [
            a
            for a in aliases
            if self.slack.tenant_for(team_id=a.team_id, enterprise_id=a.enterprise_id) == tenant_id
        ]
        if not mine:
            return Unroutable(ReasonCode.TENANT_SCOPE_MISMATCH, "Slack alias in another tenant")
        if len({a.user_id for a in mine}) > 1:
            return Unroutable(ReasonCode.ALIAS_AMBIGUOUS, "several Slack users in scope")
        a = mine[0]
        return Address(
            platform=platform,
            person_id=person.person_id,
            user_id=a.user_id,
            reach=SlackReach(team_id=a.team_id, enterprise_id=a.enterprise_id),
            verified=a.verified and person.verified_enterprise_identity,
        )

    def _entra(self, person: Person, tenant_id: str, platform: str
               ) -> Address | Unroutable | None:
        aliases = person.aliases.teams
        if not aliases:
            return None
        orgs = self.tenants.get(platform, self.teams)
        mine = [a for a in aliases if orgs.tenant_of(ChatUser(
            platform=platform, user_id=a.aad_object_id, aad_tenant_id=a.tenant_id)) == tenant_id]
        if not mine:
            return Unroutable(ReasonCode.TENANT_SCOPE_MISMATCH, "Teams alias in another tenant")
        if len({a.aad_object_id for a in mine}) > 1:
            return Unroutable(ReasonCode.ALIAS_AMBIGUOUS, "several Teams users in scope")
        a = mine[0]
        return Address(
            platform=platform,
            person_id=person.person_id,
            user_id=a.aad_object_id,
            reach=TeamsReach(aad_tenant_id=a.tenant_id),
            verified=a.verified and person.verified_enterprise_identity,
        )


def identity(address: Address) -> SlackIdentity | TeamsIdentity:
    """The chat identity an address sends to, as the core's resolve takes it."""
    reach = address.reach
    if isinstance(reach, TeamsReach):
        return TeamsIdentity(aad_object_id=address.user_id, tenant_id=reach.aad_tenant_id)
    slack = reach if isinstance(reach, SlackReach) else SlackReach()
    return SlackIdentity(user_id=address.user_id, team_id=slack.team_id,
                         enterprise_id=slack.enterprise_id)
