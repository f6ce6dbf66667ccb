"""How hard the fuzz tests try: a small deterministic budget for every suite run, thousands of
examples per parser when ``CLARIFY_FUZZ=full`` (run by hand, docs/reliability.md "Fuzzing").

Every fuzz test takes its settings from ``fuzz``: derandomized (the same examples on every run, so
CI cannot flake), no example database, no deadline (HTTP paths and a loaded machine are slow),
health checks about fixtures off (one stack serves every example of a test, on purpose).
"""

from __future__ import annotations

import json
import os
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

FULL = os.environ.get("CLARIFY_FUZZ", "").lower() == "full"


def fuzz(quick: int, full: int) -> settings:
    """``quick`` examples in the suite, ``full`` with CLARIFY_FUZZ=full."""
    return settings(max_examples=full if FULL else quick, derandomize=True, database=None,
                    deadline=None, print_blob=False,
                    suppress_health_check=list(HealthCheck))


# Text a log line or an error must never repeat: put into every free-text field fuzzed.
CANARY = "CANARYspanTEXT"

# Any JSON value, with the shapes parsers trip on: huge and negative numbers, floats, empty and
# odd strings, nesting; ``json_values`` has the canary among its strings.
def _values(*extra: str) -> st.SearchStrategy[Any]:
    scalars = (st.none() | st.booleans()
               | st.integers(min_value=-(2**70), max_value=2**70)
               | st.floats(allow_nan=False, allow_infinity=False)
               | st.text(max_size=20) | st.sampled_from(["", "0", *extra]))
    return st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                        | st.dictionaries(st.text(max_size=12), inner, max_size=4),
                        max_leaves=12)


json_values: st.SearchStrategy[Any] = _values(CANARY)
junk: st.SearchStrategy[Any] = _values()


def mutated(value: Any) -> st.SearchStrategy[Any]:
    """A valid JSON value with one of its parts dropped, replaced by junk (never the canary: a
    junk id may be logged as ids are; the canary stays where free text goes), or left alone."""
    paths = list(_paths(value))
    if not paths:
        return junk
    return st.tuples(st.sampled_from(paths), st.sampled_from(["drop", "junk", "keep"]),
                     junk).map(lambda t: _apply(value, *t))


def _paths(value: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [at]
    if isinstance(value, dict):
        for key, inner in value.items():
            found += _paths(inner, (*at, key))
    elif isinstance(value, list):
        for i, inner in enumerate(value):
            found += _paths(inner, (*at, i))
    return found


def _apply(value: Any, path: tuple[Any, ...], how: str, junk: Any) -> Any:
    copy = json.loads(json.dumps(value))
    if not path:
        return junk if how == "junk" else copy
    parent = copy
    for key in path[:-1]:
        parent = parent[key]
    if how == "drop":
        del parent[path[-1]]
    elif how == "junk":
        parent[path[-1]] = junk
    return copy
