"""Bitemporal fact reads over HTTP: a transaction-time instant and a valid-time instant.

Scenario ``acme``, clr-00002: the best guess is [2026-07-01, 2026-10-01) ("next quarter after
signing"); binding candidate 1 corrects it to [2026-10-01, 2027-01-01). Validity is half-open:
validFrom is in, validTo is out.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
import pytest

from bot.clock import ManualClock
from bot.core import errors as e
from bot.core.client import CoreClient
from bot.core.models import AnswerRequest, Role
from bot.core.models import Channel as ContractChannel
from tests.conftest import CLARIFY_TOKEN

FACT, NORMAL = "fact-harbor-lease-renewal", "clr-00002"
AUGUST, NOVEMBER = datetime(2026, 8, 15, tzinfo=UTC), datetime(2026, 11, 15, tzinfo=UTC)
OCTOBER_1 = datetime(2026, 10, 1, tzinfo=UTC)


@pytest.fixture
async def corrected(bot_client: CoreClient, clock: ManualClock) -> datetime:
    """Bind the correction three hours in; returns a transaction time before it."""
    before = clock.now()
    clock.advance(timedelta(hours=3))
    await bot_client.answer_clarification(clarification_id=NORMAL, request=AnswerRequest(
        answer_index=1, responder="p-ahmed", rights=Role.EDITOR, channel=ContractChannel.SLACK))
    return before


async def test_both_axes_select_the_belief_and_whether_it_held(
    bot_client: CoreClient, corrected: datetime
) -> None:
    """(old tx, August) is the best guess; (now, November) the correction; the others 404."""
    guess = await bot_client.get_fact(logical_id=FACT, as_of_tx=corrected, as_of_valid=AUGUST)
    assert guess.pending_clarification_id == NORMAL
    now = await bot_client.get_fact(logical_id=FACT, as_of_valid=NOVEMBER)
    assert now.provenance.clarification_id == NORMAL and now.pending_clarification_id is None
    with pytest.raises(e.FactNotFound):  # what we believed then did not cover November
        await bot_client.get_fact(logical_id=FACT, as_of_tx=corrected, as_of_valid=NOVEMBER)
    with pytest.raises(e.FactNotFound):  # what we believe now does not cover August
        await bot_client.get_fact(logical_id=FACT, as_of_valid=AUGUST)


async def test_valid_to_is_exclusive_and_valid_from_inclusive(
    bot_client: CoreClient, corrected: datetime
) -> None:
    """1 October is the first day of the correction and no longer part of the best guess."""
    assert (await bot_client.get_fact(logical_id=FACT, as_of_valid=OCTOBER_1)).valid_from == \
        OCTOBER_1
    with pytest.raises(e.FactNotFound):
        await bot_client.get_fact(logical_id=FACT, as_of_tx=corrected, as_of_valid=OCTOBER_1)
    just_before = OCTOBER_1 - timedelta(microseconds=1)
    old = await bot_client.get_fact(logical_id=FACT, as_of_tx=corrected, as_of_valid=just_before)
    assert old.valid_to == OCTOBER_1


async def test_the_history_can_be_narrowed_to_one_valid_instant(
    bot_client: CoreClient, corrected: datetime
) -> None:
    """versions?asOfValid= lists every belief that covered that instant, oldest first."""
    full = await bot_client.get_fact_history(logical_id=FACT)
    august = await bot_client.get_fact_history(logical_id=FACT, as_of_valid=AUGUST)
    november = await bot_client.get_fact_history(logical_id=FACT, as_of_valid=NOVEMBER)
    assert len(full.versions) == 2
    assert august.versions == full.versions[:1] and november.versions == full.versions[1:]


@pytest.mark.parametrize("value", ["2026-08-15", "yesterday", "2026-08-15T00:00:00"])
async def test_a_valid_time_must_be_an_aware_date_time(core_url: str, value: str) -> None:
    """A date, words or a naive time: 422 naming the parameter, never repeating the value."""
    async with httpx.AsyncClient(base_url=core_url) as http:
        response = await http.get(f"/v1/facts/{FACT}", params={"asOfValid": value},
                                  headers={"Authorization": f"Bearer {CLARIFY_TOKEN}"})
    assert response.status_code == 422 and "asOfValid" in response.json()["message"]
    assert value not in response.text


@pytest.mark.parametrize("name", ["asOfTx", "asOfValid"])
@pytest.mark.parametrize("value", ["1700000000", "1700000000.5", "0", "-1"])
async def test_an_epoch_number_is_not_a_date_time(core_url: str, name: str, value: str) -> None:
    """Seconds since 1970 are no RFC 3339 date-time: 422 on both axes, not read as an instant."""
    async with httpx.AsyncClient(base_url=core_url) as http:
        for path in (f"/v1/facts/{FACT}", f"/v1/facts/{FACT}/versions"):
            if name == "asOfTx" and path.endswith("versions"):
                continue  # the history takes no transaction time
            response = await http.get(path, params={name: value},
                                      headers={"Authorization": f"Bearer {CLARIFY_TOKEN}"})
            assert response.status_code == 422, (path, response.text)
            assert name in response.json()["message"]
