"""``clarify_unreachable_people{cause}``: the people who could not be reached over a trailing
window, by the reach report's cause groups (``bot.reach.causes``).

The worker's housekeeping computes it from the ``ReachLog`` (its skips only) at most every
``REFRESH_EVERY``: a scrape reads the gauges as they stand and never reads the log. Every
tenant together: metric labels are codes only, never a tenant or a person. A read that fails
keeps the last values and is logged (value-free) and counted
(``clarify_metric_read_failures_total``).
"""

from __future__ import annotations

from datetime import datetime, timedelta

import structlog

from bot.clock import Clock
from bot.metrics import REGISTRY
from bot.reach.causes import CAUSES, unreached
from bot.reach.log import Kind, ReachLog

log = structlog.get_logger("clarify.reach")

GAUGE = "clarify_unreachable_people"
WINDOW = timedelta(days=7)
REFRESH_EVERY = timedelta(minutes=5)
REGISTRY.preset(GAUGE, cause=CAUSES)


class UnreachableGauge:
    def __init__(self, reach: ReachLog, *, clock: Clock, window: timedelta = WINDOW,
                 every: timedelta = REFRESH_EVERY) -> None:
        self.reach = reach
        self.clock = clock
        self.window = window
        self.every = every
        self._at: datetime | None = None

    async def refresh(self, *, force: bool = False) -> bool:
        """Recompute the gauges when ``every`` has passed since the last time (or ``force``);
        True when they were. Never raises."""
        now = self.clock.now()
        if not force and self._at is not None and now - self._at < self.every:
            return False
        self._at = now
        try:
            skips = await self.reach.read(since=now - self.window, kinds=(Kind.SKIPPED,))
        except Exception as exc:  # noqa: BLE001 (housekeeping goes on; the gauges stand)
            REGISTRY.inc("clarify_metric_read_failures_total", gauge=GAUGE)
            log.warning("reach.gauge_read_failed", error=type(exc).__name__)
            return False
        people = unreached(skips)
        for cause in CAUSES:
            REGISTRY.set(GAUGE, len(people.get(cause, ())), cause=cause)
        return True
