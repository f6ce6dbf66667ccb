"""The baseline contract as data: which fields of a body are beyond it, read from the models'
marks (``additive`` and ``extension_field`` in ``bot.core.models.wire``).

Three users share it: the reference core's baseline mode (``devcore --contract baseline``)
leaves the marked fields out of its answers (``project``) and refuses a request that carries an
extension's field (``extension_fields``, a 422 as for any unknown field); the client leaves out
the fields of extensions the core does not offer (``strip``).
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable, Iterator
from typing import Any

from pydantic import BaseModel

from bot.core.models.wire import extension_of, is_additive


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
