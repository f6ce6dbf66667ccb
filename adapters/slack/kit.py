"""What the Slack adapter's listeners work with, handed to each handler module's ``register``.

``adapters.slack.app`` (the HTTP edge, the answer click) builds one ``Kit`` and gives it to
the listeners of the digest's next page (``digests``), the "Something else…" form (``forms``),
"Not the right person" (``declines``), the steward's override (``steward``) and the App Home
(``home``). They reach the bolt app, the decisions in ``bot/`` and the channel through it, and
nothing of the adapter itself: the tenant a callback acts in, the work started after an
acknowledgement (``bot.aio.Tasks``, capped by ``bot.limits``), an answer as a ``Callback``, made
durable within ``accept_seconds``, and a short note only the clicker sees.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any

import structlog
from slack_bolt.async_app import AsyncApp

from adapters.errors import AdapterError
from adapters.slack import listening, payloads
from adapters.slack.channel import SlackChannel
from bot.aio import Tasks
from bot.answering.answers import AnswerService, AnswerStatus
from bot.channel import SlackReach
from bot.chat import Callback
from bot.clock import Clock
from bot.interaction.interactions import Interactions
from bot.store.errors import StoreError
from cards import text as card_text
from cards.actions import ActionCodec
from cards.views import Viewer

log = structlog.get_logger("clarify.slack")
# the store write that makes an answer durable: a store that takes longer is treated as down, so
# Slack hears a failure inside its 3 s and the person sees it (a write that lands later is
# forwarded once: Slack's retry, or the person's next click, is a duplicate of it)
ACCEPT_SECONDS = 2.0


@dataclass
class Kit:
    app: AsyncApp
    answers: AnswerService
    interactions: Interactions
    channel: SlackChannel
    codec: ActionCodec
    clock: Clock
    tasks: Tasks = field(default_factory=lambda: Tasks("slack"))
    accept_seconds: float = ACCEPT_SECONDS

    def tenant(self, who: payloads.Who) -> str | None:
        """The tenant a callback acts in (decided in ``bot.interaction.interactions``)."""
        return self.interactions.tenant(listening.user(who))

    def spawn[T](self, work: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
        """Work after the acknowledgement: kept, counted and waited for by ``drain``."""
        return self.tasks.spawn(work)

    def callback(self, who: payloads.Who, clarification_id: str, card_ref: str,
                 message_ref: str | None, *, answer_index: int | None = None,
                 custom: tuple[Any, Any, str] | None = None, acted_at: int = 0) -> Callback:
        """An answer (a candidate, or "Something else…"'s dates and note) as ``bot/`` takes it."""
        start, end, note = custom or (None, None, "")
        return Callback(
            platform="slack",
            tenant_id=self.tenant(who),
            user_id=who.user_id, team_id=who.team_id, enterprise_id=who.enterprise_id,
            aad_tenant_id=None, clarification_id=clarification_id, card_ref=card_ref,
            message_ref=None if message_ref is None else self.channel.own_ref(
                message_ref, reach(who)),
            answer_index=answer_index, custom_from=start,
            custom_to=end, custom_note=note, received_at=self.clock.now(), acted_at=acted_at,
        )

    async def durable(self, cb: Callback, *, wake: bool = True) -> AnswerStatus:
        """``answers.accept`` within ``accept_seconds``; NotDurable when the store fails or
        does not answer in time (the callback is then not acknowledged)."""
        try:
            return await asyncio.wait_for(self.answers.accept(cb, wake=wake), self.accept_seconds)
        except (TimeoutError, StoreError) as exc:
            log.error("slack.answer_not_durable", error=type(exc).__name__)
            raise NotDurable(type(exc).__name__) from None

    async def ephemeral(self, channel_id: str | None, who: payloads.Who, *, key: str) -> None:
        """The catalog's words for ``key``, next to the card, seen by ``who`` only."""
        if channel_id is None:
            return
        words = card_text.catalog_of(Viewer()).text(key)
        await self.channel.ephemeral(channel_id, who.user_id, {"text": words, "blocks": []},
                                     workspace=reach(who))


class NotDurable(AdapterError):
    """An answer could not be made durable in time; ``cause`` is the error's type name."""

    def __init__(self, cause: str) -> None:
        super().__init__(cause)
        self.cause = cause


def reach(who: payloads.Who) -> SlackReach:
    """Where a callback came from, as the channel finds its installation by."""
    return SlackReach(team_id=who.team_id, enterprise_id=who.enterprise_id)
