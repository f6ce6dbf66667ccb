"""The tolerant reader: a core's answer that does not parse is repaired where the models say how,
never refused for what the bot can do without.

Parsing is pydantic's, in Rust, as fast as a strict parse; only an answer that fails it takes the
slow path here: the errors' locations are walked against the model, and

- an enum value the bot does not know, on a field marked ``lenient(Enum, fallback)``, is read as
  the fallback (the value that grants least; None for an optional field);
- an unknown value in a list marked ``lenient_list(Enum)`` is dropped (an unknown role admits
  nobody);
- an entry of a list marked ``tolerant_items`` that does not parse is dropped, the rest kept
  (one bad job in a poll does not cost the others);

then the answer is parsed again. Whatever cannot be repaired that way fails as before
(``UnexpectedResponse`` in the client). Each repair is counted by kind and model or enum name,
never by value (``clarify_core_tolerated_total``).

Unknown fields are ignored and missing optional ones take their defaults on every parse (the
models say so); they are counted on one answer in ``SAMPLE`` of each model (a walk of the
parsed JSON would otherwise cost every answer more than its parse): the counter says that a core
sends them, not how often.
"""

from __future__ import annotations

import json
import types
import typing
from typing import Any

from pydantic import BaseModel, ValidationError

from bot.core.instruments import INSTRUMENTS
from bot.core.models.wire import Lenient, LenientList, Tolerant

SAMPLE = 64
MAX_REPAIRS = 100  # repairs (each followed by a parse) before the answer is given up on

_seen: dict[type[BaseModel], int] = {}


def tolerated(kind: str, name: str) -> None:
    """Counted (``bot.core.instruments``): kind is "unknown_field", "absent_field",
    "unknown_value" or "bad_entry"; name is a model's or an enum's class name."""
    INSTRUMENTS.tolerated(kind, name)


def read_json[T: BaseModel](model: type[T], content: bytes) -> T:
    """``model`` from a core's answer: the plain parse, else the repaired one."""
    try:
        parsed = model.model_validate_json(content)
    except ValidationError as exc:
        try:
            data = json.loads(content)
        except (ValueError, RecursionError):
            raise exc from None
        return _repaired(model, data, exc)
    count = _seen.get(model, 0)
    _seen[model] = count + 1
    if count % SAMPLE == 0:
        try:
            count_fields(model, json.loads(content))
        except (ValueError, RecursionError):
            pass
    return parsed


def read_python[T: BaseModel](model: type[T], data: Any) -> T:
    """``read_json`` for a body already decoded."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        return _repaired(model, data, exc)


def _repaired[T: BaseModel](model: type[T], data: Any, error: ValidationError) -> T:
    """One repair at a time, each followed by a parse (a dropped entry moves the others)."""
    for _ in range(MAX_REPAIRS):
        errors = error.errors(include_input=False, include_url=False)
        if not any(_safely_repaired(model, data, e["loc"]) for e in errors):
            raise error
        try:
            return model.model_validate(data)
        except ValidationError as again:
            error = again
    raise error


# ---------------------------------------------------------------- one repair


def _safely_repaired(model: type[BaseModel], data: Any, loc: tuple[Any, ...]) -> bool:
    try:
        return _repair(model, data, loc)
    except (TypeError, KeyError, IndexError, AttributeError):  # a body of any odd shape
        return False


def _repair(model: type[BaseModel], data: Any, loc: tuple[Any, ...]) -> bool:
    """Repair the value at ``loc`` if a mark says how; True when something changed."""
    node: Any = data
    cls: type[BaseModel] | None = model
    tolerant: tuple[list[Any], int, str] | None = None  # the innermost tolerant list entry
    parent: Any = None
    key: Any = None
    marks: list[Any] = []
    annotation: Any = None
    for part in loc:
        if isinstance(part, int) and isinstance(node, list) and 0 <= part < len(node):
            if any(isinstance(mark, LenientList) for mark in marks) and part == loc[-1]:
                enum = next(mk.enum for mk in marks if isinstance(mk, LenientList))
                del node[part]
                tolerated("unknown_value", enum.__name__)
                return True
            if any(isinstance(mark, Tolerant) for mark in marks):
                tolerant = (node, part, _element_name(annotation))
            parent, key, node = node, part, node[part]
            annotation = _element(annotation)
            cls = _model_of(annotation)
            marks = []
            continue
        if not isinstance(part, str) or cls is None or not isinstance(node, dict):
            continue  # a union member's or a validator's step in the path
        found = _field(cls, part)
        if found is None:
            break
        alias, field = found
        parent, key = node, alias
        node = node.get(alias)
        annotation, marks = field.annotation, list(field.metadata)
        cls = _model_of(annotation)
    lenient = next((mk for mk in marks if isinstance(mk, Lenient)), None)
    if lenient is not None and isinstance(parent, dict) and isinstance(node, str):
        if lenient.fallback is None:
            parent[key] = None
        else:
            parent[key] = lenient.fallback.value
        tolerated("unknown_value", lenient.enum.__name__)
        return True
    if tolerant is not None:
        entries, index, name = tolerant
        del entries[index]
        tolerated("bad_entry", name)
        return True
    return False


def _field(cls: type[BaseModel], part: str) -> tuple[str, Any] | None:
    for name, field in cls.model_fields.items():
        if part in (field.alias, name):
            return field.alias or name, field
    return None


def _element(annotation: Any) -> Any:
    for arg in typing.get_args(annotation):
        if typing.get_origin(arg) is list or arg is type(None):
            continue
        return arg
    args = typing.get_args(annotation)
    return args[0] if args else None


def _model_of(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    origin = typing.get_origin(annotation)
    if origin is list:
        return None
    if origin is not None or isinstance(annotation, types.UnionType):
        for arg in typing.get_args(annotation):
            found = _model_of(arg)
            if found is not None:
                return found
    return None


def _element_name(annotation: Any) -> str:
    element = _model_of(_element(annotation))
    return element.__name__ if element is not None else "entry"


# ---------------------------------------------------------------- unknown and absent fields


def count_fields(model: type[BaseModel], data: Any) -> None:
    """Count, by model, the unknown and the absent optional fields of an answer's JSON."""
    if not isinstance(data, dict):
        return
    known: set[str] = set()
    absent = False
    for name, field in model.model_fields.items():
        alias = field.alias or name
        known.update((alias, name))
        if alias not in data:
            absent = absent or not field.is_required()
            continue
        inner = _model_of(field.annotation)
        value = data[alias]
        if inner is None:
            inner = _model_of(_element(field.annotation))
        if inner is not None:
            for item in value if isinstance(value, list) else [value]:
                count_fields(inner, item)
    if absent:
        tolerated("absent_field", model.__name__)
    if not known.issuperset(data):
        tolerated("unknown_field", model.__name__)
