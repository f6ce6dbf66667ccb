"""Replays first, over HTTP: a resent answer gets its first outcome, whatever changed since.

The replay check (same requestId, or the same responder with the same normalised answer and
override flag) runs before the policy checks, so a resent steward override that once succeeded
is never refused by a rule it passed the first time.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from bot.core import errors as e
from bot.core.client import AnswerReceipt, CoreClient
from bot.core.models import (
    AnswerOutcome,
    AnswerRequest,
    ClarificationState,
    Role,
)
from bot.core.models import (
    Channel as ContractChannel,
)
from devcore.client import DevCoreClient
from devcore.scenario import read_scenario

CRITICAL = "clr-00001"
STEWARD = "acme-key-maria-steward"


def editor(index: int, who: str, request_id: str | None = None) -> AnswerRequest:
    return AnswerRequest(answer_index=index, responder=who, rights=Role.EDITOR,
                         channel=ContractChannel.SLACK, request_id=request_id)


async def conflict(bot: CoreClient) -> None:
    await bot.answer_clarification(clarification_id=CRITICAL, request=editor(0, "p-sarah"))
    await bot.answer_clarification(clarification_id=CRITICAL, request=editor(1, "p-ahmed"))


@pytest.fixture
async def no_override_outside_conflict(dev_client: DevCoreClient) -> None:
    """acme with allow_steward_override = false: an override is allowed only on a conflict."""
    data = read_scenario("acme")
    data["tenants"][0]["clarify"]["quorum"]["allow_steward_override"] = False
    await dev_client.load_scenario(data)


@pytest.mark.usefixtures("no_override_outside_conflict")
@pytest.mark.parametrize("request_id", [None, "override-1"])
async def test_a_resent_override_replays_after_the_state_moved_on(
    bot_client: CoreClient, client_for: Callable[[str], CoreClient], request_id: str | None
) -> None:
    """The override resolved the conflict; resending it is 200 replayed, not 409."""
    await conflict(bot_client)
    steward = client_for(STEWARD)
    request = AnswerRequest(answer_index=1, steward_override=True, request_id=request_id)
    first = await steward.answer_clarification(clarification_id=CRITICAL, request=request)
    assert first.http_status == 200 and first.result.state is ClarificationState.ANSWERED
    again = await steward.answer_clarification(clarification_id=CRITICAL, request=request)
    assert (again.http_status, again.result.replayed) == (200, True)
    assert again.result.response_id == first.result.response_id
    c = await bot_client.get_clarification(clarification_id=CRITICAL)
    assert len(c.responses) == 3


@pytest.mark.usefixtures("no_override_outside_conflict")
async def test_a_new_override_outside_a_conflict_is_still_refused(
    bot_client: CoreClient, client_for: Callable[[str], CoreClient]
) -> None:
    """Replays come first, but a different answer is no replay: the policy still applies."""
    await conflict(bot_client)
    steward = client_for(STEWARD)
    await steward.answer_clarification(clarification_id=CRITICAL, request=AnswerRequest(
        answer_index=1, steward_override=True))
    with pytest.raises(e.StewardOverrideNotAllowed):
        await steward.answer_clarification(clarification_id=CRITICAL, request=AnswerRequest(
            answer_index=0, steward_override=True))


async def test_a_resent_request_id_gets_its_first_outcome_after_a_conflict(
    bot_client: CoreClient,
) -> None:
    """Sarah's first answer, resent after Ahmed's conflicting one: still 202 partially confirmed."""
    first = await bot_client.answer_clarification(
        clarification_id=CRITICAL, request=editor(0, "p-sarah", "req-s"))
    await bot_client.answer_clarification(clarification_id=CRITICAL, request=editor(1, "p-ahmed"))
    again = await bot_client.answer_clarification(
        clarification_id=CRITICAL, request=editor(0, "p-sarah", "req-s"))
    assert again.http_status == 202 and again.result.replayed
    assert again.result.outcome is AnswerOutcome.PARTIALLY_CONFIRMED
    assert again.result.response_id == first.result.response_id
    c = await bot_client.get_clarification(clarification_id=CRITICAL)
    assert c.state is ClarificationState.CONFLICTED and len(c.responses) == 2


async def test_a_resent_binding_answer_replays_bound_after_a_late_conflict(
    bot_client: CoreClient,
) -> None:
    """The answer that bound, resent after a conflicting attestation: 200 bound, nothing added."""
    normal = "clr-00002"
    bound: AnswerReceipt = await bot_client.answer_clarification(
        clarification_id=normal, request=editor(0, "p-ahmed"))
    await bot_client.answer_clarification(clarification_id=normal, request=editor(1, "p-sarah"))
    again = await bot_client.answer_clarification(clarification_id=normal,
                                                  request=editor(0, "p-ahmed"))
    assert (again.http_status, again.result.replayed) == (200, True)
    assert again.result.fact_version_tx == bound.result.fact_version_tx
    assert len((await bot_client.get_clarification(clarification_id=normal)).responses) == 2
