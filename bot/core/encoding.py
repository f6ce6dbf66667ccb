"""A route's request as it is sent: the path with its values quoted, the query, and the body's
bytes without the fields of extensions the core does not offer, and with the spec's reason code
in place of an extension's the core does not offer (``bot.core.baseline.swap_values``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from enum import Enum
from typing import Any
from urllib.parse import quote

from bot.core import baseline
from bot.core.http import encode
from bot.core.models import WireModel
from bot.core.routes import Route


def body_of(body: WireModel | Mapping[str, Any], offered: Callable[[str], bool]
            ) -> tuple[bytes, set[str]]:
    """The request's bytes without the fields of extensions not ``offered`` (and the spec's
    reason code in place of theirs), and the extensions whose fields or codes it still
    carries."""
    if not isinstance(body, WireModel):
        return encode(body), set()
    model = type(body)
    extensions = _EXTENSIONS.get(model)
    if extensions is None:
        extensions = _EXTENSIONS[model] = frozenset(baseline.extensions_of(model)
                                                    | baseline.values_of(model))
    if not extensions:
        if model.wire is WireModel.wire:  # what wire() holds, serialised by pydantic at once
            return body.model_dump_json(by_alias=True, exclude_none=True).encode(), set()
        return encode(body.wire()), set()
    data, _ = baseline.strip(model, body.wire(), offered)
    data, carried = baseline.swap_values(model, data, offered)
    sent = ({ext for ext in extensions if offered(ext)} & _present(model, data)) | carried
    return encode(data), sent


_EXTENSIONS: dict[type[WireModel], frozenset[str]] = {}


def _present(model: type[WireModel], data: dict[str, Any]) -> set[str]:
    """The extensions whose fields ``data`` carries."""
    return {ext for _, ext in baseline.extension_fields(model, data)}


def build_path(r: Route, params: Mapping[str, str]) -> str:
    for value in params.values():
        # "." and ".." would be collapsed by URL normalisation and reach another route
        if value in ("", ".", ".."):
            raise ValueError(f"{r.operation_id}: a path parameter cannot be empty, '.' or '..'")
    return r.path.format(**{k: quote(v, safe="") for k, v in params.items()})


def build_query(r: Route, query: Mapping[str, object]) -> dict[str, str]:
    unknown = set(query) - set(r.query)
    if unknown:
        raise ValueError(f"{r.operation_id} takes no query parameter {sorted(unknown)}")
    return {k: _query_value(v) for k, v in query.items() if v is not None}


def _query_value(value: object) -> str:
    if isinstance(value, Enum):
        return str(value.value)
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValueError("a time in a query must be timezone-aware")
        return value.isoformat()
    return str(value)
