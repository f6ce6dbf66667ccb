"""/metrics while a scenario runs: every family listed from the start, each moving as it should.

The exposition is read with prometheus_client's own parser, as Prometheus would read it. The
registry belongs to the process, so each check compares a scrape after the scenario with one
before it.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from prometheus_client.parser import text_string_to_metric_families

from bot.core import errors as e
from bot.metrics import REGISTRY
from tests.slack.conftest import SIGNING_SECRET, Stack

FAMILIES = {
    # name as the parser reports it (counters without their _total) → type
    "clarify_jobs": "counter", "clarify_deliveries": "counter",
    "clarify_delivery_attempts": "counter", "clarify_skips": "counter",
    "clarify_answers": "counter", "clarify_outbox_parked": "counter",
    "clarify_core_errors": "counter", "clarify_rate_limited": "counter",
    "clarify_credential_failures": "counter", "clarify_metric_read_failures": "counter",
    "clarify_ack_seconds": "histogram", "clarify_core_request_seconds": "histogram",
    "clarify_rate_limit_wait_seconds": "histogram", "clarify_job_lag_seconds": "histogram",
    "clarify_outbox_entries": "gauge", "clarify_outbox_parked_entries": "gauge",
    "clarify_outbox_oldest_due_seconds": "gauge", "clarify_dependency_up": "gauge",
    "clarify_delivery_paused": "gauge",
    "process_cpu_seconds": "counter", "process_resident_memory_bytes": "gauge",
    "python_gc_collections": "counter", "python_info": "gauge",
}

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


async def scrape() -> tuple[dict[str, str], Samples]:
    text = (await REGISTRY.render()).decode()
    types: dict[str, str] = {}
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        types[family.name] = family.type
        for s in family.samples:
            samples[(s.name, frozenset(s.labels.items()))] = s.value
    return types, samples


def at(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


async def test_every_family_is_listed_from_the_first_scrape() -> None:
    """Before anything happened, every family is there; counters with known label values are
    listed at zero, so an alert on their rate has a series from the start."""
    types, samples = await scrape()
    missing = {name: kind for name, kind in FAMILIES.items() if types.get(name) != kind}
    assert not missing, missing
    for labels in ({"reason": "DELIVERY_FAILED"}, {"reason": "NO_DELIVERY_ALIAS"}):
        assert ("clarify_skips_total", frozenset(labels.items())) in samples
    assert ("clarify_answers_total", frozenset({("verdict", "superseded")})) in samples
    assert ("clarify_delivery_attempts_total",
            frozenset({("outcome", "uncertain"), ("platform", "teams")})) in samples
    assert ("clarify_ack_seconds_count", frozenset({("platform", "slack")})) in samples


async def test_metrics_move_as_a_scenario_runs(stack: Stack) -> None:
    """A question delivered through a 429, answered by a signed click, a skip: each family
    that describes it moves by what happened, and nothing else is named in a label."""
    _, before = await scrape()
    stack.slack.fail_next("chat.postMessage", status=429, retry_after=1)
    cid = await stack.create(authority={"authored_by": ["p-ahmed"]})
    await stack.burst()
    card = stack.card("U0AHMED", cid)
    response = await stack.click("U0AHMED", card, "clarify.answer.0")
    assert response.status == 200
    await stack.settle()
    text = (await REGISTRY.render()).decode()
    _, after = await scrape()

    def moved(name: str, **labels: str) -> float:
        return at(after, name, **labels) - at(before, name, **labels)

    assert moved("clarify_deliveries_total", kind="question", platform="slack") >= 1
    assert moved("clarify_delivery_attempts_total", outcome="new", platform="slack") >= 1
    assert moved("clarify_rate_limited_total", platform="slack", method="chat.postMessage") == 1
    assert moved("clarify_answers_total", verdict="forwarded") == 1
    assert moved("clarify_ack_seconds_count", platform="slack") == 1
    assert moved("clarify_ack_seconds_bucket", platform="slack", le="3.0") == 1
    assert moved("clarify_core_request_seconds_count", operation="answerClarification") == 1
    assert moved("clarify_core_request_seconds_count", operation="pollJobs") >= 1
    assert moved("clarify_jobs_total", outcome="asked") >= 1
    if stack.contract == "full":  # a baseline core's jobs do not say when they became due
        assert moved("clarify_job_lag_seconds_count") >= 1
    assert at(after, "clarify_outbox_entries") == 0
    # values, ids and secrets never reach the exposition
    for secret in (SIGNING_SECRET, cid, "U0AHMED", "p-ahmed", "Harbor Street"):
        assert secret not in text


async def test_a_failing_core_call_counts_its_code(stack: Stack) -> None:
    """A core error is counted by its code only."""
    _, before = await scrape()
    with pytest.raises(e.CoreError):
        await stack.bot.get_clarification(clarification_id="clr-does-not-exist")
    _, after = await scrape()
    assert at(after, "clarify_core_errors_total", code="404") \
        - at(before, "clarify_core_errors_total", code="404") == 1


@pytest.mark.full_contract  # visibleAt is additive: a baseline core's jobs have none
async def test_job_lag_is_the_wait_from_available_to_leased(stack: Stack) -> None:
    """A job that waited 20 minutes at the core before a worker leased it is observed as such
    (the core's visibleAt against the engine's clock)."""
    _, before = await scrape()
    await stack.create(authority={"authored_by": ["p-ahmed"]})
    await stack.later(timedelta(minutes=20))
    _, after = await scrape()
    count = at(after, "clarify_job_lag_seconds_count") - at(before, "clarify_job_lag_seconds_count")
    waited = at(after, "clarify_job_lag_seconds_sum") - at(before, "clarify_job_lag_seconds_sum")
    within_five_minutes = at(after, "clarify_job_lag_seconds_bucket", le="300.0") \
        - at(before, "clarify_job_lag_seconds_bucket", le="300.0")
    assert count >= 1 and waited >= 1200 * count and within_five_minutes == 0
