"""Slack Block Kit renderers: a view model in, a ``{text, blocks}`` message or a modal out.

Every text is clipped to its Block Kit limit; the words of people and of the core are shown as
text (``plain_text``, rich text, or neutralised mrkdwn where a context line holds a link), so a
title like ``<!channel>`` or ``*bold*`` is shown, never obeyed (``cards.slack_blocks``). The
steward's messages are in ``cards.slack_stewards``, re-exported here.
"""

from __future__ import annotations

from cards import platform_limits as limits
from cards import reach, text
from cards.actions import ActionCodec, ActionKind, ActionRef, custom_input_ids
from cards.outcome_text import outcome_text

# re-exported: the adapter reads the action ids here, and cards.render dispatches on this
# module (the steward's renderers)
from cards.reach import REACH_OPEN_ACTION as REACH_OPEN_ACTION
from cards.reach_views import ReachReportView
from cards.slack_blocks import (
    DIGEST_MAX_QUESTIONS,
    EXCERPT_CHARS,
    LINE_CHARS,
    QUESTION_CHARS,
    button,
    context,
    link_context,
    message,
    plain_text,
    rich,
    rich_elements,
    section,
    source_runs,
)
from cards.slack_blocks import OPEN_DOCUMENT_ACTION as OPEN_DOCUMENT_ACTION
from cards.slack_stewards import render_dead_letter_digest as render_dead_letter_digest
from cards.slack_stewards import render_steward_conflict as render_steward_conflict
from cards.slack_stewards import render_steward_escalation as render_steward_escalation
from cards.slack_stewards import render_steward_notice as render_steward_notice
from cards.slack_stewards import render_steward_notices as render_steward_notices
from cards.slack_stewards import render_steward_quorum as render_steward_quorum
from cards.views import (
    CustomError,
    CustomFormView,
    DigestView,
    OutcomeView,
    QuestionView,
    ReminderView,
    Viewer,
)

ANSWER_ACTION = "clarify.answer"
CUSTOM_ACTION = "clarify.custom"
DIGEST_NEXT_ACTION = "clarify.digest.next"
DECLINE_ACTION = "clarify.decline"
CUSTOM_CALLBACK = "clarify.custom"

# ---------------------------------------------------------------- the question


def _answer_buttons(view: QuestionView, codec: ActionCodec, slot: int) -> list[dict]:
    year = text.asked_year(view)
    buttons = [
        button(text.candidate_text(c, view.viewer, reference_year=year), emoji=False,
                action_id=f"{ANSWER_ACTION}.{c.index}",
                value=codec.encode(ActionRef(kind=ActionKind.ANSWER, card_ref=view.card_ref,
                                             clarification_id=view.clarification_id,
                                             candidate=c.index, slot=slot)))
        for c in text.shown_candidates(view)]
    buttons.append(button(
        text.catalog_of(view.viewer).text("question.something_else"), action_id=CUSTOM_ACTION,
        value=codec.encode(ActionRef(kind=ActionKind.CUSTOM_OPEN, card_ref=view.card_ref,
                                     clarification_id=view.clarification_id, slot=slot))))
    return buttons


def question_blocks(view: QuestionView, *, codec: ActionCodec, slot: int = 0,
                    compact: bool = False) -> list[dict]:
    """The blocks of one question; ``compact`` folds the source link into the question. The
    question is bold rich text: bold by its style, never by marks a person could also type."""
    source = source_runs(view.document, view.viewer)
    heading = rich_elements((text.question_text(view.question, QUESTION_CHARS),), bold=True)
    blocks = [rich(f"q{slot}.question", heading, *([rich_elements(source)] if compact else []))]
    # a digest keeps its block budget for questions: why-asked and the excerpt are the card's
    lines = [] if compact else [("excerpt", "❝", text.excerpt_text(view, limit=EXCERPT_CHARS)),
                                ("why", "🙋", text.why_asked(view))]
    lines += [("notice", "⚠️", text.quorum_notice(view)), ("banner", "☑️", text.banner_text(view)),
              ("reminder", "⏰", text.reminder_line(view)),
              ("moves_on", "⏳", text.moves_on_text(view))]
    for suffix, icon, line in lines:
        if line:
            blocks.append(context(f"q{slot}.{suffix}", f"{icon} {limits.clip(line, LINE_CHARS)}"))
    buttons = _answer_buttons(view, codec, slot)
    step = limits.SLACK_ACTIONS_ELEMENTS
    for n in range(0, len(buttons), step):
        blocks.append({"type": "actions", "block_id": f"q{slot}.answers.{n // step}",
                       "elements": buttons[n:n + step]})
    if not compact:
        blocks.append({"type": "actions", "block_id": f"q{slot}.decline",
                       "elements": [_declinebutton(view, codec, slot)]})
        blocks.append(link_context(f"q{slot}.source", ("📄 ", *source)))
    return blocks


def _declinebutton(view: QuestionView, codec: ActionCodec, slot: int) -> dict:
    """"Not the right person": passes the question on to the next candidate at once."""
    return button(text.catalog_of(view.viewer).text("question.decline"),
                   action_id=DECLINE_ACTION,
                   value=codec.encode(ActionRef(kind=ActionKind.DECLINE, card_ref=view.card_ref,
                                                clarification_id=view.clarification_id,
                                                slot=slot)))


def render_question(view: QuestionView, *, codec: ActionCodec) -> dict:
    return message(text.question_text(view.question), question_blocks(view, codec=codec))


def render_reminder(view: ReminderView) -> dict:
    """The reminder's nudge: one line, threaded under the card by the channel (no buttons: the
    card above it, repainted, is where the answer goes)."""
    words = text.reminder_text(view)
    return message(words, [context("reminder", f"⏰ {limits.clip(words, LINE_CHARS)}")])


# ---------------------------------------------------------------- "Something else…"


def render_custom_modal(form: CustomFormView, *, codec: ActionCodec) -> dict:
    """The modal opened by "Something else…": start and end date pickers and a note."""
    view, ids = form.question, custom_input_ids(form.slot)
    cat = text.catalog_of(view.viewer)
    token = codec.encode(ActionRef(kind=ActionKind.CUSTOM_SUBMIT, card_ref=view.card_ref,
                                   clarification_id=view.clarification_id, slot=form.slot))
    blocks = [rich("custom.question", rich_elements(
                  (text.question_text(view.question, QUESTION_CHARS),), bold=True)),
              context("custom.intro", cat.text("custom.intro"))]
    found = text.found_dates(view)
    if found:
        blocks.append(context("custom.found", limits.clip(found, LINE_CHARS)))
    if form.error is not None:
        blocks.append(context("custom.error", "⚠️ " + cat.text("custom.error.heading")))
    blocks += [
        _date_input(ids.start, cat.text("custom.start"), form.entered_from, optional=False),
        _date_input(ids.end, cat.text("custom.end"), form.entered_to, optional=True),
        _note_input(ids.note, view.viewer, form.entered_note),
    ]
    return {"type": "modal", "callback_id": CUSTOM_CALLBACK, "private_metadata": token,
            "title": plain_text(cat.text("custom.title"), limits.SLACK_MODAL_TITLE),
            "submit": plain_text(cat.text("custom.submit"), limits.SLACK_MODAL_TITLE),
            "close": plain_text(cat.text("custom.cancel"), limits.SLACK_MODAL_TITLE),
            "blocks": blocks}


def _date_input(block_id: str, label: str, initial: object, *, optional: bool) -> dict:
    picker: dict = {"type": "datepicker", "action_id": "value"}
    if initial is not None:
        picker["initial_date"] = initial.isoformat()  # type: ignore[attr-defined]
    return {"type": "input", "block_id": block_id, "optional": optional,
            "label": plain_text(label, limits.SLACK_INPUT_LABEL), "element": picker}


def _note_input(block_id: str, viewer: Viewer, initial: str) -> dict:
    cat = text.catalog_of(viewer)
    element: dict = {"type": "plain_text_input", "action_id": "value", "multiline": True,
                     "max_length": 2000,
                     "placeholder": plain_text(cat.text("custom.note_placeholder"),
                                           limits.SLACK_PLACEHOLDER)}
    if initial:
        element["initial_value"] = limits.clip(initial, 2000)
    return {"type": "input", "block_id": block_id, "optional": True,
            "label": plain_text(cat.text("custom.note"), limits.SLACK_INPUT_LABEL),
            "element": element}


def render_custom_errors(form: CustomFormView) -> dict:
    """The view_submission answer that shows an inline error under the offending field."""
    ids = custom_input_ids(form.slot)
    error = form.error or CustomError.UNPARSEABLE
    field = ids.end if error is CustomError.END_BEFORE_START else ids.start
    return {"response_action": "errors",
            "errors": {field: text.custom_error_text(error, form.question.viewer)}}


# ---------------------------------------------------------------- after an answer


def render_outcome(view: OutcomeView) -> dict:
    """The card after an answer, replacing the question (chat.update or response_url)."""
    words = outcome_text(view)
    details = "\n".join(limits.clip(line, LINE_CHARS) for line in words.details)
    blocks = [section("outcome", limits.clip(words.headline, LINE_CHARS))]
    if details:
        blocks.append(context("outcome.details", details))
    if text.names_a_document(view.document):
        blocks.append(link_context("outcome.source",
                                   ("📄 ", *source_runs(view.document, view.viewer))))
    return message(words.headline, blocks)


# ---------------------------------------------------------------- the digest


def render_digest(view: DigestView, *, codec: ActionCodec) -> dict:
    """Several questions, each answerable in place, at most DIGEST_MAX_QUESTIONS a message.

    Questions are added while the message stays inside the block limit with room for the
    overflow line; the rest are counted in a final section whose button asks for the next page.
    """
    cat = text.catalog_of(view.viewer)
    total = len(view.questions)
    blocks = [{"type": "header", "block_id": "digest.title",
               "text": plain_text(cat.text("digest.title"), limits.SLACK_HEADER_TEXT)},
              section("digest.intro", cat.plural("digest.intro", total))]
    shown = 0
    for slot, question in enumerate(view.questions[:DIGEST_MAX_QUESTIONS]):
        more = [{"type": "divider", "block_id": f"q{slot}.divider"},
                *question_blocks(question, codec=codec, slot=slot, compact=True)]
        footer = 1 if slot + 1 < total else 0
        if len(blocks) + len(more) + footer > limits.SLACK_MESSAGE_BLOCKS:
            break
        blocks += more
        shown += 1
    if shown < total:
        blocks.append(_digest_more(view, codec=codec, shown=shown))
    return message(cat.plural("digest.fallback", total), blocks)


def _digest_more(view: DigestView, *, codec: ActionCodec, shown: int) -> dict:
    cat = text.catalog_of(view.viewer)
    token = codec.encode(ActionRef(kind=ActionKind.DIGEST_NEXT, card_ref=view.digest_ref,
                                   offset=view.offset + shown))
    block = section("digest.more", cat.plural("digest.more", len(view.questions) - shown))
    block["accessory"] = button(cat.text("digest.show_more"), action_id=DIGEST_NEXT_ACTION,
                                 value=token)
    return block


# ---------------------------------------------------------------- the reach report


def render_reach_report(view: ReachReportView) -> dict:
    """The steward's weekly reach report (``cards.reach``): figures, top causes, one button."""
    return reach.render_slack_reach_report(view)
