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
from typing import Any

import structlog
from slack_bolt.request.async_request import AsyncBoltRequest

from adapters.slack import listening, payloads
from adapters.slack.kit import Kit, reach
from bot.channel import ChannelError
from cards import overrides
from cards import text as card_text
from cards.actions import OVERRIDE_NOTE_ID, read_override_note
from cards.views import Viewer

log = structlog.get_logger("clarify.slack")
OVERRIDE_ACTION = re.compile(r"^clarify\.override\.\d+$")


def register(kit: Kit) -> None:
    """The override's listeners on the kit's bolt app."""

    async def on_open(ack: Any, context: Any) -> None:
        await ack()
        click = _click(context)
        if click is not None and click.trigger_id is not None \
                and click.ref.candidate is not None and click.ref.clarification_id is not None:
            kit.spawn(_open(kit, click))

    async def on_submit(ack: Any, context: Any, request: AsyncBoltRequest) -> None:
        await submit(kit, ack, context, request)

    kit.app.action(OVERRIDE_ACTION)(on_open)
    kit.app.view(overrides.OVERRIDE_CALLBACK)(on_submit)


def _click(context: Any) -> payloads.Click | None:
    return listening.read(context).click


async def _open(kit: Kit, click: payloads.Click) -> None:
    assert click.trigger_id is not None and click.ref.clarification_id is not None
    assert click.ref.candidate is not None
    try:  # trigger_id lives 3 s: the modal must open inside that
        form = await asyncio.wait_for(kit.interactions.override_form(
            listening.user(click.who), clarification_id=click.ref.clarification_id,
            card_ref=click.ref.card_ref, candidate=click.ref.candidate),
            listening.MODAL_DECISION_SECONDS)
    except TimeoutError:
        form = None
    try:
        if form is None:
            await kit.ephemeral(click.channel_id, click.who, key="answer.form_unavailable")
            return
        modal = overrides.slack_modal(form, codec=kit.codec)
        modal["private_metadata"] = json.dumps({"t": modal["private_metadata"],
                                                "m": click.message_ref,
                                                "l": form.viewer.locale})
        await kit.channel.open_modal(click.trigger_id, modal, workspace=reach(click.who))
    except ChannelError as exc:
        log.warning("slack.modal_not_opened", error=exc.reason)


async def submit(kit: Kit, ack: Any, context: Any,
                 request: AsyncBoltRequest) -> None:
    """A missing note is refused at the form (nothing queued); otherwise the override is made
    durable before Slack hears "ok" and forwarded by the outbox."""
    sub = listening.read(context).submission
    if sub is None or sub.ref.candidate is None or sub.ref.clarification_id is None:
        await ack()
        return
    note = read_override_note(listening.input_value(sub.values, OVERRIDE_NOTE_ID, "value"))
    if note is None:
        words = card_text.catalog_of(Viewer(locale=sub.locale or "en")).text(
            "override.note_required")
        await ack(response_action="errors", errors={OVERRIDE_NOTE_ID: words})
        return
    acted = listening.signed_stamp(request)
    cb = kit.callback(sub.who, sub.ref.clarification_id, sub.ref.card_ref, sub.message_ref,
                      answer_index=sub.ref.candidate,
                      acted_at=payloads.micros(acted) if acted else 0, override_note=note)
    await kit.take(cb)
    await ack()
