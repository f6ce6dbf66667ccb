"""Adaptive Card 1.5 renderers with Universal Actions (``Action.Execute``) for Teams.

Cards are kept under 28 KB; a digest that would not fit ends in a "more questions" line whose
button fetches the next page. Text is rich text, never read as markdown, except the lines that
hold a document link (``cards.teams_text``).
"""

from __future__ import annotations

from cards import overrides, reach, steward_text, text, untrusted
from cards import platform_limits as limits
from cards.actions import ActionCodec, ActionKind, ActionRef, custom_input_ids
from cards.outcome_text import outcome_text
from cards.reach_views import ReachReportView
from cards.teams_card import FOOTER_RESERVE_BYTES as FOOTER_RESERVE_BYTES
from cards.teams_card import SCHEMA as SCHEMA
from cards.teams_card import append_while_fits as _append_while_fits
from cards.teams_card import card as _card
from cards.teams_card import execute as _execute
from cards.teams_card import text as _text
from cards.teams_text import block
from cards.views import (
    STEWARD_NOTICES_MAX,
    CustomError,
    CustomFormView,
    DeadLetterDigestView,
    DeadLetterItem,
    DigestView,
    DocumentView,
    OutcomeView,
    QuestionView,
    ReminderView,
    SkippedCandidate,
    StewardConflictView,
    StewardEscalationView,
    StewardNoticesView,
    StewardNoticeView,
    StewardQuorumView,
    Viewer,
)

ANSWER_VERB = "clarify.answer"
CUSTOM_VERB = "clarify.custom"
REFRESH_VERB = "clarify.refresh"
DIGEST_NEXT_VERB = "clarify.digest.next"
DECLINE_VERB = "clarify.decline"
QUESTION_CHARS = 1000
TITLE_CHARS = 200
LINE_CHARS = 1000
# "Confirmed by …" names can be many and long; a shorter cap keeps one worst-case question (with
# every text non-ASCII, escaped to six bytes a unit on the wire) inside a digest page.
BANNER_CHARS = 400
EXCERPT_CHARS = 300  # a sentence or two; keeps the worst-case card under 28 KB
DIGEST_MAX_QUESTIONS = 10


def _source_line(document: DocumentView, viewer: Viewer) -> dict:
    runs = text.catalog_of(viewer).runs("question.source",
                                        link=text.document_run(document, viewer))
    return block(("📄 ", *runs), size="Small", isSubtle=True)


def activity_text(words: str) -> str:
    """Words for an activity's own ``text`` (a notification line), which Teams reads as
    markdown."""
    return untrusted.markdown(words)


def _action_sets(actions: list[dict], prefix: str) -> list[dict]:
    step = limits.TEAMS_ACTIONS_PER_SET
    return [{"type": "ActionSet", "id": f"{prefix}.{n // step}", "actions": actions[n:n + step]}
            for n in range(0, len(actions), step)]


# ---------------------------------------------------------------- the question


def _answer_actions(view: QuestionView, codec: ActionCodec, slot: int) -> list[dict]:
    year = text.asked_year(view)
    return [_execute(text.candidate_text(c, view.viewer, reference_year=year), ANSWER_VERB,
                     codec.teams_data(ActionRef(kind=ActionKind.ANSWER, card_ref=view.card_ref,
                                                clarification_id=view.clarification_id,
                                                candidate=c.index, slot=slot)))
            for c in text.shown_candidates(view)]


def _question_parts(view: QuestionView, slot: int) -> list[dict]:
    parts = [_text(text.question_text(view.question), limit=QUESTION_CHARS, weight="Bolder",
                   size="Medium")]
    notice = text.quorum_notice(view)
    if notice:
        parts.append(_text(f"⚠️ {notice}", color="Attention"))
    banner = text.banner_text(view)
    if banner:
        parts.append(_text(f"☑️ {banner}", limit=BANNER_CHARS, color="Good"))
    reminder = text.reminder_line(view)
    if reminder:
        parts.append(_text(f"⏰ {reminder}", color="Attention"))
    moves_on = text.moves_on_text(view)
    if moves_on:
        parts.append(_text(f"⏳ {moves_on}", isSubtle=True, size="Small"))
    return parts


def _custom_fields(form: CustomFormView) -> list[dict]:
    """The free-form inputs; a server-side error is shown right under its field."""
    ids, viewer = custom_input_ids(form.slot), form.question.viewer
    cat = text.catalog_of(viewer)
    start: dict = {"type": "Input.Date", "id": ids.start, "label": cat.text("custom.start"),
                   "isRequired": True, "errorMessage": cat.text("custom.error.start_required")}
    end: dict = {"type": "Input.Date", "id": ids.end, "label": cat.text("custom.end")}
    note: dict = {"type": "Input.Text", "id": ids.note, "label": cat.text("custom.note"),
                  "isMultiline": True, "maxLength": 2000,
                  "placeholder": cat.text("custom.note_placeholder")}
    for field, value in ((start, form.entered_from), (end, form.entered_to)):
        if value is not None:
            field["value"] = value.isoformat()
    if form.entered_note:
        note["value"] = limits.clip(form.entered_note, 2000)
    fields = [_text(cat.text("custom.intro"), isSubtle=True), start, end, note]
    if form.error is not None:
        where = 2 if form.error is CustomError.END_BEFORE_START else 1
        fields.insert(where + 1, _text(text.custom_error_text(form.error, viewer),
                                       color="Attention", size="Small", spacing="None"))
    return fields


def _custom_submit(form: CustomFormView, codec: ActionCodec) -> dict:
    view = form.question
    ref = ActionRef(kind=ActionKind.CUSTOM_SUBMIT, card_ref=view.card_ref,
                    clarification_id=view.clarification_id, slot=form.slot)
    submit = _execute(text.catalog_of(view.viewer).text("custom.submit"), CUSTOM_VERB,
                      codec.teams_data(ref))
    # Only this question's fields travel with the submit, even inside a digest.
    submit["associatedInputs"] = "auto"
    return submit


def _something_else(view: QuestionView, codec: ActionCodec, slot: int) -> dict:
    form = CustomFormView(question=view, slot=slot)
    return {"type": "Action.ShowCard",
            "title": text.catalog_of(view.viewer).text("question.something_else"),
            "card": {"type": "AdaptiveCard", "body": _custom_fields(form),
                     "actions": [_custom_submit(form, codec)]}}


def question_container(view: QuestionView, *, codec: ActionCodec, slot: int = 0,
                       alone: bool = False) -> list[dict]:
    """The body elements of one question: text, notices, buttons, "Something else…", source;
    ``alone`` (a question card, not a digest entry) adds the excerpt, why the person is asked
    and "Not the right person"."""
    actions = [*_answer_actions(view, codec, slot), _something_else(view, codec, slot)]
    parts = _question_parts(view, slot)
    if alone:
        excerpt, why = text.excerpt_text(view, limit=EXCERPT_CHARS), text.why_asked(view)
        parts += [_text(f"❝ {excerpt}", isSubtle=True, size="Small")] if excerpt else []
        parts += [_text(f"🙋 {why}", isSubtle=True, size="Small")] if why else []
    body = [*parts, *_action_sets(actions, f"q{slot}.answers")]
    if alone:
        decline = _execute(text.catalog_of(view.viewer).text("question.decline"), DECLINE_VERB,
                           codec.teams_data(ActionRef(kind=ActionKind.DECLINE,
                                                      card_ref=view.card_ref,
                                                      clarification_id=view.clarification_id,
                                                      slot=slot)))
        body += _action_sets([decline], f"q{slot}.decline")
    return [*body, _source_line(view.document, view.viewer)]


def _refresh(view: QuestionView, codec: ActionCodec) -> dict | None:
    if not view.refresh_user_ids:
        return None
    ref = ActionRef(kind=ActionKind.REFRESH, card_ref=view.card_ref,
                    clarification_id=view.clarification_id)
    return {"action": _execute("refresh", REFRESH_VERB, codec.teams_data(ref)),
            "userIds": list(view.refresh_user_ids[:limits.TEAMS_REFRESH_USERS])}


def render_question(view: QuestionView, *, codec: ActionCodec) -> dict:
    card = _card(view.viewer, question_container(view, codec=codec, alone=True))
    refresh = _refresh(view, codec)
    if refresh:
        card["refresh"] = refresh
    return card


def render_custom_form(form: CustomFormView, *, codec: ActionCodec) -> dict:
    """The free-form card (sent back with an inline error when an answer cannot be read)."""
    view = form.question
    body = [*_question_parts(view, form.slot)]
    found = text.found_dates(view)
    if found:
        body.append(_text(found, isSubtle=True, size="Small"))
    if form.error is not None:
        body.append(_text("⚠️ " + text.catalog_of(view.viewer).text("custom.error.heading"),
                          color="Attention"))
    body += _custom_fields(form)
    body.append(_source_line(view.document, view.viewer))
    return _card(view.viewer, body, [_custom_submit(form, codec)])


def render_reminder(view: ReminderView) -> dict:
    """The reminder's nudge in the person's 1:1 chat: one line (the card, updated in place
    through the connector, is where the answer goes)."""
    return _card(view.viewer, [_text(f"⏰ {text.reminder_text(view)}")])


# ---------------------------------------------------------------- after an answer


def render_outcome(view: OutcomeView) -> dict:
    words = outcome_text(view)
    colour = "Good" if words.positive else "Default"
    body = [_text(words.headline, weight="Bolder", color=colour),
            *[_text(line, isSubtle=True, size="Small") for line in words.details]]
    if text.names_a_document(view.document):
        body.append(_source_line(view.document, view.viewer))
    return _card(view.viewer, body)


# ---------------------------------------------------------------- stewards


def _skip_blocks(skipped: tuple[SkippedCandidate, ...], viewer: Viewer) -> list[dict]:
    return [_text(line if n == 0 and not skipped else f"• {line}", spacing="None")
            for n, line in enumerate(steward_text.skip_texts(skipped, viewer))]


def _people_blocks(skipped: tuple[SkippedCandidate, ...], unanswered: tuple[str, ...],
                   viewer: Viewer) -> list[dict]:
    """Skip reasons (or "No one was ranked" when nobody was asked either), then the
    "Asked, no answer" line."""
    line = steward_text.unanswered_text(unanswered, viewer)
    blocks = _skip_blocks(skipped, viewer) if skipped or line is None else []
    if line is not None:
        blocks.append(_text(line, spacing="None"))
    return blocks


def render_steward_escalation(view: StewardEscalationView) -> dict:
    """The redacted question: document link, unanswered names and skip reasons, never the
    question or span."""
    cat = text.catalog_of(view.viewer)
    body = [_text(cat.text("escalation.title"), weight="Bolder", size="Medium"),
            block(steward_text.escalation_body(view), limit=3000)]
    confirmed = steward_text.confirmed_text(view.confirmed, view.viewer)
    if confirmed is not None:
        body.append(_text(confirmed))
    unanswered = steward_text.unanswered_text(view.unanswered, view.viewer)
    if unanswered is not None:
        body.append(_text(unanswered))
    if view.skipped:
        body.append(_text(cat.text("escalation.skipped_heading"), weight="Bolder"))
    kept = len(body) + 1  # everything above the skip lines, plus the final "next step" line
    if view.skipped:
        body += _skip_blocks(view.skipped, view.viewer)
    elif unanswered is None:
        body.append(_text(cat.text("escalation.nobody")))
    body.append(_text(steward_text.escalation_next_step(view), isSubtle=True, size="Small"))
    return _fit(_card(view.viewer, body, _open_document(view.document, view.viewer)), keep=kept)


def _open_document(document: DocumentView, viewer: Viewer) -> list[dict]:
    """The "Open document" action; none without a link (a neutral reference has one only on
    the redacted escalation)."""
    if not untrusted.linkable(document.url):
        return []
    return [{"type": "Action.OpenUrl", "title": text.catalog_of(viewer).text(
        "question.open_document"), "url": untrusted.web_url(document.url)}]


def render_steward_quorum(view: StewardQuorumView, codec: ActionCodec | None = None) -> dict:
    """A critical question cannot reach its quorum: whom it was asked, how many confirmations
    are still missing, why the others were skipped; never the question or span."""
    cat = text.catalog_of(view.viewer)
    words = steward_text.quorum_text(view)
    body = [_text(words.title, weight="Bolder", size="Medium"), block(words.body, limit=3000)]
    if words.asked is not None:
        body.append(_text(words.asked))
    body += [_text(words.missing, weight="Bolder"),
             _text(text.reference_text(view.viewer, "steward_notice.reference",
                                       view.clarification_id),
                   isSubtle=True, size="Small", spacing="None")]
    if view.skipped:
        body.append(_text(cat.text("escalation.skipped_heading"), weight="Bolder"))
    kept = len(body) + 1  # everything above the skip lines, plus the final "next step" line
    body += _skip_blocks(view.skipped, view.viewer) if view.skipped else []
    body.append(_text(words.next_step, isSubtle=True, size="Small"))
    actions = [*overrides.teams_actions(view.clarification_id, view.card_ref, view.candidates,
                                        view.viewer, codec),
               *_open_document(view.document, view.viewer)]
    return _fit(_card(view.viewer, body, actions), keep=kept)


def render_steward_conflict(view: StewardConflictView, codec: ActionCodec | None = None
                            ) -> dict:
    """Who disagreed (before binding, or late against a bound date): names and the document
    link only."""
    cat = text.catalog_of(view.viewer)
    names = limits.clip(text.names_for(view.responders, view.viewer, "steward_conflict.body"),
                        LINE_CHARS)
    words = steward_text.steward_conflict_text(view, names=names)
    body = [_text(words.title, weight="Bolder", size="Medium"),
            block(words.body, limit=3000),
            _text(text.reference_text(view.viewer, "steward_conflict.reference",
                                      view.clarification_id),
                  isSubtle=True, size="Small")]
    actions = overrides.teams_actions(view.clarification_id, view.card_ref, view.candidates,
                                      view.viewer, codec)
    if actions:
        body.append(_text(cat.text("override.intro"), isSubtle=True, size="Small"))
    return _card(view.viewer, body, actions)


def render_steward_notice(view: StewardNoticeView) -> dict:
    """High severity: the steward hears whom a direct question went to; no answer buttons."""
    cat = text.catalog_of(view.viewer)
    names = limits.clip(text.names_for(view.asked, view.viewer, "steward_notice.body"), LINE_CHARS)
    body = [_text(cat.text("steward_notice.title"), weight="Bolder", size="Medium"),
            block(steward_text.steward_notice_body(view, names=names), limit=3000),
            _text(cat.text("steward_notice.redacted"), isSubtle=True, size="Small"),
            _text(text.reference_text(view.viewer, "steward_notice.reference",
                                      view.clarification_id),
                  isSubtle=True, size="Small", spacing="None")]
    return _card(view.viewer, body, _open_document(view.document, view.viewer))


def _fit(card: dict, *, keep: int) -> dict:
    """Drops trailing body lines past ``keep`` until the card fits (very long skip lists)."""
    while limits.card_bytes(card) > limits.TEAMS_CARD_BYTES and len(card["body"]) > keep:
        card["body"].pop(-2)  # keep the final "next step" line, drop the last skip line
    return card


def render_dead_letter_digest(view: DeadLetterDigestView) -> dict:
    cat = text.catalog_of(view.viewer)
    body = [_text(cat.text("dead_letter.title"), weight="Bolder", size="Medium"),
            _text(steward_text.dead_letter_intro(view))]
    card = _card(view.viewer, body)

    def entry(item: DeadLetterItem) -> dict:
        heading = cat.runs("dead_letter.item",
                           document=text.document_run(item.document, view.viewer),
                           severity=text.severity_text(item.severity, view.viewer))
        return {"type": "Container", "separator": True, "spacing": "Medium",
                "items": [block(heading, weight="Bolder"),
                          *_people_blocks(item.skipped, item.unanswered, view.viewer)]}

    shown = _append_while_fits(card, map(entry, view.items[:DIGEST_MAX_QUESTIONS]))
    more = steward_text.dead_letter_more(view, shown)
    if more:
        body.append(_text(more, isSubtle=True))
    return card


def render_steward_notices(view: StewardNoticesView) -> dict:
    """A window's notices for one steward: one container per notice while the card stays
    under its size limit, then one "…and N more" line."""
    cat = text.catalog_of(view.viewer)
    count = len(view.notices)
    body = [_text(cat.text("steward_notices.title"), weight="Bolder", size="Medium"),
            _text(cat.plural("steward_notices.intro", count)),
            _text(cat.text("steward_notice.redacted"), isSubtle=True, size="Small")]
    card = _card(view.viewer, body)

    def entry(notice: StewardNoticeView) -> dict:
        names = limits.clip(text.names_for(notice.asked, view.viewer, "steward_notices.item"),
                            LINE_CHARS)
        return {"type": "Container", "separator": True, "spacing": "Medium", "items": [
            block(steward_text.steward_notices_item(notice, names=names), limit=3000),
            _text(text.reference_text(view.viewer, "steward_notice.reference",
                                      notice.clarification_id),
                  isSubtle=True, size="Small", spacing="None")]}

    shown = _append_while_fits(card, map(entry, view.notices[:STEWARD_NOTICES_MAX]))
    if shown < count:
        body.append(_text(cat.plural("steward_notices.more", count - shown), isSubtle=True))
    return card


# ---------------------------------------------------------------- the digest


def render_digest(view: DigestView, *, codec: ActionCodec) -> dict:
    """Several questions, each answerable in place; the rest wait behind a "next" button."""
    cat = text.catalog_of(view.viewer)
    total = len(view.questions)
    body = [_text(cat.text("digest.title"), weight="Bolder", size="Medium"),
            _text(cat.plural("digest.intro", total), isSubtle=True)]
    card = _card(view.viewer, body)
    shown = _append_while_fits(card, (
        {"type": "Container", "id": f"q{slot}", "separator": True, "spacing": "Large",
         "items": question_container(question, codec=codec, slot=slot)}
        for slot, question in enumerate(view.questions[:DIGEST_MAX_QUESTIONS])))
    if shown < total:
        body.append(_digest_more(view, codec=codec, shown=shown))
    return card


def _digest_more(view: DigestView, *, codec: ActionCodec, shown: int) -> dict:
    cat = text.catalog_of(view.viewer)
    ref = ActionRef(kind=ActionKind.DIGEST_NEXT, card_ref=view.digest_ref,
                    offset=view.offset + shown)
    return {"type": "Container", "id": "digest.more", "separator": True, "items": [
        _text(cat.plural("digest.more", len(view.questions) - shown), weight="Bolder"),
        {"type": "ActionSet", "id": "digest.more.actions", "actions": [
            _execute(cat.text("digest.show_more"), DIGEST_NEXT_VERB, codec.teams_data(ref))]}]}


# ---------------------------------------------------------------- the reach report


def render_reach_report(view: ReachReportView) -> dict:
    """The steward's weekly reach report (``cards.reach``, built on this module's helpers):
    figures, top causes, one ``Action.Execute`` (verb ``reach.REACH_VERB``)."""
    return reach.render_teams_reach_report(view)
