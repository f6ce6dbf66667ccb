"""How the answer outbox retries an entry (docs/delivery.md, "The answer outbox")."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from bot.retry import RetryPolicy


@dataclass(frozen=True, slots=True)
class OutboxPolicy:
    """How the outbox retries an entry; see docs/delivery.md ("The answer outbox")."""

    lease_seconds: int = 60  # an entry (and its person's key) is held this long per attempt
    forward_timeout_seconds: float = 45.0  # one attempt ends before its lease does
    backoff_base_seconds: float = 2.0
    backoff_cap_seconds: float = 300.0
    max_failures: int = 5  # failures other than "the core is unavailable" before parking
    cache_seconds: float = 10.0  # verified responders and clarifications read (bot.recent)
    # an answer its caller forwards itself (``take`` with a ``Wait``) is due for the consumers
    # only this long after it was accepted: a consumer of another process never takes it from
    # under the click waiting for its outcome (if that process dies in between, the consumers
    # forward it this much later)
    own_forward_seconds: float = 10.0
    # clicks of one process whose response waits for their outcome at once (a Teams invoke
    # answered with the card); more, in a burst, are answered "being recorded" and go through
    # the consumers (``bot.answering.waiting.InPlace``)
    in_place_at_once: int = 4
    backoff_jitter: float = 0.5  # the random share of each wait (bot.retry), not a setting

    @property
    def retry(self) -> RetryPolicy:
        """The waits between attempts: ``backoff_base_seconds`` doubling up to
        ``backoff_cap_seconds``, half of it random, at least the core's Retry-After (up to the
        cap). No attempt limit of its own: ``max_failures`` parks, an unavailable core never."""
        return RetryPolicy(max_attempts=None, base=self.backoff_base_seconds,
                           cap=self.backoff_cap_seconds,
                           retry_after_cap=self.backoff_cap_seconds, jitter=self.backoff_jitter)

    def backoff(self, attempts: int) -> timedelta:
        """The longest wait after attempt ``attempts`` (the policy's ceiling: jitter only
        shortens it)."""
        return timedelta(seconds=self.retry.ceiling(attempts))

    def wait(self, attempts: int, *, draw: float, retry_after: float | None = None
             ) -> timedelta:
        """The wait after attempt ``attempts`` for a random ``draw`` in [0, 1]."""
        return timedelta(seconds=self.retry.delay(attempts, retry_after=retry_after, draw=draw))
