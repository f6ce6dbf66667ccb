"""One precedence for a chat alias, whatever the core offers: every source that speaks must agree.

Before a card goes to a person's chat user, the user must map back to that person alone (deny by
default: a card sent to a user someone else also claims could be answered by the wrong person).
No source is trusted over another. Each one a job holds is asked what the user maps to:

- the clarification's ``askedAliases`` (the core's own resolution of the candidates' users): the
  people they name for the user; or, naming the person on that platform with other users only,
  that the person's user is another one;
- the people batch's resolution of the user (``people-batch``): the person, several people
  (``ALIAS_AMBIGUOUS``) or nobody;
- the records of the other people the job has read: anyone else whose aliases claim the user;
- and only when none of those says anything, ``POST /v1/people/resolve``, the one call that costs.

Every source says "this person": the card goes. Every source says "nobody": ``NO_DELIVERY_ALIAS``.
Anything else (one source names another person or several people, or two sources differ):
``ALIAS_AMBIGUOUS``, with what each source said (never an id). A list of ``askedAliases`` that
names neither the user nor the person says nothing: the steward and anyone ranked after the list
was made are never in it, and a core that does not send it sends an empty one.

The click side asks the resolve alone (a click carries no job), and says why an identity answers
for nobody: ``Unlinked``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum

import structlog

from bot.core import errors as e
from bot.core.batching import JobScope
from bot.core.client import CoreClient
from bot.core.models import (
    AnyIdentity,
    AskedAlias,
    Person,
    ReasonCode,
    ResolvedTeamsIdentity,
    SlackAlias,
    TeamsAlias,
    TeamsIdentity,
)
from bot.core.models import (
    Channel as ContractChannel,
)

log = structlog.get_logger("bot.engine.aliases")
Identity = AnyIdentity
# a chat user as compared here: platform, user id, then the org fields (Slack: team, enterprise;
# Teams: the Entra tenant)
User = tuple[str, str, str | None, str | None]


class Source(StrEnum):
    ASKED_ALIASES = "askedAliases"
    PEOPLE_BATCH = "the people batch"
    RECORDS = "another person's record"
    RESOLVE = "the resolve"


class Says(StrEnum):
    THIS_PERSON = "this person"
    ANOTHER_PERSON = "another person"
    SEVERAL = "several people"
    NOBODY = "nobody"
    ANOTHER_USER = "another user of theirs"  # askedAliases: the person's user is a different one


@dataclass(frozen=True, slots=True)
class Statement:
    source: Source
    says: Says


@dataclass(frozen=True, slots=True)
class Refusal:
    reason: ReasonCode
    why: str


def statements(scope: JobScope | None, *, tenant_id: str, person_id: str,
               user: Identity) -> list[Statement]:
    """What every source the job holds says about ``user`` (none without a job's scope)."""
    if scope is None or scope.tenant_id != tenant_id:
        return []
    said = [*_asked(scope.asked, person_id, _user(user)), *_batch(scope, person_id, user),
            *_records(scope, person_id, user)]
    return list(dict.fromkeys(said))


async def resolved(core: CoreClient, *, tenant_id: str, person_id: str,
                   user: Identity) -> Statement:
    """The resolve's word on ``user``: asked only when nothing the job holds speaks for it.
    Core errors other than the resolve's answers propagate (the job is retried)."""
    try:
        found = await core.resolve_person(tenant_id=tenant_id, identity=user)
    except e.AliasAmbiguous:
        return Statement(Source.RESOLVE, Says.SEVERAL)
    except (e.PersonNotFound, e.TenantScopeMismatch):
        return Statement(Source.RESOLVE, Says.NOBODY)
    return Statement(Source.RESOLVE, _whose(found.person.person_id, person_id))


def weigh(said: list[Statement], *, platform: str) -> Refusal | None:
    """None when every source says the user maps back to this person alone; else why not."""
    kinds = {s.says for s in said}
    if kinds == {Says.THIS_PERSON}:
        return None
    listed = "; ".join(f"{s.source}: {s.says}" for s in said)
    if len({s.source for s in said}) > 1 and len(kinds) > 1:
        log.warning("routing.alias_sources_disagree", platform=platform,
                    sources=[f"{s.source}: {s.says}" for s in said])
    if kinds == {Says.NOBODY}:
        return Refusal(ReasonCode.NO_DELIVERY_ALIAS,
                       f"the core does not resolve the {platform} user ({listed})")
    return Refusal(ReasonCode.ALIAS_AMBIGUOUS,
                   f"the {platform} user does not map back to this person alone ({listed})")


# ---------------------------------------------------------------- the sources


def _asked(asked: list[AskedAlias], person_id: str, user: User) -> Iterator[Statement]:
    named = {a.person_id for a in asked
             if (i := a.identity()) is not None and _same(_user(i), user)}
    if len(named) > 1:
        yield Statement(Source.ASKED_ALIASES, Says.SEVERAL)
    elif named:
        yield Statement(Source.ASKED_ALIASES, _whose(named.pop(), person_id))
    elif any(a.person_id == person_id and a.platform == user[0] and a.identity() is not None
             for a in asked):
        yield Statement(Source.ASKED_ALIASES, Says.ANOTHER_USER)


def _batch(scope: JobScope, person_id: str, user: Identity) -> Iterator[Statement]:
    for entry in scope.people.values():
        for found in entry.resolutions:
            if not _same(_user(found.identity), _user(user)):
                continue
            if found.person_id is not None:
                yield Statement(Source.PEOPLE_BATCH, _whose(found.person_id, person_id))
            elif found.error_code == e.ErrorCode.ALIAS_AMBIGUOUS:
                yield Statement(Source.PEOPLE_BATCH, Says.SEVERAL)
            else:  # not found, out of scope, or a code this bot does not know: nobody
                yield Statement(Source.PEOPLE_BATCH, Says.NOBODY)


def _records(scope: JobScope, person_id: str, user: Identity) -> Iterator[Statement]:
    wanted = _user(user)
    for entry in scope.people.values():
        other = entry.person
        if other is None or other.person_id == person_id:
            continue
        claimed = [_user(a) for a in other.aliases.slack] + \
            [_user(a) for a in other.aliases.teams]
        if any(_same(alias, wanted) for alias in claimed):
            yield Statement(Source.RECORDS, Says.ANOTHER_PERSON)


def _whose(found: str, person_id: str) -> Says:
    return Says.THIS_PERSON if found == person_id else Says.ANOTHER_PERSON


def _user(x: Identity | SlackAlias | TeamsAlias) -> User:
    if isinstance(x, TeamsIdentity | ResolvedTeamsIdentity | TeamsAlias):
        return (ContractChannel.TEAMS, x.aad_object_id, x.tenant_id, None)
    return (ContractChannel.SLACK, x.user_id, x.team_id, x.enterprise_id)


def _same(a: User, b: User) -> bool:
    """One chat user: the same platform and id, and (Slack) the same workspace or Grid org
    where both name one, as the core's resolve matches; Teams: the same Entra tenant."""
    if a[:2] != b[:2]:
        return False
    if a[0] == ContractChannel.TEAMS:  # an Entra identity: the same tenant
        return a[2] == b[2]
    teams = a[2] is not None and b[2] is not None
    grids = a[3] is not None and b[3] is not None
    if not (teams or grids):
        return True  # neither names an org both could be compared by: the id alone
    return (teams and a[2] == b[2]) or (grids and a[3] == b[3])


# ---------------------------------------------------------------- the click side


class Unlinked(StrEnum):
    """Why a clicking chat identity answers for nobody: what the person is told, and the
    reason code on record."""

    SHARED = "shared"  # several people of the tenant claim it
    UNKNOWN = "unknown"  # no person of the tenant has it
    UNVERIFIED = "unverified"  # a person, but not a verified enterprise identity

    @property
    def reason(self) -> ReasonCode:
        return (ReasonCode.ALIAS_AMBIGUOUS if self is Unlinked.SHARED
                else ReasonCode.RESPONDER_NOT_AUTHORISED)

    @property
    def why(self) -> str:
        return _WHY[self]


_WHY = {
    Unlinked.SHARED: "the chat identity is claimed by more than one person of the tenant",
    Unlinked.UNKNOWN: "the chat identity maps to no person of the tenant",
    Unlinked.UNVERIFIED: "the chat identity is not a verified enterprise identity",
}


async def clicker(core: CoreClient, *, tenant_id: str, user: Identity) -> Person | Unlinked:
    """The verified PERSON behind a clicking chat identity, or why there is none."""
    try:
        found = await core.resolve_person(tenant_id=tenant_id, identity=user)
    except e.AliasAmbiguous:
        return Unlinked.SHARED
    except (e.PersonNotFound, e.TenantScopeMismatch):
        return Unlinked.UNKNOWN
    return found.person if found.verified else Unlinked.UNVERIFIED
