from __future__ import annotations
import json
from datetime import timedelta
from tests.slack.conftest import Stack, clarify_settings

async def test_conflict(stack: Stack) -> None:
    cid = await stack.create(authority={"authored_by": ["p-sarah"], "named": ["p-ahmed"]}, severity="critical")
    await stack.burst()
    s = stack.card("U0SARAH", cid); a = stack.card("U0AHMED", cid)
    await stack.click("U0SARAH", s, "clarify.answer.0"); await stack.settle()
    await stack.click("U0AHMED", a, "clarify.answer.1"); await stack.settle()
    print("SARAH3", stack.text_of(s)); print("AHMED3", stack.text_of(a))
    print("MARIA", [(m.text) for m in stack.slack.dm_of("U0MARIA")])
    await stack.later(timedelta(hours=49))
    print("MARIA2", [(m.text) for m in stack.slack.dm_of("U0MARIA")])
    assert 0

async def test_escalation(stack: Stack) -> None:
    cid = await stack.create(authority={"authored_by": ["p-tom"], "named": ["p-jonas"]})
    await stack.burst()
    print("MARIA", [stack.text_of(m) for m in stack.slack.dm_of("U0MARIA")])
    print("TOM", stack.slack.dm_of("U0TOM"), stack.slack.dm_of("U0JONAS"))
    assert 0

async def test_modal(stack: Stack) -> None:
    cid = await stack.create(authority={"authored_by": ["p-ahmed"]})
    await stack.burst()
    a = stack.card("U0AHMED", cid)
    r = await stack.click("U0AHMED", a, "clarify.custom"); await stack.settle()
    print(r.status, stack.slack.views)
    print(stack.slack.calls_to("views.open"))
    assert 0
