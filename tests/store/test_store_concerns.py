"""The store by concern (``bot.store.base``): each concern's memory and Redis implementations
have every method of its protocol, with the protocol's signature (names, kinds, defaults and
annotations of the parameters, and the return annotation); ``Store`` is every concern at once,
each method in one concern only; ``MemoryStore`` and ``RedisStore`` are built of the concerns'
implementations."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from bot.store.admissions import Admissions, MemoryAdmissions, RedisAdmissions
from bot.store.base import Store
from bot.store.conversations import Conversations, MemoryConversations, RedisConversations
from bot.store.holds import HeldJobs, MemoryHolds, RedisHolds
from bot.store.kv import KeyValues, MemoryKeyValues, RedisKeyValues
from bot.store.ledger import DeliveryLedger, MemoryLedger, RedisLedger
from bot.store.memory import MemoryStore
from bot.store.notices import MemoryNotices, NoticeLists, RedisNotices
from bot.store.outbox import Outbox
from bot.store.outbox.memory import MemoryOutbox
from bot.store.outbox.redis import RedisOutbox
from bot.store.rates import MemoryRates, RateBuckets, RedisRates
from bot.store.redis import RedisStore
from bot.store.reminders import ReminderIndex, Reminders
from bot.store.unreported import Unreported, UnreportedIndex

# concern -> (its memory implementation, its Redis implementation): one for both where the
# concern is a due set of ``bot.store.due``, the store's own set handed to it
CONCERNS: dict[type, tuple[type, type]] = {
    DeliveryLedger: (MemoryLedger, RedisLedger),
    Admissions: (MemoryAdmissions, RedisAdmissions),
    HeldJobs: (MemoryHolds, RedisHolds),
    ReminderIndex: (Reminders, Reminders),
    UnreportedIndex: (Unreported, Unreported),
    NoticeLists: (MemoryNotices, RedisNotices),
    KeyValues: (MemoryKeyValues, RedisKeyValues),
    Conversations: (MemoryConversations, RedisConversations),
    RateBuckets: (MemoryRates, RedisRates),
    Outbox: (MemoryOutbox, RedisOutbox),
}


def methods(protocol: type) -> dict[str, Any]:
    """The methods a protocol declares itself (not those it inherits)."""
    return {name: value for name, value in vars(protocol).items()
            if inspect.isfunction(value) and not name.startswith("_")}


def shape(function: Any) -> tuple[object, ...]:
    """A method's signature as the protocol states it: each parameter's name, kind, default and
    annotation (as written), and the return annotation."""
    signature = inspect.signature(function)  # through ``translated`` (functools.wraps)
    return (tuple((p.name, p.kind, p.default, str(p.annotation))
                  for p in signature.parameters.values()),
            str(signature.return_annotation), inspect.iscoroutinefunction(function))


@pytest.mark.parametrize("concern", list(CONCERNS), ids=lambda c: c.__name__)
@pytest.mark.parametrize("backend", ["memory", "redis"])
def test_each_implementation_has_its_concerns_methods_with_their_signatures(
        concern: type, backend: str) -> None:
    implementation = CONCERNS[concern][0 if backend == "memory" else 1]
    declared = methods(concern)
    assert declared, f"{concern.__name__} declares no method"
    for name, method in declared.items():
        found = getattr(implementation, name, None)
        assert found is not None, f"{implementation.__name__} lacks {name}"
        assert shape(found) == shape(method), f"{implementation.__name__}.{name}"


def test_store_is_every_concern_and_each_method_belongs_to_one() -> None:
    assert set(Store.__mro__) >= set(CONCERNS)
    seen: dict[str, str] = {}
    for concern in CONCERNS:
        for name in methods(concern):
            assert name not in seen, f"{name} in {seen.get(name)} and {concern.__name__}"
            seen[name] = concern.__name__
    assert set(methods(Store)) == {"aclose"}  # the composite adds only the lifecycle


@pytest.mark.parametrize("composite", [MemoryStore, RedisStore])
def test_the_stores_are_built_of_the_concerns_implementations(composite: type) -> None:
    index = 0 if composite is MemoryStore else 1
    for concern, implementations in CONCERNS.items():
        assert issubclass(composite, implementations[index]), concern.__name__
        for name, method in methods(concern).items():
            assert shape(getattr(composite, name)) == shape(method), f"{composite.__name__}.{name}"
    assert inspect.iscoroutinefunction(composite.aclose)
