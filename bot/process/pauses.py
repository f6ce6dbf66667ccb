"""Deliveries paused per scope: one installation whose token the platform refuses.

A platform that holds a token per installation (Slack as a distributed app) raises
``CredentialsRejected`` with a ``scope`` when one installation's token is refused. The worker
then holds only the jobs that met it (their leases kept alive, nobody skipped, no attempt spent)
and goes on with every other; the scope's check (the platform's own, ``auth.test`` with that
installation's token) is repeated every ``recheck_seconds`` on the engine's clock, and the held
jobs resume once it passes. At most ``max_held`` jobs are held per process: a job beyond that is
left to its lease (it comes back at its next attempt), so a paused workspace never takes every
slot from the others.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import structlog

from bot.channel import CredentialsRejected
from bot.clock import Clock

log = structlog.get_logger("clarify.pauses")
ScopeCheck = Callable[[str], Awaitable[None]]  # returns, or raises CredentialsRejected


@dataclass
class Pauses:
    clock: Clock
    check: ScopeCheck
    recheck_seconds: float = 30.0
    max_held: int = 16
    held: int = 0  # jobs held now, in this process
    _paused: dict[str, CredentialsRejected] = field(default_factory=dict)
    _due: dict[str, datetime] = field(default_factory=dict)
    _resumed: dict[str, asyncio.Event] = field(default_factory=dict)

    def paused(self, scope: str) -> bool:
        return scope in self._paused

    @property
    def scopes(self) -> tuple[str, ...]:
        return tuple(self._paused)

    def pause(self, refused: CredentialsRejected) -> None:
        scope = refused.scope
        assert scope is not None
        if scope not in self._paused:
            log.error("worker.delivery_paused", scope=scope, error=refused.reason,
                      setting=refused.setting, hint=f"fix {refused.setting}; its deliveries "
                      "resume once its token is accepted; other installations go on")
            self._due[scope] = self.clock.now() + timedelta(seconds=self.recheck_seconds)
            self._resumed[scope] = asyncio.Event()
        self._paused[scope] = refused

    def resume(self, scope: str) -> None:
        if self._paused.pop(scope, None) is not None:
            log.info("worker.delivery_resumed", scope=scope)
        self._due.pop(scope, None)
        event = self._resumed.pop(scope, None)
        if event is not None:
            event.set()

    async def recheck(self, *, force: bool = False) -> None:
        """Check each paused scope whose recheck is due (all with ``force``): resume those
        whose token is accepted again; those the platform cannot be asked about stay paused."""
        now = self.clock.now()
        for scope in [s for s, due in self._due.items() if force or due <= now]:
            self._due[scope] = now + timedelta(seconds=self.recheck_seconds)
            try:
                await self.check(scope)
            except CredentialsRejected as exc:
                if exc.scope in (None, scope):
                    continue
                raise
            except Exception as exc:  # unreachable or slow: no news about the token
                log.warning("worker.credentials_unknown", scope=scope, error=type(exc).__name__)
                continue
            self.resume(scope)

    async def hold(self, scope: str, *, until: list[asyncio.Future[Any]]) -> bool:
        """Wait until ``scope`` resumes (True), or one of ``until`` ends first (False). False
        at once when ``max_held`` jobs are already held."""
        event = self._resumed.get(scope)
        if event is None:
            return True  # resumed meanwhile
        if self.held >= self.max_held:
            return False
        self.held += 1
        resumed: asyncio.Future[Any] = asyncio.ensure_future(event.wait())
        try:
            await asyncio.wait([resumed, *until], return_when=asyncio.FIRST_COMPLETED)
        finally:
            resumed.cancel()
            self.held -= 1
        return event.is_set()
