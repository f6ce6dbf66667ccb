"""Value-free validation details: a schema path, a rule code and a fixed message, nothing else.

Pydantic's own error text may repeat what the caller sent (an unknown key in ``loc``, a
discriminator tag in ``msg``), and anything the caller sent may be span or answer text. So every
issue is rebuilt here: the location is walked against the model and cut where it stops being a
path of the contract's schema (an unknown field is reported at its parent), the rule comes from a
closed list, and the message only ever quotes the schema's own constraints.
"""

from __future__ import annotations

from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel, ValidationError

MAX_ISSUES = 20

Loc = list[str | int]

# pydantic error type -> (rule, message); "{name}" fields come only from schema-side ctx keys
_CONSTRAINTS: dict[str, tuple[str, str]] = {
    "missing": ("required", "field required"),
    "extra_forbidden": ("unknown_field", "unknown field"),
    "greater_than_equal": ("too_small", "must be at least {ge}"),
    "greater_than": ("too_small", "must be greater than {gt}"),
    "less_than_equal": ("too_large", "must be at most {le}"),
    "less_than": ("too_large", "must be less than {lt}"),
    "string_too_short": ("too_short", "must have at least {min_length} character(s)"),
    "string_too_long": ("too_long", "must have at most {max_length} character(s)"),
    "too_short": ("too_short", "must have at least {min_length} item(s)"),
    "too_long": ("too_long", "must have at most {max_length} item(s)"),
    "string_pattern_mismatch": ("pattern", "must match the pattern {pattern}"),
    "enum": ("enum", "must be one of: {expected}"),
    "literal_error": ("enum", "must be one of: {expected}"),
    "union_tag_invalid": ("enum", "the discriminator must be one of: {expected_tags}"),
    "union_tag_not_found": ("required", "the discriminator {discriminator} is required"),
    "timezone_aware": ("format", "must be an RFC 3339 date-time with an offset"),
    "datetime_parsing": ("format", "must be an RFC 3339 date-time with an offset"),
    "datetime_from_date_parsing": ("format", "must be an RFC 3339 date-time with an offset"),
    "datetime_type": ("format", "must be an RFC 3339 date-time with an offset"),
}
_SCHEMA_CTX = ("ge", "gt", "le", "lt", "min_length", "max_length", "pattern", "expected",
               "expected_tags", "discriminator")
# our own model validators state a rule between fields (their text is ours, never input)
_OWN_RULES = {
    "exactly one of answerIndex and answerCustom is required": "exactly_one",
    "exactly one of advanceSeconds and set is required": "exactly_one",
}


def issues(exc: ValidationError, model: type[BaseModel] | None) -> list[dict[str, Any]]:
    """Value-free ``{loc, rule, msg}`` entries for a failed validation of ``model``."""
    found = []
    for error in exc.errors(include_url=False, include_input=False)[:MAX_ISSUES]:
        found.append(issue(error["type"], tuple(error["loc"]), error.get("ctx") or {}, model))
    return found


def issue(kind: str, loc: tuple[Any, ...], ctx: dict[str, Any],
          model: type[BaseModel] | None) -> dict[str, Any]:
    path = schema_path(loc, model)
    rule, msg = _message(kind, ctx)
    return {"loc": path, "rule": rule, "msg": msg}


def _message(kind: str, ctx: dict[str, Any]) -> tuple[str, str]:
    if kind == "value_error":
        text = str(ctx.get("error", ""))
        if text in _OWN_RULES:
            return _OWN_RULES[text], text
        return "invalid", "invalid value"
    if kind in _CONSTRAINTS:
        rule, template = _CONSTRAINTS[kind]
        safe = {k: ctx.get(k, "") for k in _SCHEMA_CTX}
        return rule, template.format(**safe)
    if kind.endswith(("_type", "_parsing")) or kind in ("int_from_float", "model_attributes_type"):
        return "type", "wrong type"
    return "invalid", "invalid value"


def schema_path(loc: tuple[Any, ...], model: type[BaseModel] | None) -> Loc:
    """The longest prefix of ``loc`` that names a place in the schema (aliases, list indices)."""
    path: Loc = []
    annotation: Any = model
    for part in loc:
        annotation = _unwrap(annotation)
        if isinstance(part, int) and get_origin(annotation) in (list, tuple):
            path.append(part)
            annotation = get_args(annotation)[0]
            continue
        variant = _variant(annotation, part)
        if variant is not None:  # a discriminated union's tag: not a field, go into the variant
            annotation = variant
            continue
        field = _field(annotation, part)
        if field is None:
            break  # from here on the location is the caller's, not the schema's
        path.append(field[0])
        annotation = field[1]
    return path


def _unwrap(annotation: Any) -> Any:
    """``X | None`` and ``Annotated[X, ...]`` as X; a union of models is kept for ``_variant``."""
    while True:
        args = [a for a in get_args(annotation) if a is not type(None)]
        if hasattr(annotation, "__metadata__"):
            annotation = args[0]
        elif get_origin(annotation) is not None and get_origin(annotation) not in (
            list, tuple, dict, Literal
        ) and len(args) == 1:
            annotation = args[0]
        else:
            return annotation


def _field(annotation: Any, part: object) -> tuple[str, Any] | None:
    if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
        return None
    for name, info in annotation.model_fields.items():
        if part in (info.alias or name, name):  # either spelling is a name of the schema
            return str(part), info.annotation
    return None


def _variant(annotation: Any, part: object) -> type[BaseModel] | None:
    """The member of a union of models whose literal tag field has the value ``part``."""
    for option in get_args(annotation):
        if not (isinstance(option, type) and issubclass(option, BaseModel)):
            continue
        for info in option.model_fields.values():
            if get_origin(info.annotation) is Literal and part in get_args(info.annotation):
                return option
    return None


