"""Free-form answers over HTTP: calendar dates and the documented textual forms, nothing else.

Intervals are half-open (validTo exclusive), so a free-form interval must end after it starts.
Every refusal is 422 ANSWER_UNNORMALISABLE with nothing recorded: no response, no event, no
fact version.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bot.core import errors as e
from bot.core.client import AnswerReceipt, CoreClient
from bot.core.models import (
    AnswerCustomInput,
    AnswerOutcome,
    AnswerRequest,
    Role,
)
from bot.core.models import (
    Channel as ContractChannel,
)

NORMAL = "clr-00002"


def day(y: int, mo: int, d: int) -> datetime:
    return datetime(y, mo, d, tzinfo=UTC)


async def answer(client: CoreClient, custom: AnswerCustomInput) -> AnswerReceipt:
    return await client.answer_clarification(clarification_id=NORMAL, request=AnswerRequest(
        answer_custom=custom, responder="p-ahmed", rights=Role.EDITOR,
        channel=ContractChannel.SLACK))


@pytest.mark.parametrize("custom", [
    {"valid_from": "2026-06-12", "valid_to": "2026-06-12"},  # empty: validTo is exclusive
    {"valid_from": "2026-06-13", "valid_to": "2026-06-12"},  # reversed
    {"valid_from": "2026-W27-1"},  # ISO week date
    {"valid_from": "2026-W27"},
    {"valid_to": "2026-183"},  # ordinal date
    {"valid_from": "20260612"},  # compact
    {"valid_from": "2026-06-12T00:00:00Z"},  # a date-time: answers are days
    {"valid_from": "2026-06-12 "},
    {"valid_from": "2026-02-30"},
    {"valid_from": "１２０２６-06-12"},
    {"valid_from": "12/06/2026"},
    {"valid_from": "1850-01-01"},
    {"valid_from": "2201-01-01"},  # only an exclusive end may be the day after 2200
    {"valid_to": "2201-01-02"},
    {"source_text": "2026-W27"},
    {"source_text": "2026-W27-1"},
    {"source_text": "2026-06-12T09:00:00+02:00"},
    {"source_text": "next quarter"},
    {"source_text": "Q5 2026"},
    {"source_text": "2026-13"},
    {"source_text": "31 June 2026"},
    {"source_text": "   "},
    {},
])
async def test_anything_but_the_documented_forms_is_refused_with_nothing_recorded(
    bot_client: CoreClient, custom: dict[str, str]
) -> None:
    """Week strings, empty or reversed intervals, date-times, impossible dates: 422, no trace."""
    before = await bot_client.get_clarification(clarification_id=NORMAL)
    with pytest.raises(e.AnswerUnnormalisable):
        await answer(bot_client, AnswerCustomInput(**custom))
    after = await bot_client.get_clarification(clarification_id=NORMAL)
    assert after == before
    assert len((await bot_client.get_fact_history(logical_id=before.target)).versions) == 1


@pytest.mark.parametrize(("custom", "start", "end"), [
    ({"valid_from": "2026-06-12"}, day(2026, 6, 12), None),
    ({"valid_from": "2026-06-12", "valid_to": "2026-06-13"}, day(2026, 6, 12), day(2026, 6, 13)),
    ({"valid_to": "2026-10-01"}, None, day(2026, 10, 1)),
    ({"valid_from": "2026-06-12", "source_text": "per the side letter"}, day(2026, 6, 12), None),
    ({"source_text": "2026-06-12"}, day(2026, 6, 12), None),
    ({"source_text": "12 June 2026"}, day(2026, 6, 12), None),
    ({"source_text": "12th jun, 2026"}, day(2026, 6, 12), None),
    ({"source_text": "June 12, 2026"}, day(2026, 6, 12), None),
    ({"source_text": "2026-06"}, day(2026, 6, 1), day(2026, 7, 1)),
    ({"source_text": "q4  2026"}, day(2026, 10, 1), day(2027, 1, 1)),
    # the last year in range, whose exclusive end is the first day after it
    ({"source_text": "2200-12"}, day(2200, 12, 1), day(2201, 1, 1)),
    ({"source_text": "Q4 2200"}, day(2200, 10, 1), day(2201, 1, 1)),
    ({"valid_from": "2200-12-31", "valid_to": "2201-01-01"}, day(2200, 12, 31), day(2201, 1, 1)),
    ({"source_text": "29 Feb 2028"}, day(2028, 2, 29), None),
])
async def test_the_documented_forms_bind_as_documented(
    bot_client: CoreClient, custom: dict[str, str], start: datetime | None, end: datetime | None
) -> None:
    """Calendar dates and the listed textual forms normalise to the documented interval."""
    receipt = await answer(bot_client, AnswerCustomInput(**custom))
    assert receipt.result.outcome is AnswerOutcome.BOUND
    bound = receipt.result.bound_interval
    assert bound is not None and (bound.valid_from, bound.valid_to) == (start, end)
