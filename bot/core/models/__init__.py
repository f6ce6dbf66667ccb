"""Pydantic models of every body in the core contract (camelCase on the wire), by noun.

- ``wire``: the base classes (requests forbid unknown fields, responses ignore them), the id and
  short-text types, and the error body;
- ``enums``: the contract's closed vocabularies (severity, states, roles, reason codes, ...);
- ``jobs``: leasing, heartbeats, advance, completion and listing of ``clarify:`` jobs;
- ``clarifications``: one clarification, its candidates, quorum, source, and its list views;
- ``answers``: what a responder sends, what the core records and decides, and ``Interval``;
- ``reports``: the deliveries, skips and events the bot reports, and the records the core keeps;
- ``people``: persons, their chat identities and aliases, and resolving one;
- ``facts``: bitemporal fact versions and their provenance;
- ``steward``: the delivery history and the attribution erasure (spec changelog v0.8);
- ``dev``: the reference core's development endpoints (create, clock, scenario).

Every public name is re-exported here: callers write ``from bot.core import models as m`` and
``m.Clarification`` without knowing which module holds it.
"""

from bot.core.models.answers import (
    AnswerCustom,
    AnswerCustomInput,
    AnswerRequest,
    AnswerResult,
    Interval,
    ResponseRecord,
)
from bot.core.models.clarifications import (
    Clarification,
    ClarificationPage,
    ClarificationSummary,
    DateCandidate,
    QuorumPolicy,
    QuorumStatus,
    RankedRelation,
    SourceAcl,
    SourceDocument,
    WorkspaceRef,
)
from bot.core.models.dev import (
    AuthorityInput,
    CandidateInput,
    ClockRequest,
    ClockView,
    CreateClarificationRequest,
    CreateClarificationResponse,
    DocumentInput,
    ScenarioLoaded,
    SpanInput,
)
from bot.core.models.enums import (
    AmbiguityKind,
    AnswerOutcome,
    AttemptOutcome,
    Audience,
    AuthorityRelation,
    BindingStatus,
    Channel,
    ClarificationState,
    DeliveryKind,
    EvidenceClass,
    JobState,
    QuorumState,
    ReasonCode,
    RecordedChannel,
    Role,
    Severity,
)
from bot.core.models.facts import (
    FactHistory,
    FactVersion,
    Provenance,
)
from bot.core.models.jobs import (
    AdvanceRequest,
    CompleteRequest,
    ExpediteRequest,
    FailRequest,
    HeartbeatRequest,
    JobPage,
    JobPayload,
    JobView,
    LeasedJob,
    PollRequest,
    PollResponse,
)
from bot.core.models.people import (
    ChatIdentity,
    Membership,
    Person,
    PersonAliases,
    ResolvedPerson,
    ResolveRequest,
    SlackAlias,
    SlackIdentity,
    TeamsAlias,
    TeamsIdentity,
)
from bot.core.models.reports import (
    ClarificationEvent,
    DeliveryRecord,
    DeliveryReport,
    EventReport,
    SkipEntry,
    SkipInput,
)
from bot.core.models.steward import (
    NIL_PERSON,
    DeliveryHistory,
    ErasureReport,
    ErasureRequest,
    HistoryAttempt,
)
from bot.core.models.wire import (
    ErrorBody,
    Id,
    RequestModel,
    ShortText,
    ValidationIssue,
    WireModel,
)

__all__ = [
    "NIL_PERSON",
    "AttemptOutcome",
    "DeliveryHistory",
    "ErasureReport",
    "ErasureRequest",
    "HistoryAttempt",
    "AdvanceRequest",
    "AmbiguityKind",
    "AnswerCustom",
    "AnswerCustomInput",
    "AnswerOutcome",
    "AnswerRequest",
    "AnswerResult",
    "Audience",
    "AuthorityInput",
    "AuthorityRelation",
    "BindingStatus",
    "CandidateInput",
    "Channel",
    "ChatIdentity",
    "ExpediteRequest",
    "RankedRelation",
    "Clarification",
    "ClarificationEvent",
    "ClarificationPage",
    "ClarificationState",
    "ClarificationSummary",
    "ClockRequest",
    "ClockView",
    "CompleteRequest",
    "CreateClarificationRequest",
    "CreateClarificationResponse",
    "DateCandidate",
    "DeliveryKind",
    "DeliveryRecord",
    "DeliveryReport",
    "DocumentInput",
    "ErrorBody",
    "EventReport",
    "EvidenceClass",
    "FactHistory",
    "FactVersion",
    "FailRequest",
    "HeartbeatRequest",
    "Id",
    "Interval",
    "JobPage",
    "JobPayload",
    "JobState",
    "JobView",
    "LeasedJob",
    "Membership",
    "Person",
    "PersonAliases",
    "PollRequest",
    "PollResponse",
    "Provenance",
    "QuorumPolicy",
    "QuorumState",
    "QuorumStatus",
    "ReasonCode",
    "RecordedChannel",
    "RequestModel",
    "ResolveRequest",
    "ResolvedPerson",
    "ResponseRecord",
    "Role",
    "ScenarioLoaded",
    "Severity",
    "ShortText",
    "SkipEntry",
    "SkipInput",
    "SlackAlias",
    "SlackIdentity",
    "SourceAcl",
    "SourceDocument",
    "SpanInput",
    "TeamsAlias",
    "TeamsIdentity",
    "ValidationIssue",
    "WireModel",
    "WorkspaceRef",
]
