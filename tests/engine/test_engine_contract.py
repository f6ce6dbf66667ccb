"""The bot against cores that offer more or less than the full contract, over real HTTP.

Detection finds what the reference core serves (its document, or probes when it publishes
none) and follows it while the bot runs; each extension's fallback is shown against the core
that serves the baseline alone: the calls made, and what the people and the core see.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from bot.audit import MemorySink
from bot.channels.recording import RecordingChannel
from bot.clock import ManualClock
from bot.core.client import CoreClient, RetryPolicy
from bot.core.errors import CoreTimeout, ExtensionUnavailable
from bot.core.extensions import ALL, Extension
from bot.core.http import Trouble, WireResponse
from bot.core.models import AnswerOutcome, AnswerRequest, Role
from bot.core.models import Channel as ContractChannel
from bot.interaction.attention import QUEUE_BOUND
from bot.metrics import REGISTRY
from bot.process.service import extensions_in_use
from bot.store.memory import MemoryStore
from devcore.client import DevCoreClient
from devcore.core import Contract, ContractSwitch, ReferenceCore
from devcore.server import serve
from tests.conftest import CLARIFY_TOKEN
from tests.engine.kit import counted, create, node

pytestmark = pytest.mark.baseline_contract  # the core serves the baseline unless a test says


def client(url: str, clock: ManualClock, **kwargs: Any) -> CoreClient:
    return CoreClient(base_url=url, token=CLARIFY_TOKEN, retry=RetryPolicy(max_attempts=1),
                      clock=clock, **{"extensions": None, **kwargs})


# ---------------------------------------------------------------- detection


async def test_detection_reads_the_full_cores_document(truth_url: str,
                                                       clock: ManualClock) -> None:
    """A core that publishes its OpenAPI document: every extension found from it, in one
    request, named for /readyz."""
    async with client(truth_url, clock) as bot:
        calls = counted(bot)
        await bot.detect_extensions()
        assert set(bot.offered) == set(ALL)
        assert dict(calls) == {"GET /openapi.json": 1}
        assert extensions_in_use(bot) == {"extensions": sorted(e.value for e in ALL),
                                          "source": "openapi"}
        assert REGISTRY.value("clarify_core_extension_offered", extension="expedite") == 1


async def test_detection_probes_a_core_without_a_document(core_url: str,
                                                          clock: ManualClock) -> None:
    """The baseline core publishes nothing: one harmless probe per extension finds none, and
    nothing was applied by them (no job, clarification or person has the probe's id)."""
    async with client(core_url, clock) as bot:
        await bot.detect_extensions()
        assert list(bot.offered) == [Extension.ERASURE, Extension.FACTS, Extension.HISTORY]
        assert extensions_in_use(bot)["source"] == "probes"
        assert REGISTRY.value("clarify_core_extension_offered", extension="expedite") == 0


async def test_detection_follows_a_core_that_loses_and_regains_an_extension(
        core: ReferenceCore, clock: ManualClock, dev_client: DevCoreClient) -> None:
    """Running against the full core, the core is rolled back to the baseline: the first 404 of
    an extension turns it off at once (that call takes the fallback); rolled forward again, the
    next detection after the refresh interval turns it back on."""
    served = ContractSwitch(Contract.FULL)
    urgent = await create(dev_client, authority={"authored_by": ["p-sarah"]}, severity="high")
    async with serve(core, contract=served) as url, \
            client(url, clock, extensions_refresh_seconds=600) as bot:
        await bot.detect_extensions()
        assert bot.offers(Extension.ATTENTION)
        served.value = Contract.BASELINE
        queue = await bot.attention_queue(tenant_id="acme", bound=QUEUE_BOUND)  # the fallback
        assert [s.id for s in queue.items] == [urgent] and queue.complete
        assert not bot.offers(Extension.ATTENTION)
        with pytest.raises(ExtensionUnavailable):
            await bot.list_attention(tenant_id="acme")  # not even sent now
        served.value = Contract.FULL
        clock.advance(timedelta(seconds=601))
        await bot.get_clarification(clarification_id=urgent)  # any call: due, in the back
        assert bot.discovery is not None and bot.discovery._running is not None
        await bot.discovery._running
        assert bot.offers(Extension.ATTENTION) and set(bot.offered) == set(ALL)


async def test_a_list_in_the_settings_is_used_as_given(
        core_url: str, clock: ManualClock, dev_client: DevCoreClient) -> None:
    """``extensions = "none"``: the baseline alone, nothing probed, nothing learnt."""
    cid = await create(dev_client, authority={"authored_by": ["p-sarah"]})
    async with CoreClient(base_url=core_url, token=CLARIFY_TOKEN, extensions=frozenset(),
                          fixed_extensions=True, clock=clock) as bot:
        calls = counted(bot)
        await bot.detect_extensions()
        await bot.get_clarification(clarification_id=cid)
        assert dict(calls) == {f"GET /v1/clarifications/{cid}": 1}
        assert extensions_in_use(bot) == {"extensions": [], "source": "settings"}


# ---------------------------------------------------------------- the fallbacks


async def test_people_and_reports_fall_back_to_the_baselines_routes_and_the_asked_aliases(
        dev_client: DevCoreClient, core_url: str, clock: ManualClock, core: ReferenceCore
) -> None:
    """people-batch and reports absent: the candidate is read on her own, her Slack alias is
    taken from the clarification's askedAliases (no resolve call), and the card's delivery is
    reported on its own route; without askedAliases the alias is resolved back instead."""
    async with client(core_url, clock) as bot:
        calls = counted(bot)
        channel = RecordingChannel()
        rig = node(core=bot, store=MemoryStore(clock=clock), channel=channel,
                   sink=MemorySink(), clock=clock, worker_id="w-1")
        cid = await create(dev_client, authority={"authored_by": ["p-sarah"]})
        await rig.worker.run_burst()
        assert [s.address.person_id for s in channel.sent] == ["p-sarah"]
        assert calls["POST /v1/people/resolve"] == 0 and calls["POST /v1/people/batch"] == 1
        assert calls["POST /v1/reports"] == 1  # the probes; never the job's reports
        assert calls["GET /v1/people/p-sarah"] == 1
        assert calls[f"POST /v1/clarifications/{cid}/deliveries"] >= 1
        assert [d.person_id for d in core.records[cid].model.deliveries] == ["p-sarah"]

        core.records[cid].asked_aliases = []  # a core that does not send them
        original = core.get_clarification
        core.get_clarification = lambda token, cid_: original(  # type: ignore[method-assign]
            token, cid_).model_copy(update={"asked_aliases": []})
        second = await create(dev_client, authority={"authored_by": ["p-ahmed"]})
        await rig.worker.run_burst()
        assert [s.address.person_id for s in channel.sent][-1] == "p-ahmed"
        assert calls["POST /v1/people/resolve"] == 1
        assert core.records[second].model.asked == ["p-ahmed"]


async def test_dead_letters_come_from_the_clarification_list(
        dev_client: DevCoreClient, core_url: str, clock: ManualClock) -> None:
    """jobs-read absent: nobody can be asked, the steward is escalated to, the last lease runs
    out, and the dead-letter digest still lists it, found in the list of dead-lettered
    clarifications; never a call to the job routes."""
    async with client(core_url, clock) as bot:
        calls = counted(bot)
        channel = RecordingChannel()
        rig = node(core=bot, store=MemoryStore(clock=clock), channel=channel,
                   sink=MemorySink(), clock=clock, worker_id="w-1")
        cid = await create(dev_client, authority={"authored_by": ["p-olga"]})  # no alias
        await rig.worker.run_burst()
        clock.advance(timedelta(seconds=61))
        await rig.worker.run_burst()
        digests = [s for s in channel.sent if s.key.kind == "dead_letter"]
        assert len(digests) == 1 and cid in repr(digests[0].message)
        assert calls["GET /v1/clarifications"] >= 1
        assert calls["GET /v1/jobs"] == 1  # the probe alone


async def test_heartbeats_go_without_the_lease_field(
        dev_client: DevCoreClient, core_url: str, clock: ManualClock, core: ReferenceCore
) -> None:
    """heartbeat-lease absent: a heartbeat sends its lease token alone, and the core extends
    the lease by its own duration."""
    async with client(core_url, clock) as bot:
        await bot.detect_extensions()
        assert not bot.offers(Extension.HEARTBEAT_LEASE)
        await create(dev_client, authority={"authored_by": ["p-sarah"]})
        (job,) = (await bot.poll_jobs(kinds=["clarify:"], lease_seconds=60)).jobs
        clock.advance(timedelta(seconds=50))
        beat = await bot.heartbeat_job(job_id=job.id, lease_token=job.lease_token,
                                       lease_seconds=600)
        assert beat is not None and beat.lease_expires_at == clock.now() + timedelta(seconds=60)


async def test_an_advance_without_its_attempt_field_steps_once_per_candidate(
        dev_client: DevCoreClient, core_url: str, clock: ManualClock, core: ReferenceCore
) -> None:
    """advance-attempt absent: an advance of two candidates is two advances, and one whose
    answer was lost to the network is checked with a heartbeat, never sent twice."""
    async with client(core_url, clock) as bot:
        await bot.detect_extensions()
        assert not bot.offers(Extension.ADVANCE_ATTEMPT)
        await create(dev_client, authority={"authored_by": ["p-sarah", "p-ahmed", "p-lee"]})
        (job,) = (await bot.poll_jobs(kinds=["clarify:"], lease_seconds=60)).jobs
        await bot.advance_job(job_id=job.id, lease_token=job.lease_token, attempt=2)
        assert core.jobs.jobs[job.id].attempts == 2
        send = bot._http.send
        lost: list[str] = []

        async def lose_the_answer(method: str, path: str, **kwargs: Any) -> WireResponse:
            answer = await send(method, path, **kwargs)
            if path.endswith("/advance") and not lost:
                lost.append(path)
                raise Trouble(CoreTimeout, resendable=True)  # the answer never came back
            return answer

        bot._http.send = lose_the_answer  # type: ignore[method-assign]
        await bot.advance_job(job_id=job.id, lease_token=job.lease_token, attempt=3)
        assert lost and core.jobs.jobs[job.id].attempts == 3


async def test_answers_without_request_ids_reach_the_core_once_in_order(
        dev_client: DevCoreClient, core_url: str, clock: ManualClock, core: ReferenceCore
) -> None:
    """answer-request-id absent: the answer goes without its idempotency key and is recorded
    once; a resend of the same answer is the core's own (responder, answer) replay."""
    async with client(core_url, clock) as bot:
        calls = counted(bot)
        cid = await create(dev_client, authority={"authored_by": ["p-sarah"]})
        request = AnswerRequest(answer_index=1, responder="p-sarah", rights=Role.EDITOR,
                                channel=ContractChannel.SLACK, request_id="entry-1")
        first = await bot.answer_clarification(clarification_id=cid, request=request)
        again = await bot.answer_clarification(clarification_id=cid, request=request)
        assert first.result.outcome is again.result.outcome is AnswerOutcome.BOUND
        assert len(core.records[cid].model.responses) == 1
        assert calls[f"POST /v1/clarifications/{cid}/answer"] == 2  # never a 422 and resend
        assert first.result.confirmers("p-sarah") == ["p-sarah"]
