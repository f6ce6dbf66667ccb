"""The baseline contract as data: which fields of a body are beyond it, read from the models'
marks (``additive`` and ``extension_field`` in ``bot.core.models.wire``), and which reason codes
(``bot.core.models.enums.EXTENSION_CODES``).

Three users share it: the reference core's baseline mode (``devcore --contract baseline``)
leaves the marked fields out of its answers (``project``) and refuses a request that carries an
extension's field (``extension_fields``, a 422 as for any unknown field) or an extension's reason
code (``extension_values``, a 422 as for any value outside the enum); the client leaves out the
fields of extensions the core does not offer (``strip``) and sends the spec's code in place of
an extension's (``swap_values``).
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable, Iterator
from typing import Any

from pydantic import BaseModel

from bot.core.models.enums import EXTENSION_CODES, ReasonCode
from bot.core.models.wire import extension_of, is_additive

# an extension's code -> (its extension, the spec's code in its place), by wire value
_CODES: dict[str, tuple[str, str]] = {code.value: (ext, fallback.value)
                                      for code, (ext, fallback) in EXTENSION_CODES.items()}


def project(model: BaseModel) -> dict[str, Any]:
    """``model``'s camelCase body with every field beyond the baseline left out."""
    data = model.model_dump(mode="json", by_alias=True, exclude_none=True)
    _drop_marked(model, data)
    return data


def _drop_marked(model: BaseModel, data: dict[str, Any]) -> None:
    for name, field in type(model).model_fields.items():
        alias = field.alias or name
        if alias not in data:
            continue
        if is_additive(field) or extension_of(field) is not None:
            del data[alias]
            continue
        _descend(getattr(model, name), data[alias])


def _descend(value: object, data: object) -> None:
    if isinstance(value, BaseModel) and isinstance(data, dict):
        _drop_marked(value, data)
    elif isinstance(value, list | tuple) and isinstance(data, list):
        for item, dumped in zip(value, data, strict=False):
            _descend(item, dumped)
    elif isinstance(value, dict) and isinstance(data, dict):
        for key, item in value.items():
            if key in data:
                _descend(item, data[key])


def extension_fields(model: type[BaseModel], data: object,
                     loc: tuple[str | int, ...] = ()) -> list[tuple[tuple[str | int, ...], str]]:
    """(parent location, extension) for each extension field present in a request body: a
    baseline core knows none of them."""
    found: list[tuple[tuple[str | int, ...], str]] = []
    if not isinstance(data, dict):
        return found
    for name, field in model.model_fields.items():
        alias = field.alias or name
        if alias not in data and name not in data:
            continue
        value = data.get(alias, data.get(name))
        ext = extension_of(field)
        if ext is not None:
            if value is not None:
                found.append((loc, ext))
            continue
        for inner in _models_in(field.annotation):
            if isinstance(value, list):
                for index, item in enumerate(value):
                    found += extension_fields(inner, item, (*loc, alias, index))
            else:
                found += extension_fields(inner, value, (*loc, alias))
    return found


def strip(model: type[BaseModel], data: dict[str, Any],
          offered: Callable[[str], bool]) -> tuple[dict[str, Any], set[str]]:
    """``data`` without the fields of extensions that ``offered`` says no to, and which
    extensions those were (top-level fields: nested request bodies carry none)."""
    dropped: set[str] = set()
    kept = dict(data)
    for name, field in model.model_fields.items():
        ext = extension_of(field)
        alias = field.alias or name
        if ext is not None and alias in kept and not offered(ext):
            del kept[alias]
            dropped.add(ext)
    return kept, dropped


def extensions_of(model: type[BaseModel]) -> set[str]:
    """Every extension a request model has fields of."""
    return {ext for field in model.model_fields.values()
            if (ext := extension_of(field)) is not None}


def _models_in(annotation: object) -> Iterator[type[BaseModel]]:
    """The models an annotation can hold (through Annotated, unions, lists and dicts)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
        return
    origin = typing.get_origin(annotation)
    if origin is None and not isinstance(annotation, types.UnionType):
        return
    for arg in typing.get_args(annotation):
        yield from _models_in(arg)


def _holds_codes(annotation: object) -> bool:
    """The annotation can hold a reason code (itself, optional, in a list; through Annotated)."""
    if annotation is ReasonCode:
        return True
    return any(_holds_codes(arg) for arg in typing.get_args(annotation))


def values_of(model: type[BaseModel], seen: frozenset[type[BaseModel]] = frozenset()
              ) -> set[str]:
    """Every extension whose reason codes a request model can carry, at any depth."""
    found: set[str] = set()
    for field in model.model_fields.values():
        if _holds_codes(field.annotation):
            found.update(ext for ext, _ in _CODES.values())
        for inner in _models_in(field.annotation):
            if inner not in seen:
                found |= values_of(inner, seen | {model})
    return found


def extension_values(model: type[BaseModel], data: object,
                     loc: tuple[str | int, ...] = ()
                     ) -> list[tuple[tuple[str | int, ...], str]]:
    """(location, extension) for each extension's reason code in a request body: a baseline
    core knows none of them."""
    found: list[tuple[tuple[str | int, ...], str]] = []
    if not isinstance(data, dict):
        return found
    for name, field in model.model_fields.items():
        alias = field.alias or name
        value = data.get(alias, data.get(name))
        if value is None:
            continue
        if _holds_codes(field.annotation):
            values = value if isinstance(value, list) else [value]
            for index, item in enumerate(values):
                if isinstance(item, str) and item in _CODES:
                    where = (*loc, alias, index) if isinstance(value, list) else (*loc, alias)
                    found.append((where, _CODES[item][0]))
            continue
        for inner in _models_in(field.annotation):
            if isinstance(value, list):
                for index, item in enumerate(value):
                    found += extension_values(inner, item, (*loc, alias, index))
            else:
                found += extension_values(inner, value, (*loc, alias))
    return found


def swap_values(model: type[BaseModel], data: dict[str, Any],
                offered: Callable[[str], bool]) -> tuple[dict[str, Any], set[str]]:
    """``data`` with each extension's reason code that ``offered`` says no to replaced by the
    spec's code in its place (a list of codes stays each-once and sorted, a list of entries
    loses an entry the swap made a repeat of another), and the extensions whose codes it still
    carries."""
    carried: set[str] = set()

    def code(value: object) -> object:
        if isinstance(value, str) and value in _CODES:
            ext, fallback = _CODES[value]
            if offered(ext):
                carried.add(ext)
                return value
            return fallback
        return value

    def walk(model: type[BaseModel], data: dict[str, Any]) -> dict[str, Any]:
        out = dict(data)
        for name, field in model.model_fields.items():
            alias = field.alias or name
            if alias not in out or out[alias] is None:
                continue
            value = out[alias]
            if _holds_codes(field.annotation):
                out[alias] = sorted({str(code(v)) for v in value}) if isinstance(value, list) \
                    else code(value)
                continue
            for inner in _models_in(field.annotation):
                if isinstance(value, list):
                    items = [walk(inner, v) if isinstance(v, dict) else v for v in value]
                    out[alias] = [v for n, v in enumerate(items) if v not in items[:n]]
                elif isinstance(value, dict):
                    out[alias] = walk(inner, value)
        return out

    return walk(model, data), carried
