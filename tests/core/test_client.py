"""Behaviour of the core client: request shapes, batches, secrecy and lifecycle. Its answers read
as errors are in test_error_mapping.py, its retries in test_retries.py, failures below HTTP in
test_transport_errors.py."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import SecretStr
from structlog.testing import capture_logs

from bot.core.client import (
    DEFAULT_TIMEOUT,
    AnswerReceipt,
    CoreClient,
    UnexpectedResponse,
)
from bot.core.errors import (
    AnswerUnnormalisable,
    AuthenticationFailed,
    CoreConnectError,
    CoreError,
    CoreTimeout,
)
from bot.core.http import MockTransport
from bot.core.models import (
    AnswerCustomInput,
    AnswerOutcome,
    AnswerRequest,
    ClarificationState,
    CreateClarificationRequest,
    DeliveryKind,
    DeliveryReport,
    DeliveryReportItem,
    EventReport,
    EventReportItem,
    JobState,
    ReasonCode,
    ReportBatch,
    Role,
    Severity,
    SlackIdentity,
)
from bot.core.models import (
    Channel as ContractChannel,
)
from bot.core.routes import ROUTES, route

from . import faults
from .conftest import (
    T0,
    TOKEN,
    answer_result,
    clarification,
    delivery_record,
    error_body,
    event,
    fact_version,
    job_view,
    leased_job,
    person,
    respond,
    summary,
)

ANSWER = AnswerRequest(answer_index=0, responder="p-ana", rights=Role.EDITOR,
                       channel=ContractChannel.SLACK, message_ref="C1:1.2")
DELIVERY = DeliveryReport(delivery_id="d-1", person_id="p-ana", channel=ContractChannel.SLACK,
                          kind=DeliveryKind.QUESTION, attempt=1, message_ref="C1:1.2")
EVENT = EventReport(event_id="e-1", type="skipped", person_id="p-ben",
                    reason_code=ReasonCode.NO_DELIVERY_ALIAS, message="no alias")
CREATE = CreateClarificationRequest.model_validate({
    "tenantId": "t-1", "workspaceId": "w-1", "target": "node-9",
    "document": {"documentId": "doc-1", "title": "Q3", "url": "https://docs.test/1",
                 "contentHash": "h1", "acl": {"workspaceId": "w-1"}},
    "span": {"start": 0, "end": 4, "text": "soon"}, "question": "When?",
    "kind": "relative_date", "candidates": [{"label": "1 Sept"}],
    "detectorConfidence": 0.9, "appliedCandidateConfidence": 0.4,
})


@dataclass(frozen=True)
class Case:
    method: str
    kwargs: dict[str, Any]
    operation_id: str
    path: str
    reply: Any
    body: Any = None
    query: tuple[tuple[str, str], ...] = ()
    dev: bool = False
    status: int = 200


CASES = [
    Case("poll_jobs", {"kinds": ["clarify:"], "max_jobs": 5}, "pollJobs", "/v1/jobs/poll",
         {"jobs": [leased_job()]}, body={"kinds": ["clarify:"], "maxJobs": 5, "leaseSeconds": 60}),
    Case("heartbeat_job", {"job_id": "job-1", "lease_token": "lease-1", "lease_seconds": 90},
         "heartbeatJob", "/v1/jobs/job-1/heartbeat", leased_job(),
         body={"leaseToken": "lease-1", "leaseSeconds": 90}),
    Case("advance_job", {"job_id": "job-1", "lease_token": "lease-1", "attempt": 2,
                         "reason_code": ReasonCode.NO_READ_PERMISSION},
         "advanceJob", "/v1/jobs/job-1/advance", leased_job(),
         body={"leaseToken": "lease-1", "attempt": 2, "reasonCode": "NO_READ_PERMISSION"}),
    Case("expedite_job", {"job_id": "job-1", "attempt": 0,
                          "reason_code": ReasonCode.CANDIDATE_DECLINED},
         "expediteJob", "/v1/jobs/job-1/expedite", job_view(),
         body={"attempt": 0, "reasonCode": "CANDIDATE_DECLINED"}),
    Case("complete_job", {"job_id": "job-1", "lease_token": "lease-1"}, "completeJob",
         "/v1/jobs/job-1/complete", job_view("completed"), body={"leaseToken": "lease-1"}),
    Case("fail_job", {"job_id": "job-1", "lease_token": "lease-1", "reason": "DELIVERY_FAILED"},
         "failJob", "/v1/jobs/job-1/fail", job_view("available"),
         body={"leaseToken": "lease-1", "retryable": True, "reason": "DELIVERY_FAILED"}),
    Case("get_job", {"job_id": "job-1"}, "getJob", "/v1/jobs/job-1", job_view()),
    Case("list_jobs", {"state": JobState.DEAD_LETTERED, "kind": "clarify:", "limit": 10},
         "listJobs", "/v1/jobs", {"items": [job_view("dead_lettered")], "nextCursor": "c2"},
         query=(("state", "dead_lettered"), ("kind", "clarify:"), ("limit", "10"))),
    Case("list_clarifications", {"state": ClarificationState.OPEN, "severity": Severity.HIGH,
                                 "tenant_id": "t-1", "cursor": "c1"},
         "listClarifications", "/v1/clarifications", {"items": [summary()]},
         query=(("state", "open"), ("severity", "high"), ("tenantId", "t-1"), ("cursor", "c1"))),
    Case("list_attention", {"tenant_id": "t-1", "limit": 20}, "listAttention", "/v1/attention",
         {"items": [summary()]}, query=(("tenantId", "t-1"), ("limit", "20"))),
    Case("get_delivery_history", {"clarification_id": "clar-1"}, "getDeliveryHistory",
         "/v1/clarifications/clar-1/history",
         {"clarificationId": "clar-1", "jobId": "job-1", "jobState": "leased", "jobAttempts": 0,
          "maxAttempts": 2, "attempts": [{"attempt": 0, "personId": "p-ana",
                                          "outcome": "pending"}]}),
    Case("erase_attribution", {"person_id": "p-ana"}, "eraseAttribution",
         "/v1/people/p-ana/erase-attribution",
         {"personId": "p-ana", "tenantId": "t-1", "clarifications": 1, "aliases": {}},
         body={}),
    Case("get_clarification", {"clarification_id": "clar-1"}, "getClarification",
         "/v1/clarifications/clar-1", clarification()),
    Case("answer_clarification", {"clarification_id": "clar-1", "request": ANSWER},
         "answerClarification", "/v1/clarifications/clar-1/answer", answer_result(),
         body={"answerIndex": 0, "responder": "p-ana", "rights": "editor", "channel": "slack",
               "messageRef": "C1:1.2", "stewardOverride": False}),
    Case("report_delivery", {"clarification_id": "clar-1", "report": DELIVERY}, "reportDelivery",
         "/v1/clarifications/clar-1/deliveries", delivery_record(), body=DELIVERY.wire()),
    Case("report_event", {"clarification_id": "clar-1", "report": EVENT}, "reportEvent",
         "/v1/clarifications/clar-1/events", event(), body=EVENT.wire()),
    Case("report_batch", {"batch": ReportBatch(
        deliveries=[DeliveryReportItem(clarification_id="clar-1", report=DELIVERY)],
        events=[EventReportItem(clarification_id="clar-1", report=EVENT)])},
         "reportBatch", "/v1/reports",
         {"deliveries": [{"id": "d-1", "ok": True}],
          "events": [{"id": "e-1", "ok": True}]},
         body={"deliveries": [{"clarificationId": "clar-1", "report": DELIVERY.wire()}],
               "events": [{"clarificationId": "clar-1", "report": EVENT.wire()}]}),
    Case("get_people", {"tenant_id": "t-1", "person_ids": ["p-ana", "p-gone"]}, "getPeople",
         "/v1/people/batch",
         {"people": [{"personId": "p-ana", "person": person(), "resolutions": []},
                     {"personId": "p-gone", "errorCode": "PERSON_NOT_FOUND"}]},
         body={"tenantId": "t-1", "personIds": ["p-ana", "p-gone"], "resolveAliases": True}),
    Case("resolve_person", {"tenant_id": "t-1", "identity": SlackIdentity(user_id="U1",
                                                                             team_id="T1")},
         "resolvePerson", "/v1/people/resolve", {"person": person(), "verified": True},
         body={"tenantId": "t-1", "identity": {"platform": "slack", "userId": "U1",
                                               "teamId": "T1"}}),
    Case("get_person", {"person_id": "p-ana", "tenant_id": "t-1"}, "getPerson",
         "/v1/people/p-ana", person(), query=(("tenantId", "t-1"),)),
    Case("get_fact", {"logical_id": "fact-9", "as_of_tx": datetime(2026, 7, 4, 9, tzinfo=UTC),
                      "as_of_valid": datetime(2026, 10, 1, tzinfo=UTC), "tenant_id": "t-1"},
         "getFact", "/v1/facts/fact-9", fact_version(),
         query=(("asOfTx", "2026-07-04T09:00:00+00:00"),
                ("asOfValid", "2026-10-01T00:00:00+00:00"), ("tenantId", "t-1"))),
    Case("get_fact_history", {"logical_id": "fact-9",
                              "as_of_valid": datetime(2026, 10, 1, tzinfo=UTC)},
         "getFactHistory", "/v1/facts/fact-9/versions",
         {"logicalId": "fact-9", "versions": [fact_version()]},
         query=(("asOfValid", "2026-10-01T00:00:00+00:00"),)),
    Case("create_clarification", {"request": CREATE}, "devCreateClarification",
         "/dev/v1/clarifications", {"clarification": summary(), "deduplicated": False,
                                    "jobId": "job-1"},
         body=CREATE.wire(), dev=True, status=201),
    Case("get_clock", {}, "devGetClock", "/dev/v1/clock", {"now": T0}, dev=True),
    Case("move_clock", {"advance_seconds": 3600}, "devMoveClock", "/dev/v1/clock",
         {"now": "2026-07-04T10:00:00Z"}, body={"advanceSeconds": 3600.0}, dev=True),
    Case("load_scenario", {"scenario": {"tenants": [{"id": "t-1"}]}}, "devLoadScenario",
         "/dev/v1/scenario", {"tenants": 1, "people": 0, "clarifications": 0},
         body={"tenants": [{"id": "t-1"}]}, dev=True),
]


def test_every_route_has_a_client_method_case():
    """Each route of the contract is exercised by exactly one request-shape case below."""
    assert sorted(c.operation_id for c in CASES) == sorted(r.operation_id for r in ROUTES)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.method)
async def test_method_sends_route_request_and_parses_reply(case: Case, core, make_client):
    """Each method sends its route's method, path, query and camelCase body and parses the reply."""
    core.script(respond(case.status, json=case.reply))
    async with make_client(dev=case.dev) as client:
        result = await getattr(client, case.method)(**case.kwargs)
    sent = core.requests[0]
    r = route(case.operation_id)
    assert sent.method == r.method
    assert sent.url.path == case.path
    assert tuple(sent.url.query.items()) == case.query
    assert core.last_json == case.body
    if isinstance(result, AnswerReceipt):
        result = result.result
    assert isinstance(result, r.response)
    assert result.wire() == r.response.model_validate(case.reply).wire()


@pytest.mark.parametrize(("status", "outcome"), [(200, "bound"), (202, "partially_confirmed")])
async def test_answer_returns_result_with_http_status(status, outcome, core, client):
    """An answer returns the parsed outcome together with the 200/202 status that carried it."""
    core.script(respond(status, json=answer_result(outcome)))
    receipt = await client.answer_clarification(clarification_id="clar-1", request=ANSWER)
    assert receipt.http_status == status
    assert receipt.result.outcome == AnswerOutcome(outcome)


async def test_path_parameters_are_percent_encoded(core, client):
    """Slashes, spaces and non-ASCII in ids stay inside their one path segment."""
    core.script(respond(200, json=fact_version()))
    await client.get_fact(logical_id="fact/9 é")
    assert core.requests[0].url.raw_path == "/v1/facts/fact%2F9%20%C3%A9"


@pytest.mark.parametrize("bad", ["", ".", ".."])
async def test_dot_and_empty_path_parameters_are_refused(bad, core, client):
    """An id that URL normalisation would collapse onto another route is refused before sending."""
    with pytest.raises(ValueError):
        await client.get_job(job_id=bad)
    assert core.requests == []


async def test_base_url_path_prefix_is_kept(core, make_client):
    """A core mounted under a path prefix receives the route path below that prefix."""
    core.script(respond(200, json=job_view()))
    async with make_client(base_url="http://core.test/telha") as client:
        await client.get_job(job_id="job-1")
    assert core.requests[0].url.path == "/telha/v1/jobs/job-1"


async def test_token_is_sent_as_bearer(core, client):
    """Every request carries the service token in the Authorization header."""
    core.script(respond(200, json=job_view()))
    await client.get_job(job_id="job-1")
    assert core.requests[0].headers["Authorization"] == f"Bearer {TOKEN}"


async def test_secret_str_token_is_accepted(core, make_client, sleeps):
    """A pydantic SecretStr token is unwrapped only for the header."""
    client = CoreClient(base_url="http://core.test", token=SecretStr(TOKEN),
                        transport=MockTransport(core), sleep=sleeps)
    core.script(respond(200, json=job_view()))
    async with client:
        await client.get_job(job_id="job-1")
    assert core.requests[0].headers["Authorization"] == f"Bearer {TOKEN}"
    assert TOKEN not in repr(client)


def test_malformed_token_is_refused_without_echo():
    """A token that would make an illegal header is refused, and the error does not repeat it."""
    with pytest.raises(ValueError) as info:
        CoreClient(base_url="http://core.test", token="abc def\n")
    assert "abc def" not in str(info.value)


def test_default_timeouts_are_explicit():
    """The default timeout sets connect, read, write and pool limits explicitly."""
    assert (DEFAULT_TIMEOUT.connect, DEFAULT_TIMEOUT.read,
            DEFAULT_TIMEOUT.write, DEFAULT_TIMEOUT.pool) == (2.0, 10.0, 5.0, 2.0)


# ---------------------------------------------------------------- batches


@pytest.mark.parametrize("reply", [
    respond(200, json={"deliveries": [{"id": "d-1", "ok": True}, {"shape": "newer"}],
                              "events": [{"id": "e-1", "ok": True}]}),
    respond(200, json={"accepted": 2}),
    respond(204),
], ids=["an entry of another shape", "another shape", "no body"])
async def test_a_report_batch_the_core_took_is_not_a_failure_whatever_its_answer_says(
        reply, core, client):
    """A report batch answered 2xx in a shape the bot cannot read was taken by the core: the
    flush neither raises nor sends a report again on its own route."""
    from bot.core.batching import JobScope

    core.script(reply)
    scope = JobScope(
        deliveries=[DeliveryReportItem(clarification_id="clar-1", report=DeliveryReport(
            person_id="p-ana", channel=ContractChannel.SLACK, message_ref="D1:1.1",
            delivery_id="d-1"))],
        events=[EventReportItem(clarification_id="clar-1", report=EventReport(
            type="skipped", person_id="p-ben", event_id="e-1"))])
    await client.flush(scope, linger=0)
    assert [r.url.path for r in core.requests] == ["/v1/reports"]


async def test_a_batch_entry_that_names_neither_person_nor_error_is_read_on_its_own(
        core, client):
    """A people batch entry with neither the person nor an error code says nothing of them:
    the person is read on their own route, never taken as not found (a turn skipped)."""
    from bot.core.batching import JobScope

    core.script(respond(200, json={"people": [{"personId": "p-ana"}]}),
                respond(200, json=person()))
    scope = JobScope()
    await client.read_people(scope, tenant_id="t-1", person_ids=["p-ana"])
    found = await client.get_person(person_id="p-ana", tenant_id="t-1", scope=scope)
    assert found.person_id == person()["personId"]
    assert [r.url.path for r in core.requests] == ["/v1/people/batch", "/v1/people/p-ana"]


# ---------------------------------------------------------------- secrecy, logging, lifecycle


async def test_token_and_bodies_appear_in_no_error_or_log(core, client):
    """Across success, error and transport failures the token and body values are never exposed."""
    secret_answer = AnswerRequest(
        answer_custom=AnswerCustomInput(source_text="the secret launch is Friday"))
    replies = [
        respond(200, json=answer_result()),
        respond(422, json=error_body("ANSWER_UNNORMALISABLE", 422)),
        respond(401, text=f"bad token {TOKEN}"),
        faults.read_timeout(f"timed out sending {TOKEN}"),
        faults.refused(f"refused while sending {TOKEN}"),
    ]
    errors: list[CoreError] = []
    with capture_logs() as logs:
        for reply in replies:
            core.script(reply)
            try:
                await client.answer_clarification(clarification_id="clar-1", request=secret_answer)
            except CoreError as exc:
                errors.append(exc)
    assert [type(e) for e in errors] == [
        AnswerUnnormalisable, AuthenticationFailed, CoreTimeout, CoreConnectError]
    assert all(b"Friday" in r.content for r in core.requests)  # the body was really sent
    texts = [str(e) + repr(e) for e in errors] + [repr(event) for event in logs]
    assert len(logs) == len(core.requests)
    assert all(TOKEN not in t and "Friday" not in t for t in texts)


async def test_one_log_event_per_attempt(core, client):
    """Each attempt logs operation, attempt number, status and duration."""
    core.script(respond(503), faults.refused(),
                respond(200, json=job_view()))
    with capture_logs() as logs:
        await client.get_job(job_id="job-1")
    events = [e for e in logs if e["event"] == "core_request"]
    assert [(e["operation"], e["attempt"], e["status"]) for e in events] == [
        ("getJob", 1, 503), ("getJob", 2, None), ("getJob", 3, 200)]
    assert all(isinstance(e["duration_ms"], float) for e in events)
    assert events[1]["error"] == "CoreConnectError"


async def test_iter_clarifications_follows_cursors(core, client):
    """The iterator walks every page, passing each nextCursor back, and stops at the last page."""
    first = {"items": [summary("a"), summary("b")], "nextCursor": "c2"}
    core.script(respond(200, json=first),
                respond(200, json={"items": [summary("c")], "nextCursor": "c3"}),
                respond(200, json={"items": []}))
    ids = [c.id async for c in client.iter_clarifications(state=ClarificationState.OPEN, limit=2)]
    assert ids == ["a", "b", "c"]
    assert [r.url.query.get("cursor") for r in core.requests] == [None, "c2", "c3"]
    assert all(r.url.query["state"] == "open" for r in core.requests)


async def test_iter_clarifications_refuses_a_repeated_cursor(core, client):
    """A core that hands back a cursor twice cannot trap the iterator in a loop."""
    core.script(respond(200, json={"items": [summary()], "nextCursor": "same"}))
    with pytest.raises(UnexpectedResponse):
        async for _ in client.iter_clarifications():
            pass
    assert len(core.requests) == 2


async def test_aclose_twice_is_safe(core, make_client):
    """Closing twice (explicitly, then by the context manager) raises nothing."""
    async with make_client() as client:
        await client.aclose()
        await client.aclose()
    await client.aclose()


async def test_move_clock_needs_exactly_one_of_advance_and_set(core, make_client):
    """move_clock refuses both or neither of advance_seconds and set, and sends set as ISO time."""
    core.script(respond(200, json={"now": "2026-07-05T00:00:00Z"}))
    async with make_client(dev=True) as dev:
        with pytest.raises(ValueError):
            await dev.move_clock()
        with pytest.raises(ValueError):
            await dev.move_clock(advance_seconds=1, set=datetime(2026, 7, 5, tzinfo=UTC))
        await dev.move_clock(set=datetime(2026, 7, 5, tzinfo=UTC))
    assert core.last_json == {"set": "2026-07-05T00:00:00Z"}


async def test_a_job_named_twice_in_one_poll_is_taken_once(core, client):
    """A poll answer that names the same job twice (a core or a proxy that repeats an entry)
    gives the worker the job once: worked twice, each turn would be advanced twice and on a
    baseline core (where an advance raises attempts by one) a candidate would be skipped
    unasked. The repeat is counted (``repeated_entry``) and logged without a value."""
    from bot.metrics import REGISTRY

    other = leased_job() | {"id": "job-2", "leaseToken": "lease-2"}
    core.script(respond(200, json={"jobs": [leased_job(), other, leased_job(),
                                                   leased_job() | {"leaseToken": "lease-9"}]}))
    before = REGISTRY.value("clarify_core_tolerated_total", kind="repeated_entry",
                            model="LeasedJob")
    with capture_logs() as logs:
        polled = await client.poll_jobs(kinds=["clarify:"], max_jobs=5)
    assert [(j.id, j.lease_token) for j in polled.jobs] == [("job-1", "lease-1"),
                                                            ("job-2", "lease-2")]
    assert REGISTRY.value("clarify_core_tolerated_total", kind="repeated_entry",
                          model="LeasedJob") == before + 2
    assert {"event": "core.entries_repeated", "model": "LeasedJob", "count": 2,
            "log_level": "warning"} in logs
