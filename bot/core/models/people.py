"""People and their chat identities: resolving a Slack or Teams user to a tenant's person."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from bot.core.models.enums import (
    Role,
)
from bot.core.models.wire import Id, RequestModel, WireModel


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
    slack: list[SlackAlias] = []
    teams: list[TeamsAlias] = []


class Membership(WireModel):
    workspace_id: str
    role: Role


class Person(WireModel):
    person_id: str
    tenant_id: str
    display_name: str
    locale: str = "en"
    time_zone: str = "UTC"
    verified_enterprise_identity: bool
    aliases: PersonAliases
    memberships: list[Membership] = []


class ResolveRequest(RequestModel):
    tenant_id: Id
    identity: ChatIdentity


class ResolvedPerson(WireModel):
    person: Person
    verified: bool = Field(description="The chat identity maps to a verified enterprise identity.")


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

    identity: ChatIdentity
    person_id: str | None = None
    verified: bool = False
    error_code: str | None = None


class PersonEntry(WireModel):
    """One requested id: the person, or the code `GET /v1/people/{personId}` would answer."""

    person_id: str
    person: Person | None = None
    error_code: str | None = None
    resolutions: list[AliasResolution] = []


class PeopleBatch(WireModel):
    people: list[PersonEntry] = Field(description="One entry per distinct requested id, in order.")
