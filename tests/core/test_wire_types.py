"""Types the contract means: an answer index is an integer, a date-time is RFC 3339 text."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from bot.core.models.answers import AnswerRequest


@pytest.mark.parametrize("value", ["true", "false"])
def test_a_boolean_answer_index_is_refused(value: str) -> None:
    with pytest.raises(ValidationError) as refused:
        AnswerRequest.model_validate_json(f'{{"answerIndex": {value}}}')
    assert refused.value.errors()[0]["loc"] == ("answerIndex",)
    # python-side callers too: True is an int subclass, and still not an index
    with pytest.raises(ValidationError):
        AnswerRequest(answer_index=value == "true")


@pytest.mark.parametrize(("body", "index"),
                         [('{"answerIndex": 1}', 1), ('{"answerIndex": 0.0}', 0)])
def test_integers_as_json_schema_allows_them_are_accepted(body: str, index: int) -> None:
    assert AnswerRequest.model_validate_json(body).answer_index == index


def test_the_reference_core_names_the_rule_type_for_a_boolean_index() -> None:
    from devcore.issues import issues

    with pytest.raises(ValidationError) as refused:
        AnswerRequest.model_validate_json('{"answerIndex": true}')
    assert issues(refused.value, AnswerRequest) == [
        {"loc": ["answerIndex"], "rule": "type", "msg": "wrong type"}]


@pytest.mark.parametrize("value", ["1700000000", '"1700000000"', '"2026-12-01"'])
def test_the_dev_clock_takes_rfc_3339_only(value: str) -> None:
    from bot.core.models.dev import ClockRequest

    with pytest.raises(ValidationError) as refused:
        ClockRequest.model_validate_json(f'{{"set": {value}}}')
    assert refused.value.errors()[0]["type"] == "datetime_parsing"
    moved = ClockRequest.model_validate_json('{"set": "2026-12-01T10:00:00+01:00"}')
    assert moved.set is not None and moved.set.utcoffset() is not None
