"""What the core client counts, named by what happened, not by where it is kept.

``bot.core`` sits below the rest of ``bot/`` and imports nothing above it, so it cannot reach
the process's metrics registry (``bot.metrics``) itself. It tells ``INSTRUMENTS`` instead, and
``bot.metrics`` installs the one ``Instruments`` that writes these events into ``REGISTRY``
(``clarify_core_*``). Until one is installed (the core used on its own: a script, a test of
the client alone) the events are dropped.
"""

from __future__ import annotations

from typing import Protocol

from bot.core.extensions import Extension


class Instruments(Protocol):
    """What the core's client and reader report, one method per event."""

    def fallback(self, extension: Extension) -> None:
        """A call took an extension's fallback: the core does not offer it, or refused it."""

    def offered(self, extension: Extension, offered: bool) -> None:
        """Whether the core offers the extension now (read from its contract document)."""

    def attempt(self, operation: str, seconds: float, *, failed: str | None) -> None:
        """One HTTP attempt of an operation and how long it took; ``failed`` is the error
        code (HTTP status or transport error) of one that failed, else None."""

    def tolerated(self, kind: str, model: str) -> None:
        """The tolerant reader let something pass instead of failing: ``kind`` is
        unknown_field, absent_field, unknown_value, bad_entry, repeated_entry or derived;
        ``model`` a model's or an enum's class name."""

    def unreadable(self, operation: str) -> None:
        """An answer of ``operation`` the reader could not read at all: the call failed."""


class _Dropped:
    def fallback(self, extension: Extension) -> None:
        pass

    def offered(self, extension: Extension, offered: bool) -> None:
        pass

    def attempt(self, operation: str, seconds: float, *, failed: str | None) -> None:
        pass

    def tolerated(self, kind: str, model: str) -> None:
        pass

    def unreadable(self, operation: str) -> None:
        pass


class _Installed:
    """The instruments in use: whatever was last installed, else nothing."""

    def __init__(self) -> None:
        self.to: Instruments = _Dropped()

    def install(self, instruments: Instruments) -> None:
        self.to = instruments

    def fallback(self, extension: Extension) -> None:
        self.to.fallback(extension)

    def offered(self, extension: Extension, offered: bool) -> None:
        self.to.offered(extension, offered)

    def attempt(self, operation: str, seconds: float, *, failed: str | None) -> None:
        self.to.attempt(operation, seconds, failed=failed)

    def tolerated(self, kind: str, model: str) -> None:
        self.to.tolerated(kind, model)

    def unreadable(self, operation: str) -> None:
        self.to.unreadable(operation)


INSTRUMENTS = _Installed()
