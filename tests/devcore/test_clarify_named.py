"""The spec's named core tests (§12), through the typed client against the reference core over HTTP.

Scenario ``acme``: clr-00001 is critical (two confirmations, ranking Sarah, Ahmed, Maria),
clr-00002 is normal (ranking Ahmed, Priya, Sarah), clr-00003 is high (finance), clr-00004 is low.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from bot.clock import ManualClock
from bot.core import errors as e
from bot.core.client import AnswerReceipt, CoreClient
from bot.core.models import (
    AnswerCustomInput,
    AnswerOutcome,
    AnswerRequest,
    BindingStatus,
    ClarificationState,
    CreateClarificationRequest,
    EvidenceClass,
    JobState,
    QuorumState,
    ReasonCode,
    Role,
)
from bot.core.models import (
    Channel as ContractChannel,
)
from devcore.client import DevCoreClient
from devcore.scenario import read_scenario
from tests.conftest import INGEST_TOKEN

CRITICAL, NORMAL, HIGH = "clr-00001", "clr-00002", "clr-00003"
ROLE_OF = {
    "p-sarah": Role.EDITOR,
    "p-ahmed": Role.EDITOR,
    "p-priya": Role.VIEWER,
    "p-maria": Role.STEWARD,
    "p-lee": Role.EDITOR,
}


async def answer(
    client: CoreClient,
    cid: str,
    responder: str,
    *,
    index: int | None = None,
    custom: AnswerCustomInput | None = None,
    override: bool = False,
) -> AnswerReceipt:
    request = AnswerRequest(
        answer_index=index,
        answer_custom=custom,
        responder=responder,
        rights=ROLE_OF[responder],
        channel=ContractChannel.SLACK,
        message_ref=f"D0{responder}:1.0",
        steward_override=override,
    )
    return await client.answer_clarification(clarification_id=cid, request=request)


async def test_clarify_quorum_required(bot_client: CoreClient) -> None:
    """One editor on a critical clarification: recorded, nothing bound, 202 with one remaining."""
    receipt = await answer(bot_client, CRITICAL, "p-sarah", index=0)
    assert receipt.http_status == 202
    assert receipt.result.outcome is AnswerOutcome.PARTIALLY_CONFIRMED
    assert receipt.result.quorum_remaining == 1
    assert receipt.result.fact_version_tx is None
    c = await bot_client.get_clarification(clarification_id=CRITICAL)
    assert c.state is ClarificationState.PARTIALLY_CONFIRMED
    assert c.quorum.state is QuorumState.PENDING
    assert [r.binding_status for r in c.responses] == [BindingStatus.BINDING_CANDIDATE]
    history = await bot_client.get_fact_history(logical_id=c.target)
    assert len(history.versions) == 1 and history.versions[0].pending_clarification_id == CRITICAL


async def test_clarify_quorum_satisfied(bot_client: CoreClient) -> None:
    """Two matching editors bind: 200, quorum satisfied, a corrected version with provenance."""
    await answer(bot_client, CRITICAL, "p-sarah", index=1)
    receipt = await answer(bot_client, CRITICAL, "p-ahmed", index=1)
    assert receipt.http_status == 200
    result = receipt.result
    assert result.outcome is AnswerOutcome.BOUND and result.quorum_satisfied
    assert result.fact_version_tx is not None
    assert set(result.confirmed_by) == {"p-sarah", "p-ahmed"}
    c = await bot_client.get_clarification(clarification_id=CRITICAL)
    assert c.state is ClarificationState.ANSWERED
    assert c.quorum.state is QuorumState.SATISFIED
    assert {r.binding_status for r in c.responses} == {BindingStatus.BOUND}
    fact = await bot_client.get_fact(logical_id=c.target)
    assert fact.version_tx == result.fact_version_tx
    assert fact.valid_from == c.candidates[1].valid_from
    assert fact.provenance.clarification_id == CRITICAL
    assert fact.provenance.evidence_class is EvidenceClass.QUORUM_CONFIRMATION
    assert set(fact.provenance.confirmed_by) == {"p-sarah", "p-ahmed"}


async def test_clarify_quorum_conflict(bot_client: CoreClient) -> None:
    """Two differing editors: both recorded, nothing bound, conflicted, steward review event."""
    await answer(bot_client, CRITICAL, "p-sarah", index=0)
    receipt = await answer(bot_client, CRITICAL, "p-ahmed", index=1)
    assert receipt.http_status == 202
    assert receipt.result.outcome is AnswerOutcome.CONFLICTED
    c = await bot_client.get_clarification(clarification_id=CRITICAL)
    assert c.state is ClarificationState.CONFLICTED
    assert c.quorum.state is QuorumState.CONFLICTED
    assert [r.responder for r in c.responses] == ["p-sarah", "p-ahmed"]
    assert "steward_review_requested" in [ev.type for ev in c.events]
    history = await bot_client.get_fact_history(logical_id=c.target)
    assert len(history.versions) == 1


async def test_clarify_steward_override(
    bot_client: CoreClient, client_for: Callable[[str], CoreClient]
) -> None:
    """A steward's explicit override resolves a conflict with a new version; history is kept."""
    await answer(bot_client, CRITICAL, "p-sarah", index=0)
    await answer(bot_client, CRITICAL, "p-ahmed", index=1)
    with pytest.raises(e.StewardOverrideForbidden):
        await answer(bot_client, CRITICAL, "p-sarah", index=1, override=True)
    plain = await answer(bot_client, CRITICAL, "p-maria", index=1)
    assert plain.result.outcome is AnswerOutcome.CONFLICTED  # a plain answer is no override
    steward = client_for("acme-key-maria-steward")
    request = AnswerRequest(answer_index=1, steward_override=True, channel=ContractChannel.CLI)
    receipt = await steward.answer_clarification(clarification_id=CRITICAL, request=request)
    assert receipt.http_status == 200
    assert receipt.result.outcome is AnswerOutcome.STEWARD_OVERRIDE
    c = await bot_client.get_clarification(clarification_id=CRITICAL)
    assert c.state is ClarificationState.ANSWERED
    assert [r.binding_status for r in c.responses] == [
        BindingStatus.BINDING_CANDIDATE,
        BindingStatus.BINDING_CANDIDATE,
        BindingStatus.BINDING_CANDIDATE,
        BindingStatus.STEWARD_OVERRIDE,
    ]
    assert c.responses[-1].channel == ContractChannel.CLI
    assert "steward_override" in [ev.type for ev in c.events]
    history = await bot_client.get_fact_history(logical_id=c.target)
    assert len(history.versions) == 2
    assert history.versions[-1].provenance.evidence_class is EvidenceClass.STEWARD_OVERRIDE
    assert history.versions[0].tx_to == history.versions[-1].version_tx


@pytest.mark.parametrize("confirmer", ["p-sarah", "p-maria"])
async def test_clarify_attestation(bot_client: CoreClient, confirmer: str) -> None:
    """A viewer's answer is a 202 attestation binding nothing; an editor or steward then binds."""
    receipt = await answer(bot_client, NORMAL, "p-priya", index=0)
    assert receipt.http_status == 202
    assert receipt.result.outcome is AnswerOutcome.ATTESTATION
    c = await bot_client.get_clarification(clarification_id=NORMAL)
    assert c.state is ClarificationState.ATTESTED
    assert c.responses[0].binding_status is BindingStatus.ATTESTATION
    assert len((await bot_client.get_fact_history(logical_id=c.target)).versions) == 1
    confirmed = await answer(bot_client, NORMAL, confirmer, index=0)
    assert confirmed.http_status == 200
    assert confirmed.result.outcome is AnswerOutcome.BOUND
    assert confirmed.result.confirmed_by == [confirmer]
    assert len((await bot_client.get_fact_history(logical_id=c.target)).versions) == 2


async def test_clarify_freeform_validation(bot_client: CoreClient) -> None:
    """Unnormalisable free-form answers are 422 with nothing recorded; a valid one binds."""
    before = await bot_client.get_clarification(clarification_id=NORMAL)
    for custom in (
        AnswerCustomInput(source_text="sometime after the board meets"),
        AnswerCustomInput(valid_from="2026-10-01", valid_to="2026-07-01"),
        AnswerCustomInput(valid_from="not a date"),
        AnswerCustomInput(),
    ):
        with pytest.raises(e.AnswerUnnormalisable):
            await answer(bot_client, NORMAL, "p-ahmed", custom=custom)
    with pytest.raises(e.AnswerIndexOutOfRange):
        await answer(bot_client, NORMAL, "p-ahmed", index=7)
    after = await bot_client.get_clarification(clarification_id=NORMAL)
    assert after.responses == [] and after.events == before.events
    assert len((await bot_client.get_fact_history(logical_id=after.target)).versions) == 1
    receipt = await answer(
        bot_client, NORMAL, "p-ahmed", custom=AnswerCustomInput(source_text="Q4 2026")
    )
    assert receipt.result.outcome is AnswerOutcome.BOUND
    fact = await bot_client.get_fact(logical_id=after.target)
    assert fact.valid_from == datetime(2026, 10, 1, tzinfo=UTC)
    assert fact.valid_to == datetime(2027, 1, 1, tzinfo=UTC)


async def test_clarify_post_binding_conflict(bot_client: CoreClient) -> None:
    """After binding, a disagreeing answer is a conflicting attestation; nothing is rebound."""
    bound = await answer(bot_client, NORMAL, "p-ahmed", index=0)
    late = await answer(bot_client, NORMAL, "p-sarah", index=1)
    assert late.http_status == 202
    assert late.result.outcome is AnswerOutcome.CONFLICTING_ATTESTATION
    c = await bot_client.get_clarification(clarification_id=NORMAL)
    assert c.state is ClarificationState.ANSWERED
    assert c.responses[-1].binding_status is BindingStatus.CONFLICTING
    types = [ev.type for ev in c.events]
    assert "post_binding_conflict" in types and "steward_notified" in types
    history = await bot_client.get_fact_history(logical_id=c.target)
    assert len(history.versions) == 2
    assert history.versions[-1].version_tx == bound.result.fact_version_tx
    assert history.versions[-1].valid_from == c.candidates[0].valid_from
    with pytest.raises(e.AlreadyAnswered):  # an agreeing late answer from a new responder
        await answer(bot_client, NORMAL, "p-maria", index=0)
    assert len((await bot_client.get_clarification(clarification_id=NORMAL)).responses) == 2


async def test_clarify_responder_supersede(bot_client: CoreClient) -> None:
    """A responder's new answer is appended and supersedes; only their latest counts."""
    first = await answer(bot_client, CRITICAL, "p-sarah", index=0)
    second = await answer(bot_client, CRITICAL, "p-sarah", index=1)
    assert second.result.outcome is AnswerOutcome.PARTIALLY_CONFIRMED
    assert second.result.quorum_remaining == 1
    c = await bot_client.get_clarification(clarification_id=CRITICAL)
    assert [r.answer_index for r in c.responses] == [0, 1]
    assert c.responses[1].supersedes == first.result.response_id
    assert c.responses[0].binding_status is BindingStatus.BINDING_CANDIDATE
    bound = await answer(bot_client, CRITICAL, "p-ahmed", index=1)
    assert bound.result.outcome is AnswerOutcome.BOUND
    c = await bot_client.get_clarification(clarification_id=CRITICAL)
    assert [r.binding_status for r in c.responses] == [
        BindingStatus.BINDING_CANDIDATE,
        BindingStatus.BOUND,
        BindingStatus.BOUND,
    ]


async def test_clarify_answer_responder_assertion(
    bot_client: CoreClient, client_for: Callable[[str], CoreClient]
) -> None:
    """Only the clarify audience asserts a responder; API keys answer as their principal only."""
    sarah_key = client_for("acme-key-sarah-editor")
    forged = AnswerRequest(answer_index=0, responder="p-ahmed", channel=ContractChannel.API)
    with pytest.raises(e.ResponderAssertionForbidden):
        await sarah_key.answer_clarification(clarification_id=CRITICAL, request=forged)
    rights = AnswerRequest(answer_index=0, rights=Role.STEWARD, channel=ContractChannel.API)
    with pytest.raises(e.ResponderAssertionForbidden):
        await sarah_key.answer_clarification(clarification_id=CRITICAL, request=rights)
    unbound = client_for("acme-key-unbound")
    with pytest.raises(e.PrincipalRequired):
        await unbound.answer_clarification(
            clarification_id=CRITICAL, request=AnswerRequest(answer_index=0)
        )
    c = await bot_client.get_clarification(clarification_id=CRITICAL)
    assert c.responses == []
    assert len((await bot_client.get_fact_history(logical_id=c.target)).versions) == 1
    own = await sarah_key.answer_clarification(
        clarification_id=CRITICAL,
        request=AnswerRequest(answer_index=0, channel=ContractChannel.CLI)
    )
    assert own.result.outcome is AnswerOutcome.PARTIALLY_CONFIRMED
    asserted = await answer(bot_client, CRITICAL, "p-ahmed", index=0)
    assert asserted.result.outcome is AnswerOutcome.BOUND
    c = await bot_client.get_clarification(clarification_id=CRITICAL)
    assert [(r.responder, r.rights_at_answer_time, r.channel) for r in c.responses] == [
        ("p-sarah", Role.EDITOR, ContractChannel.CLI),
        ("p-ahmed", Role.EDITOR, ContractChannel.SLACK),
    ]


async def test_clarify_bitemporal_correction(bot_client: CoreClient, clock: ManualClock) -> None:
    """Binding appends a version: as-of the old tx returns the best guess, now the correction."""
    c = await bot_client.get_clarification(clarification_id=NORMAL)
    before_answer = clock.now()
    clock.advance(timedelta(hours=3))
    await answer(bot_client, NORMAL, "p-ahmed", index=1)
    old = await bot_client.get_fact(logical_id=c.target, as_of_tx=before_answer)
    assert old.valid_from == c.candidates[0].valid_from
    assert old.confidence == pytest.approx(c.applied_candidate_confidence)
    assert old.pending_clarification_id == NORMAL
    new = await bot_client.get_fact(logical_id=c.target)
    assert new.valid_from == c.candidates[1].valid_from
    assert new.valid_to == c.candidates[1].valid_to
    assert new.confidence > old.confidence and new.pending_clarification_id is None
    assert new.provenance.clarification_id == NORMAL
    history = await bot_client.get_fact_history(logical_id=c.target)
    assert history.versions[0].tx_to == new.version_tx


async def test_clarify_dedup(bot_client: CoreClient, dev_client: DevCoreClient) -> None:
    """Re-ingesting the same source version returns the answered clarification, unreopened."""
    await answer(bot_client, NORMAL, "p-ahmed", index=0)
    spec = read_scenario("acme")["clarifications"][1]
    again = await dev_client.create_clarification(
        request=CreateClarificationRequest.model_validate(spec)
    )
    assert again.deduplicated and again.clarification.id == NORMAL
    assert again.clarification.state is ClarificationState.ANSWERED
    jobs = await bot_client.list_jobs()
    assert len(jobs.items) == 3
    spec["document"]["content_hash"] = "sha256:new-version"
    fresh = await dev_client.create_clarification(
        request=CreateClarificationRequest.model_validate(spec)
    )
    assert not fresh.deduplicated and fresh.clarification.id != NORMAL


async def test_clarify_fence(
    bot_client: CoreClient, client_for: Callable[[str], CoreClient]
) -> None:
    """An ingest-audience token cannot lease clarify: jobs; the clarify token leases only them."""
    ingest = client_for(INGEST_TOKEN)
    for kinds in (["clarify:"], ["clarify:temporal"], ["c"], ["clar"], ["ingest:", "clarify:"]):
        with pytest.raises(e.JobKindForbidden):
            await ingest.poll_jobs(kinds=kinds, max_jobs=10)
    assert (await ingest.poll_jobs(kinds=["ingest:"])).jobs == []
    with pytest.raises(e.AudienceForbidden):
        await ingest.get_clarification(clarification_id=CRITICAL)
    with pytest.raises(e.JobKindForbidden):
        await bot_client.poll_jobs(kinds=["ingest:"])
    leased = await bot_client.poll_jobs(kinds=["clarify:"], max_jobs=10)
    assert sorted(j.payload.clarification_id for j in leased.jobs) == [CRITICAL, NORMAL, HIGH]


async def test_lease_expiry_advances_after_window_then_dead_letters(
    bot_client: CoreClient, clock: ManualClock
) -> None:
    """An unfinished lease fails retryably: attempts + 1 after the window, then dead letter."""
    leased = (await bot_client.poll_jobs(kinds=["clarify:"], max_jobs=10, lease_seconds=60)).jobs
    for other in leased:
        if other.payload.clarification_id != CRITICAL:
            await bot_client.complete_job(job_id=other.id, lease_token=other.lease_token)
    job = next(j for j in leased if j.payload.clarification_id == CRITICAL)
    assert (job.attempts, job.max_attempts) == (0, 4)
    window = timedelta(hours=48)
    for attempt in range(1, 4):
        clock.advance(timedelta(seconds=61))
        view = await bot_client.get_job(job_id=job.id)
        assert view.attempts == attempt and view.state is JobState.AVAILABLE
        clock.advance(window - timedelta(seconds=2))
        assert (await bot_client.poll_jobs(kinds=["clarify:"])).jobs == []
        clock.advance(timedelta(seconds=1))
        job = (await bot_client.poll_jobs(kinds=["clarify:"], lease_seconds=60)).jobs[0]
        assert job.payload.clarification_id == CRITICAL and job.attempts == attempt
    c = await bot_client.get_clarification(clarification_id=CRITICAL)
    assert c.state is ClarificationState.EXPIRED
    clock.advance(timedelta(seconds=61))
    dead = await bot_client.get_job(job_id=job.id)
    assert dead.state is JobState.DEAD_LETTERED and dead.attempts == 4
    c = await bot_client.get_clarification(clarification_id=CRITICAL)
    assert c.state is ClarificationState.DEAD_LETTERED
    listed = await bot_client.list_jobs(state=JobState.DEAD_LETTERED, kind="clarify:")
    assert [j.id for j in listed.items] == [job.id]


async def test_advance_inside_lease_burns_no_window(bot_client: CoreClient) -> None:
    """A skip raises attempts at once, idempotently; wrong or expired lease tokens are 409."""
    job = (await bot_client.poll_jobs(kinds=["clarify:"], lease_seconds=60)).jobs[0]
    moved = await bot_client.advance_job(
        job_id=job.id,
        lease_token=job.lease_token,
        attempt=2,
        reason_code=ReasonCode.NO_READ_PERMISSION,
    )
    again = await bot_client.advance_job(job_id=job.id, lease_token=job.lease_token, attempt=2)
    assert moved.attempts == again.attempts == 2
    with pytest.raises(e.AttemptsExhausted):
        await bot_client.advance_job(
            job_id=job.id, lease_token=job.lease_token, attempt=job.max_attempts
        )
    with pytest.raises(e.LeaseMismatch):
        await bot_client.heartbeat_job(job_id=job.id, lease_token="not-the-lease")
    done = await bot_client.complete_job(job_id=job.id, lease_token=job.lease_token)
    assert done.state is JobState.COMPLETED
    repeat = await bot_client.complete_job(job_id=job.id, lease_token=job.lease_token)
    assert repeat.state is JobState.COMPLETED


async def test_expired_lease_token_is_refused(bot_client: CoreClient, clock: ManualClock) -> None:
    """Once a lease has run out its token no longer works: 409 LEASE_EXPIRED."""
    job = (await bot_client.poll_jobs(kinds=["clarify:"], lease_seconds=30)).jobs[0]
    clock.advance(timedelta(seconds=31))
    with pytest.raises(e.LeaseExpired):
        await bot_client.heartbeat_job(job_id=job.id, lease_token=job.lease_token)


async def test_a_resent_request_id_never_supersedes_a_newer_answer(bot_client: CoreClient) -> None:
    """requestId: resending answer A after B gets A's outcome back; B stays the active answer."""

    def request(index: int, request_id: str) -> AnswerRequest:
        return AnswerRequest(answer_index=index, responder="p-sarah", rights=Role.EDITOR,
                             channel=ContractChannel.SLACK, request_id=request_id)

    first = await bot_client.answer_clarification(clarification_id=CRITICAL,
                                                  request=request(0, "req-a"))
    await bot_client.answer_clarification(clarification_id=CRITICAL, request=request(1, "req-b"))
    again = await bot_client.answer_clarification(clarification_id=CRITICAL,
                                                  request=request(0, "req-a"))
    assert again.result.replayed and again.result.response_id == first.result.response_id
    c = await bot_client.get_clarification(clarification_id=CRITICAL)
    assert [r.answer_index for r in c.responses] == [0, 1]  # nothing appended by the resend
