"""The dependencies as used: pyproject.toml declares what the code imports, in the right extra.

- every third-party module the shipped packages import (bot, adapters, cards, clarify_bot,
  devcore) comes from a declared runtime dependency;
- every one tests/, bench/ and scripts/ import comes from a runtime or a dev dependency;
- every runtime dependency is imported by the shipped packages, or is in ``INDIRECT`` with the
  reason it must be installed all the same;
- every declaration is pinned, to the version constraints.txt pins.

Imports are read from the source with ``ast`` (inside functions too) and mapped to the
distribution that installs them through the installed files (``importlib.metadata``), so a
namespace package (``microsoft_agents``) resolves to the distribution of its sub-package.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from collections.abc import Iterator
from functools import cache
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ("bot", "adapters", "cards", "clarify_bot", "devcore")
DEVELOPMENT = ("tests", "bench", "scripts")
# runtime dependencies nothing imports by name, and why each must be installed
INDIRECT = {
    "greenlet": "SQLAlchemy's asyncio layer runs its sync core in greenlets",
}


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement(line: str) -> tuple[str, str | None]:
    """A requirement's canonical name and its ``==`` pin (None when it is not pinned)."""
    match = re.fullmatch(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*(?:==\s*(\S+))?"
                         r"\s*(?:;.*)?", line)
    assert match, f"not a requirement this test reads: {line!r}"
    return canonical(match[1]), match[2]


def declared() -> tuple[dict[str, str | None], dict[str, str | None]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    runtime = dict(map(requirement, project["dependencies"]))
    dev = dict(map(requirement, project["optional-dependencies"]["dev"]))
    return runtime, dev


def imports(path: Path) -> Iterator[str]:
    """The absolute module names a file imports, anywhere in it."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            yield node.module


def local(name: str, path: Path) -> bool:
    """The project's own modules: a package or module at the root or in bench/ (its scripts
    import their siblings, and the soak's smoke test imports them), or, for a script or test
    run from its folder, beside the file (never in a package: bot/store/redis.py is not
    ``redis``)."""
    top = name.split(".")[0]
    places = [ROOT, ROOT / "bench"]
    if not (path.parent / "__init__.py").exists():
        places.append(path.parent)
    return any((where / top).is_dir() or (where / f"{top}.py").is_file() for where in places)


@cache
def modules_of(distribution: str) -> frozenset[str]:
    """The dotted names a distribution's files can be imported as (packages and modules)."""
    names = set()
    for file in metadata.distribution(distribution).files or ():
        parts = file.with_suffix("").parts if file.suffix == ".py" else file.parts[:-1]
        names.update(".".join(parts[:n]) for n in range(1, len(parts) + 1))
    return frozenset(names)


@cache
def providers() -> dict[str, list[str]]:
    return metadata.packages_distributions()


@cache
def distributions(module: str) -> frozenset[str]:
    """The installed distributions that provide ``module``: the ones whose files hold its
    longest dotted prefix (a namespace package's part belongs to one distribution)."""
    candidates = providers().get(module.split(".")[0], [])
    parts = module.split(".")
    for length in range(len(parts), 0, -1):
        stem = ".".join(parts[:length])
        found = {canonical(d) for d in candidates if stem in modules_of(d)}
        if found:
            return frozenset(found)
    return frozenset(canonical(d) for d in candidates)


@cache
def third_party(packages: tuple[str, ...]) -> dict[str, set[str]]:
    """Each third-party module imported in ``packages``: the files that import it."""
    found: dict[str, set[str]] = {}
    for package in packages:
        for path in sorted((ROOT / package).rglob("*.py")):
            for name in imports(path):
                top = name.split(".")[0]
                if top in sys.stdlib_module_names or top == "__future__" or local(name, path):
                    continue
                found.setdefault(name, set()).add(str(path.relative_to(ROOT)))
    return found


def undeclared(packages: tuple[str, ...], allowed: set[str]) -> dict[str, list[str]]:
    """``module (distributions)``: the files importing it, for each module that no allowed
    distribution provides."""
    missing = {}
    for module, files in third_party(packages).items():
        provided = distributions(module)
        if not provided & allowed:
            missing[f"{module} ({', '.join(sorted(provided)) or 'not installed'})"] = sorted(files)
    return missing


def test_the_shipped_packages_import_only_runtime_dependencies() -> None:
    runtime, _ = declared()
    assert len(third_party(SHIPPED)) > 20
    assert undeclared(SHIPPED, set(runtime)) == {}


def test_tests_benchmarks_and_scripts_import_only_declared_dependencies() -> None:
    runtime, dev = declared()
    assert undeclared(DEVELOPMENT, set(runtime) | set(dev)) == {}


def test_every_runtime_dependency_is_imported_or_needed_indirectly() -> None:
    runtime, _ = declared()
    used = set().union(*map(distributions, third_party(SHIPPED)))
    assert set(INDIRECT) <= set(runtime)
    assert sorted(set(runtime) - used - set(INDIRECT)) == []
    assert sorted(set(INDIRECT) & used) == []  # imported after all: not indirect


def test_every_dependency_is_pinned_to_the_constraints_version() -> None:
    runtime, dev = declared()
    pins = dict(requirement(line) for line in
                (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines()
                if line.strip() and not line.startswith("#"))
    assert {name for name, pin in {**runtime, **dev}.items() if pin is None} == set()
    assert {name: (pin, pins.get(name)) for name, pin in {**runtime, **dev}.items()
            if pins.get(name) != pin} == {}


@pytest.mark.parametrize(("module", "distribution"), [
    ("yaml", "pyyaml"),
    ("jwt", "pyjwt"),
    ("microsoft_agents.hosting.aiohttp", "microsoft-agents-hosting-aiohttp"),
    ("microsoft_agents.activity", "microsoft-agents-activity"),
])
def test_imports_map_to_the_distribution_that_installs_them(module: str,
                                                            distribution: str) -> None:
    assert distributions(module) == {distribution}
