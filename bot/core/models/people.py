"""People and their chat identities: resolving a Slack or Teams user to a tenant's person."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from bot.core.models.enums import (
    Role,
)
from bot.core.models.wire import (
    Id,
    RequestModel,
    WireModel,
    additive,
    lenient,
    tolerant_items,
)


class SlackIdentity(RequestModel):
    platform: Literal["slack"] = "slack"
    user_id: Id
    team_id: Id | None = None
    enterprise_id: Id | None = None


class TeamsIdentity(RequestModel):
    platform: Literal["teams"] = "teams"
    aad_object_id: Id
    tenant_id: Id


ChatIdentity = Annotated[SlackIdentity | TeamsIdentity, Field(discriminator="platform")]


class ResolvedSlackIdentity(WireModel):
    """A Slack identity as an answer names it: read like every answer, so a field a newer core
    adds to it is ignored (the request's ``SlackIdentity`` refuses unknown fields)."""

    platform: Literal["slack"] = "slack"
    user_id: str
    team_id: str | None = None
    enterprise_id: str | None = None


class ResolvedTeamsIdentity(WireModel):
    """A Teams identity as an answer names it (``ResolvedSlackIdentity``)."""

    platform: Literal["teams"] = "teams"
    aad_object_id: str
    tenant_id: str


ResolvedIdentity = Annotated[ResolvedSlackIdentity | ResolvedTeamsIdentity,
                             Field(discriminator="platform")]
AnyIdentity = SlackIdentity | TeamsIdentity | ResolvedSlackIdentity | ResolvedTeamsIdentity


def request_identity(identity: AnyIdentity) -> SlackIdentity | TeamsIdentity:
    """The identity as a request names it (checked as strictly as every request)."""
    if isinstance(identity, SlackIdentity | TeamsIdentity):
        return identity
    if isinstance(identity, ResolvedTeamsIdentity):
        return TeamsIdentity(aad_object_id=identity.aad_object_id, tenant_id=identity.tenant_id)
    return SlackIdentity(user_id=identity.user_id, team_id=identity.team_id,
                         enterprise_id=identity.enterprise_id)


def identity_key(identity: AnyIdentity) -> tuple[str | None, ...]:
    """What makes two chat identities the same, whichever side of the wire they come from."""
    if isinstance(identity, TeamsIdentity | ResolvedTeamsIdentity):
        return ("teams", identity.aad_object_id, identity.tenant_id)
    return ("slack", identity.user_id, identity.team_id, identity.enterprise_id)


class SlackAlias(WireModel):
    user_id: str
    team_id: str | None = None
    enterprise_id: str | None = None
    verified: bool = False


class TeamsAlias(WireModel):
    aad_object_id: str
    tenant_id: str
    verified: bool = False


class PersonAliases(WireModel):
    email: str | None = None
    upn: str | None = None
    slack: Annotated[list[SlackAlias], tolerant_items(SlackAlias)] = []
    teams: Annotated[list[TeamsAlias], tolerant_items(TeamsAlias)] = []


class Membership(WireModel):
    workspace_id: str
    # a role the bot does not know grants nothing it would not grant a viewer
    role: Annotated[Role, lenient(Role, Role.VIEWER)]


class Person(WireModel):
    """A PERSON with its name, delivery aliases, memberships and whether it is a verified
    enterprise identity (the baseline); its tenant, locale and time zone are additive. A core
    that leaves the name out anyway is shown by the person's id."""

    person_id: str
    display_name: str = ""
    aliases: PersonAliases = PersonAliases()
    memberships: Annotated[list[Membership], tolerant_items(Membership)] = []
    verified_enterprise_identity: bool = False
    tenant_id: str = additive("", description=(
        "The person's tenant; a reader that asked for a tenant fills it in when left out."))
    locale: str = additive("en")
    time_zone: str = additive("UTC")

    @model_validator(mode="after")
    def _named(self) -> Person:
        if not self.display_name:
            self.display_name = self.person_id
        return self


class ResolveRequest(RequestModel):
    tenant_id: Id
    identity: ChatIdentity


class ResolvedPerson(WireModel):
    person: Person
    verified: bool = Field(description="The chat identity maps to a verified enterprise identity.")


class AskedAlias(WireModel):
    """One delivery identity the core resolved for a candidate (spec changelog v0.9): the chat
    identity maps back to ``personId`` alone within the clarification's tenant."""

    person_id: str
    platform: Literal["slack", "teams"]
    user_id: str | None = Field(default=None, description="Slack: the user id.")
    team_id: str | None = Field(default=None, description="Slack: the workspace.")
    enterprise_id: str | None = Field(default=None, description="Slack: the Grid org.")
    aad_object_id: str | None = Field(default=None, description="Teams: the AAD object id.")
    tenant_id: str | None = Field(default=None, description="Teams: the Entra tenant.")
    verified: bool = False

    def identity(self) -> SlackIdentity | TeamsIdentity | None:
        """The identity as the resolve takes it; None when the entry is incomplete."""
        try:
            if self.platform == "slack" and self.user_id:
                return SlackIdentity(user_id=self.user_id, team_id=self.team_id,
                                     enterprise_id=self.enterprise_id)
            if self.platform == "teams" and self.aad_object_id and self.tenant_id:
                return TeamsIdentity(aad_object_id=self.aad_object_id, tenant_id=self.tenant_id)
        except ValueError:  # an id the contract's rules refuse: not vouched for
            return None
        return None


class PeopleBatchRequest(RequestModel):
    """Several people of one tenant in one call, with each chat alias resolved back: everything
    routing one job needs (the candidates and the steward), instead of a read and a resolve per
    person."""

    tenant_id: Id
    person_ids: list[Id] = Field(min_length=1, max_length=100)
    resolve_aliases: bool = Field(default=True, description=(
        "Also resolve every chat alias of each person found back to the tenant's people, as "
        "`POST /v1/people/resolve` would."))


class AliasResolution(WireModel):
    """One chat alias of a person in the batch, resolved as `POST /v1/people/resolve` would: the
    person it maps to, or the error code that call answers (PERSON_NOT_FOUND, ALIAS_AMBIGUOUS,
    TENANT_SCOPE_MISMATCH)."""

    identity: ResolvedIdentity
    person_id: str | None = None
    verified: bool = False
    error_code: str | None = None


class PersonEntry(WireModel):
    """One requested id: the person, or the code `GET /v1/people/{personId}` would answer."""

    person_id: str
    person: Person | None = None
    error_code: str | None = None
    resolutions: Annotated[list[AliasResolution], tolerant_items(AliasResolution)] = []


class PeopleBatch(WireModel):
    people: Annotated[list[PersonEntry], tolerant_items(PersonEntry)] = Field(
        description="One entry per distinct requested id, in order.")
