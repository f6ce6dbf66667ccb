"""What a person is told while their answer is on its way: one decision, for every platform.

An answer is durable before any platform hears "ok". Until the core's verdict is known, what is
said follows only from what this process knows (``waiting_kind``):

- the core took it: its outcome shows (``bot.answering.followups``; not decided here);
- durable, not at the core yet, nothing known to be wrong: ``PENDING``, "being recorded";
- durable, not at the core yet, and the core failing: ``RECORDING``, "being recorded; the records
  service cannot be reached". Failing means a forward of this process met a transport error, a
  5xx or a timed-out attempt (``FAILING``) within ``FAILING_SECONDS``, and no forward has been
  answered since. A core that is merely slower than a platform's deadline, or that asked the bot
  to slow down (429), is not failing.

``CoreReach`` is told of each forward's end by ``bot.answering.answers``; Slack's private note
(the consumer found the core away) and Teams' invoke answer (the core did not answer in time)
both ask ``waiting_kind``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import Enum, auto

from bot.clock import Clock
from bot.core import errors as e
from cards.views import OutcomeKind

# what a forward may meet that says the core itself is failing (not merely slow or busy)
FAILING = (e.CoreTransportError, e.ServerError, TimeoutError)
FAILING_SECONDS = 60.0  # how long one such failure, with no answer since, says "failing"


@dataclass
class CoreReach:
    """What this process's forwards last met: an answer of the core's or a failure."""

    clock: Clock
    window_seconds: float = FAILING_SECONDS
    failed_at: datetime | None = None
    answered_at: datetime | None = None

    def failed(self, exc: BaseException) -> None:
        """A forward ended in ``exc``: remembered when it says the core is failing."""
        if isinstance(exc, FAILING):
            self.failed_at = self.clock.now()

    def answered(self) -> None:
        """The core answered a forward (whatever it said: it is reachable)."""
        self.answered_at = self.clock.now()

    def failing(self) -> bool:
        if self.failed_at is None:
            return False
        if self.answered_at is not None and self.answered_at > self.failed_at:
            return False
        return self.clock.now() - self.failed_at <= timedelta(seconds=self.window_seconds)


def waiting_kind(reach: CoreReach | None) -> OutcomeKind:
    """What a durable answer not yet at the core shows: "being recorded", and "cannot be
    reached" only while the core is in fact failing."""
    return OutcomeKind.RECORDING if reach is not None and reach.failing() else OutcomeKind.PENDING


@dataclass
class InPlace:
    """The clicks of this process whose response waits for their answer's outcome (a Teams
    invoke answered with the card), at most ``limit`` at once. One more, in a burst, is answered
    "being recorded" at once instead and goes through the outbox's consumers like a Slack click:
    its card is painted with the outcome when the core has it (``bot.answering.followups``). A
    response waiting on the core costs the core's time in the click's own; a burst of them
    would queue every click behind the core (docs/delivery.md, "Answers in a burst")."""

    limit: int
    waiting: int = 0

    def enter(self) -> bool:
        """A click may wait for its outcome (then ``leave`` when it stops waiting)."""
        if self.waiting >= self.limit:
            return False
        self.waiting += 1
        return True

    def leave(self) -> None:
        self.waiting -= 1


class Holder(Enum):
    """Who shows an answer's outcome that a click's response waits for."""

    WAITING = auto()  # nobody yet: the response still waits
    RESPONSE = auto()  # the forward handed it to the response (``Handover.take``)
    CHANNEL = auto()  # the response gave up at its deadline: the channel shows it


@dataclass
class Handover:
    """A click's response waiting for its answer's outcome (a Teams invoke). The forward
    ``take``s it when it has the outcome to show there; the response ``give_up``s at its
    deadline. Whichever comes first wins: a forward that finds the response gone shows the
    outcome through the channel instead, like any other card."""

    holder: Holder = Holder.WAITING

    def take(self) -> bool:
        return self._hand(Holder.RESPONSE)

    def give_up(self) -> bool:
        return self._hand(Holder.CHANNEL)

    def _hand(self, to: Holder) -> bool:
        if self.holder is not Holder.WAITING:
            return False
        self.holder = to
        return True
