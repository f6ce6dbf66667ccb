"""The "Something else…" form on Slack: the button opens a modal with two date pickers and a
note (``Interactions.custom_form`` decides whether it opens, and with what); its submission is
checked here (the dates' order), made durable first and forwarded by this request itself, so
that a date the core cannot read comes back as a field error while the form is still open."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import structlog
from slack_bolt.request.async_request import AsyncBoltRequest

from adapters.slack import listening, payloads
from adapters.slack.kit import Kit, reach
from bot.answering.answers import AnswerStatus
from bot.channel import ChannelError
from cards import slack as blocks
from cards import text as card_text
from cards.actions import custom_input_ids, read_custom_answer
from cards.views import CustomError, CustomFormView, Viewer

log = structlog.get_logger("clarify.slack")


def register(kit: Kit) -> None:
    """The form's listeners on the kit's bolt app."""

    async def on_open(ack: Any, context: Any) -> None:
        await ack()
        click = listening.read(context).click
        if click is None or click.trigger_id is None or click.ref.clarification_id is None:
            return
        kit.spawn(_open(kit, click))  # a task of ours: drain() waits for it too

    async def on_submit(ack: Any, context: Any, request: AsyncBoltRequest) -> None:
        await submit(kit, ack, context, request)

    kit.app.action(blocks.CUSTOM_ACTION)(on_open)
    kit.app.view(blocks.CUSTOM_CALLBACK)(on_submit)


async def _open(kit: Kit, click: payloads.Click) -> None:
    assert click.trigger_id is not None
    try:  # trigger_id lives 3 s: the modal must open inside that
        modal = await asyncio.wait_for(_modal(kit, click), listening.MODAL_DECISION_SECONDS)
    except TimeoutError:
        modal = None
    try:
        if modal is None:
            await kit.ephemeral(click.channel_id, click.who, key="answer.form_unavailable")
            return
        await kit.channel.open_modal(click.trigger_id, modal, workspace=reach(click.who))
    except ChannelError as exc:
        log.warning("slack.modal_not_opened", error=exc.reason)


async def _modal(kit: Kit, click: payloads.Click) -> dict[str, Any] | None:
    assert click.ref.clarification_id is not None
    question = await kit.interactions.custom_form(
        listening.user(click.who), clarification_id=click.ref.clarification_id,
        card_ref=click.ref.card_ref)
    if question is None:
        return None
    modal = blocks.render_custom_modal(CustomFormView(question=question, slot=click.ref.slot),
                                       codec=kit.codec)
    modal["private_metadata"] = json.dumps({"t": modal["private_metadata"],
                                            "m": click.message_ref,
                                            "l": question.viewer.locale})
    return modal


async def submit(kit: Kit, ack: Any, context: Any,
                 request: AsyncBoltRequest) -> None:
    sub = listening.read(context).submission
    if sub is None:
        await ack()
        return
    ids = custom_input_ids(sub.ref.slot)
    value = listening.input_value
    parsed = read_custom_answer(start=value(sub.values, ids.start, "selected_date"),
                                end=value(sub.values, ids.end, "selected_date"),
                                note=value(sub.values, ids.note, "value"))
    if isinstance(parsed, CustomError):
        await ack(response_action="errors", errors=_errors(parsed, ids, sub.locale))
        return
    assert sub.ref.clarification_id is not None
    acted = listening.signed_stamp(request)  # a submission carries no action time of its own
    cb = kit.callback(sub.who, sub.ref.clarification_id, sub.ref.card_ref, sub.message_ref,
                      custom=(parsed.start, parsed.end, parsed.note),
                      acted_at=payloads.micros(acted) if acted else 0)
    # durable first; then this request forwards it itself, so that a date the core cannot
    # read comes back as a field error while the form is still open
    taken = await kit.take(cb, wait=kit.waiting(listening.MODAL_DECISION_SECONDS))
    if taken.verdict is AnswerStatus.INVALID:
        await ack(response_action="errors",
                  errors=_errors(CustomError.UNPARSEABLE, ids, sub.locale))
        return
    await ack()


def _errors(error: CustomError, ids: Any, locale: str | None) -> dict[str, str]:
    """The field error, in the language the modal was drawn in."""
    field_id = ids.end if error is CustomError.END_BEFORE_START else ids.start
    return {field_id: card_text.custom_error_text(error, Viewer(locale=locale or "en"))}
