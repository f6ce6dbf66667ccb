"""Readiness: the store, the core and each chat platform's credentials, checked concurrently,
each bounded by a timeout and cached, so ``/readyz`` answers within 2 seconds whatever they do.

A check is an async callable that returns when its dependency is fine and raises otherwise; a
``CredentialsRejected`` names the setting an operator must fix (a token the dependency rejects)
and ``Connecting`` says the bot's own connection is still being made. Results are
short words, never values: ``ok``, ``unavailable``, ``timeout``, ``rejected: SETTING`` and
``connecting`` (a connection of the bot's own, Slack's Socket Mode, not yet made).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import structlog

from bot.channel import CredentialsRejected
from bot.errors import BotError
from bot.metrics import REGISTRY

log = structlog.get_logger("clarify.health")
CHECK_TIMEOUT_SECONDS = 1.5  # each check; they run side by side, so /readyz stays under 2 s
OK = "ok"


class Connecting(BotError):
    """The bot's own connection to the dependency is being made (not ready, not a failure)."""


CONNECTING = "connecting"
Probe = Callable[[], Awaitable[None]]


@dataclass
class Check:
    name: str
    probe: Probe
    ttl_seconds: float  # how long a result is reused
    timeout_seconds: float = CHECK_TIMEOUT_SECONDS
    # what to fix when it cannot be reached: the setting naming the address, and that address
    # (never a credential: URLs with one are refused by the settings)
    setting: str | None = None
    address: str | None = None
    now: Callable[[], float] = time.monotonic
    _result: str | None = None
    _at: float = 0.0
    _running: asyncio.Task[str] | None = None

    async def result(self) -> str:
        """The cached result while fresh, else a new one (one probe at a time, however many
        requests ask). ``connecting`` is never kept: it is the bot's own connection being made,
        cheap to look at again, and the check reads ``ok`` the moment it is made."""
        if self._result not in (None, CONNECTING) and self.now() - self._at < self.ttl_seconds:
            return str(self._result)
        if self._running is None or self._running.done():
            self._running = asyncio.create_task(self._run())
        return await asyncio.shield(self._running)

    async def _run(self) -> str:
        try:
            await asyncio.wait_for(self.probe(), self.timeout_seconds)
            result = OK
        except CredentialsRejected as exc:
            result = f"rejected: {exc.setting}"
            REGISTRY.inc("clarify_credential_failures_total", dependency=self.name)
        except TimeoutError:
            result = "timeout"
        except Connecting:
            result = CONNECTING
        except Exception as exc:  # whatever the dependency did, readiness only says "not ok"
            log.info("health.check_failed", check=self.name, error=type(exc).__name__)
            result = "unavailable"
        self._result, self._at = result, self.now()
        REGISTRY.set("clarify_dependency_up", 1 if result == OK else 0, dependency=self.name)
        return result


@dataclass
class Readiness:
    checks: list[Check] = field(default_factory=list)
    # what /readyz shows beside the checks without failing them (a distributed Slack app's
    # installations, some of which may be paused while the others are served)
    details: list[Callable[[], dict[str, object]]] = field(default_factory=list)

    async def results(self) -> dict[str, str]:
        found = await asyncio.gather(*(check.result() for check in self.checks))
        return {check.name: result for check, result in zip(self.checks, found, strict=True)}

    async def log_problems(self) -> dict[str, str]:
        """Run every check once (start-up) and log each that is not ok, naming its setting."""
        results = await self.results()
        for check in self.checks:
            result = results[check.name]
            if result == CONNECTING:  # its own log line says how the connection ends
                log.info("service.check_pending", check=check.name, result=result)
            elif result.startswith("rejected"):
                log.error("service.check_failed", check=check.name, result=result,
                          setting=result.removeprefix("rejected: "))
            elif result != OK:
                log.error("service.check_failed", check=check.name, result=result,
                          setting=check.setting, address=check.address)
        return results
