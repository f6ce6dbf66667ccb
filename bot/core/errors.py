"""Error codes of the core contract and the client's exception tree.

Every error body the core returns is ``{"code", "message", "status"}`` (plus value-free
``details`` for validation errors). The client turns each documented code into one exception
class; an unknown code falls back to the class for its HTTP status::

    CoreError
    ├── ExtensionUnavailable          the core does not offer the extension this call belongs to
    │                                 (known before sending, or learnt from its 404/405)
    ├── CoreTransportError            network trouble: nothing (or nothing known) reached the core
    │   ├── CoreTimeout
    │   └── CoreConnectError
    ├── CoreAPIError                  the core answered with an error body
    │   ├── InvalidRequest            400 / 413 / 422
    │   │   ├── MalformedBody, PayloadTooLarge, ValidationFailed
    │   │   └── AnswerIndexOutOfRange, AnswerUnnormalisable
    │   ├── AuthenticationFailed      401
    │   ├── PermissionDenied          403
    │   │   ├── AudienceForbidden, JobKindForbidden, TenantScopeMismatch
    │   │   ├── ResponderAssertionForbidden, PrincipalRequired, StewardOverrideForbidden
    │   │   └── StewardRequired
    │   ├── NotFound                  404
    │   │   └── ClarificationNotFound, JobNotFound, PersonNotFound, FactNotFound, RouteNotFound
    │   ├── MethodNotAllowed          405
    │   ├── Conflict                  409
    │   │   ├── AlreadyAnswered, StewardOverrideNotAllowed, AliasAmbiguous
    │   │   └── LeaseMismatch, LeaseExpired, AttemptsExhausted
    │   ├── RateLimited               429 (``retry_after`` seconds)
    │   ├── ServerError               5xx
    │   │   └── Internal, Unavailable
    │   └── UnexpectedResponse        a success body that does not match the contract, a status
    │                                 the call never uses, or a repeated pagination cursor
    └── Trouble                       inside the client only (``bot.core.http``): a request that
                                      failed below HTTP, raised as the CoreTransportError it names

Catching ``CoreError`` catches everything the core client raises because of the core or the
network. Misuse by the caller (a malformed token, an empty path parameter, a naive datetime in a
query) is a ``ValueError`` raised before anything is sent, never a ``CoreError``.

Messages are value-free: they never repeat span text, answers, tokens or identifiers.
"""

from __future__ import annotations

from enum import StrEnum


class ErrorCode(StrEnum):
    MALFORMED_BODY = "MALFORMED_BODY"
    PAYLOAD_TOO_LARGE = "PAYLOAD_TOO_LARGE"
    VALIDATION_FAILED = "VALIDATION_FAILED"
    ANSWER_INDEX_OUT_OF_RANGE = "ANSWER_INDEX_OUT_OF_RANGE"
    ANSWER_UNNORMALISABLE = "ANSWER_UNNORMALISABLE"
    UNAUTHENTICATED = "UNAUTHENTICATED"
    AUDIENCE_FORBIDDEN = "AUDIENCE_FORBIDDEN"
    JOB_KIND_FORBIDDEN = "JOB_KIND_FORBIDDEN"
    TENANT_SCOPE_MISMATCH = "TENANT_SCOPE_MISMATCH"
    RESPONDER_ASSERTION_FORBIDDEN = "RESPONDER_ASSERTION_FORBIDDEN"
    PRINCIPAL_REQUIRED = "PRINCIPAL_REQUIRED"
    STEWARD_OVERRIDE_FORBIDDEN = "STEWARD_OVERRIDE_FORBIDDEN"
    STEWARD_REQUIRED = "STEWARD_REQUIRED"
    CLARIFICATION_NOT_FOUND = "CLARIFICATION_NOT_FOUND"
    JOB_NOT_FOUND = "JOB_NOT_FOUND"
    PERSON_NOT_FOUND = "PERSON_NOT_FOUND"
    FACT_NOT_FOUND = "FACT_NOT_FOUND"
    ROUTE_NOT_FOUND = "ROUTE_NOT_FOUND"
    METHOD_NOT_ALLOWED = "METHOD_NOT_ALLOWED"
    CLARIFY_ALREADY_ANSWERED = "CLARIFY_ALREADY_ANSWERED"
    STEWARD_OVERRIDE_NOT_ALLOWED = "STEWARD_OVERRIDE_NOT_ALLOWED"
    ALIAS_AMBIGUOUS = "ALIAS_AMBIGUOUS"
    LEASE_MISMATCH = "LEASE_MISMATCH"
    LEASE_EXPIRED = "LEASE_EXPIRED"
    ATTEMPTS_EXHAUSTED = "ATTEMPTS_EXHAUSTED"
    RATE_LIMITED = "RATE_LIMITED"
    INTERNAL = "INTERNAL"
    UNAVAILABLE = "UNAVAILABLE"


# status and the default, value-free message of each code: the single table both the
# reference core (to answer) and the docs (to explain) read.
ERROR_TABLE: dict[ErrorCode, tuple[int, str]] = {
    ErrorCode.MALFORMED_BODY: (400, "The request body is not valid JSON."),
    ErrorCode.PAYLOAD_TOO_LARGE: (413, "The request body is too large."),
    ErrorCode.VALIDATION_FAILED: (422, "The request does not match the contract."),
    ErrorCode.ANSWER_INDEX_OUT_OF_RANGE: (422, "The answer index names no candidate."),
    ErrorCode.ANSWER_UNNORMALISABLE: (
        422,
        "The free-form answer could not be normalised to a valid interval; nothing was recorded.",
    ),
    ErrorCode.UNAUTHENTICATED: (401, "A valid bearer token is required."),
    ErrorCode.AUDIENCE_FORBIDDEN: (403, "This token's audience may not call this endpoint."),
    ErrorCode.JOB_KIND_FORBIDDEN: (403, "This token's audience may not lease these job kinds."),
    ErrorCode.TENANT_SCOPE_MISMATCH: (403, "The request is outside this token's tenant scope."),
    ErrorCode.RESPONDER_ASSERTION_FORBIDDEN: (
        403,
        "Only a clarify-audience token may assert a responder, rights, a chat channel or a "
        "message reference; nothing was recorded.",
    ),
    ErrorCode.PRINCIPAL_REQUIRED: (403, "This API key is bound to no principal and cannot answer."),
    ErrorCode.STEWARD_OVERRIDE_FORBIDDEN: (403, "Only a steward may submit a steward override."),
    ErrorCode.STEWARD_REQUIRED: (403, "Only an API key bound to a steward may do this."),
    ErrorCode.CLARIFICATION_NOT_FOUND: (404, "No such clarification."),
    ErrorCode.JOB_NOT_FOUND: (404, "No such job."),
    ErrorCode.PERSON_NOT_FOUND: (404, "No such person in this tenant."),
    ErrorCode.FACT_NOT_FOUND: (404, "No such fact."),
    ErrorCode.ROUTE_NOT_FOUND: (404, "No such endpoint."),
    ErrorCode.METHOD_NOT_ALLOWED: (405, "This method is not allowed on this endpoint."),
    ErrorCode.CLARIFY_ALREADY_ANSWERED: (
        409,
        "This clarification is already answered; the policy takes no further agreeing responses.",
    ),
    ErrorCode.STEWARD_OVERRIDE_NOT_ALLOWED: (
        409,
        "The tenant's policy does not allow a steward override in this state.",
    ),
    ErrorCode.ALIAS_AMBIGUOUS: (409, "The chat identity maps to more than one person."),
    ErrorCode.LEASE_MISMATCH: (409, "The lease token does not hold this job."),
    ErrorCode.LEASE_EXPIRED: (409, "The lease on this job has expired."),
    ErrorCode.ATTEMPTS_EXHAUSTED: (409, "The job cannot advance past its last attempt."),
    ErrorCode.RATE_LIMITED: (429, "Too many requests; retry later."),
    ErrorCode.INTERNAL: (500, "The core failed to handle the request."),
    ErrorCode.UNAVAILABLE: (503, "The core is temporarily unavailable."),
}


def status_of(code: ErrorCode) -> int:
    return ERROR_TABLE[code][0]


def message_of(code: ErrorCode) -> str:
    return ERROR_TABLE[code][1]


class CoreError(Exception):
    """Root of every error the core client raises."""

    # the contract's operation id of the call that failed ("" where none was made)
    operation: str = ""


class ExtensionUnavailable(CoreError):
    """The call belongs to an extension of the contract that the core does not offer (docs/
    core-contract.md, "Extensions"): the caller uses the extension's fallback."""

    def __init__(self, extension: str) -> None:
        super().__init__(f"The core does not offer the {extension} extension.")
        self.extension = extension


class CoreTransportError(CoreError):
    """The request did not complete: connection refused, reset or timed out."""


class CoreTimeout(CoreTransportError):
    pass


class CoreConnectError(CoreTransportError):
    pass


class CoreAPIError(CoreError):
    """The core answered with a documented error body."""

    status: int = 0
    code: str = ""

    def __init__(
        self,
        *,
        status: int,
        code: str,
        message: str,
        retry_after: float | None = None,
        rules: tuple[str, ...] = (),
    ) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.retry_after = retry_after
        # a validation error's rule codes (``details[].rule``: "unknown_field", ...), value-free
        self.rules = rules


class InvalidRequest(CoreAPIError):
    pass


class MalformedBody(InvalidRequest):
    pass


class PayloadTooLarge(InvalidRequest):
    pass


class ValidationFailed(InvalidRequest):
    pass


class AnswerIndexOutOfRange(InvalidRequest):
    pass


class AnswerUnnormalisable(InvalidRequest):
    pass


class AuthenticationFailed(CoreAPIError):
    pass


class PermissionDenied(CoreAPIError):
    pass


class AudienceForbidden(PermissionDenied):
    pass


class JobKindForbidden(PermissionDenied):
    pass


class TenantScopeMismatch(PermissionDenied):
    pass


class ResponderAssertionForbidden(PermissionDenied):
    pass


class PrincipalRequired(PermissionDenied):
    pass


class StewardOverrideForbidden(PermissionDenied):
    pass


class StewardRequired(PermissionDenied):
    pass


class NotFound(CoreAPIError):
    pass


class ClarificationNotFound(NotFound):
    pass


class JobNotFound(NotFound):
    pass


class PersonNotFound(NotFound):
    pass


class FactNotFound(NotFound):
    pass


class RouteNotFound(NotFound):
    pass


class MethodNotAllowed(CoreAPIError):
    pass


class Conflict(CoreAPIError):
    pass


class AlreadyAnswered(Conflict):
    pass


class StewardOverrideNotAllowed(Conflict):
    pass


class AliasAmbiguous(Conflict):
    pass


class LeaseMismatch(Conflict):
    pass


class LeaseExpired(Conflict):
    pass


class AttemptsExhausted(Conflict):
    pass


class RateLimited(CoreAPIError):
    pass


class ServerError(CoreAPIError):
    pass


class Internal(ServerError):
    pass


class Unavailable(ServerError):
    pass


class UnexpectedResponse(CoreAPIError):
    """A success status whose body does not match the contract (or a status it never uses).
    ``operation`` names the call; ``fields`` the places in the body the reader could not read
    (schema paths such as ``jobs.0.leaseToken``: field names and list indices, never values)."""

    def __init__(self, *, status: int, code: str, message: str, operation: str = "",
                 fields: tuple[str, ...] = ()) -> None:
        super().__init__(status=status, code=code, message=message)
        self.operation = operation
        self.fields = fields


EXCEPTION_FOR_CODE: dict[ErrorCode, type[CoreAPIError]] = {
    ErrorCode.MALFORMED_BODY: MalformedBody,
    ErrorCode.PAYLOAD_TOO_LARGE: PayloadTooLarge,
    ErrorCode.VALIDATION_FAILED: ValidationFailed,
    ErrorCode.ANSWER_INDEX_OUT_OF_RANGE: AnswerIndexOutOfRange,
    ErrorCode.ANSWER_UNNORMALISABLE: AnswerUnnormalisable,
    ErrorCode.UNAUTHENTICATED: AuthenticationFailed,
    ErrorCode.AUDIENCE_FORBIDDEN: AudienceForbidden,
    ErrorCode.JOB_KIND_FORBIDDEN: JobKindForbidden,
    ErrorCode.TENANT_SCOPE_MISMATCH: TenantScopeMismatch,
    ErrorCode.RESPONDER_ASSERTION_FORBIDDEN: ResponderAssertionForbidden,
    ErrorCode.PRINCIPAL_REQUIRED: PrincipalRequired,
    ErrorCode.STEWARD_OVERRIDE_FORBIDDEN: StewardOverrideForbidden,
    ErrorCode.STEWARD_REQUIRED: StewardRequired,
    ErrorCode.CLARIFICATION_NOT_FOUND: ClarificationNotFound,
    ErrorCode.JOB_NOT_FOUND: JobNotFound,
    ErrorCode.PERSON_NOT_FOUND: PersonNotFound,
    ErrorCode.FACT_NOT_FOUND: FactNotFound,
    ErrorCode.ROUTE_NOT_FOUND: RouteNotFound,
    ErrorCode.METHOD_NOT_ALLOWED: MethodNotAllowed,
    ErrorCode.CLARIFY_ALREADY_ANSWERED: AlreadyAnswered,
    ErrorCode.STEWARD_OVERRIDE_NOT_ALLOWED: StewardOverrideNotAllowed,
    ErrorCode.ALIAS_AMBIGUOUS: AliasAmbiguous,
    ErrorCode.LEASE_MISMATCH: LeaseMismatch,
    ErrorCode.LEASE_EXPIRED: LeaseExpired,
    ErrorCode.ATTEMPTS_EXHAUSTED: AttemptsExhausted,
    ErrorCode.RATE_LIMITED: RateLimited,
    ErrorCode.INTERNAL: Internal,
    ErrorCode.UNAVAILABLE: Unavailable,
}

_EXCEPTION_FOR_STATUS: dict[int, type[CoreAPIError]] = {
    400: InvalidRequest,
    401: AuthenticationFailed,
    403: PermissionDenied,
    404: NotFound,
    405: MethodNotAllowed,
    409: Conflict,
    413: InvalidRequest,
    422: InvalidRequest,
    429: RateLimited,
}


def exception_for(*, status: int, code: str) -> type[CoreAPIError]:
    """The most specific exception class for an error answer."""
    try:
        return EXCEPTION_FOR_CODE[ErrorCode(code)]
    except ValueError:
        pass
    if status >= 500:
        return ServerError
    return _EXCEPTION_FOR_STATUS.get(status, CoreAPIError)
