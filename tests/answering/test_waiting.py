"""What a durable answer not yet at the core shows (``bot.answering.waiting``): "being recorded",
and "cannot be reached" only while forwards are meeting a failing core; time from a manual
clock. The click's response and the forward hand over once (``Handover``)."""

from __future__ import annotations

import pytest

from bot.answering.waiting import FAILING_SECONDS, CoreReach, Handover, Holder, waiting_kind
from bot.clock import ManualClock
from bot.core import errors as e
from cards.views import OutcomeKind


def _api(kind: type[e.CoreAPIError], status: int) -> e.CoreAPIError:
    return kind(status=status, code="X", message="-")


def test_nothing_known_is_being_recorded_only() -> None:
    assert waiting_kind(CoreReach(ManualClock())) is OutcomeKind.PENDING
    assert waiting_kind(None) is OutcomeKind.PENDING


@pytest.mark.parametrize("failure", [e.CoreConnectError("refused"), e.CoreTimeout("slow"),
                                     _api(e.Unavailable, 503), TimeoutError()],
                         ids=["connect", "timeout", "5xx", "attempt_timed_out"])
def test_a_failing_core_cannot_be_reached_for_a_while(failure: BaseException) -> None:
    clock = ManualClock()
    reach = CoreReach(clock)
    reach.failed(failure)
    assert waiting_kind(reach) is OutcomeKind.RECORDING
    clock.advance(FAILING_SECONDS)
    assert waiting_kind(reach) is OutcomeKind.RECORDING
    clock.advance(1)
    assert waiting_kind(reach) is OutcomeKind.PENDING  # nothing heard of it since: not claimed


def test_an_answer_since_the_failure_ends_it() -> None:
    clock = ManualClock()
    reach = CoreReach(clock)
    reach.failed(e.CoreConnectError("refused"))
    clock.advance(1)
    reach.answered()
    assert waiting_kind(reach) is OutcomeKind.PENDING
    clock.advance(1)
    reach.failed(_api(e.Unavailable, 503))
    assert waiting_kind(reach) is OutcomeKind.RECORDING


def test_a_busy_or_refusing_core_is_not_failing() -> None:
    """A 429 asks the bot to slow down and a 4xx is an answer: neither is "cannot be reached"."""
    reach = CoreReach(ManualClock())
    for answer in (_api(e.RateLimited, 429), _api(e.ValidationFailed, 422), ValueError("bug")):
        reach.failed(answer)
    assert waiting_kind(reach) is OutcomeKind.PENDING


def test_the_handover_goes_to_whoever_comes_first() -> None:
    taken = Handover()
    assert taken.holder is Holder.WAITING
    assert taken.take() and not taken.give_up() and not taken.take()
    assert taken.holder is Holder.RESPONSE
    gone = Handover()
    assert gone.give_up() and not gone.take() and not gone.give_up()
    assert gone.holder is Holder.CHANNEL
