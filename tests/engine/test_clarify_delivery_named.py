"""The spec's named delivery tests (§12): the worker against the reference core over HTTP."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from bot.core.models import (
    AnswerRequest,
    ClarificationState,
    DeliveryKind,
    ReasonCode,
    Role,
)
from bot.core.models import (
    Channel as ContractChannel,
)
from bot.engine.handler import JobOutcome
from devcore.core import ReferenceCore
from tests.engine.conftest import Rig, clarify_settings

SPAN = "The renewed term is effective next quarter."
QUESTION = "When does the Harbor Street lease renewal take effect?"
WINDOW = timedelta(hours=48)


async def test_clarify_rbac_gate(rig: Rig) -> None:
    """Workspace-A span text never reaches a workspace-B candidate; no one passing → redacted."""
    mixed = await rig.create(
        authority={"authored_by": ["p-tom"], "named": ["p-jonas"], "owned_by": ["p-sarah"]}
    )
    finance_only = await rig.create(authority={"authored_by": ["p-tom", "p-jonas"]})
    await rig.burst()
    for outsider in ("p-tom", "p-jonas"):
        for sent in rig.channel.to(outsider):
            text = rig.rendered(sent)
            assert SPAN not in text and QUESTION not in text
            assert type(sent.message).__name__ != "QuestionView"
    asked = [s for s in rig.channel.to("p-sarah") if s.key.clarification_id == mixed]
    assert len(asked) == 1 and QUESTION in rig.rendered(asked[0])
    skips = {(ev.person_id, ev.reason_code) for ev in rig.events("skipped", mixed)}
    assert skips == {
        ("p-tom", ReasonCode.NO_READ_PERMISSION),
        ("p-jonas", ReasonCode.NO_READ_PERMISSION),
    }
    escalations = [s for s in rig.channel.to("p-maria") if s.key.clarification_id == finance_only]
    assert [s.key.kind for s in escalations] == ["steward_escalation"]
    redacted = rig.rendered(escalations[0])
    assert SPAN not in redacted and QUESTION not in redacted
    assert "Tom Becker" in redacted and "Jonas Weber" in redacted
    escalated = rig.events("escalated", finance_only)
    assert len(escalated) == 1 and "NO_READ_PERMISSION" in escalated[0].message
    c = await rig.bot.get_clarification(clarification_id=finance_only)
    trail = [(ev.person_id, ev.reason_code) for ev in c.events if ev.type == "skipped"]
    assert trail == [
        ("p-tom", ReasonCode.NO_READ_PERMISSION),
        ("p-jonas", ReasonCode.NO_READ_PERMISSION),
    ]
    job = await rig.bot.get_job(job_id=c.job_id or "")
    assert job.attempts == job.max_attempts - 1  # skips advanced inside the lease


async def test_clarify_escalation(rig: Rig) -> None:
    """Unanswered past the window → next candidate; exhausted → dead letter → steward digest."""
    cid = await rig.create(
        authority={"authored_by": ["p-olga"], "named": ["p-lee"], "owned_by": ["p-sarah"]}
    )
    await rig.burst()

    def asked() -> list[str]:  # each card's one reminder aside (docs/delivery.md, "Reminders")
        return [s.address.person_id for s in rig.channel.sent if s.key.kind != "reminder"]

    assert asked() == ["p-lee"]
    await rig.later(WINDOW - timedelta(hours=1))
    assert asked() == ["p-lee"]  # still inside the window
    await rig.later(timedelta(hours=2))
    assert asked() == ["p-lee", "p-sarah"]
    await rig.later(WINDOW + timedelta(minutes=5))
    escalation = rig.channel.sent[-1]
    assert (escalation.address.person_id, escalation.key.kind) == ("p-maria", "steward_escalation")
    assert "Olga Ivanova" in rig.rendered(escalation)
    assert escalation.message.unanswered == ("Lee Park", "Sarah Chen")  # type: ignore[union-attr]
    await rig.later(WINDOW + timedelta(minutes=5))
    c = await rig.bot.get_clarification(clarification_id=cid)
    assert c.state is ClarificationState.DEAD_LETTERED
    digest = rig.channel.sent[-1]
    assert type(digest.message).__name__ == "DeadLetterDigestView"
    assert digest.address.person_id == "p-maria"
    item = digest.message.items[0]  # type: ignore[union-attr]
    assert item.clarification_id == cid
    assert [(s.person, s.reason) for s in item.skipped] == [
        ("Olga Ivanova", ReasonCode.NO_DELIVERY_ALIAS)
    ]
    assert item.unanswered == ("Lee Park", "Sarah Chen")
    reported = rig.events("dead_letter_reported", cid)
    assert len(reported) == 1 and "NO_DELIVERY_ALIAS" in reported[0].message
    await rig.later(timedelta(days=3))
    assert rig.channel.sent[-1] is digest  # listed once per clarification


async def test_clarify_caps(make_rig: Callable[..., Rig]) -> None:
    """Per-person daily cap and digest batching: 3 direct, the rest one digest, then capped."""
    rig = make_rig(
        clarify=clarify_settings(
            per_person_daily_cap=5, digest_threshold=3, digest_window_minutes=30
        )
    )
    normal = [
        await rig.create(authority={"authored_by": ["p-ahmed"], "named": ["p-sarah"]})
        for _ in range(7)
    ]
    await rig.burst()
    to_ahmed = rig.channel.to("p-ahmed")
    assert len(to_ahmed) == 3 and all(s.key.kind == "question" for s in to_ahmed)
    direct = {s.key.clarification_id for s in to_ahmed}
    assert len(rig.events("digested")) == 4
    high = [
        await rig.create(
            authority={"authored_by": ["p-ahmed"], "named": ["p-sarah"]}, severity="high"
        )
        for _ in range(3)
    ]
    await rig.burst()
    assert len(rig.channel.to("p-ahmed")) == 4  # 3 + one high card: the digest holds a unit
    capped = rig.events("skipped")
    assert [ev.reason_code for ev in capped] == [ReasonCode.DAILY_CAP_EXCEEDED] * 2
    assert {ev.person_id for ev in capped} == {"p-ahmed"}
    assert {s.key.clarification_id for s in rig.channel.to("p-sarah")} >= set(high[1:])
    await rig.later(timedelta(minutes=31))
    digests = [s for s in rig.channel.to("p-ahmed") if s.key.kind == "digest"]
    assert len(digests) == 1
    assert len(rig.events("digest_sent")) == 4  # one audit event per question in the digest
    held = {q.clarification_id for q in digests[0].message.questions}  # type: ignore[union-attr]
    assert held == set(normal) - direct and len(held) == 4
    assert len(rig.channel.to("p-ahmed")) == 5  # never more than the cap in one day
    c = await rig.bot.get_clarification(clarification_id=sorted(held)[0])
    # a baseline delivery report names no kind: the core counts the person as asked
    kind = DeliveryKind.DIGEST if rig.contract == "full" else DeliveryKind.QUESTION
    assert [(d.person_id, d.kind) for d in c.deliveries] == [("p-ahmed", kind)]
    await rig.later(timedelta(days=1))
    fresh = await rig.create(authority={"authored_by": ["p-ahmed"]}, severity="high")
    await rig.burst()
    assert rig.channel.to("p-ahmed")[-1].key.clarification_id == fresh  # a new day, a new cap


async def test_settled_clarification_completes_its_job(rig: Rig) -> None:
    """A job whose clarification is already answered is completed without asking anyone."""
    cid = await rig.create(authority={"authored_by": ["p-ahmed"]})
    await rig.bot.answer_clarification(
        clarification_id=cid,
        request=AnswerRequest(
            answer_index=0, responder="p-sarah", rights=Role.EDITOR, channel=ContractChannel.CLI
        ),
    )
    await rig.burst()
    assert rig.channel.sent == []
    assert rig.engine.worker.outcomes == {JobOutcome.COMPLETED: 1}


async def test_critical_asks_as_many_as_quorum_needs(rig: Rig) -> None:
    """A critical question goes to two eligible editors at once, skipping the ineligible."""
    cid = await rig.create(
        authority={
            "authored_by": ["p-tom"],
            "named": ["p-sarah", "p-ahmed"],
            "owned_by": ["p-lee"],
        },
        severity="critical",
    )
    await rig.burst()
    asked = sorted(s.address.person_id for s in rig.channel.sent if s.key.kind == "question")
    assert asked == ["p-ahmed", "p-sarah"]
    c = await rig.bot.get_clarification(clarification_id=cid)
    job = await rig.bot.get_job(job_id=c.job_id or "")
    assert job.attempts == 2  # the next escalation asks the next person (Lee)
    assert sorted(c.asked) == ["p-ahmed", "p-sarah"]


async def test_high_severity_notifies_the_steward_once(rig: Rig) -> None:
    """High severity asks directly and sends the steward one redacted notice naming whom."""
    cid = await rig.create(authority={"authored_by": ["p-ahmed"], "named": ["p-sarah"]},
                           severity="high")
    await rig.burst()
    await rig.later(timedelta(seconds=60))  # the steward's notice window ends
    notices = [s for s in rig.channel.to("p-maria") if s.key.kind == "steward_notices"]
    assert len(notices) == 1
    (notice,) = notices[0].message.notices  # type: ignore[union-attr]
    assert notice.clarification_id == cid and notice.asked == ("Ahmed Karimi",)
    text = rig.rendered(notices[0])
    assert SPAN not in text and QUESTION not in text
    await rig.later(WINDOW + timedelta(minutes=2))
    assert [s.address.person_id for s in rig.channel.sent if s.key.kind == "question"] == [
        "p-ahmed", "p-sarah"]
    assert len([s for s in rig.channel.sent if s.key.kind == "steward_notices"]) == 1


async def test_a_steward_with_no_alias_is_on_record_not_silently_skipped(
    rig: Rig, core: ReferenceCore
) -> None:
    """High severity in a workspace whose steward has no chat alias: audited, with its code."""
    core.directory.people[("acme", "p-maria")].aliases.slack.clear()
    cid = await rig.create(authority={"authored_by": ["p-ahmed"]}, severity="high")
    await rig.burst()
    assert [s.address.person_id for s in rig.channel.sent] == ["p-ahmed"]
    (event,) = rig.events("steward_unreachable", cid)
    assert event.reason_code is ReasonCode.NO_DELIVERY_ALIAS and event.person_id == "p-maria"
    c = await rig.bot.get_clarification(clarification_id=cid)
    assert "steward_unreachable" in [ev.type for ev in c.events]
