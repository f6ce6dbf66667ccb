"""The wire base of every contract body, its id and text types, and the error body.

Requests forbid unknown fields (an old core rejects an additive field loudly instead of
dropping it); responses ignore unknown fields so that the core can grow additively.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from bot.core.errors import ErrorCode

Id = Annotated[str, Field(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9._:@-]+$")]
ShortText = Annotated[str, Field(max_length=200)]


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
