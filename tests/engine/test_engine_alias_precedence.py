"""One precedence for a chat alias on every contract (``bot.engine.aliases``): a card goes only
where every source the job holds says the user maps back to the person alone, and any
disagreement is ALIAS_AMBIGUOUS (skipped, audited, on the core's trail, in the steward's list).

The reference core works a clarification's ``askedAliases`` out at the bot's first read and keeps
them (docs/reference-core.md); a directory changed after that read, or a record's list set here,
is a core whose sources disagree. Every test runs against the full and the baseline core."""

from __future__ import annotations

from collections import Counter

from bot.core.client import CoreClient
from bot.core.models import AskedAlias, ReasonCode, SlackAlias
from devcore.core import ReferenceCore
from tests.engine.conftest import Rig
from tests.engine.kit import counted

RESOLVE = "POST /v1/people/resolve"
SARAHS_USER = SlackAlias(user_id="U0SARAH", team_id="T0ACME", enterprise_id="E0ACME",
                         verified=True)


def asked(person_id: str, user_id: str) -> AskedAlias:
    """An askedAliases entry naming a Slack user of the acme workspace for ``person_id``."""
    return AskedAlias(person_id=person_id, platform="slack", user_id=user_id,
                      team_id="T0ACME", enterprise_id="E0ACME", verified=True)


def slack_of(core: ReferenceCore, person_id: str) -> list[SlackAlias]:
    """The person's Slack aliases in the reference core's directory (changed in place)."""
    return core.directory.people[("acme", person_id)].aliases.slack


def questions(rig: Rig) -> list[str]:
    return [s.address.user_id for s in rig.channel.sent if s.key.kind == "question"]


async def skipped_on_record(rig: Rig, cid: str) -> set[tuple[str | None, ReasonCode | None]]:
    """The skips of the audit sink, checked equal to those on the core's trail."""
    audited = {(ev.person_id, ev.reason_code) for ev in rig.events("skipped", cid)}
    c = await rig.bot.get_clarification(clarification_id=cid)
    assert {(ev.person_id, ev.reason_code) for ev in c.events if ev.type == "skipped"} == audited
    return audited


def steward_was_told(rig: Rig, cid: str, *skipped: str) -> None:
    """The steward's escalation lists each skipped person with ALIAS_AMBIGUOUS, in its event and
    in the words of the message the steward reads."""
    (escalated,) = rig.events("escalated", cid)
    assert {(s.person_id, s.reason_code) for s in escalated.skips} == {
        (p, ReasonCode.ALIAS_AMBIGUOUS) for p in skipped}
    (card,) = [s for s in rig.channel.sent if s.key.kind == "steward_escalation"]
    assert card.address.user_id == "U0MARIA"
    assert rig.rendered(card).count("ambiguous chat account") == len(skipped)


async def test_one_user_shared_by_two_people_after_the_asked_aliases_is_skipped_everywhere(
        rig: Rig, core: ReferenceCore) -> None:
    """askedAliases vouch for Sarah's Slack user, then Ahmed claims it too (the batch and the
    resolve say several people): neither is sent a card on either contract, both are skipped
    ALIAS_AMBIGUOUS, and the steward's escalation names the reason for both."""
    cid = await rig.create(authority={"authored_by": ["p-ahmed", "p-sarah"]})
    before = await rig.bot.get_clarification(clarification_id=cid)  # the core works them out
    assert asked("p-sarah", "U0SARAH").identity() in [a.identity() for a in before.asked_aliases]
    slack_of(core, "p-ahmed")[:] = [SARAHS_USER]
    await rig.burst()
    assert questions(rig) == []
    assert await skipped_on_record(rig, cid) == {("p-ahmed", ReasonCode.ALIAS_AMBIGUOUS),
                                                 ("p-sarah", ReasonCode.ALIAS_AMBIGUOUS)}
    steward_was_told(rig, cid, "p-ahmed", "p-sarah")


async def test_asked_aliases_naming_one_user_for_two_people_send_no_card(
        rig: Rig, core: ReferenceCore, bot_client: CoreClient) -> None:
    """A core whose askedAliases name Sarah's Slack user for Sarah and for Ahmed while its
    batch and resolve say Sarah alone: Sarah is skipped ALIAS_AMBIGUOUS on either contract
    (the baseline bot trusted the list and sent the card), and so is Ahmed, whose own user the
    list does not name; no resolve call decides it."""
    cid = await rig.create(authority={"authored_by": ["p-sarah", "p-ahmed"]})
    core.records[cid].asked_aliases = [asked("p-sarah", "U0SARAH"), asked("p-ahmed", "U0SARAH")]
    calls = counted(bot_client)
    await rig.burst()
    assert questions(rig) == []
    assert await skipped_on_record(rig, cid) == {("p-sarah", ReasonCode.ALIAS_AMBIGUOUS),
                                                 ("p-ahmed", ReasonCode.ALIAS_AMBIGUOUS)}
    steward_was_told(rig, cid, "p-sarah", "p-ahmed")
    assert calls[RESOLVE] == (1 if rig.contract == "baseline" else 0)  # the steward's own


async def test_a_person_whose_own_alias_differs_from_the_asked_aliases_is_skipped(
        rig: Rig, core: ReferenceCore, bot_client: CoreClient) -> None:
    """Sarah's record names a new Slack user after the askedAliases named her old one: the
    sources disagree on which user is hers, so she is skipped ALIAS_AMBIGUOUS on either
    contract (no resolve call), and Priya, on whom they agree, is asked."""
    cid = await rig.create(authority={"authored_by": ["p-sarah", "p-priya"]})
    await rig.bot.get_clarification(clarification_id=cid)
    slack_of(core, "p-sarah")[:] = [SARAHS_USER.model_copy(update={"user_id": "U0SARAH2"})]
    calls = counted(bot_client)
    await rig.burst()
    assert questions(rig) == ["U0PRIYA"]
    assert await skipped_on_record(rig, cid) == {("p-sarah", ReasonCode.ALIAS_AMBIGUOUS)}
    (skip,) = rig.events("skipped", cid)
    assert "askedAliases: another user of theirs" in skip.message
    assert calls[RESOLVE] == 0


async def test_asked_aliases_missing_the_person_are_no_vouch_the_core_decides(
        rig: Rig, core: ReferenceCore, bot_client: CoreClient) -> None:
    """askedAliases that name neither Sarah nor her user say nothing about her: her user is
    taken only as the core resolves it (the batch, else one resolve call on the baseline), and
    where the core finds it shared, she is skipped ALIAS_AMBIGUOUS on either contract."""
    cid = await rig.create(authority={"authored_by": ["p-sarah"]})
    core.records[cid].asked_aliases = [asked("p-priya", "U0PRIYA")]
    calls = counted(bot_client)
    await rig.burst()
    assert questions(rig) == ["U0SARAH"]
    assert calls[RESOLVE] == (1 if rig.contract == "baseline" else 0)

    shared = await rig.create(authority={"authored_by": ["p-sarah", "p-priya"]})
    core.records[shared].asked_aliases = [asked("p-priya", "U0PRIYA")]
    slack_of(core, "p-ahmed")[:] = [SARAHS_USER]
    await rig.burst()
    assert questions(rig) == ["U0SARAH", "U0PRIYA"]
    assert await skipped_on_record(rig, shared) == {("p-sarah", ReasonCode.ALIAS_AMBIGUOUS)}


async def test_when_every_source_agrees_one_card_goes_without_a_resolve_call(
        rig: Rig, bot_client: CoreClient) -> None:
    """The agreeing case: the askedAliases (and, on the full core, the batch) say Sarah's user
    is hers alone, so she gets one card and the bot makes no resolve call on either contract."""
    calls: Counter[str] = counted(bot_client)
    cid = await rig.create(authority={"authored_by": ["p-sarah"]})
    await rig.burst()
    assert questions(rig) == ["U0SARAH"]
    assert calls[RESOLVE] == 0
    assert rig.events("skipped", cid) == []
