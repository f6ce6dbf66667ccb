"""The wire base of every contract body, its id and text types, and the error body.

Requests forbid unknown fields (an old core rejects an additive field loudly instead of
dropping it); responses ignore unknown fields so that the core can grow additively.

The baseline and what lies beyond it are marked on the fields themselves, so the published
document, the reference core's baseline mode and the bot's tolerant reader share one source:

- ``additive(...)``: a response field beyond the baseline contract (docs/core-contract.md,
  "The baseline"). It always has a default: a core that leaves it out conforms.
- ``extension_field(name, ...)``: a request field that belongs to a named extension; the client
  sends it only while the core offers that extension (``bot.core.extensions``).
- ``lenient(Enum, fallback)``, ``lenient_list(Enum)`` and ``tolerant_items(Model)``: what the
  tolerant reader (``bot.core.tolerance``) does when an answer does not parse: an enum value it
  does not know reads as ``fallback``, is dropped from a list, or a list entry that does not parse
  is dropped. They are markers only: parsing an answer that parses costs nothing extra.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Any

from pydantic import AwareDatetime, BaseModel, BeforeValidator, ConfigDict, Field
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from bot.core.errors import ErrorCode

Id = Annotated[str, Field(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9._:@-]+$")]
ShortText = Annotated[str, Field(max_length=200)]

ADDITIVE = "x-additive"
EXTENSION = "x-extension"


def additive(default: Any = None, *, description: str | None = None, **more: Any) -> Any:
    """A response field beyond the baseline: optional, with ``default`` when absent."""
    return Field(default=default, description=description,
                 json_schema_extra={ADDITIVE: True}, **more)


def extension_field(name: str, default: Any = None, *, description: str | None = None,
                    **more: Any) -> Any:
    """A request field of the extension ``name``: sent only while the core offers it."""
    return Field(default=default, description=description,
                 json_schema_extra={EXTENSION: name}, **more)


def _marks(field: Any) -> dict[str, Any]:
    extra = field.json_schema_extra
    return extra if isinstance(extra, dict) else {}


def is_additive(field: Any) -> bool:
    return bool(_marks(field).get(ADDITIVE))


def extension_of(field: Any) -> str | None:
    found = _marks(field).get(EXTENSION)
    return found if isinstance(found, str) else None


# how the published document says that a core may send values beyond the enum, and what the
# bot reads them as (the property test of the tolerant reader generates them from these marks)
UNKNOWN_READS_AS = "x-unknown-reads-as"
UNKNOWN_ITEMS = "x-unknown-items"


@dataclass(frozen=True, slots=True)
class Lenient:
    """An enum value the bot does not know reads as ``fallback`` (None: no value)."""

    enum: type[StrEnum]
    fallback: StrEnum | None

    def __get_pydantic_json_schema__(self, core_schema: Any, handler: Any) -> dict[str, Any]:
        schema: dict[str, Any] = handler(core_schema)
        schema[UNKNOWN_READS_AS] = None if self.fallback is None else self.fallback.value
        return schema


@dataclass(frozen=True, slots=True)
class LenientList:
    """A list of enum values whose unknown ones are dropped (an unknown role admits nobody)."""

    enum: type[StrEnum]

    def __get_pydantic_json_schema__(self, core_schema: Any, handler: Any) -> dict[str, Any]:
        schema: dict[str, Any] = handler(core_schema)
        schema[UNKNOWN_ITEMS] = "dropped"
        return schema


@dataclass(frozen=True, slots=True)
class Tolerant:
    """A list whose entries that do not parse are dropped, the rest kept."""


def lenient[E: StrEnum](enum: type[E], fallback: E | None) -> Lenient:
    """Choose the fallback that grants least (docs/core-contract.md, "A tolerant reader")."""
    return Lenient(enum, fallback)


def lenient_list[E: StrEnum](enum: type[E]) -> LenientList:
    return LenientList(enum)


def tolerant_items(model: type[BaseModel]) -> Tolerant:
    return Tolerant()


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
