"""Answers the contract describes, generated from the committed OpenAPI document, and the ways a
core may grow them.

``answer(name)`` draws a valid instance of a component schema (every optional field present or
left out at random; free text never empty, as a name left empty is shown as its id by design).
``sites`` walks an instance beside its schema and finds every place a newer core could put
something the bot does not know: an object that could carry an unknown field, an enum value the
document marks ``x-unknown-reads-as`` (a fallback) or an enum list it marks ``x-unknown-items``.
``grown`` puts an unknown field in every object and an unknown value in every such place;
``expected`` is the same answer with each unknown value replaced by what the document says the
bot reads it as.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from typing import Any

from hypothesis import strategies as st

from bot.core.models.wire import UNKNOWN_ITEMS, UNKNOWN_READS_AS
from bot.core.openapi import CONTRACT_PATH

DOCUMENT: dict[str, Any] = json.loads(CONTRACT_PATH.read_text(encoding="utf-8"))
SCHEMAS: dict[str, Any] = DOCUMENT["components"]["schemas"]
_REF = "#/components/schemas/"
UNKNOWN = "zz_grown_by_a_newer_core"  # no enum of the contract has it

Path = tuple[str | int, ...]


def answer_schemas() -> dict[str, str]:
    """Every 2xx JSON answer of the document: operation id -> component schema name."""
    found: dict[str, str] = {}
    for item in DOCUMENT["paths"].values():
        for op in item.values():
            for status, response in op["responses"].items():
                schema = response.get("content", {}).get("application/json", {}).get("schema")
                if status.startswith("2") and schema and "$ref" in schema:
                    found[op["operationId"]] = schema["$ref"].removeprefix(_REF)
    return found


def resolved(schema: dict[str, Any]) -> dict[str, Any]:
    """A schema with its ``$ref`` followed; the keys beside the reference (a property's
    ``x-unknown-reads-as``, its default) kept."""
    while "$ref" in schema:
        beside = {k: v for k, v in schema.items() if k != "$ref"}
        schema = {**SCHEMAS[schema["$ref"].removeprefix(_REF)], **beside}
    return schema


# ---------------------------------------------------------------- generating

_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")),
                min_size=1, max_size=12)
_instants = st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1),
                         timezones=st.just(UTC)).map(
    lambda d: d.isoformat().replace("+00:00", "Z"))
# what an unknown field carries: any JSON, nested
_junk: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=6)


@cache
def answer(name: str) -> st.SearchStrategy[Any]:
    """A valid instance of the component schema ``name``."""
    return st.deferred(lambda: value(SCHEMAS[name]))


def value(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    if "$ref" in schema:
        return answer(schema["$ref"].removeprefix(_REF))
    for union in ("anyOf", "oneOf"):
        if union in schema:
            return st.one_of([value(branch) for branch in schema[union]])
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kind = schema.get("type")
    if kind == "object":
        return _object(schema)
    if kind == "array":
        return st.lists(value(schema.get("items", {})), min_size=schema.get("minItems", 0),
                        max_size=min(schema.get("maxItems", 3), 3))
    if kind == "string":
        return _string(schema)
    if kind == "integer":
        return st.integers(schema.get("minimum", -1000), schema.get("maximum", 1000))
    if kind == "number":
        return st.floats(schema.get("minimum", -1000.0), schema.get("maximum", 1000.0),
                         allow_nan=False)
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    return _junk  # a schema that says nothing: anything


def _object(schema: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    props = schema.get("properties", {})
    required = set(schema.get("required", []))
    return st.fixed_dictionaries(
        {k: value(v) for k, v in props.items() if k in required},
        optional={k: value(v) for k, v in props.items() if k not in required})


def _string(schema: dict[str, Any]) -> st.SearchStrategy[str]:
    if schema.get("format") == "date-time":
        return _instants
    low, high = max(schema.get("minLength", 1), 1), min(schema.get("maxLength", 12), 12)
    if "pattern" in schema:
        return st.from_regex(schema["pattern"], fullmatch=True).filter(
            lambda s: low <= len(s) <= schema.get("maxLength", 200))
    return st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")),
                   min_size=low, max_size=max(high, low))


# ---------------------------------------------------------------- where a core may grow


@dataclass(frozen=True, slots=True)
class Site:
    kind: str  # "object" (an unknown field fits), "value" (an enum value), "items" (enum list)
    path: Path
    known: frozenset[str] = frozenset()  # an object's fields, to name an unknown one apart
    reads_as: Any = None  # what the bot reads an unknown value as (a "value" site)


def sites(instance: Any, schema: dict[str, Any], path: Path = ()) -> list[Site]:
    """Every place of ``instance`` where a core may send what the bot does not know."""
    marks = schema
    schema = _branch(instance, resolved(schema))
    found: list[Site] = []
    if UNKNOWN_READS_AS in marks and isinstance(instance, str):
        found.append(Site("value", path, reads_as=marks[UNKNOWN_READS_AS]))
    if marks.get(UNKNOWN_ITEMS) == "dropped" and isinstance(instance, list):
        found.append(Site("items", path))
    if isinstance(instance, dict) and "properties" in schema:
        props = schema["properties"]
        found.append(Site("object", path, known=frozenset(props)))
        for key, inner in instance.items():
            found += sites(inner, props[key], (*path, key))
    elif isinstance(instance, list):
        for index, inner in enumerate(instance):
            found += sites(inner, schema.get("items", {}), (*path, index))
    return found


def _branch(instance: Any, schema: dict[str, Any]) -> dict[str, Any]:
    """The branch of a union the instance was drawn from (by its JSON type, or its tag)."""
    for union in ("anyOf", "oneOf"):
        if union not in schema:
            continue
        tag = schema.get("discriminator", {}).get("propertyName")
        for branch in schema[union]:
            candidate = resolved(branch)
            if tag is not None and isinstance(instance, dict):
                if candidate["properties"][tag].get("const", candidate["properties"][tag].get(
                        "enum", [None])[0]) == instance.get(tag):
                    return _branch(instance, candidate)
            elif _json_type(instance) in _types(candidate):
                return _branch(instance, candidate)
    return schema


def _types(schema: dict[str, Any]) -> set[str]:
    kind = schema.get("type")
    if kind is None and "enum" in schema:
        return {"string"}
    if kind == "number":
        return {"number", "integer"}
    return {kind} if kind else set()


def _json_type(instance: Any) -> str:
    for kind, types in (("null", type(None)), ("boolean", bool), ("integer", int),
                        ("number", float), ("string", str), ("array", list),
                        ("object", dict)):
        if isinstance(instance, types):
            return kind
    raise TypeError(type(instance))


# ---------------------------------------------------------------- growing an answer


def grown(instance: Any, found: list[Site], junk: list[Any], slots: list[int]) -> Any:
    """``instance`` with an unknown field in every object (carrying ``junk``), an unknown value
    in every marked enum and one unknown item in every marked enum list (at ``slots``)."""
    out = copy.deepcopy(instance)
    for n, site in enumerate(found):
        node = _at(out, site.path)
        if site.kind == "object":
            node[_unknown_name(site.known)] = junk[n % len(junk)] if junk else None
        elif site.kind == "items":
            node.insert(slots[n % len(slots)] % (len(node) + 1) if slots else 0, UNKNOWN)
    for site in found:  # values last: setting one never moves a path another site names
        if site.kind == "value":
            parent = _at(out, site.path[:-1])
            parent[site.path[-1]] = UNKNOWN
    return out


def expected(instance: Any, found: list[Site]) -> Any:
    """``instance`` as the bot should read its grown form: each unknown value as the value the
    document says it reads as; unknown fields and unknown list items gone."""
    out = copy.deepcopy(instance)
    for site in found:
        if site.kind == "value":
            _at(out, site.path[:-1])[site.path[-1]] = site.reads_as
    return out


def without_optionals(instance: Any, schema: dict[str, Any]) -> Any:
    """``instance`` with every field its schema does not require left out, at every depth."""
    schema = _branch(instance, resolved(schema))
    if isinstance(instance, dict) and "properties" in schema:
        required = set(schema.get("required", []))
        return {k: without_optionals(v, schema["properties"][k])
                for k, v in instance.items() if k in required}
    if isinstance(instance, list):
        return [without_optionals(v, schema.get("items", {})) for v in instance]
    return instance


def with_nulls(instance: Any, schema: dict[str, Any]) -> Any:
    """``instance`` with every optional field it leaves out sent as null instead, at every
    depth (as a core whose serializer writes absent values as null sends it)."""
    schema = _branch(instance, resolved(schema))
    if isinstance(instance, dict) and "properties" in schema:
        required = set(schema.get("required", []))
        out = {k: with_nulls(v, schema["properties"][k]) for k, v in instance.items()}
        out.update({k: None for k in schema["properties"] if k not in out and k not in required})
        return out
    if isinstance(instance, list):
        return [with_nulls(v, schema.get("items", {})) for v in instance]
    return instance


def leaves(instance: Any, path: Path = ()) -> list[tuple[Path, Any]]:
    """Every scalar of ``instance`` with its path."""
    if isinstance(instance, dict):
        return [leaf for k, v in instance.items() for leaf in leaves(v, (*path, k))]
    if isinstance(instance, list):
        return [leaf for i, v in enumerate(instance) for leaf in leaves(v, (*path, i))]
    return [(path, instance)]


def _at(instance: Any, path: Path) -> Any:
    for part in path:
        instance = instance[part]
    return instance


def _unknown_name(known: frozenset[str]) -> str:
    """A field name no version of the object has (nor its snake_case spelling)."""
    name = "zzAddedByANewerCore"
    while name in known or name.lower() in {k.lower() for k in known}:
        name += "X"
    return name
