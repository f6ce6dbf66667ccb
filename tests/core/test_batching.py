"""bot/core/batching.py: requests made together go out as one call."""

from __future__ import annotations

import asyncio

import pytest

from bot.core.batching import Gathered


async def test_requests_made_together_are_sent_once_per_key_and_each_caller_waits() -> None:
    sent: list[tuple[str, list[int]]] = []

    async def send(key: str, items: list[int]) -> None:
        sent.append((key, items))

    gathered: Gathered[str, int] = Gathered(send, linger=0)
    await asyncio.gather(gathered("a", 1), gathered("a", 2), gathered("b", 3))
    assert sorted(sent) == [("a", [1, 2]), ("b", [3])]
    await gathered("a", 4)  # a later request is a call of its own
    assert sent[-1] == ("a", [4])


async def test_a_failed_send_fails_every_caller_of_it() -> None:
    async def send(key: str, items: list[int]) -> None:
        raise RuntimeError("core down")

    gathered: Gathered[str, int] = Gathered(send, linger=0)
    results = await asyncio.gather(gathered("a", 1), gathered("a", 2), return_exceptions=True)
    assert [type(r) for r in results] == [RuntimeError, RuntimeError]
    with pytest.raises(RuntimeError):
        await gathered("a", 3)
