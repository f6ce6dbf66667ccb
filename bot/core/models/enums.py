"""The contract's closed vocabularies (spec §5, §6): severities, states, roles, reason codes."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

UNKNOWN = "unknown"
# the published document's mark of an enum's values that belong to an extension
EXTENSION_VALUES = "x-extension-values"


class Growing(StrEnum):
    """A vocabulary the core may grow: its ``UNKNOWN`` member is what the tolerant reader makes
    of a value the bot does not know (``bot.core.models.wire.lenient``), so that "unknown" stays
    distinct from every word the contract names. ``UNKNOWN`` is no word of the contract: the
    published schema leaves it out, and no request carries it."""

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: Any, handler: Any) -> Any:
        schema = handler(core_schema)
        named = handler.resolve_ref_schema(schema)
        named["enum"] = [value for value in named.get("enum", []) if value != UNKNOWN]
        return schema


class Severity(StrEnum):
    LOW = "low"
    NORMAL = "normal"
    HIGH = "high"
    CRITICAL = "critical"

    @property
    def rank(self) -> int:
        return list(Severity).index(self)


class AmbiguityKind(StrEnum):
    RELATIVE_DATE = "relative_date"
    CONFLICTING_DATES = "conflicting_dates"
    UNDATED = "undated"
    LOW_CONFIDENCE_EXTRACTION = "low_confidence_extraction"


class ClarificationState(StrEnum):
    OPEN = "open"
    ATTESTED = "attested"
    PARTIALLY_CONFIRMED = "partially_confirmed"
    ANSWERED = "answered"
    CONFLICTED = "conflicted"
    EXPIRED = "expired"
    DEAD_LETTERED = "dead_lettered"


class QuorumState(StrEnum):
    NOT_REQUIRED = "not_required"
    PENDING = "pending"
    SATISFIED = "satisfied"
    CONFLICTED = "conflicted"


class Role(StrEnum):
    VIEWER = "viewer"
    EDITOR = "editor"
    STEWARD = "steward"

    @property
    def rank(self) -> int:
        return list(Role).index(self)


class BindingStatus(Growing):
    BINDING_CANDIDATE = "binding_candidate"
    BOUND = "bound"
    ATTESTATION = "attestation"
    CONFLICTING = "conflicting"
    STEWARD_OVERRIDE = "steward_override"
    # a status the bot does not know: it counts as no confirmation, and a card that shows it
    # says neutrally that an answer was recorded (never "attestation", which it may not be)
    UNKNOWN = "unknown"


class IdentityKind(StrEnum):
    """The contract's identity kinds for a person's chat aliases: a Slack user (``aliases.slack``,
    ``SlackIdentity``) or an Entra object id in its Entra tenant (``aliases.teams``,
    ``TeamsIdentity``). A platform declares which one addresses its people."""

    SLACK = "slack"
    ENTRA = "entra"


class Channel(StrEnum):
    SLACK = "slack"
    TEAMS = "teams"
    CLI = "cli"
    API = "api"

    @property
    def identity_kind(self) -> IdentityKind | None:
        """The identity kind the people of the chat channel this word names are addressed by;
        None for a word that names no chat channel (``cli``, ``api``)."""
        return {Channel.SLACK: IdentityKind.SLACK, Channel.TEAMS: IdentityKind.ENTRA}.get(self)


class RecordedChannel(StrEnum):
    """A response's or delivery's channel as the core keeps it: ``Channel``'s values, and
    ``erased`` once the person's attribution was erased (spec changelog v0.8)."""

    SLACK = "slack"
    TEAMS = "teams"
    CLI = "cli"
    API = "api"
    ERASED = "erased"

    @property
    def chat(self) -> bool:
        """Recorded from a chat platform: not a key's ``cli`` or ``api``, not erased."""
        return self not in (RecordedChannel.CLI, RecordedChannel.API, RecordedChannel.ERASED)


class AttemptOutcome(StrEnum):
    """What became of one attempt of a clarification's job (the delivery history)."""

    ANSWERED = "answered"  # the attempt's person answered
    DELIVERED = "delivered"  # asked; no answer yet (the window is still open)
    EXPIRED = "expired"  # asked, and the escalation window ran out unanswered
    SKIPPED = "skipped"  # not asked: the reason code says why
    PENDING = "pending"  # the current attempt, nothing reported yet
    NOT_REACHED = "not_reached"  # the job never got this far


class AnswerOutcome(StrEnum):
    BOUND = "bound"
    PARTIALLY_CONFIRMED = "partially_confirmed"
    ATTESTATION = "attestation"
    CONFLICTED = "conflicted"
    CONFLICTING_ATTESTATION = "conflicting_attestation"
    STEWARD_OVERRIDE = "steward_override"


class ReasonCode(StrEnum):
    NO_READ_PERMISSION = "NO_READ_PERMISSION"
    NO_DELIVERY_ALIAS = "NO_DELIVERY_ALIAS"
    ALIAS_AMBIGUOUS = "ALIAS_AMBIGUOUS"
    DELIVERY_FAILED = "DELIVERY_FAILED"
    DAILY_CAP_EXCEEDED = "DAILY_CAP_EXCEEDED"
    DIGESTED = "DIGESTED"
    TENANT_SCOPE_MISMATCH = "TENANT_SCOPE_MISMATCH"
    RESPONDER_NOT_AUTHORISED = "RESPONDER_NOT_AUTHORISED"
    # additive ("Not me"): the asked person said they are not the right person
    CANDIDATE_DECLINED = "CANDIDATE_DECLINED"
    # the extension ``person-away`` (``EXTENSION_CODES``): the person's platform said they are
    # away (on holiday, ill, not to be disturbed), so the next candidate was asked
    PERSON_AWAY = "PERSON_AWAY"

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: Any, handler: Any) -> Any:
        """The published enum says which of its codes a core takes only with an extension."""
        schema = handler(core_schema)
        named = handler.resolve_ref_schema(schema)
        named[EXTENSION_VALUES] = {code.value: ext for code, (ext, _) in EXTENSION_CODES.items()}
        return schema


# the reason codes beyond the spec that a core takes only with an extension
# (``bot.core.extensions``), each with its extension's name and the spec's code a core without
# it is sent instead (``bot.core.encoding``): the truest the spec has. PERSON_AWAY's is
# DAILY_CAP_EXCEEDED: like the cap, "not to be messaged now; nothing to repair; the next
# candidate is asked" (never DELIVERY_FAILED: nothing was refused); the event's message keeps
# the true words ("was away until …").
EXTENSION_CODES: dict[ReasonCode, tuple[str, ReasonCode]] = {
    ReasonCode.PERSON_AWAY: ("person-away", ReasonCode.DAILY_CAP_EXCEEDED),
}


class AuthorityRelation(Growing):
    """Why a person is in the ranking: their graph relation to the target (spec §3.2)."""

    AUTHORED_BY = "authored_by"
    NAMED = "named"
    OWNED_BY = "owned_by"
    # a relation the bot does not know: the person is ranked, so connected to the document
    UNKNOWN = "unknown"


class EvidenceClass(StrEnum):
    """The spec's evidence taxonomy (§5), complete."""

    SOURCE_SPAN = "source_span"
    SOURCE_VERSION = "source_version"
    SYSTEM_EXTRACTION = "system_extraction"
    HUMAN_CLARIFICATION = "human_clarification"
    HUMAN_ATTESTATION = "human_attestation"
    STEWARD_OVERRIDE = "steward_override"
    QUORUM_CONFIRMATION = "quorum_confirmation"


class JobState(StrEnum):
    AVAILABLE = "available"
    LEASED = "leased"
    COMPLETED = "completed"
    DEAD_LETTERED = "dead_lettered"


class DeliveryKind(StrEnum):
    QUESTION = "question"
    DIGEST = "digest"
    STEWARD_ESCALATION = "steward_escalation"
    STEWARD_NOTICE = "steward_notice"


class Audience(StrEnum):
    CLARIFY = "clarify"
    INGEST = "ingest"
