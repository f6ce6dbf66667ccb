"""The route table of the core contract: one row per endpoint.

The single source the OpenAPI document, the client and the reference core are checked against.
Paths use ``{name}`` parameters; ``auth`` names who may call; ``retry`` says whether a client
may safely resend the request after a transport failure (the call is idempotent).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import BaseModel

from bot.core.errors import ErrorCode as E
from bot.core.extensions import ROUTE_EXTENSION, Extension
from bot.core.models import (
    AdvanceRequest,
    AnswerRequest,
    AnswerResult,
    Clarification,
    ClarificationEvent,
    ClarificationPage,
    ClockRequest,
    ClockView,
    CompleteRequest,
    CreateClarificationRequest,
    CreateClarificationResponse,
    DeliveryHistory,
    DeliveryRecord,
    DeliveryReport,
    ErasureReport,
    ErasureRequest,
    EventReport,
    ExpediteRequest,
    FactHistory,
    FactVersion,
    FailRequest,
    HeartbeatRequest,
    JobPage,
    JobView,
    LeasedJob,
    PeopleBatch,
    PeopleBatchRequest,
    Person,
    PollRequest,
    PollResponse,
    ReportBatch,
    ReportBatchResult,
    ResolvedPerson,
    ResolveRequest,
    ScenarioLoaded,
)


@dataclass(frozen=True, slots=True)
class Route:
    operation_id: str
    method: str
    path: str
    summary: str
    auth: str  # "clarify", "clarify+apikey", "apikey", "any", "dev", "none"
    request: type[BaseModel] | None = None
    response: type[BaseModel] | None = None
    success: tuple[int, ...] = (200,)
    errors: tuple[E, ...] = ()
    query: tuple[str, ...] = ()
    retry: bool = False
    tags: tuple[str, ...] = field(default=())

    @property
    def extension(self) -> Extension | None:
        """The extension this route belongs to; None for a baseline (or development) route."""
        return ROUTE_EXTENSION.get(self.operation_id)


_AUTH = (E.UNAUTHENTICATED, E.AUDIENCE_FORBIDDEN)
_BODY = (E.MALFORMED_BODY, E.VALIDATION_FAILED, E.PAYLOAD_TOO_LARGE)
_LEASE = (E.JOB_NOT_FOUND, E.LEASE_MISMATCH, E.LEASE_EXPIRED)

ROUTES: tuple[Route, ...] = (
    Route("pollJobs", "POST", "/v1/jobs/poll", "Lease available jobs of the given kind prefixes.",
          "clarify", PollRequest, PollResponse,
          errors=(*_AUTH, *_BODY, E.JOB_KIND_FORBIDDEN), tags=("jobs",)),
    Route("heartbeatJob", "POST", "/v1/jobs/{jobId}/heartbeat", "Extend a held lease.",
          "clarify", HeartbeatRequest, LeasedJob,
          errors=(*_AUTH, *_BODY, *_LEASE), retry=True, tags=("jobs",)),
    Route("advanceJob", "POST", "/v1/jobs/{jobId}/advance",
          "Skip forward inside the lease: raise attempts without a backoff.",
          "clarify", AdvanceRequest, LeasedJob,
          errors=(*_AUTH, *_BODY, *_LEASE, E.ATTEMPTS_EXHAUSTED), retry=True, tags=("jobs",)),
    Route("expediteJob", "POST", "/v1/jobs/{jobId}/expedite",
          "A candidate declined: start the job's next turn now, not after the backoff.",
          "clarify", ExpediteRequest, JobView,
          errors=(*_AUTH, *_BODY, E.JOB_NOT_FOUND), retry=True, tags=("jobs",)),
    Route("completeJob", "POST", "/v1/jobs/{jobId}/complete", "Finish a job.",
          "clarify", CompleteRequest, JobView,
          errors=(*_AUTH, *_BODY, *_LEASE), retry=True, tags=("jobs",)),
    Route("failJob", "POST", "/v1/jobs/{jobId}/fail",
          "Give a job back: retryable failures back off, others dead-letter.",
          "clarify", FailRequest, JobView,
          errors=(*_AUTH, *_BODY, *_LEASE), tags=("jobs",)),
    Route("getJob", "GET", "/v1/jobs/{jobId}", "Read one job.",
          "clarify", None, JobView,
          errors=(*_AUTH, E.JOB_NOT_FOUND), retry=True, tags=("jobs",)),
    Route("listJobs", "GET", "/v1/jobs", "List jobs by state and kind prefix (dead letters).",
          "clarify", None, JobPage, query=("state", "kind", "cursor", "limit"),
          errors=(*_AUTH, E.VALIDATION_FAILED), retry=True, tags=("jobs",)),
    Route("listClarifications", "GET", "/v1/clarifications",
          "Tenant-scoped list with filters and a cursor.",
          "clarify+apikey", None, ClarificationPage,
          query=("state", "severity", "documentId", "since", "tenantId", "cursor", "limit"),
          errors=(*_AUTH, E.VALIDATION_FAILED, E.TENANT_SCOPE_MISMATCH), retry=True,
          tags=("clarifications",)),
    Route("listAttention", "GET", "/v1/attention",
          "The steward's attention queue: conflicted, expired and dead-lettered clarifications "
          "of any severity; open, attested and partially confirmed ones at high and critical. "
          "Steward scope (spec §7: review requires it): an API key must be bound to a steward "
          "(else 403 `STEWARD_REQUIRED`); the clarify audience lists it for stewards in chat.",
          "clarify+apikey", None, ClarificationPage,
          query=("tenantId", "cursor", "limit"),
          errors=(*_AUTH, E.VALIDATION_FAILED, E.TENANT_SCOPE_MISMATCH, E.STEWARD_REQUIRED),
          retry=True,
          tags=("steward",)),
    Route("getClarification", "GET", "/v1/clarifications/{clarificationId}",
          "Everything delivery needs about one clarification.",
          "clarify+apikey", None, Clarification,
          errors=(*_AUTH, E.CLARIFICATION_NOT_FOUND), retry=True, tags=("clarifications",)),
    Route("getDeliveryHistory", "GET", "/v1/clarifications/{clarificationId}/history",
          "The delivery history: each attempt's candidate and outcome or skip reason, events "
          "in order.",
          "clarify+apikey", None, DeliveryHistory,
          errors=(*_AUTH, E.CLARIFICATION_NOT_FOUND), retry=True, tags=("steward",)),
    Route("answerClarification", "POST", "/v1/clarifications/{clarificationId}/answer",
          "Record a response; evaluate quorum; bind when the policy is met.",
          "clarify+apikey", AnswerRequest, AnswerResult, success=(200, 202),
          errors=(*_AUTH, *_BODY, E.ANSWER_INDEX_OUT_OF_RANGE, E.ANSWER_UNNORMALISABLE,
                  E.CLARIFICATION_NOT_FOUND, E.TENANT_SCOPE_MISMATCH,
                  E.RESPONDER_ASSERTION_FORBIDDEN, E.PRINCIPAL_REQUIRED,
                  E.STEWARD_OVERRIDE_FORBIDDEN, E.CLARIFY_ALREADY_ANSWERED,
                  E.STEWARD_OVERRIDE_NOT_ALLOWED),
          retry=True, tags=("clarifications",)),
    Route("reportDelivery", "POST", "/v1/clarifications/{clarificationId}/deliveries",
          "Report a message sent to a person; idempotent on deliveryId.",
          "clarify", DeliveryReport, DeliveryRecord,
          errors=(*_AUTH, *_BODY, E.CLARIFICATION_NOT_FOUND, E.TENANT_SCOPE_MISMATCH),
          retry=True, tags=("clarifications",)),
    Route("reportEvent", "POST", "/v1/clarifications/{clarificationId}/events",
          "Report a skip, escalation or notice with its reason code; idempotent on eventId.",
          "clarify", EventReport, ClarificationEvent,
          errors=(*_AUTH, *_BODY, E.CLARIFICATION_NOT_FOUND), retry=True,
          tags=("clarifications",)),
    Route("reportBatch", "POST", "/v1/reports",
          "A job's delivery and event reports in one call; each idempotent on its own id.",
          "clarify", ReportBatch, ReportBatchResult,
          errors=(*_AUTH, *_BODY), retry=True, tags=("clarifications",)),
    Route("resolvePerson", "POST", "/v1/people/resolve",
          "Resolve a Slack or Teams identity to a PERSON, tenant-scoped.",
          "clarify", ResolveRequest, ResolvedPerson,
          errors=(*_AUTH, *_BODY, E.PERSON_NOT_FOUND, E.ALIAS_AMBIGUOUS,
                  E.TENANT_SCOPE_MISMATCH), retry=True, tags=("people",)),
    Route("getPerson", "GET", "/v1/people/{personId}",
          "A person's delivery aliases, memberships and roles.",
          "clarify", None, Person, query=("tenantId",),
          errors=(*_AUTH, E.PERSON_NOT_FOUND, E.TENANT_SCOPE_MISMATCH, E.VALIDATION_FAILED),
          retry=True, tags=("people",)),
    Route("getPeople", "POST", "/v1/people/batch",
          "Several people of one tenant, each with its chat aliases resolved back.",
          "clarify", PeopleBatchRequest, PeopleBatch,
          errors=(*_AUTH, *_BODY, E.TENANT_SCOPE_MISMATCH), retry=True, tags=("people",)),
    Route("eraseAttribution", "POST", "/v1/people/{personId}/erase-attribution",
          "Tombstone a person's attribution on every clarification of the tenant (spec OQ-5); "
          "answer values, rights and binding survive.",
          "apikey", ErasureRequest, ErasureReport,
          errors=(*_AUTH, *_BODY, E.STEWARD_REQUIRED, E.PERSON_NOT_FOUND,
                  E.TENANT_SCOPE_MISMATCH), retry=True, tags=("steward",)),
    Route("getFact", "GET", "/v1/facts/{logicalId}",
          "The fact version believed at asOfTx (default now), if it holds at asOfValid.",
          "clarify+apikey", None, FactVersion, query=("asOfTx", "asOfValid", "tenantId"),
          errors=(*_AUTH, E.FACT_NOT_FOUND, E.VALIDATION_FAILED, E.TENANT_SCOPE_MISMATCH),
          retry=True, tags=("facts",)),
    Route("getFactHistory", "GET", "/v1/facts/{logicalId}/versions",
          "Every version of a fact, oldest first (only those valid at asOfValid, if given).",
          "clarify+apikey", None, FactHistory, query=("asOfValid", "tenantId"),
          errors=(*_AUTH, E.FACT_NOT_FOUND, E.VALIDATION_FAILED, E.TENANT_SCOPE_MISMATCH),
          retry=True, tags=("facts",)),
    Route("devCreateClarification", "POST", "/dev/v1/clarifications",
          "Create a clarification as ingestion would (dedup identity applies).",
          "dev", CreateClarificationRequest, CreateClarificationResponse,
          success=(200, 201),
          errors=(E.UNAUTHENTICATED, *_BODY, E.TENANT_SCOPE_MISMATCH), tags=("dev",)),
    Route("devGetClock", "GET", "/dev/v1/clock", "Read the reference core's clock.",
          "dev", None, ClockView, errors=(E.UNAUTHENTICATED,), retry=True, tags=("dev",)),
    Route("devMoveClock", "POST", "/dev/v1/clock", "Move the clock forward (never back).",
          "dev", ClockRequest, ClockView,
          errors=(E.UNAUTHENTICATED, *_BODY), tags=("dev",)),
    Route("devLoadScenario", "POST", "/dev/v1/scenario",
          "Load a scenario (tenants, workspaces, people, tokens, clarifications).",
          "dev", None, ScenarioLoaded,
          errors=(E.UNAUTHENTICATED, *_BODY), tags=("dev",)),
)

OPENAPI_PATH = "/openapi.json"
HEALTH_PATH = "/healthz"


def route(operation_id: str) -> Route:
    for r in ROUTES:
        if r.operation_id == operation_id:
            return r
    raise KeyError(operation_id)
