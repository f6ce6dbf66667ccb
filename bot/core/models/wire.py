"""The wire base of every contract body, its id and text types, and the error body.

Requests forbid unknown fields (an old core rejects an additive field loudly instead of
dropping it); responses ignore unknown fields so that the core can grow additively.

The baseline and what lies beyond it are marked on the fields themselves, so the published
document, the reference core's baseline mode and the bot's tolerant reader share one source:

- ``additive(...)``: a response field beyond the baseline contract (docs/core-contract.md,
  "The baseline"). It always has a default: a core that leaves it out conforms.
- ``extension_field(name, ...)``: a request field that belongs to a named extension; the client
  sends it only while the core offers that extension (``bot.core.extensions``).
- ``lenient(Enum, fallback)``: a response enum that reads a value it does not know as
  ``fallback`` (or drops it from a list) instead of failing the whole answer.

What the reader tolerated while parsing a core's answer (an unknown field, a missing optional
one, an unknown enum value) is counted through ``on_tolerated`` hooks (``bot.metrics`` adds
one), by kind and model or enum name only, never a value.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from enum import StrEnum
from typing import Annotated, Any

from pydantic import (
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationInfo,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from bot.core.errors import ErrorCode

Id = Annotated[str, Field(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9._:@-]+$")]
ShortText = Annotated[str, Field(max_length=200)]

ADDITIVE = "x-additive"
EXTENSION = "x-extension"
# the validation context under which the client parses a core's answer: only then is what the
# reader tolerated counted (the reference core builds the same models from Python values)
FROM_CORE = {"from_core": True}

# called with (kind, name): kind is "unknown_field", "absent_field" or "unknown_value"; name is
# a model's or an enum's class name
on_tolerated: list[Callable[[str, str], None]] = []


def tolerated(kind: str, name: str) -> None:
    for hook in on_tolerated:
        hook(kind, name)


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


def lenient[E: StrEnum](enum: type[E], fallback: E | None) -> BeforeValidator:
    """Read a value ``enum`` does not know as ``fallback`` (counted): a core newer than the bot
    may add a state or a role. Choose the fallback that grants least (docs/core-contract.md,
    "A tolerant reader")."""
    known = frozenset(member.value for member in enum)

    def read(raw: object, info: ValidationInfo) -> object:
        if isinstance(raw, str) and raw not in known:
            if (info.context or {}).get("from_core"):
                tolerated("unknown_value", enum.__name__)
            return fallback
        return raw

    return BeforeValidator(read)


def lenient_list[E: StrEnum](enum: type[E]) -> BeforeValidator:
    """A list of ``enum`` values whose unknown entries are dropped (counted): an unknown role in
    an ACL admits nobody, an unknown reason code is not shown as a known one."""
    known = frozenset(member.value for member in enum)

    def read(raw: object, info: ValidationInfo) -> object:
        if not isinstance(raw, list):
            return raw
        kept = [item for item in raw if not isinstance(item, str) or item in known]
        if len(kept) != len(raw) and (info.context or {}).get("from_core"):
            tolerated("unknown_value", enum.__name__)
        return kept

    return BeforeValidator(read)

_DATE_TIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt].+")


def _rfc3339_shape(raw: object) -> object:
    """RFC 3339 text first: pydantic alone reads 1700000000 or "1700000000" as epoch seconds."""
    if isinstance(raw, (int, float)) or (isinstance(raw, str) and not _DATE_TIME.fullmatch(raw)):
        raise PydanticCustomError("datetime_parsing", "not an RFC 3339 date-time")
    return raw


# An aware date-time given as RFC 3339 text (the published schema stays string/date-time)
Rfc3339 = Annotated[AwareDatetime, BeforeValidator(_rfc3339_shape)]


def tolerant_items(model: type[BaseModel]) -> BeforeValidator:
    """A list of ``model`` from which an entry that does not parse is dropped (counted), so one
    bad entry ahead of good ones does not cost the good ones."""

    def read(raw: object, info: ValidationInfo) -> object:
        if not isinstance(raw, list) or not (info.context or {}).get("from_core"):
            return raw
        kept = []
        for item in raw:
            try:
                model.model_validate(item, context=info.context)
            except ValueError:  # pydantic's ValidationError
                tolerated("bad_entry", model.__name__)
                continue
            kept.append(item)
        return kept

    return BeforeValidator(read)


class WireModel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")

    def wire(self) -> dict[str, object]:
        """The JSON-ready camelCase body, without absent optionals."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)

    @model_validator(mode="before")
    @classmethod
    def _count_tolerated(cls, data: Any, info: ValidationInfo) -> Any:
        """Count (never refuse) unknown and missing optional fields of a core's answer."""
        if not isinstance(data, dict) or not (info.context or {}).get("from_core"):
            return data
        known, optional = _NAMES.get(cls) or _names(cls)
        if not known.issuperset(data):
            tolerated("unknown_field", cls.__name__)
        if not optional.issubset(data):
            tolerated("absent_field", cls.__name__)
        return data


# per model: the names a body may use for its fields (aliases and names), the optional aliases
_NAMES: dict[type[BaseModel], tuple[frozenset[str], frozenset[str]]] = {}


def _names(cls: type[BaseModel]) -> tuple[frozenset[str], frozenset[str]]:
    known: set[str] = set()
    optional: set[str] = set()
    for name, field in cls.model_fields.items():
        alias = field.alias or name
        known.update((name, alias))
        if not field.is_required():
            optional.add(alias)
    _NAMES[cls] = found = (frozenset(known), frozenset(optional))
    return found


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
