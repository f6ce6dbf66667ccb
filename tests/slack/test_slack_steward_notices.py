"""End to end through the fake Slack: a burst of high-severity questions gives the steward a
few messages listing them, not one DM per question."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from bot.core.models import DeliveryKind
from tests.engine.conftest import clarify_settings
from tests.slack.conftest import Stack

QUESTION = "When does the Harbor Street lease renewal take effect?"
SPAN_TEXT = "The renewed term is effective next quarter."


async def test_thirty_high_severity_questions_give_the_steward_two_messages(
        make_stack: Any) -> None:
    """30 high-severity questions inside one window: 30 cards to Ahmed; Maria (the steward)
    gets nothing until the window ends, then two messages (20 notices and 10) naming every
    clarification, redacted; the core has one steward-notice delivery per question."""
    stack: Stack = await make_stack(clarify=clarify_settings(per_person_daily_cap=100))
    cids = [await stack.create(authority={"authored_by": ["p-ahmed"]}, severity="high")
            for _ in range(30)]
    await stack.burst()
    assert len(stack.cards_of("U0AHMED")) == 30
    assert stack.slack.dm_of("U0MARIA") == []

    await stack.later(timedelta(seconds=60))
    to_maria = stack.slack.dm_of("U0MARIA")
    assert len(to_maria) == 2
    texts = [stack.text_of(message) for message in to_maria]
    assert texts[0].startswith("20 questions went out directly.")
    assert texts[1].startswith("10 questions went out directly.")
    for cid in cids:
        assert sum(f"Clarification {cid}\"" in text for text in texts) == 1
        c = await stack.bot.get_clarification(clarification_id=cid)
        if stack.contract == "full":
            (notice,) = [d for d in c.deliveries if d.kind is DeliveryKind.STEWARD_NOTICE]
            assert notice.person_id == "p-maria"
        else:  # a baseline delivery has no kind: the notice's event says it went out
            (event,) = [ev for ev in c.events if ev.type == "steward_notified"]
            assert event.person_id == "p-maria"
    for text in texts:
        assert "Ahmed Karimi" in text
        assert QUESTION not in text and SPAN_TEXT not in text
    assert len(stack.sink.of("steward_notified")) == 30

    await stack.later(timedelta(seconds=60))  # nothing new: nothing more
    assert len(stack.slack.dm_of("U0MARIA")) == 2
