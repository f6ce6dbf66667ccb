"""One retry policy for every loop that retries: how many attempts, and how long between them.

``RetryPolicy`` only computes; it never sleeps and draws no random number of its own. A loop
keeps its injected sleep (or clock) and its injected ``random: Callable[[], float]`` (default
``random.random``) and asks the policy, after failed attempt ``n`` (1-based):

- ``last(n)``: no attempt is left (never, with ``max_attempts`` None: the loop retries until it
  is stopped, or until a limit of its own such as the outbox's ``max_failures``);
- ``ceiling(n)``: the un-jittered delay, ``min(cap, base * 2**(n-1))``;
- ``delay(n, retry_after=..., draw=random())``: the delay to wait. ``jitter`` is the share of the
  ceiling that is random: the delay lies in ``[ceiling * (1 - jitter), ceiling]`` (1: full
  jitter, anywhere from 0 to the ceiling; 0: exactly the ceiling), so a draw of 1.0 gives the
  ceiling and tests that pass ``lambda: 1.0`` see the ceilings. A ``Retry-After`` the other side
  sent is a floor, itself capped by ``retry_after_cap``: the delay is at least
  ``min(retry_after, retry_after_cap)`` and never less than the backoff.

Each loop's policy, and why no library (tenacity, stamina) does this: docs/reliability.md,
"Retries".
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from email.utils import parsedate_to_datetime


def retry_after_seconds(raw: str | None, now: datetime) -> float | None:
    """The seconds a ``Retry-After`` value asks for (delta-seconds, or an HTTP date measured
    from ``now``), at least 0; None when missing or not one of those: also for a number that is
    not finite (``inf``, ``1e999``, ``nan``), which no wait can follow and no JSON log line can
    carry, and for a date without a zone."""
    if raw is None:
        return None
    try:
        seconds = float(raw)
    except (TypeError, ValueError):
        pass
    else:
        return max(0.0, seconds) if math.isfinite(seconds) else None
    try:
        when = parsedate_to_datetime(str(raw))
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, (when - now).total_seconds())


# 2.0 ** 1024 overflows a float; a doubling this far is past any cap anyway
_MAX_EXPONENT = 1000


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Exponential backoff with a cap, a share of jitter and Retry-After as a floor. The
    defaults are the core client's (``bot.core.calls``): 4 attempts, 0.25 s doubling to at
    most 8 s, full jitter, a Retry-After honoured up to 30 s."""

    max_attempts: int | None = 4  # None: no limit of the policy's own
    base: float = 0.25
    cap: float = 8.0
    retry_after_cap: float = 30.0
    jitter: float = 1.0

    def __post_init__(self) -> None:
        if self.max_attempts is not None and self.max_attempts < 1:
            raise ValueError("a retry policy needs max_attempts >= 1 (or None: no limit)")
        if self.base < 0 or self.cap < 0 or self.retry_after_cap < 0:
            raise ValueError("a retry policy's delays are non-negative")
        if not 0.0 <= self.jitter <= 1.0:
            raise ValueError("a retry policy's jitter is a share from 0 to 1")

    def last(self, attempt: int) -> bool:
        """Whether failed attempt ``attempt`` (1-based) was the last one allowed."""
        return self.max_attempts is not None and attempt >= self.max_attempts

    def ceiling(self, attempt: int) -> float:
        """The un-jittered delay after failed attempt ``attempt`` (1-based; below 1 counts as
        1): ``min(cap, base * 2**(attempt-1))``."""
        exponent = min(max(attempt - 1, 0), _MAX_EXPONENT)
        return min(self.cap, self.base * 2.0 ** exponent)

    def delay(self, attempt: int, *, retry_after: float | None = None, draw: float) -> float:
        """The delay after failed attempt ``attempt`` for a random ``draw`` in [0, 1]: the
        ceiling less a random share of up to ``jitter`` of it, and at least the Retry-After
        (capped at ``retry_after_cap``) when the other side sent one."""
        draw = min(max(draw, 0.0), 1.0)
        backoff = self.ceiling(attempt) * (1.0 - self.jitter * (1.0 - draw))
        if retry_after is None:
            return backoff
        return max(backoff, min(max(retry_after, 0.0), self.retry_after_cap))
