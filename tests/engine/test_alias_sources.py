"""The alias precedence as a table (``bot.engine.aliases``): each source disagreeing with the
others in turn, and what the job then decides for Sarah's Slack user. The same rule runs on
every contract; tests/engine/test_engine_alias_precedence.py drives it through the reference
core over HTTP."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from bot.core.batching import JobScope
from bot.core.models import (
    AliasResolution,
    AskedAlias,
    Person,
    PersonAliases,
    PersonEntry,
    ReasonCode,
    ResolvedSlackIdentity,
    SlackAlias,
    SlackIdentity,
)
from bot.engine import aliases
from bot.engine.aliases import Says, Source, Statement

USER = SlackIdentity(user_id="U0SARAH", team_id="T0ACME", enterprise_id="E0ACME")
AMBIGUOUS, NO_ALIAS = ReasonCode.ALIAS_AMBIGUOUS, ReasonCode.NO_DELIVERY_ALIAS


def asked(person_id: str, user_id: str = "U0SARAH") -> AskedAlias:
    return AskedAlias(person_id=person_id, platform="slack", user_id=user_id,
                      team_id="T0ACME", enterprise_id="E0ACME", verified=True)


def person(person_id: str, user_id: str, team_id: str = "T0ACME") -> Person:
    return Person(person_id=person_id, tenant_id="acme", aliases=PersonAliases(
        slack=[SlackAlias(user_id=user_id, team_id=team_id, verified=True)]))


def resolution(person_id: str | None, code: str | None = None) -> AliasResolution:
    return AliasResolution(identity=ResolvedSlackIdentity(**USER.model_dump()),
                           person_id=person_id, error_code=code)


@dataclass
class Case:
    asked: list[AskedAlias] = field(default_factory=list)
    batch: list[AliasResolution] = field(default_factory=list)  # on Sarah's entry
    others: list[Person] = field(default_factory=list)  # other records the job read
    decided: ReasonCode | None = None  # None: the card goes
    said: set[tuple[Source, Says]] = field(default_factory=set)


ASKED, BATCH, RECORDS = Source.ASKED_ALIASES, Source.PEOPLE_BATCH, Source.RECORDS
CASES = {
    "all agree": Case(
        [asked("p-sarah")], [resolution("p-sarah")],
        said={(ASKED, Says.THIS_PERSON), (BATCH, Says.THIS_PERSON)}),
    "askedAliases alone agree (a baseline core)": Case(
        [asked("p-sarah")], said={(ASKED, Says.THIS_PERSON)}),
    "the batch alone agrees (the list leaves her out)": Case(
        [asked("p-priya", "U0PRIYA")], [resolution("p-sarah")],
        said={(BATCH, Says.THIS_PERSON)}),
    "askedAliases say her, the batch several people": Case(
        [asked("p-sarah")], [resolution(None, "ALIAS_AMBIGUOUS")], decided=AMBIGUOUS,
        said={(ASKED, Says.THIS_PERSON), (BATCH, Says.SEVERAL)}),
    "askedAliases say her, the batch another person": Case(
        [asked("p-sarah")], [resolution("p-ahmed")], decided=AMBIGUOUS,
        said={(ASKED, Says.THIS_PERSON), (BATCH, Says.ANOTHER_PERSON)}),
    "askedAliases say her, the batch nobody": Case(
        [asked("p-sarah")], [resolution(None, "PERSON_NOT_FOUND")], decided=AMBIGUOUS,
        said={(ASKED, Says.THIS_PERSON), (BATCH, Says.NOBODY)}),
    "the batch says her, askedAliases another person": Case(
        [asked("p-ahmed")], [resolution("p-sarah")], decided=AMBIGUOUS,
        said={(ASKED, Says.ANOTHER_PERSON), (BATCH, Says.THIS_PERSON)}),
    "askedAliases name the user for two people": Case(
        [asked("p-sarah"), asked("p-ahmed")], decided=AMBIGUOUS,
        said={(ASKED, Says.SEVERAL)}),
    "askedAliases name another user of hers": Case(
        [asked("p-sarah", "U0SARAH2")], [resolution("p-sarah")], decided=AMBIGUOUS,
        said={(ASKED, Says.ANOTHER_USER), (BATCH, Says.THIS_PERSON)}),
    "another record the job read claims the user": Case(
        [asked("p-sarah")], others=[person("p-ahmed", "U0SARAH")], decided=AMBIGUOUS,
        said={(ASKED, Says.THIS_PERSON), (RECORDS, Says.ANOTHER_PERSON)}),
    "the same user id in another workspace is another user": Case(
        [asked("p-sarah")], others=[person("p-gina", "U0SARAH", team_id="T0GLOBEX")],
        said={(ASKED, Says.THIS_PERSON)}),
    "the batch alone says nobody": Case(
        batch=[resolution(None, "PERSON_NOT_FOUND")], decided=NO_ALIAS,
        said={(BATCH, Says.NOBODY)}),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_each_source_disagreeing_in_turn(case: Case) -> None:
    """Every source the job holds is heard; the card goes only when all say Sarah, nobody
    everywhere is NO_DELIVERY_ALIAS, and any other mix is ALIAS_AMBIGUOUS naming each source."""
    scope = JobScope(tenant_id="acme", asked=case.asked)
    scope.people["p-sarah"] = PersonEntry(person_id="p-sarah",
                                          person=person("p-sarah", "U0SARAH"),
                                          resolutions=case.batch)
    for other in case.others:
        scope.people[other.person_id] = PersonEntry(person_id=other.person_id, person=other)
    said = aliases.statements(scope, tenant_id="acme", person_id="p-sarah", user=USER)
    assert {(s.source, s.says) for s in said} == case.said
    refused = aliases.weigh(said, platform="slack")
    assert (refused.reason if refused else None) is case.decided
    if refused is not None:
        assert all(f"{s.source}: {s.says}" in refused.why for s in said)
        assert "U0SARAH" not in refused.why and "p-" not in refused.why  # no ids


def test_nothing_held_leaves_the_resolve_to_decide() -> None:
    """Without a scope, another tenant's scope, or a scope silent on the user, nothing is said:
    the resolve call is the only source, and its word alone decides."""
    quiet = JobScope(tenant_id="acme", asked=[asked("p-priya", "U0PRIYA")])
    for scope, tenant in ((None, "acme"), (JobScope(tenant_id="globex"), "acme"),
                          (quiet, "acme")):
        assert aliases.statements(scope, tenant_id=tenant, person_id="p-sarah", user=USER) == []
    verdicts = {says: aliases.weigh([Statement(Source.RESOLVE, says)], platform="slack")
                for says in (Says.THIS_PERSON, Says.ANOTHER_PERSON, Says.SEVERAL, Says.NOBODY)}
    assert {says: (r.reason if r else None) for says, r in verdicts.items()} == {
        Says.THIS_PERSON: None, Says.ANOTHER_PERSON: AMBIGUOUS, Says.SEVERAL: AMBIGUOUS,
        Says.NOBODY: NO_ALIAS}
