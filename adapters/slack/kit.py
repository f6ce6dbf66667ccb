"""What the Slack adapter's listeners work with, handed to each handler module's ``register``.

``adapters.slack.app`` (the HTTP edge, the answer click) builds one ``Kit`` and gives it to
the listeners of the digest's next page (``digests``), the "Something else…" form (``forms``),
"Not the right person" (``declines``), the steward's override (``steward``) and the App Home
(``home``). They reach the bolt app, the decisions in ``bot/`` and the channel through it, and
nothing of the adapter itself: the tenant a callback acts in, the work started after an
acknowledgement (``bot.aio.Tasks``, capped by ``bot.abuse_limits``), an answer as a
``Callback``, taken by ``bot.answering`` within Slack's ``accept_seconds``, and a short note only
the clicker sees.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any

import structlog
from slack_bolt.async_app import AsyncApp

from adapters.slack import listening, payloads
from adapters.slack.channel import SlackChannel
from bot.aio import Tasks
from bot.answering.answers import AnswerService, Receipt, Wait
from bot.channel import SlackReach
from bot.chat import Callback
from bot.clock import Clock
from bot.engine.lasting import LastingRefusals
from bot.interaction.interactions import Interactions
from cards import text as card_text
from cards.actions import ActionCodec
from cards.views import Viewer

log = structlog.get_logger("clarify.slack")
# Slack's time for the store write that makes an answer durable (``AnswerService.take``'s
# ``respond_within``): a store that takes longer is treated as down, so Slack hears a failure
# inside its 3 s and the person sees it (a write that lands later is forwarded once: Slack's
# retry, or the person's next click, is a duplicate of it)
ACCEPT_SECONDS = 2.0


@dataclass
class Kit:
    app: AsyncApp
    answers: AnswerService
    interactions: Interactions
    channel: SlackChannel
    codec: ActionCodec
    clock: Clock
    refusals: LastingRefusals  # a lasting refusal of Slack ends when the person is seen here
    tasks: Tasks = field(default_factory=lambda: Tasks("slack"))
    # the App Home tab each person chose last in this process ((org, workspace, user) -> tab)
    home_tabs: dict[tuple[str | None, str | None, str], str] = field(default_factory=dict)
    accept_seconds: float = ACCEPT_SECONDS

    def tenant(self, who: payloads.Who) -> str | None:
        """The tenant a callback acts in (decided in ``bot.interaction.interactions``)."""
        return self.interactions.tenant(listening.user(who))

    def spawn[T](self, work: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
        """Work after the acknowledgement: kept, counted and waited for by ``drain``."""
        return self.tasks.spawn(work)

    def callback(self, who: payloads.Who, clarification_id: str, card_ref: str,
                 message_ref: str | None, *, answer_index: int | None = None,
                 custom: tuple[Any, Any, str] | None = None, acted_at: int = 0,
                 override_note: str | None = None) -> Callback:
        """An answer (a candidate, "Something else…"'s dates and note, or a steward's override
        of a candidate with its note) as ``bot/`` takes it."""
        return Callback.from_user(
            listening.user(who), tenant_id=self.tenant(who), clarification_id=clarification_id,
            card_ref=card_ref, message_ref=None if message_ref is None else self.channel.own_ref(
                message_ref, reach(who)),
            answer_index=answer_index, custom=custom, received_at=self.clock.now(),
            acted_at=acted_at, override_note=override_note)

    async def take(self, cb: Callback, *, wait: Wait | None = None) -> Receipt:
        """``answers.take`` within Slack's ``accept_seconds``; raises ``NotDurable`` (the
        callback is then not acknowledged). ``wait``: the request waits for the outcome too
        (``seconds`` after the answer is durable), forwarding it in a task of the kit's."""
        return await self.answers.take(cb, respond_within=self.accept_seconds, wait=wait)

    def waiting(self, seconds: float) -> Wait:
        """A wait of ``seconds`` for an answer's outcome, its forward one of the kit's tasks."""
        return Wait(tasks=self.tasks, seconds=seconds)

    async def ephemeral(self, channel_id: str | None, who: payloads.Who, *, key: str) -> None:
        """The catalog's words for ``key``, next to the card, seen by ``who`` only."""
        if channel_id is None:
            return
        words = card_text.catalog_of(Viewer()).text(key)
        await self.channel.ephemeral(channel_id, who.user_id, {"text": words, "blocks": []},
                                     workspace=reach(who))


def reach(who: payloads.Who) -> SlackReach:
    """Where a callback came from, as the channel finds its installation by."""
    return SlackReach(team_id=who.team_id, enterprise_id=who.enterprise_id)
