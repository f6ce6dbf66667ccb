"""A client for the reference core's development endpoints (scenario, clock, clarifications).

Tests and the demo use it with the dev token; production code never does.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from bot.core.client import BaseCoreClient
from bot.core.models import (
    ClockRequest,
    ClockView,
    CreateClarificationRequest,
    CreateClarificationResponse,
    ScenarioLoaded,
)


class DevCoreClient(BaseCoreClient):
    """Drives the reference core: create clarifications as ingestion would, move its clock."""

    async def create_clarification(
        self, *, request: CreateClarificationRequest
    ) -> CreateClarificationResponse:
        return (
            await self._call("devCreateClarification", CreateClarificationResponse, body=request)
        )[0]

    async def get_clock(self) -> ClockView:
        return (await self._call("devGetClock", ClockView))[0]

    async def move_clock(
        self, *, advance_seconds: float | None = None, set: datetime | None = None
    ) -> ClockView:
        """Move the core's clock forward by ``advance_seconds`` or to ``set`` (never back)."""
        if (advance_seconds is None) == (set is None):
            raise ValueError("give exactly one of advance_seconds and set")
        body = ClockRequest(advance_seconds=advance_seconds, set=set)
        return (await self._call("devMoveClock", ClockView, body=body))[0]

    async def load_scenario(self, scenario: dict[str, Any]) -> ScenarioLoaded:
        """Load a scenario document (tenants, workspaces, people, tokens, clarifications)."""
        return (await self._call("devLoadScenario", ScenarioLoaded, body=scenario))[0]
