"""Each layer raises from one root, so a caller catches a whole layer with one except clause."""

from __future__ import annotations

import inspect
from types import ModuleType

import pytest

from bot.core import errors as core_errors
from bot.core.client import UnexpectedResponse
from bot.store import errors as store_errors


def _exceptions(module: ModuleType) -> list[type[BaseException]]:
    return [obj for _, obj in inspect.getmembers(module, inspect.isclass)
            if issubclass(obj, BaseException) and obj.__module__ == module.__name__]


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
