"""The reach record written by real jobs: the engine against the reference core (over HTTP,
memory and Redis stores), the memory reach log behind the recorder serve wires, and each entry
checked field by field (docs/operations.md, "Reach report")."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from bot.chat import Callback
from bot.clock import ManualClock
from bot.core.models import ReasonCode
from bot.reach.log import Kind, MemoryReachLog, ReachEntry
from bot.reach.recording import ReachRecorder
from bot.reach.report import compute
from bot.store.base import DeliveryKey
from clarify_bot.report_cli import as_csv, as_table
from devcore.core import ReferenceCore
from devcore.demo import answer_now
from tests.engine.conftest import Rig, clarify_settings
from tests.engine.kit import crash_after

LEASE = timedelta(seconds=60)
Row = tuple[str, str, str, str, str, str, str | None]  # kind, tenant, ws, platform, who, sev, code


def recorded(make_rig: Callable[..., Rig], clock: ManualClock, **settings: object
             ) -> tuple[Rig, ReachRecorder]:
    reach = ReachRecorder(MemoryReachLog(), clock=clock, retention=timedelta(days=90))
    return make_rig(clarify=clarify_settings(**settings), reach=reach), reach


async def entries(reach: ReachRecorder, *kinds: Kind) -> list[ReachEntry]:
    await reach.flush()
    return [e for e in await reach.reach.read() if not kinds or e.kind in kinds]


def rows(found: list[ReachEntry]) -> list[Row]:
    return [(e.kind.value, e.tenant, e.workspace, e.platform, e.person_id, e.severity,
             e.reason_code) for e in sorted(found, key=lambda e: (e.at, e.kind, e.person_id))]


def tap(rig: Rig, cid: str, user_id: str = "U0SARAH") -> Callback:
    (card,) = [s for s in rig.channel.sent
               if s.key.kind == "question" and s.key.clarification_id == cid]
    return Callback(platform="slack", tenant_id="acme", user_id=user_id, team_id="T0ACME",
                    enterprise_id="E0ACME", aad_tenant_id=None, clarification_id=cid,
                    card_ref=card.message.card_ref,  # type: ignore[union-attr]
                    message_ref=card.ref, answer_index=0)


async def test_a_card_and_two_skips_with_their_reason_codes(
        make_rig: Callable[..., Rig], clock: ManualClock) -> None:
    """Tom may not read the document, Olga has no Slack alias, Sarah is asked: one entry each,
    with the question's tenant, workspace and severity, the platform and the reason code; the
    skips' causes are the engine's value-free words."""
    rig, reach = recorded(make_rig, clock)
    cid = await rig.create(authority={"authored_by": ["p-tom", "p-olga", "p-sarah"]},
                           severity="high")
    await rig.burst()
    found = await entries(reach)
    assert rows(found) == [
        ("asked", "acme", "acme-legal", "slack", "p-sarah", "high", None),
        ("skipped", "acme", "acme-legal", "slack", "p-olga", "high", "NO_DELIVERY_ALIAS"),
        ("skipped", "acme", "acme-legal", "-", "p-tom", "high", "NO_READ_PERMISSION"),
    ]
    assert {e.clarification_id for e in found} == {cid}
    assert all(e.at == clock.now() for e in found)
    # the card keeps the zone Sarah was asked in (the core's, Europe/London; a baseline core
    # names none: the tenant's default), a skip none
    zone = "Europe/London" if rig.contract == "full" else "UTC"
    assert {e.person_id: e.zone for e in found} == {
        "p-sarah": zone, "p-olga": None, "p-tom": None}
    causes = {e.person_id: e.cause for e in found if e.kind is Kind.SKIPPED}
    assert causes == {"p-tom": "the person is not a member of the source's workspace",
                      "p-olga": "the person has no alias on the platforms tried (slack)"}
    report = compute(found, tenant="acme")
    assert [(c.cause, c.people) for c in report.causes] == [
        ("no_alias", ["p-olga"]), ("no_read_permission", ["p-tom"])]


async def test_a_reminder_is_an_entry(make_rig: Callable[..., Rig], clock: ManualClock) -> None:
    rig, reach = recorded(make_rig, clock, escalation_window_hours=8)
    await rig.create(authority={"authored_by": ["p-sarah", "p-ahmed"]}, severity="high")
    await rig.burst()
    await rig.later(timedelta(hours=6, minutes=1))
    (reminded,) = await entries(reach, Kind.REMINDED)
    assert rows([reminded]) == [
        ("reminded", "acme", "acme-legal", "slack", "p-sarah", "high", None)]
    assert reminded.at == clock.now()


async def test_digest_entries_share_their_message_time(
        make_rig: Callable[..., Rig], clock: ManualClock) -> None:
    """Ahmed's threshold is one: the first question is a card, the other two go in one digest
    at the window's end, an entry each, at the digest's time (one interruption)."""
    rig, reach = recorded(make_rig, clock, digest_threshold=1, digest_window_minutes=30)
    made = [await rig.create(authority={"authored_by": ["p-ahmed"]}) for _ in range(3)]
    await rig.burst()
    await rig.later(timedelta(minutes=31))
    found = await entries(reach)
    asked = [e.clarification_id for e in found if e.kind is Kind.ASKED]
    digested = [e for e in found if e.kind is Kind.DIGESTED]
    assert len(asked) == 1 and sorted(asked + [e.clarification_id for e in digested]) == sorted(
        made)
    zone = "Europe/Berlin" if rig.contract == "full" else "UTC"
    assert [(e.platform, e.person_id, e.severity, e.zone) for e in digested] == [
        ("slack", "p-ahmed", "normal", zone)] * 2
    assert len({e.at for e in digested}) == 1 and digested[0].at == clock.now()
    interruptions = compute(found).interruptions
    assert interruptions.top == [("p-ahmed", interruptions.top[0][1], 2)]  # a card, a digest


async def test_an_answer_that_binds_and_its_replay_kept_once(
        make_rig: Callable[..., Rig], clock: ManualClock) -> None:
    rig, reach = recorded(make_rig, clock)
    cid = await rig.create(authority={"authored_by": ["p-sarah"]}, severity="high")
    await rig.burst()
    clock.advance(timedelta(minutes=5))
    cb = tap(rig, cid)
    await answer_now(rig.engine.answers, cb)
    await answer_now(rig.engine.answers, cb)  # the same tap again
    await rig.engine.answers.followups.drain()
    found = await entries(reach, Kind.ANSWERED, Kind.BOUND)
    assert rows(found) == [
        ("answered", "acme", "acme-legal", "slack", "p-sarah", "high", None),
        ("bound", "acme", "acme-legal", "slack", "p-sarah", "high", None)]
    (row,) = compute(await entries(reach)).rows
    assert (row.asked, row.bound, row.open) == (1, 1, 0)
    (timing,) = compute(await entries(reach)).timings
    assert (timing.severity, timing.median_seconds) == ("high", 300.0)


async def test_an_escalation_after_the_window_then_a_dead_letter(
        make_rig: Callable[..., Rig], clock: ManualClock) -> None:
    """Sarah does not answer within the window: the question goes to the steward (an entry for
    the steward, escalated), and once the escalation's lease runs out it is a dead letter."""
    rig, reach = recorded(make_rig, clock)
    cid = await rig.create(authority={"authored_by": ["p-sarah"]}, severity="high")
    await rig.burst()
    await rig.later(LEASE + timedelta(hours=47))
    assert await entries(reach, Kind.ESCALATED) == []
    await rig.later(timedelta(hours=1, minutes=1))  # the card's 48 h window has run out
    (escalated,) = await entries(reach, Kind.ESCALATED)
    steward = (await rig.bot.get_clarification(clarification_id=cid)).workspace.steward_id
    assert rows([escalated]) == [
        ("escalated", "acme", "acme-legal", "slack", steward, "high", None)]
    await rig.later(LEASE + timedelta(seconds=1))
    (dead,) = await entries(reach, Kind.DEAD_LETTERED)
    assert (dead.clarification_id, dead.person_id, dead.tenant, dead.severity) == (
        cid, steward, "acme", "high")
    (row,) = compute(await entries(reach)).rows
    assert (row.asked, row.bound, row.escalated, row.dead_lettered, row.open) == (
        1, 0, 1, 1, 0)


async def test_a_replayed_job_is_not_counted_twice(
        make_rig: Callable[..., Rig], clock: ManualClock) -> None:
    """A worker dies right after Sarah's card reached Slack; the job comes back to a fresh
    worker, which recovers that card and asks Ahmed. Sarah is asked once in the record; every
    event seen a second time (as a replayed job or callback would emit it) adds nothing."""
    rig, reach = recorded(make_rig, clock)
    cid = await rig.create(authority={"authored_by": ["p-sarah", "p-ahmed"]}, severity="high")
    crash_after(rig.channel, DeliveryKey(cid, "p-sarah", 0, "question"))
    await rig.burst()
    fresh = make_rig(clarify=clarify_settings(), channel=rig.channel, reach=reach,
                     worker_id="worker-2")
    await fresh.later(LEASE + timedelta(hours=48, minutes=1))
    found = await entries(reach, Kind.ASKED)
    assert sorted(e.person_id for e in found) == ["p-ahmed", "p-sarah"]
    before = await entries(reach)
    for event in [*rig.sink.events, *fresh.sink.events]:
        reach.seen(event)
    assert await reach.flush() == 0
    assert await entries(reach) == before
    (row,) = compute(before).rows
    assert (row.questions, row.asked) == (1, 1)


async def test_a_refusal_keeps_its_platforms_cause_group(
        make_rig: Callable[..., Rig], clock: ManualClock) -> None:
    """Slack refuses Sarah's card and its adapter names the refusal's group: the skip's entry
    keeps it beside the words, and the report groups her by it (the words alone would say
    delivery_failed)."""
    rig, reach = recorded(make_rig, clock)
    rig.channel.fail_for.add("p-sarah")
    rig.channel.fail_reason = "send refused"
    rig.channel.fail_cause = "deactivated"
    cid = await rig.create(authority={"authored_by": ["p-sarah", "p-ahmed"]}, severity="high")
    await rig.burst()
    (skip,) = [e for e in await entries(reach, Kind.SKIPPED) if e.person_id == "p-sarah"]
    assert (skip.reason_code, skip.cause, skip.cause_group, skip.platform) == (
        "DELIVERY_FAILED", "send refused", "deactivated", "slack")
    report = compute(await entries(reach), tenant="acme")
    assert [(c.cause, c.people) for c in report.causes] == [("deactivated", ["p-sarah"])]
    assert [(f.person_id, f.cause, f.clarification_ids) for f in report.failed] == [
        ("p-sarah", "deactivated", [cid])]


def unreached_stewards(found: list[ReachEntry]) -> list[tuple[str, str, str | None, str | None]]:
    """The steward's skips: (question, reason code, cause group, platform)."""
    return sorted((e.clarification_id, e.reason_code or "", e.cause_group, e.platform)
                  for e in found if e.kind is Kind.SKIPPED and e.person_id == "p-maria")


async def test_a_steward_the_platform_refuses_is_unreached_with_its_cause(
        make_rig: Callable[..., Rig], clock: ManualClock) -> None:
    """Slack refuses every message to Maria, the steward (cannot_dm_bot: its adapter names
    the group): the high-severity notice (``steward_unreachable``), the escalation
    (``escalation_failed``) and, the question dead-lettered then, its dead-letter digest
    (``delivery_failed``) are skips of hers, with the platform's cause group; the report
    names her under it, and ``--failed`` lists her with both questions."""
    rig, reach = recorded(make_rig, clock)
    rig.channel.fail_for.add("p-maria")
    rig.channel.fail_reason = "cannot_dm_bot"
    rig.channel.fail_cause = "blocked_or_uninstalled"
    high = await rig.create(authority={"authored_by": ["p-ahmed"]}, severity="high")
    nobody = await rig.create(authority={"authored_by": ["p-tom"]})  # Tom may not read it
    await rig.burst()
    await rig.later(timedelta(seconds=61))  # the steward's notice window ends
    assert [ev.type for ev in rig.events("steward_unreachable", high)] == [
        "steward_unreachable"]
    assert [ev.type for ev in rig.events("escalation_failed", nobody)] == ["escalation_failed"]
    assert [ev.type for ev in rig.events("delivery_failed", nobody)] == ["delivery_failed"]
    found = await entries(reach)
    assert unreached_stewards(found) == sorted([
        (high, "DELIVERY_FAILED", "blocked_or_uninstalled", "slack"),
        (nobody, "DELIVERY_FAILED", "blocked_or_uninstalled", "slack"),  # the escalation
        (nobody, "DELIVERY_FAILED", "blocked_or_uninstalled", "slack")])  # the dead letter
    report = compute(found, tenant="acme")
    causes = {c.cause: (c.people, c.questions) for c in report.causes}
    assert causes["blocked_or_uninstalled"] == (["p-maria"], 2)
    (maria,) = [f for f in report.failed if f.person_id == "p-maria"]
    assert (maria.cause, maria.platform, sorted(maria.clarification_ids)) == (
        "blocked_or_uninstalled", "slack", sorted([high, nobody]))
    assert "p-maria,acme,acme-legal,slack,blocked_or_uninstalled," in as_csv(
        report, failed=True)
    assert "p-maria" in as_table(report, failed=True)


async def test_a_steward_without_an_alias_is_unreached_as_no_alias(
        make_rig: Callable[..., Rig], clock: ManualClock, core: ReferenceCore) -> None:
    """Maria has no chat alias: the high-severity notice and the escalation cannot go
    anywhere; both are her skips (NO_DELIVERY_ALIAS, the platforms tried), and the report and
    ``--failed`` name her under no_alias."""
    core.directory.people[("acme", "p-maria")].aliases.slack.clear()
    rig, reach = recorded(make_rig, clock)
    high = await rig.create(authority={"authored_by": ["p-ahmed"]}, severity="high")
    nobody = await rig.create(authority={"authored_by": ["p-tom"]})
    await rig.burst()
    found = await entries(reach)
    assert unreached_stewards(found) == sorted([
        (high, "NO_DELIVERY_ALIAS", None, "slack"), (nobody, "NO_DELIVERY_ALIAS", None, "slack")])
    report = compute(found, tenant="acme")
    assert {c.cause: c.people for c in report.causes}["no_alias"] == ["p-maria"]
    (maria,) = [f for f in report.failed if f.person_id == "p-maria"]
    assert (maria.cause, sorted(maria.clarification_ids)) == ("no_alias", sorted([high, nobody]))


async def test_a_refused_dead_letter_digest_is_the_stewards_skip(
        make_rig: Callable[..., Rig], clock: ManualClock) -> None:
    """The escalation reached Maria; by the time the question is dead-lettered Slack refuses
    her (user_disabled): the dead-letter digest's refusal is on record (``delivery_failed``,
    once however many passes try it again) and is her skip in the report, with the platform's
    cause group. The escalation reached her with this question, so she counts under the
    cause but not under ``--failed``; once Slack takes her messages again the digest lists
    it."""
    rig, reach = recorded(make_rig, clock)
    cid = await rig.create(authority={"authored_by": ["p-sarah"]}, severity="high")
    await rig.burst()
    await rig.later(LEASE + timedelta(hours=47))
    await rig.later(timedelta(hours=1, minutes=1))  # escalated to Maria
    assert [e.person_id for e in await entries(reach, Kind.ESCALATED)] == ["p-maria"]
    rig.channel.fail_for.add("p-maria")
    rig.channel.fail_reason = "user_disabled"
    rig.channel.fail_cause = "deactivated"
    await rig.later(LEASE + timedelta(seconds=1))  # dead-lettered: the digest is refused
    await rig.later(timedelta(minutes=5))  # a later pass tries again: not on record again
    (refused,) = rig.events("delivery_failed", cid)
    assert (refused.person_id, refused.reason_code, refused.channel) == (
        "p-maria", ReasonCode.DELIVERY_FAILED, "slack")
    found = await entries(reach)
    assert await entries(reach, Kind.DEAD_LETTERED) == []  # never listed
    assert unreached_stewards(found) == [(cid, "DELIVERY_FAILED", "deactivated", "slack")]
    report = compute(found, tenant="acme")
    assert {c.cause: c.people for c in report.causes}["deactivated"] == ["p-maria"]
    assert "p-maria" not in [f.person_id for f in report.failed]  # the escalation reached her
    rig.channel.fail_for.clear()
    await rig.later(timedelta(minutes=5))  # Slack takes her messages again: listed
    assert [e.person_id for e in await entries(reach, Kind.DEAD_LETTERED)] == ["p-maria"]
