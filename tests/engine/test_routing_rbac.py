"""Alias routing and the RBAC gate as pure functions: every reason code they can give."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from bot.core.models import (
    Channel as ContractChannel,
)
from bot.core.models import (
    Membership,
    Person,
    PersonAliases,
    ReasonCode,
    Role,
    SlackAlias,
    SourceAcl,
    TeamsAlias,
)
from bot.engine.rbac import may_read
from bot.engine.routing import Routing, Unroutable
from bot.settings import SlackSettings, SlackWorkspace, TeamsSettings, TeamsTenant

ACME_AAD = "5f3c1a2b-7d4e-4c1a-9b2e-0a11ce000001"
ROUTING = Routing(
    channels=(ContractChannel.TEAMS, ContractChannel.SLACK),
    slack=SlackSettings(workspaces=(SlackWorkspace(team_id="T0ACME", tenant="acme"),
                                    SlackWorkspace(team_id="T0GLOBEX", tenant="globex"))),
    teams=TeamsSettings(tenants=(TeamsTenant(aad_tenant_id=ACME_AAD, tenant="acme"),)),
)


def person(*, slack: list[SlackAlias] | None = None, teams: list[TeamsAlias] | None = None,
           tenant: str = "acme", roles: dict[str, Role] | None = None,
           verified: bool = True) -> Person:
    return Person(
        person_id="p-x", tenant_id=tenant, display_name="X", verified_enterprise_identity=verified,
        aliases=PersonAliases(slack=slack or [], teams=teams or []),
        memberships=[Membership(workspace_id=w, role=r) for w, r in (roles or {}).items()],
    )


def test_the_first_configured_channel_with_an_alias_in_scope_wins() -> None:
    """Teams is listed first, so a person with both aliases is reached on Teams."""
    both = person(slack=[SlackAlias(user_id="U1", team_id="T0ACME", verified=True)],
                  teams=[TeamsAlias(aad_object_id="aad-1", tenant_id=ACME_AAD, verified=True)])
    address = ROUTING.address(both, tenant_id="acme")
    assert not isinstance(address, Unroutable)
    assert (address.platform, address.user_id, address.verified) == ("teams", "aad-1", True)


@pytest.mark.parametrize(("who", "reason"), [
    (person(), ReasonCode.NO_DELIVERY_ALIAS),
    (person(slack=[SlackAlias(user_id="U1", team_id="T0ACME"),
                   SlackAlias(user_id="U2", team_id="T0ACME")]), ReasonCode.ALIAS_AMBIGUOUS),
    (person(slack=[SlackAlias(user_id="U9", team_id="T0GLOBEX")]),
     ReasonCode.TENANT_SCOPE_MISMATCH),
    (person(slack=[SlackAlias(user_id="U9", team_id="T0UNKNOWN")]),
     ReasonCode.TENANT_SCOPE_MISMATCH),
    (person(tenant="globex", slack=[SlackAlias(user_id="U1", team_id="T0ACME")]),
     ReasonCode.TENANT_SCOPE_MISMATCH),
])
def test_unroutable_people_get_their_reason_code(who: Person, reason: ReasonCode) -> None:
    """No alias, two users in scope, or aliases only in other tenants' workspaces: skipped."""
    address = ROUTING.address(who, tenant_id="acme")
    assert isinstance(address, Unroutable) and address.reason is reason


def test_an_unverified_alias_routes_but_is_marked_unverified() -> None:
    """Chat identities route; only a verified enterprise identity binds (answers are refused)."""
    contractor = person(slack=[SlackAlias(user_id="U1", team_id="T0ACME", verified=False)])
    address = ROUTING.address(contractor, tenant_id="acme")
    assert not isinstance(address, Unroutable) and address.verified is False


ACL = SourceAcl(workspace_id="legal", read_roles=[Role.EDITOR, Role.STEWARD],
                allow_people=["p-guest"], deny_people=["p-x"])


@pytest.mark.parametrize(("who", "acl", "allowed"), [
    (person(roles={"legal": Role.EDITOR}), ACL.model_copy(update={"deny_people": []}), True),
    (person(roles={"legal": Role.VIEWER}), ACL.model_copy(update={"deny_people": []}), False),
    (person(roles={"finance": Role.EDITOR}), ACL.model_copy(update={"deny_people": []}), False),
    (person(roles={"legal": Role.EDITOR}), ACL, False),  # the deny list wins
    (person(roles={}), ACL.model_copy(update={"deny_people": [], "allow_people": ["p-x"]}), True),
    (person(tenant="globex", roles={"legal": Role.EDITOR}),
     ACL.model_copy(update={"deny_people": []}), False),
    (person(roles={"legal": Role.EDITOR}), None, False),  # no ACL: deny by default
    (person(roles={"legal": Role.EDITOR}), ACL.model_copy(
        update={"deny_people": [], "read_roles": []}), False),
])
def test_rbac_gate_is_an_allowlist_denying_by_default(
    who: Person, acl: SourceAcl | None, allowed: bool
) -> None:
    """Tenant, deny list, allow list, then a workspace role the ACL lists; else deny."""
    assert may_read(who, acl=acl, tenant_id="acme").allowed is allowed


async def test_a_malformed_alias_is_unroutable_without_asking_the_core() -> None:
    """An alias whose user id breaks the contract's id rules is NO_DELIVERY_ALIAS, not a
    crash of the job (the core is never asked to resolve it)."""
    odd = person(slack=[SlackAlias(user_id="U 1/<x>", team_id="T0ACME", verified=True)],
                 roles={"ws": Role.EDITOR})
    routed = await ROUTING.route(None, odd, tenant_id="acme")  # type: ignore[arg-type]
    assert isinstance(routed, Unroutable)
    assert routed.reason is ReasonCode.NO_DELIVERY_ALIAS


class StaleView:
    """A tenant map read from a store other processes write: ``view`` is what this process
    read, ``store`` what the store holds now; ``confirm`` reads the store's word for one
    workspace into the view."""

    def __init__(self, view: dict[str, str], store: dict[str, str]) -> None:
        self.view, self.store = dict(view), store
        self.asked: list[str | None] = []

    def tenant_for(self, *, team_id: str | None, enterprise_id: str | None) -> str | None:
        return self.view.get(team_id or "") or self.view.get(enterprise_id or "")

    async def confirm(self, *, team_id: str | None, enterprise_id: str | None) -> bool:
        self.asked.append(team_id)
        changed = self.view != self.store
        self.view = dict(self.store)
        return changed


class Resolves:
    """The core's resolve: every identity maps back to the person asked about."""

    async def resolve_person(self, *, tenant_id: str, identity: object) -> SimpleNamespace:
        return SimpleNamespace(person=person())


async def test_a_workspace_installed_a_moment_ago_is_confirmed_before_a_skip() -> None:
    view = StaleView({}, {"T0ACME": "acme"})
    routing = Routing(channels=(ContractChannel.SLACK,), slack=view, teams=TeamsSettings())
    sarah = person(slack=[SlackAlias(user_id="U1", team_id="T0ACME", verified=True)])
    address = await routing.route(Resolves(), sarah, tenant_id="acme")  # type: ignore[arg-type]
    assert not isinstance(address, Unroutable) and address.user_id == "U1"
    assert view.asked == ["T0ACME"]


async def test_a_confirmation_never_lets_another_tenants_workspace_serve() -> None:
    view = StaleView({}, {"T0GLOBEX": "globex"})
    routing = Routing(channels=(ContractChannel.SLACK,), slack=view, teams=TeamsSettings())
    crossing = person(slack=[SlackAlias(user_id="U9", team_id="T0GLOBEX", verified=True)])
    address = await routing.route(Resolves(), crossing, tenant_id="acme")  # type: ignore[arg-type]
    assert isinstance(address, Unroutable)
    assert address.reason is ReasonCode.TENANT_SCOPE_MISMATCH
    # a person of another tenant is never confirmed for (nothing to look up)
    view.asked.clear()
    other = person(tenant="globex", slack=[SlackAlias(user_id="U9", team_id="T0GLOBEX")])
    assert isinstance(await routing.route(Resolves(), other, tenant_id="acme"),  # type: ignore[arg-type]
                      Unroutable)
    assert view.asked == []


async def test_a_workspace_rebound_a_moment_ago_gets_no_question_of_its_old_tenant() -> None:
    """An operator rebinds T0ACME to globex (``slack installations rebind``); this process's view
    still says acme. Acme's question is not sent there: the workspace's binding is confirmed
    against the store before it is sent to, and the person skipped for tenant scope."""
    view = StaleView({"T0ACME": "acme"}, {"T0ACME": "globex"})
    routing = Routing(channels=(ContractChannel.SLACK,), slack=view, teams=TeamsSettings())
    sarah = person(slack=[SlackAlias(user_id="U1", team_id="T0ACME", verified=True)])
    address = await routing.route(Resolves(), sarah, tenant_id="acme")  # type: ignore[arg-type]
    assert isinstance(address, Unroutable), address
    assert address.reason is ReasonCode.TENANT_SCOPE_MISMATCH
    # a binding that still holds is sent to, its workspace looked up once
    view = StaleView({"T0ACME": "acme"}, {"T0ACME": "acme"})
    routing = Routing(channels=(ContractChannel.SLACK,), slack=view, teams=TeamsSettings())
    address = await routing.route(Resolves(), sarah, tenant_id="acme")  # type: ignore[arg-type]
    assert not isinstance(address, Unroutable) and address.user_id == "U1"
    assert view.asked == ["T0ACME"]
