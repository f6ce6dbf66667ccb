"""A client for the reference core's development endpoints (scenario, clock, clarifications).

Tests and the demo use it with the dev token; production code never does.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from bot.core import models as m
from bot.core.client import BaseCoreClient


class DevCoreClient(BaseCoreClient):
    """Drives the reference core: create clarifications as ingestion would, move its clock."""

    async def create_clarification(
        self, *, request: m.CreateClarificationRequest
    ) -> m.CreateClarificationResponse:
        return (
            await self._call("devCreateClarification", m.CreateClarificationResponse, body=request)
        )[0]

    async def get_clock(self) -> m.ClockView:
        return (await self._call("devGetClock", m.ClockView))[0]

    async def move_clock(
        self, *, advance_seconds: float | None = None, set: datetime | None = None
    ) -> m.ClockView:
        """Move the core's clock forward by ``advance_seconds`` or to ``set`` (never back)."""
        if (advance_seconds is None) == (set is None):
            raise ValueError("give exactly one of advance_seconds and set")
        body = m.ClockRequest(advance_seconds=advance_seconds, set=set)
        return (await self._call("devMoveClock", m.ClockView, body=body))[0]

    async def load_scenario(self, scenario: dict[str, Any]) -> m.ScenarioLoaded:
        """Load a scenario document (tenants, workspaces, people, tokens, clarifications)."""
        return (await self._call("devLoadScenario", m.ScenarioLoaded, body=scenario))[0]
