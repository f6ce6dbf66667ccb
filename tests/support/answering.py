"""Answers as a chat adapter would hand them over, for the answer path's rule tests: a person's
click on the question card the rig sent them, queued in the outbox as the adapter's accept
queues it (one store call), and the consumers that forward what is queued."""

from __future__ import annotations

from datetime import timedelta

from bot.answering.outbox import ConsumerConfig, OutboxConsumers
from bot.channels.recording import SentMessage
from bot.chat import Callback
from bot.store.base import Acceptance
from cards.views import QuestionView
from tests.engine.conftest import Rig

SLACK_IDS = {"p-sarah": "U0SARAH", "p-ahmed": "U0AHMED", "p-maria": "U0MARIA",
             "p-tom": "U0TOM", "p-jonas": "U0JONAS", "p-priya": "U0PRIYA"}


def card_of(rig: Rig, person_id: str, clarification_id: str) -> SentMessage:
    """The question card the rig sent the person for the clarification."""
    [card] = [s for s in rig.channel.to(person_id)
              if isinstance(s.message, QuestionView)
              and s.key.clarification_id == clarification_id]
    return card


def click(rig: Rig, person_id: str, clarification_id: str, answer_index: int, *,
          after: timedelta = timedelta(0)) -> Callback:
    """The person's tap on answer ``answer_index`` of their card, ``after`` the rig's now."""
    card = card_of(rig, person_id, clarification_id)
    assert isinstance(card.message, QuestionView)
    acted = rig.clock.now() + after
    return Callback(platform="slack", tenant_id="acme", user_id=SLACK_IDS[person_id],
                    team_id="T0ACME", enterprise_id="E0ACME", aad_tenant_id=None,
                    clarification_id=clarification_id, card_ref=card.message.card_ref,
                    message_ref=card.ref, answer_index=answer_index,
                    acted_at=int(acted.timestamp() * 1_000_000))


async def queue(rig: Rig, cb: Callback) -> Acceptance:
    """The callback made durable in the outbox, due now."""
    return await rig.store.outbox_accept(cb.entry_id(), cb.to_json(), order_key=cb.order_key(),
                                         acted_at=cb.acted_at, now=rig.clock.now(),
                                         answer=cb.fingerprint())


def consumers(rig: Rig, count: int = 4) -> OutboxConsumers:
    return OutboxConsumers(rig.engine.answers, ConsumerConfig(consumers=count))


async def responses(rig: Rig, clarification_id: str) -> list[tuple[str, int | None]]:
    """What the core recorded, in the order it recorded it."""
    c = await rig.bot.get_clarification(clarification_id=clarification_id)
    return [(r.responder, r.answer_index) for r in c.responses]
