"""The steward's endpoints over HTTP: the attention queue, delivery history, attribution erasure.

The queue is spec changelog v0.8's attention set; the history joins the job to its events per
attempt; erasure (spec OQ-5, v0.8/v0.9) tombstones a person and keeps the evidence. Each is held
to the contract's other rules too: tenant scope, the read gate and value-free errors.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta

import pytest

from bot.clock import ManualClock
from bot.core import errors as e
from bot.core.client import CoreClient
from bot.core.models import (
    NIL_PERSON,
    AnswerOutcome,
    AnswerRequest,
    AttemptOutcome,
    BindingStatus,
    ClarificationState,
    DeliveryKind,
    DeliveryReport,
    EventReport,
    EvidenceClass,
    LeasedJob,
    ReasonCode,
    RecordedChannel,
    Role,
)
from bot.core.models import (
    Channel as ContractChannel,
)

CRITICAL, NORMAL, HIGH, LOW = "clr-00001", "clr-00002", "clr-00003", "clr-00004"
SARAH, PRIYA, MARIA = "acme-key-sarah-editor", "acme-key-priya-viewer", "acme-key-maria-steward"
UNBOUND, GINA = "acme-key-unbound", "globex-key-gina-steward"


def answer(index: int, responder: str, rights: Role = Role.EDITOR,
           **more: object) -> AnswerRequest:
    return AnswerRequest(answer_index=index, responder=responder, rights=rights,
                         channel=ContractChannel.SLACK, message_ref=f"D0{responder}:1.0", **more)


async def ids(client: CoreClient) -> list[str]:
    return [c.id for c in (await client.list_attention()).items]


async def test_clarify_steward_queue(
    bot_client: CoreClient, client_for: Callable[[str], CoreClient]
) -> None:
    """Conflicted in any severity; open, attested, partially confirmed at high and critical."""
    maria = client_for(MARIA)
    assert await ids(maria) == [HIGH, CRITICAL]  # newest first; normal and low are not urgent
    await bot_client.answer_clarification(clarification_id=CRITICAL, request=answer(0, "p-sarah"))
    await bot_client.answer_clarification(clarification_id=CRITICAL, request=answer(1, "p-ahmed"))
    await bot_client.answer_clarification(clarification_id=HIGH, request=answer(0, "p-tom"))
    queue = (await maria.list_attention()).items
    assert [(c.id, c.state) for c in queue] == [(CRITICAL, ClarificationState.CONFLICTED)]
    assert queue[0].document_id == "doc-northwind-msa"


async def test_the_queue_keeps_the_read_gate_and_the_tenant_scope(
    bot_client: CoreClient, client_for: Callable[[str], CoreClient]
) -> None:
    """Maria (Legal's steward) sees Finance's item without its title; Gina (Globex) sees
    nothing; keys not bound to a steward (a viewer's, an editor's, an unbound one) are refused
    the queue (spec §7: review requires steward scope)."""
    for key in (PRIYA, SARAH, UNBOUND):
        with pytest.raises(e.StewardRequired):
            await client_for(key).list_attention()
    items = {c.id: c for c in (await client_for(MARIA).list_attention()).items}
    assert (items[HIGH].redacted, items[HIGH].document_title) == (True, "")
    assert items[CRITICAL].redacted is False and items[CRITICAL].document_title
    assert await ids(client_for(GINA)) == []
    with pytest.raises(e.TenantScopeMismatch):
        await client_for(GINA).list_attention(tenant_id="acme")


async def test_expired_and_dead_lettered_join_the_queue_in_any_severity(
    bot_client: CoreClient, client_for: Callable[[str], CoreClient], clock: ManualClock
) -> None:
    """The normal question's window runs out unanswered: it is expired (when the window has run
    out, not when the bot's lease ended after the delivery), then dead-lettered."""
    [job] = [j for j in (await bot_client.poll_jobs(kinds=["clarify:"], max_jobs=5)).jobs
             if j.payload.clarification_id == NORMAL]
    clock.advance(timedelta(minutes=2))  # the lease (60 s) runs out: the window goes on
    assert NORMAL not in await ids(client_for(MARIA))  # open, normal: no steward's business
    clock.advance(timedelta(hours=48))  # the escalation window has run out
    assert NORMAL in await ids(client_for(MARIA))
    states = {c.id: c.state for c in (await client_for(MARIA).list_attention()).items}
    assert states[NORMAL] is ClarificationState.EXPIRED
    assert job.max_attempts == 4


async def test_clarify_delivery_history(
    bot_client: CoreClient, client_for: Callable[[str], CoreClient], clock: ManualClock
) -> None:
    """attempt → candidate → outcome or skip reason, events in order, the steward last."""
    [job] = [j for j in (await bot_client.poll_jobs(kinds=["clarify:"], max_jobs=5)).jobs
             if j.payload.clarification_id == CRITICAL]
    await bot_client.report_event(clarification_id=CRITICAL, report=EventReport(
        event_id="skip-0", type="skipped", person_id="p-sarah", attempt=0,
        reason_code=ReasonCode.DAILY_CAP_EXCEEDED, message="Daily cap reached; skipped."))
    await bot_client.advance_job(job_id=job.id, lease_token=job.lease_token, attempt=1,
                                 reason_code=ReasonCode.DAILY_CAP_EXCEEDED)
    await bot_client.report_delivery(clarification_id=CRITICAL, report=DeliveryReport(
        delivery_id="dlv-1", person_id="p-ahmed", channel=ContractChannel.SLACK,
        kind=DeliveryKind.QUESTION, attempt=1, message_ref="D0AHMED:1.0"))
    history = await client_for(SARAH).get_delivery_history(clarification_id=CRITICAL)
    rows = [(a.attempt, a.person_id, a.steward, a.outcome, a.reason_code)
            for a in history.attempts]
    assert rows == [
        (0, "p-sarah", False, AttemptOutcome.SKIPPED, ReasonCode.DAILY_CAP_EXCEEDED),
        (1, "p-ahmed", False, AttemptOutcome.DELIVERED, None),
        (2, "p-maria", False, AttemptOutcome.NOT_REACHED, None),  # owner, ranked
        (3, "p-maria", True, AttemptOutcome.NOT_REACHED, None),  # the steward escalation
    ]
    assert [ev.type for ev in history.attempts[0].events] == ["skipped", "advanced"]
    assert history.attempts[1].channel == RecordedChannel.SLACK
    assert [ev.event_id for ev in history.events] == sorted(
        (ev.event_id for ev in history.events), key=[ev.event_id for ev in history.events].index)
    assert [ev.at for ev in history.events] == sorted(ev.at for ev in history.events)
    clock.advance(timedelta(minutes=2))  # the lease runs out: Ahmed's window goes on
    during = await client_for(SARAH).get_delivery_history(clarification_id=CRITICAL)
    assert [a.outcome for a in during.attempts] == [
        AttemptOutcome.SKIPPED, AttemptOutcome.DELIVERED, AttemptOutcome.PENDING,
        AttemptOutcome.NOT_REACHED]
    clock.advance(timedelta(hours=48))  # the window runs out: Ahmed's attempt expires
    after = await client_for(SARAH).get_delivery_history(clarification_id=CRITICAL)
    assert [a.outcome for a in after.attempts] == [
        AttemptOutcome.SKIPPED, AttemptOutcome.EXPIRED, AttemptOutcome.PENDING,
        AttemptOutcome.NOT_REACHED]
    assert (after.job_id, after.job_attempts, after.max_attempts) == (job.id, 2, 4)
    await bot_client.answer_clarification(clarification_id=CRITICAL, request=answer(0, "p-ahmed"))
    answered = await client_for(SARAH).get_delivery_history(clarification_id=CRITICAL)
    assert answered.attempts[1].outcome is AttemptOutcome.ANSWERED


async def test_a_low_clarification_has_a_history_without_a_job(
    client_for: Callable[[str], CoreClient],
) -> None:
    history = await client_for(UNBOUND).get_delivery_history(clarification_id=LOW)
    assert (history.job_id, history.attempts, [ev.type for ev in history.events]) == (
        None, [], ["created"])
    with pytest.raises(e.ClarificationNotFound):
        await client_for(GINA).get_delivery_history(clarification_id=LOW)


async def test_the_list_filters_by_document_and_since(
    bot_client: CoreClient, client_for: Callable[[str], CoreClient], clock: ManualClock
) -> None:
    page = await client_for(SARAH).list_clarifications(document_id="doc-harbor-lease")
    assert [c.id for c in page.items] == [NORMAL]
    start = clock.now()
    clock.advance(timedelta(hours=1))
    await bot_client.answer_clarification(clarification_id=HIGH, request=answer(0, "p-tom"))
    changed = await client_for(SARAH).list_clarifications(since=start + timedelta(minutes=1))
    assert [c.id for c in changed.items] == [HIGH]


async def test_a_steward_note_is_kept_and_withheld_from_the_redacted_view(
    bot_client: CoreClient, client_for: Callable[[str], CoreClient]
) -> None:
    await bot_client.answer_clarification(clarification_id=CRITICAL, request=answer(0, "p-sarah"))
    await bot_client.answer_clarification(clarification_id=CRITICAL, request=answer(1, "p-ahmed"))
    receipt = await client_for(MARIA).answer_clarification(
        clarification_id=CRITICAL, request=AnswerRequest(
            answer_index=1, steward_override=True, note="Countersignature governs."))
    assert receipt.result.outcome is AnswerOutcome.STEWARD_OVERRIDE
    full = await bot_client.get_clarification(clarification_id=CRITICAL)
    assert full.responses[-1].note == "Countersignature governs."
    shown = await client_for(UNBOUND).get_clarification(clarification_id=CRITICAL)
    assert shown.redacted and shown.responses[-1].note is None


# ------------------------------------------------------------------ erasure


async def _activity(bot_client: CoreClient) -> LeasedJob:
    """Sarah was asked in Slack and answered; Ahmed answered too: a bound critical question."""
    [job] = [j for j in (await bot_client.poll_jobs(kinds=["clarify:"], max_jobs=5)).jobs
             if j.payload.clarification_id == CRITICAL]
    await bot_client.report_delivery(clarification_id=CRITICAL, report=DeliveryReport(
        delivery_id="dlv-0", person_id="p-sarah", channel=ContractChannel.SLACK,
        kind=DeliveryKind.QUESTION, attempt=0, message_ref="D0SARAH:1.0"))
    await bot_client.answer_clarification(clarification_id=CRITICAL, request=answer(0, "p-sarah"))
    await bot_client.answer_clarification(clarification_id=CRITICAL, request=answer(0, "p-ahmed"))
    return job


async def test_clarify_gdpr_tombstone(
    bot_client: CoreClient, client_for: Callable[[str], CoreClient]
) -> None:
    """No trace of Sarah's id; the answer values, rights, binding and fact version survive."""
    job = await _activity(bot_client)
    before = await bot_client.get_clarification(clarification_id=CRITICAL)
    report = await client_for(MARIA).erase_attribution(person_id="p-sarah")
    assert (report.person_id, report.tenant_id, report.responses, report.deliveries) == (
        "p-sarah", "acme", 1, 1)
    assert report.clarifications == 3 and report.jobs == 2  # every ranking naming her
    assert report.fact_versions == 1 and report.aliases.slack[0].user_id == "U0SARAH"
    after = await bot_client.get_clarification(clarification_id=CRITICAL)
    assert "p-sarah" not in json.dumps(after.wire())
    [erased, kept] = after.responses
    assert (erased.responder, erased.channel, erased.message_ref) == (
        NIL_PERSON, RecordedChannel.ERASED, None)
    assert (erased.answer_index, erased.interval, erased.rights_at_answer_time,
            erased.binding_status, erased.response_tx) == (
        0, before.responses[0].interval, Role.EDITOR, BindingStatus.BOUND,
        before.responses[0].response_tx)
    assert kept == before.responses[1]
    assert (after.state, after.quorum.state, after.bound_interval) == (
        before.state, before.quorum.state, before.bound_interval)
    assert after.quorum.confirmed_by == [NIL_PERSON, "p-ahmed"]
    assert after.events[-1].type == "attribution_erased"
    held = await bot_client.get_job(job_id=job.id)
    assert held.payload.ranking == [NIL_PERSON, "p-ahmed", "p-maria"]
    versions = (await bot_client.get_fact_history(
        logical_id="fact-northwind-msa-termination")).versions
    assert versions[-1].provenance.confirmed_by == [NIL_PERSON, "p-ahmed"]
    assert versions[-1].provenance.evidence_class is EvidenceClass.QUORUM_CONFIRMATION
    again = await client_for(MARIA).erase_attribution(person_id="p-sarah")
    assert (again.clarifications, again.responses, again.jobs) == (0, 0, 0)


@pytest.mark.parametrize(("token", "error"), [
    (SARAH, e.StewardRequired),
    (PRIYA, e.StewardRequired),
    (UNBOUND, e.StewardRequired),
    ("dev-clarify-token-acme", e.AudienceForbidden),
])
async def test_only_a_steward_key_erases(
    bot_client: CoreClient, client_for: Callable[[str], CoreClient], token: str,
    error: type[Exception],
) -> None:
    await _activity(bot_client)
    before = await bot_client.get_clarification(clarification_id=CRITICAL)
    with pytest.raises(error):
        await client_for(token).erase_attribution(person_id="p-sarah")
    assert await bot_client.get_clarification(clarification_id=CRITICAL) == before


async def test_erasure_is_tenant_scoped(client_for: Callable[[str], CoreClient]) -> None:
    with pytest.raises(e.TenantScopeMismatch):
        await client_for(MARIA).erase_attribution(person_id="p-gina", tenant_id="globex")
    with pytest.raises(e.PersonNotFound):
        await client_for(MARIA).erase_attribution(person_id="p-gina")
    with pytest.raises(e.PersonNotFound):
        await client_for(GINA).erase_attribution(person_id="p-sarah")
