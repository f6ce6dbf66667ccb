"""The wire base of every contract body, its id and text types, and the error body.

Requests forbid unknown fields (an old core rejects an additive field loudly instead of
dropping it); responses ignore unknown fields so that the core can grow additively.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AwareDatetime, BaseModel, BeforeValidator, ConfigDict, Field
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from bot.core.errors import ErrorCode

Id = Annotated[str, Field(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9._:@-]+$")]
ShortText = Annotated[str, Field(max_length=200)]

_DATE_TIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt].+")


def _rfc3339_shape(raw: object) -> object:
    """RFC 3339 text first: pydantic alone reads 1700000000 or "1700000000" as epoch seconds."""
    if isinstance(raw, (int, float)) or (isinstance(raw, str) and not _DATE_TIME.fullmatch(raw)):
        raise PydanticCustomError("datetime_parsing", "not an RFC 3339 date-time")
    return raw


# An aware date-time given as RFC 3339 text (the published schema stays string/date-time)
Rfc3339 = Annotated[AwareDatetime, BeforeValidator(_rfc3339_shape)]


class WireModel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")

    def wire(self) -> dict[str, object]:
        """The JSON-ready camelCase body, without absent optionals."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class RequestModel(WireModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class ValidationIssue(WireModel):
    """One failed rule: a path of the contract's schema and a code, never the value sent."""

    loc: list[str | int] = Field(
        description="Field path in the schema; an unknown field is reported at its parent.")
    msg: str
    rule: str | None = Field(default=None, description=(
        "required, unknown_field, type, format, enum, pattern, too_small, too_large, too_short, "
        "too_long, exactly_one, policy, reference or invalid."))


class ErrorBody(WireModel):
    code: ErrorCode
    message: str
    status: int
    details: list[ValidationIssue] | None = None
