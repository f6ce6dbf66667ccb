"""The tolerant reader: a core's answer that does not parse is repaired where the models say how,
never refused for what the bot can do without.

Parsing is pydantic's, in Rust, as fast as a strict parse; only an answer that fails it takes the
slow path here: the errors' locations are walked against the model, and

- an enum value the bot does not know, on a field marked ``lenient(Enum, fallback)``, is read as
  the fallback (the value that grants least; None for an optional field);
- an unknown value in a list marked ``lenient_list(Enum)`` is dropped (an unknown role admits
  nobody);
- null on an optional field that does not take null reads as the field left out (its default,
  or what the bot derives in its place); null for a required list marked ``tolerant_items``
  (a poll's jobs, a page's items, a batch's people) reads as the empty list;
- an entry of a list marked ``tolerant_items`` that does not parse is dropped, the rest kept
  (one bad job in a poll does not cost the others);

then the answer is parsed again. Whatever cannot be repaired that way fails as any answer that does
not parse does (``UnexpectedResponse`` in the client). Each repair is counted by kind and model or
enum name, never by value (``clarify_core_tolerated_total``), and the entries dropped from an answer
are logged once per answer and model with the places in them that did not read (``fields``: schema
paths, never values). A caller that can do something with a dropped entry (the worker, with a job
whose id and lease token still read) asks for them (``dropped``).

Unknown fields are ignored and missing optional ones take their defaults on every parse (the
models say so); they are counted on one answer in ``SAMPLE`` of each model (a walk of the
parsed JSON would otherwise cost every answer more than its parse): the counter says that a core
sends them, not how often.
"""

from __future__ import annotations

import json
import types
import typing
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import structlog
from pydantic import BaseModel, ValidationError

from bot.core.instruments import INSTRUMENTS
from bot.core.models.wire import Lenient, LenientList, Tolerant

log = structlog.get_logger("bot.core.tolerance")

SAMPLE = 64
MAX_REPAIRS = 100  # repairs (each followed by a parse) before the answer is given up on
MAX_FIELDS = 10  # places named in one log line or error

_seen: dict[type[BaseModel], int] = {}


@dataclass(frozen=True, slots=True)
class Dropped:
    """A list entry the reader dropped: its model, where it was, the places in it that did not
    read, and the entry as the core sent it (for the caller to salvage what it can; never
    logged)."""

    model: str
    at: tuple[Any, ...]
    fields: tuple[str, ...]
    entry: Any


def fields_of(locs: Iterable[Sequence[Any]], *, within: Sequence[Any] = ()) -> tuple[str, ...]:
    """Error locations as dotted schema paths (``jobs.0.leaseToken``), relative to ``within``
    when they lie in it; each once, at most ``MAX_FIELDS``. Field names and list indices only:
    the response models hold no mapping whose keys a core chooses."""
    found: dict[str, None] = {}
    for loc in locs:
        if tuple(loc[:len(within)]) != tuple(within):
            continue
        found[".".join(str(part) for part in loc[len(within):]) or "(entry)"] = None
    return tuple(found)[:MAX_FIELDS]


def tolerated(kind: str, name: str) -> None:
    """Counted (``bot.core.instruments``): kind is "unknown_field", "absent_field",
    "unknown_value" or "bad_entry"; name is a model's or an enum's class name."""
    INSTRUMENTS.tolerated(kind, name)


def read_json[T: BaseModel](model: type[T], content: bytes, *,
                            dropped: list[Dropped] | None = None) -> T:
    """``model`` from a core's answer: the plain parse, else the repaired one (the entries it
    dropped are added to ``dropped`` when given)."""
    try:
        parsed = model.model_validate_json(content)
    except ValidationError as exc:
        try:
            data = json.loads(content)
        except (ValueError, RecursionError):
            raise exc from None
        return _repaired(model, data, exc, dropped)
    count = _seen.get(model, 0)
    _seen[model] = count + 1
    if count % SAMPLE == 0:
        try:
            count_fields(model, json.loads(content))
        except (ValueError, RecursionError):
            pass
    return parsed


def read_python[T: BaseModel](model: type[T], data: Any, *,
                              dropped: list[Dropped] | None = None) -> T:
    """``read_json`` for a body already decoded."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        return _repaired(model, data, exc, dropped)


def _repaired[T: BaseModel](model: type[T], data: Any, error: ValidationError,
                            dropped: list[Dropped] | None) -> T:
    """Every repair the errors call for, then a parse; again while a parse finds more (an
    entry's other faults show once its first is mended)."""
    gone: list[Dropped] = []
    for _ in range(MAX_REPAIRS):
        errors = error.errors(include_input=False, include_url=False)
        if not _repair_all(model, data, errors, gone):
            raise error
        try:
            parsed = model.model_validate(data)
        except ValidationError as again:
            error = again
            continue
        _log_dropped(model, gone)
        if dropped is not None:
            dropped.extend(gone)
        return parsed
    raise error


def _repair_all(model: type[BaseModel], data: Any, errors: list[Any],
                gone: list[Dropped]) -> bool:
    """The repairs of one parse's errors, from the last place in the answer to the first, so
    that an entry dropped never moves one still to be mended (a hundred unknown values cost
    one pass, not a hundred parses); a place inside a dropped entry is left with it. True when
    anything was repaired."""
    done = False
    removed: list[tuple[Any, ...]] = []
    seen: set[tuple[Any, ...]] = set()
    for error in sorted(errors, key=lambda e: _order(e["loc"]), reverse=True):
        loc = tuple(error["loc"])
        if loc in seen or any(loc[:len(at)] == at for at in removed):
            continue
        seen.add(loc)
        before = len(gone)
        if _safely_repaired(model, data, loc, gone, errors):
            done = True
            if len(gone) > before:
                removed.append(gone[-1].at)
    return done


def _order(loc: Sequence[Any]) -> tuple[tuple[int, int, str], ...]:
    """A location's place in the answer: list indices in order, field names alike."""
    return tuple((0, part, "") if isinstance(part, int) else (1, 0, str(part)) for part in loc)


def _log_dropped(model: type[BaseModel], gone: list[Dropped]) -> None:
    """One line per answer and model of the entries dropped, with the places that did not read
    (never a value)."""
    by_model: dict[str, list[Dropped]] = {}
    for entry in gone:
        by_model.setdefault(entry.model, []).append(entry)
    for name, entries in by_model.items():
        fields = tuple(dict.fromkeys(f for entry in entries for f in entry.fields))
        log.warning("core.entries_dropped", answer=model.__name__, model=name,
                    count=len(entries), fields=list(fields[:MAX_FIELDS]))


# ---------------------------------------------------------------- one repair


def _safely_repaired(model: type[BaseModel], data: Any, loc: tuple[Any, ...],
                     gone: list[Dropped], errors: list[Any]) -> bool:
    try:
        return _repair(model, data, loc, gone, errors)
    except (TypeError, KeyError, IndexError, AttributeError):  # a body of any odd shape
        return False


def _repair(model: type[BaseModel], data: Any, loc: tuple[Any, ...],
            gone: list[Dropped], errors: list[Any]) -> bool:
    """Repair the value at ``loc`` if a mark says how; True when something changed."""
    node: Any = data
    cls: type[BaseModel] | None = model
    # the innermost tolerant list entry: the list, the index, its model's name, where it is
    tolerant: tuple[list[Any], int, str, tuple[Any, ...]] | None = None
    parent: Any = None
    key: Any = None
    marks: list[Any] = []
    annotation: Any = None
    ended: tuple[type[BaseModel], Any] | None = None  # the model and field the walk ended on
    for depth, part in enumerate(loc):
        if isinstance(part, int) and isinstance(node, list) and 0 <= part < len(node):
            if any(isinstance(mark, LenientList) for mark in marks) and depth == len(loc) - 1:
                enum = next(mk.enum for mk in marks if isinstance(mk, LenientList))
                del node[part]
                tolerated("unknown_value", enum.__name__)
                return True
            if any(isinstance(mark, Tolerant) for mark in marks):
                tolerant = (node, part, _element_name(annotation), loc[:depth + 1])
            parent, key, node = node, part, node[part]
            ended = None
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
        ended = (cls, field)
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
    if node is None and ended is not None and ended[1].is_required() \
            and any(isinstance(mark, Tolerant) for mark in marks) \
            and isinstance(parent, dict) and key in parent:
        # null for a list of entries an answer must hold (a serializer that writes an empty
        # list as null, as Go's nil slice): read as the empty list, as its entries are dropped
        parent[key] = []
        tolerated("absent_field", ended[0].__name__)
        return True
    if node is None and ended is not None and not ended[1].is_required() \
            and isinstance(parent, dict) and key in parent:
        # null where an optional field may be left out (a serializer that writes absent
        # values as null): read as left out, its default or what the bot derives instead
        del parent[key]
        tolerated("absent_field", ended[0].__name__)
        return True
    if tolerant is not None:
        entries, index, name, at = tolerant
        fields = fields_of((e["loc"] for e in errors), within=at)
        gone.append(Dropped(model=name, at=at, fields=fields, entry=entries[index]))
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
