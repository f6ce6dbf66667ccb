"""Each layer raises from one root, so a caller catches a whole layer with one except clause:
``BotError`` (bot/ outside bot/core), ``CoreError`` (bot/core), ``AdapterError`` (adapters/).
Each root's docstring draws its tree, and no two exception classes share a name."""

from __future__ import annotations

import importlib
import inspect
import re
from collections import defaultdict
from pathlib import Path
from types import ModuleType

import pytest

from adapters import errors as adapter_errors
from bot import errors as bot_errors
from bot.core import errors as core_errors
from bot.core.client import UnexpectedResponse
from bot.store import errors as store_errors

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("bot", "adapters", "cards", "clarify_bot", "devcore")


def _exceptions(module: ModuleType) -> list[type[BaseException]]:
    return [obj for _, obj in inspect.getmembers(module, inspect.isclass)
            if issubclass(obj, BaseException) and obj.__module__ == module.__name__]


def _modules(package: str) -> list[str]:
    names = []
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def defined_under(package: str, *, outside: str | None = None) -> list[type[BaseException]]:
    """Every exception class defined in a module of ``package`` (minus ``outside``'s)."""
    found = []
    for name in _modules(package):
        if outside and (name == outside or name.startswith(outside + ".")):
            continue
        found.extend(_exceptions(importlib.import_module(name)))
    return found


def strays(classes: list[type[BaseException]], root: type[BaseException]) -> list[str]:
    return [f"{cls.__module__}.{cls.__qualname__}" for cls in classes if not issubclass(cls, root)]


def undrawn(classes: list[type[BaseException]], tree: str) -> list[str]:
    return [cls.__qualname__ for cls in classes
            if not re.search(rf"\b{re.escape(cls.__qualname__)}\b", tree)]


@pytest.mark.parametrize(("module", "root"), [
    (core_errors, core_errors.CoreError),
    (store_errors, store_errors.StoreError),
])
def test_every_error_of_a_layer_derives_from_its_root(
    module: ModuleType, root: type[BaseException]
) -> None:
    found = _exceptions(module)
    assert root in found and len(found) > 2
    assert [cls.__name__ for cls in found if not issubclass(cls, root)] == []


def test_the_clients_own_errors_are_in_the_tree() -> None:
    """What the client raises for a body off the contract is caught as a core API error."""
    assert issubclass(UnexpectedResponse, core_errors.CoreAPIError)
    assert UnexpectedResponse.__module__ == core_errors.__name__


@pytest.mark.parametrize(("package", "outside", "root"), [
    ("bot", "bot.core", bot_errors.BotError),
    ("bot/core", None, core_errors.CoreError),
    ("adapters", None, adapter_errors.AdapterError),
], ids=["bot", "core", "adapters"])
def test_every_exception_of_a_layer_is_under_its_root_and_drawn(
    package: str, outside: str | None, root: type[BaseException]
) -> None:
    """Defined anywhere in the layer, each exception derives from the layer's root, and the
    root's module docstring names it in its tree."""
    found = defined_under(package, outside=outside)
    assert root in found and len(found) > 5
    assert strays(found, root) == []
    assert undrawn(found, inspect.getmodule(root).__doc__ or "") == []


def test_the_checks_fail_on_a_stray_or_undrawn_class() -> None:
    """The helpers above catch what they are for: an exception outside the root, or one the
    tree leaves out."""
    class Elsewhere(Exception):
        pass

    class Unnamed(bot_errors.BotError):
        pass

    assert strays([Elsewhere, Unnamed], bot_errors.BotError) == [
        f"{__name__}.{Elsewhere.__qualname__}"]
    assert undrawn([Unnamed, bot_errors.BotError], bot_errors.__doc__ or "") == [
        Unnamed.__qualname__]


def test_no_two_exception_classes_share_a_name() -> None:
    """One name per idea, across every package the project ships."""
    where: dict[str, list[str]] = defaultdict(list)
    for package in PACKAGES:
        for cls in defined_under(package):
            where[cls.__qualname__].append(cls.__module__)
    assert len(where) > 50
    assert {name: modules for name, modules in where.items() if len(modules) > 1} == {}
