"""Slack listeners for the steward's override: the candidate buttons on the conflict and
unreachable-quorum cards open a confirmation modal with a required note; its submission becomes a
``Callback`` with ``steward_override`` and goes the answer path every click goes (durable outbox
first, ordered, forwarded once). Whether the person may override is the core's decision, read at
answer time from the verified person's rights; a refusal is told privately, nothing recorded.
"""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import structlog
from slack_bolt.request.async_request import AsyncBoltRequest

from adapters.slack import listening, payloads
from bot.channel import ChannelError, SlackReach
from cards import overrides
from cards import text as card_text
from cards.actions import OVERRIDE_NOTE_ID, read_override_note
from cards.views import Viewer

if TYPE_CHECKING:
    from adapters.slack.app import SlackAdapter

log = structlog.get_logger("clarify.slack")
OVERRIDE_ACTION = re.compile(r"^clarify\.override\.\d+$")


def register(adapter: SlackAdapter) -> None:
    """The override's listeners on the adapter's bolt app."""

    async def on_open(ack: Any, context: Any) -> None:
        await ack()
        click = _click(context)
        if click is not None and click.trigger_id is not None \
                and click.ref.candidate is not None and click.ref.clarification_id is not None:
            adapter._spawn(_open(adapter, click))

    async def on_submit(ack: Any, context: Any, request: AsyncBoltRequest) -> None:
        await submit(adapter, ack, context, request)

    adapter.app.action(OVERRIDE_ACTION)(on_open)
    adapter.app.view(overrides.OVERRIDE_CALLBACK)(on_submit)


def _click(context: Any) -> payloads.Click | None:
    return listening.read(context).click


async def _open(adapter: SlackAdapter, click: payloads.Click) -> None:
    assert click.trigger_id is not None and click.ref.clarification_id is not None
    assert click.ref.candidate is not None
    try:  # trigger_id lives 3 s: the modal must open inside that
        form = await asyncio.wait_for(adapter.interactions.override_form(
            listening.user(click.who), clarification_id=click.ref.clarification_id,
            card_ref=click.ref.card_ref, candidate=click.ref.candidate),
            listening.MODAL_DECISION_SECONDS)
    except TimeoutError:
        form = None
    try:
        if form is None:
            await adapter._ephemeral(click.channel_id, click.who.user_id,
                                     key="answer.form_unavailable", who=click.who)
            return
        modal = overrides.slack_modal(form, codec=adapter.codec)
        modal["private_metadata"] = json.dumps({"t": modal["private_metadata"],
                                                "m": click.message_ref})
        await adapter.channel.open_modal(click.trigger_id, modal, workspace=SlackReach(
            team_id=click.who.team_id, enterprise_id=click.who.enterprise_id))
    except ChannelError as exc:
        log.warning("slack.modal_not_opened", error=exc.reason)


async def submit(adapter: SlackAdapter, ack: Any, context: Any,
                 request: AsyncBoltRequest) -> None:
    """A missing note is refused at the form (nothing queued); otherwise the override is made
    durable before Slack hears "ok" and forwarded by the outbox."""
    sub = listening.read(context).submission
    if sub is None or sub.ref.candidate is None or sub.ref.clarification_id is None:
        await ack()
        return
    note = read_override_note(listening.input_value(sub.values, OVERRIDE_NOTE_ID, "value"))
    if note is None:
        words = card_text.catalog_of(Viewer()).text("override.note_required")
        await ack(response_action="errors", errors={OVERRIDE_NOTE_ID: words})
        return
    acted = listening.signed_stamp(request)
    cb = adapter._callback(sub.who, sub.ref.clarification_id, sub.ref.card_ref, sub.message_ref,
                           answer_index=sub.ref.candidate,
                           acted_at=payloads.micros(acted) if acted else 0)
    await adapter._durable(replace(cb, steward_override=True, override_note=note))
    await ack()
