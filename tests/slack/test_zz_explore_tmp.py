from __future__ import annotations
from tests.slack.conftest import Stack

async def test_explore(stack: Stack) -> None:
    cid = await stack.create(authority={"authored_by": ["p-sarah"], "named": ["p-ahmed"]}, severity="critical")
    await stack.burst()
    s = stack.card("U0SARAH", cid); a = stack.card("U0AHMED", cid)
    print("SARAH", stack.text_of(s)); print("AHMED", stack.text_of(a))
    await stack.click("U0SARAH", s, "clarify.answer.0"); await stack.settle()
    print("SARAH2", stack.text_of(s)); print("AHMED2", stack.text_of(a))
    await stack.click("U0AHMED", a, "clarify.answer.0"); await stack.settle()
    print("SARAH3", stack.text_of(s)); print("AHMED3", stack.text_of(a))
    print([ (m.channel, m.text) for m in stack.slack.messages])
    assert 0
