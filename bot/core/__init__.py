"""The Telha core contract and the bot's client for it: models, errors, routes, CoreClient.

The client's names are loaded when first asked for (``bot.core.CoreClient``): importing the
contract's models (as ``cards/`` does) must not load httpx and the client (tests/test_layers.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bot.core import models
from bot.core.errors import (
    AliasAmbiguous,
    AlreadyAnswered,
    AnswerIndexOutOfRange,
    AnswerUnnormalisable,
    AttemptsExhausted,
    AudienceForbidden,
    AuthenticationFailed,
    ClarificationNotFound,
    Conflict,
    CoreAPIError,
    CoreConnectError,
    CoreError,
    CoreTimeout,
    CoreTransportError,
    ErrorCode,
    FactNotFound,
    Internal,
    InvalidRequest,
    JobKindForbidden,
    JobNotFound,
    LeaseExpired,
    LeaseMismatch,
    MalformedBody,
    MethodNotAllowed,
    NotFound,
    PayloadTooLarge,
    PermissionDenied,
    PersonNotFound,
    PrincipalRequired,
    RateLimited,
    ResponderAssertionForbidden,
    RouteNotFound,
    ServerError,
    StewardOverrideForbidden,
    StewardOverrideNotAllowed,
    StewardRequired,
    TenantScopeMismatch,
    Unavailable,
    ValidationFailed,
)

if TYPE_CHECKING:  # loaded at run time only when asked for (__getattr__ below): see above
    from bot.core.client import (
        DEFAULT_TIMEOUT,
        AnswerReceipt,
        CoreClient,
        RetryPolicy,
        UnexpectedResponse,
    )

_CLIENT_NAMES = {"DEFAULT_TIMEOUT", "AnswerReceipt", "CoreClient", "RetryPolicy",
                 "UnexpectedResponse"}


def __getattr__(name: str) -> Any:
    if name in _CLIENT_NAMES:
        from bot.core import client

        return getattr(client, name)
    raise AttributeError(f"module 'bot.core' has no attribute {name!r}")


__all__ = [
    "DEFAULT_TIMEOUT",
    "AlreadyAnswered",
    "AliasAmbiguous",
    "AnswerIndexOutOfRange",
    "AnswerReceipt",
    "AnswerUnnormalisable",
    "AttemptsExhausted",
    "AudienceForbidden",
    "AuthenticationFailed",
    "ClarificationNotFound",
    "Conflict",
    "CoreAPIError",
    "CoreClient",
    "CoreConnectError",
    "CoreError",
    "CoreTimeout",
    "CoreTransportError",
    "ErrorCode",
    "FactNotFound",
    "Internal",
    "InvalidRequest",
    "JobKindForbidden",
    "JobNotFound",
    "LeaseExpired",
    "LeaseMismatch",
    "MalformedBody",
    "MethodNotAllowed",
    "NotFound",
    "PayloadTooLarge",
    "PermissionDenied",
    "PersonNotFound",
    "PrincipalRequired",
    "RateLimited",
    "ResponderAssertionForbidden",
    "RetryPolicy",
    "RouteNotFound",
    "ServerError",
    "StewardOverrideForbidden",
    "StewardOverrideNotAllowed",
    "StewardRequired",
    "TenantScopeMismatch",
    "UnexpectedResponse",
    "Unavailable",
    "ValidationFailed",
    "models",
]
