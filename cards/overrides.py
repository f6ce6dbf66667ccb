"""The steward's override, on both platforms: the actions on the conflict and unreachable-quorum
cards, and the confirmation step that asks for the required note.

Each action carries a signed reference (a clarification, a candidate index, the delivery) and no
authority: whoever taps it is resolved again from the verified callback, and the core reads that
person's rights when the override arrives, so a card forwarded to a non-steward is useless.
"""

from __future__ import annotations

from cards import dates, text
from cards import platform_limits as limits
from cards.actions import OVERRIDE_NOTE_ID, ActionCodec, ActionKind, ActionRef
from cards.teams_text import rich_block
from cards.untrusted import line
from cards.views import AnswerView, CandidateView, OverrideFormView, Viewer

OVERRIDE_ACTION = "clarify.override"  # Slack action ids: clarify.override.<index>
OVERRIDE_CALLBACK = "clarify.override"  # the Slack modal's callback_id
OVERRIDE_VERB = "clarify.override"  # Teams: open the confirmation card
OVERRIDE_SUBMIT_VERB = "clarify.override.submit"  # Teams: submit it with the note
NOTE_CHARS = 500


def candidate_label(candidate: CandidateView, viewer: Viewer) -> str:
    """"Decide: 12 June 2027 (signature)", the label only when the steward may read it."""
    when = text.interval_text(AnswerView.of(candidate), viewer, reference_year=None)
    origin = line(candidate.label)
    shown = (text.catalog_of(viewer).text("candidate.label", date=when, origin=origin)
             if origin else when)
    return text.catalog_of(viewer).text("override.button", answer=shown)


def _confirm(form: OverrideFormView) -> str:
    """ "Record this answer as the steward's decision for clarification …: …"."""
    return text.catalog_of(form.viewer).text(
        "override.confirm", answer=candidate_label(form.candidate, form.viewer),
        id=limits.clip(line(form.clarification_id), text.PERSON_CHARS))


def open_ref(clarification_id: str, card_ref: str, index: int) -> ActionRef:
    return ActionRef(kind=ActionKind.OVERRIDE_OPEN, card_ref=card_ref,
                     clarification_id=clarification_id, candidate=index)


def submit_ref(form: OverrideFormView) -> ActionRef:
    return ActionRef(kind=ActionKind.OVERRIDE_SUBMIT, card_ref=form.card_ref,
                     clarification_id=form.clarification_id, candidate=form.candidate.index)


# ---------------------------------------------------------------- Slack


def slack_actions(clarification_id: str, card_ref: str, candidates: tuple[CandidateView, ...],
                  viewer: Viewer, codec: ActionCodec | None) -> list[dict]:
    """One button per candidate (the action blocks); none without a codec or candidates."""
    if codec is None or not candidates or not card_ref:
        return []
    buttons = [{"type": "button", "action_id": f"{OVERRIDE_ACTION}.{c.index}",
                "text": {"type": "plain_text", "emoji": False, "text": limits.clip(
                    candidate_label(c, viewer), limits.SLACK_BUTTON_TEXT)},
                "value": codec.encode(open_ref(clarification_id, card_ref, c.index))}
               for c in candidates]
    step = limits.SLACK_ACTIONS_ELEMENTS
    intro = {"type": "context", "block_id": "override.intro", "elements": [
        {"type": "plain_text", "emoji": False, "text": text.catalog_of(viewer).text(
            "override.intro")}]}
    return [intro, *({"type": "actions", "block_id": f"override.{n // step}",
                      "elements": buttons[n:n + step]} for n in range(0, len(buttons), step))]


def slack_modal(form: OverrideFormView, *, codec: ActionCodec) -> dict:
    """The confirmation: the chosen answer and a required note input (Slack refuses an empty
    required input itself; the adapter checks again)."""
    cat = text.catalog_of(form.viewer)

    def plain(value: str, limit: int = limits.SLACK_MODAL_TITLE) -> dict:
        return {"type": "plain_text", "text": limits.clip(value, limit), "emoji": True}

    note: dict = {"type": "input", "block_id": OVERRIDE_NOTE_ID, "optional": False,
                  "label": plain(cat.text("override.note"), limits.SLACK_PLACEHOLDER),
                  "element": {"type": "plain_text_input", "action_id": "value",
                              "multiline": True, "min_length": 1, "max_length": NOTE_CHARS}}
    return {"type": "modal", "callback_id": OVERRIDE_CALLBACK,
            "private_metadata": codec.encode(submit_ref(form)),
            "title": plain(cat.text("override.title")),
            "submit": plain(cat.text("override.submit")),
            "close": plain(cat.text("custom.cancel")),
            "blocks": [{"type": "section", "block_id": "override.answer", "text": {
                "type": "plain_text", "emoji": False, "text": limits.clip(
                    _confirm(form), limits.SLACK_SECTION_TEXT)}},
                       note]}


# ---------------------------------------------------------------- Teams


def teams_actions(clarification_id: str, card_ref: str, candidates: tuple[CandidateView, ...],
                  viewer: Viewer, codec: ActionCodec | None) -> list[dict]:
    """Action.Execute per candidate; the invoke answers with the confirmation card."""
    if codec is None or not candidates or not card_ref:
        return []
    return [{"type": "Action.Execute", "title": limits.clip(candidate_label(c, viewer), 75),
             "verb": OVERRIDE_VERB,
             "data": codec.teams_data(open_ref(clarification_id, card_ref, c.index))}
            for c in candidates]


def teams_form(form: OverrideFormView, *, codec: ActionCodec) -> dict:
    """The confirmation card: the chosen answer, a required Input.Text and the submit."""
    cat = text.catalog_of(form.viewer)
    body: list[dict] = [
        {"type": "TextBlock", "wrap": True, "weight": "Bolder", "size": "Medium",
         "text": cat.text("override.title")},
        rich_block(limits.clip(_confirm(form), 1000)),
        {"type": "Input.Text", "id": OVERRIDE_NOTE_ID, "label": cat.text("override.note"),
         "isMultiline": True, "isRequired": True, "maxLength": NOTE_CHARS,
         "errorMessage": cat.text("override.note_required")},
    ]
    if form.note_missing:
        body.append({"type": "TextBlock", "wrap": True, "color": "Attention", "size": "Small",
                     "text": cat.text("override.note_required")})
    submit = {"type": "Action.Execute", "title": cat.text("override.submit"),
              "verb": OVERRIDE_SUBMIT_VERB, "data": codec.teams_data(submit_ref(form)),
              "associatedInputs": "auto"}
    return {"type": "AdaptiveCard", "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
            "version": "1.5", "lang": dates.card_language(form.viewer.locale), "body": body,
            "actions": [submit]}
