"""Slack Block Kit renderers: a view model in, a ``{text, blocks}`` message or a modal out.

Every text is clipped to its Block Kit limit and every person-supplied string is escaped for
mrkdwn, so a title like ``<!channel>`` is shown, never obeyed.
"""

from __future__ import annotations

from cards import limits, overrides, text
from cards.actions import ActionCodec, ActionKind, ActionRef, custom_input_ids
from cards.views import (
    STEWARD_NOTICES_MAX,
    CustomError,
    CustomFormView,
    DeadLetterDigestView,
    DigestView,
    DocumentView,
    OutcomeView,
    QuestionView,
    StewardConflictView,
    StewardEscalationView,
    StewardNoticesView,
    StewardNoticeView,
    StewardQuorumView,
    Viewer,
)

ANSWER_ACTION = "clarify.answer"
CUSTOM_ACTION = "clarify.custom"
DIGEST_NEXT_ACTION = "clarify.digest.next"
DECLINE_ACTION = "clarify.decline"
OPEN_DOCUMENT_ACTION = "clarify.open_document"
CUSTOM_CALLBACK = "clarify.custom"
QUESTION_CHARS = 1000
LINE_CHARS = 1000
TITLE_CHARS = 200
LINK_URL_CHARS = 1500
EXCERPT_CHARS = 300  # a sentence or two, as on Teams (where it keeps cards under 28 KB)
DIGEST_MAX_QUESTIONS = 10


def escape(raw: str) -> str:
    """Escapes the three characters Slack's mrkdwn treats as control characters."""
    return raw.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def esc_clip(raw: str, limit: int) -> str:
    """``raw`` escaped and clipped so that the escaped form fits ``limit`` (no cut entities)."""
    escaped = escape(raw)
    if limits.text_length(escaped) <= limit:
        return escaped
    kept: list[str] = []
    used = 0
    for char in raw:
        piece = escape(char)
        if used + limits.text_length(piece) > limit - 1:
            break
        kept.append(piece)
        used += limits.text_length(piece)
    return "".join(kept) + "…"


def link(document: DocumentView, viewer: Viewer) -> str:
    """The document as a mrkdwn link; a URL too long to fit a text block shows the title only,
    and a neutral reference (a steward who may not read it) is plain text with no link."""
    if document.withheld:
        return esc_clip(text.document_name(document, viewer), LINE_CHARS)
    title = esc_clip(document.title, TITLE_CHARS)
    if len(document.url) > LINK_URL_CHARS:
        return title
    url = escape(document.url.replace("|", "%7C").replace(" ", "%20"))
    return f"<{url}|{title}>"


def _plain(value: str, limit: int) -> dict:
    return {"type": "plain_text", "text": limits.clip(value, limit), "emoji": True}


def _mrkdwn(value: str, limit: int) -> dict:
    return {"type": "mrkdwn", "text": limits.clip(value, limit)}


def _section(block_id: str, mrkdwn: str) -> dict:
    return {"type": "section", "block_id": block_id,
            "text": _mrkdwn(mrkdwn, limits.SLACK_SECTION_TEXT)}


def _context(block_id: str, mrkdwn: str) -> dict:
    return {"type": "context", "block_id": block_id,
            "elements": [_mrkdwn(mrkdwn, limits.SLACK_CONTEXT_TEXT)]}


def _button(label: str, *, action_id: str, value: str | None = None,
            url: str | None = None) -> dict:
    button = {"type": "button", "action_id": action_id,
              "text": _plain(label, limits.SLACK_BUTTON_TEXT)}
    if value is not None:
        button["value"] = value
    if url is not None:
        button["url"] = url
    return button


def _message(fallback: str, blocks: list[dict]) -> dict:
    # The notification text is mrkdwn too, so it is escaped like every block text.
    return {"text": esc_clip(fallback, limits.SLACK_FALLBACK_TEXT), "blocks": blocks}


# ---------------------------------------------------------------- the question


def _answer_buttons(view: QuestionView, codec: ActionCodec, slot: int) -> list[dict]:
    year = text.asked_year(view)
    buttons = [
        _button(text.candidate_text(c, view.viewer, reference_year=year),
                action_id=f"{ANSWER_ACTION}.{c.index}",
                value=codec.encode(ActionRef(kind=ActionKind.ANSWER, card_ref=view.card_ref,
                                             clarification_id=view.clarification_id,
                                             candidate=c.index, slot=slot)))
        for c in text.shown_candidates(view)]
    buttons.append(_button(
        text.catalog_of(view.viewer).text("question.something_else"), action_id=CUSTOM_ACTION,
        value=codec.encode(ActionRef(kind=ActionKind.CUSTOM_OPEN, card_ref=view.card_ref,
                                     clarification_id=view.clarification_id, slot=slot))))
    return buttons


def question_blocks(view: QuestionView, *, codec: ActionCodec, slot: int = 0,
                    compact: bool = False) -> list[dict]:
    """The blocks of one question; ``compact`` folds the source link into the question."""
    cat = text.catalog_of(view.viewer)
    source = cat.text("question.source", link=link(view.document, view.viewer))
    heading = f"*{esc_clip(view.question, QUESTION_CHARS)}*"
    blocks = [_section(f"q{slot}.question", f"{heading}\n{source}" if compact else heading)]
    # a digest keeps its block budget for questions: why-asked and the excerpt are the card's
    lines = [] if compact else [("excerpt", "❝", text.excerpt_text(view, limit=EXCERPT_CHARS)),
                                ("why", "🙋", text.why_asked(view))]
    lines += [("notice", "⚠️", text.quorum_notice(view)), ("banner", "☑️", text.banner_text(view))]
    for suffix, icon, line in lines:
        if line:
            blocks.append(_context(f"q{slot}.{suffix}", f"{icon} {esc_clip(line, LINE_CHARS)}"))
    buttons = _answer_buttons(view, codec, slot)
    step = limits.SLACK_ACTIONS_ELEMENTS
    for n in range(0, len(buttons), step):
        blocks.append({"type": "actions", "block_id": f"q{slot}.answers.{n // step}",
                       "elements": buttons[n:n + step]})
    if not compact:
        blocks.append({"type": "actions", "block_id": f"q{slot}.decline",
                       "elements": [_decline_button(view, codec, slot)]})
        blocks.append(_context(f"q{slot}.source", f"📄 {source}"))
    return blocks


def _decline_button(view: QuestionView, codec: ActionCodec, slot: int) -> dict:
    """"Not the right person": passes the question on to the next candidate at once."""
    return _button(text.catalog_of(view.viewer).text("question.decline"),
                   action_id=DECLINE_ACTION,
                   value=codec.encode(ActionRef(kind=ActionKind.DECLINE, card_ref=view.card_ref,
                                                clarification_id=view.clarification_id,
                                                slot=slot)))


def render_question(view: QuestionView, *, codec: ActionCodec) -> dict:
    return _message(view.question, question_blocks(view, codec=codec))


# ---------------------------------------------------------------- "Something else…"


def render_custom_modal(form: CustomFormView, *, codec: ActionCodec) -> dict:
    """The modal opened by "Something else…": start and end date pickers and a note."""
    view, ids = form.question, custom_input_ids(form.slot)
    cat = text.catalog_of(view.viewer)
    token = codec.encode(ActionRef(kind=ActionKind.CUSTOM_SUBMIT, card_ref=view.card_ref,
                                   clarification_id=view.clarification_id, slot=form.slot))
    blocks = [_section("custom.question", f"*{esc_clip(view.question, QUESTION_CHARS)}*"),
              _context("custom.intro", escape(cat.text("custom.intro")))]
    if form.error is not None:
        blocks.append(_context("custom.error", "⚠️ " + escape(cat.text("custom.error.heading"))))
    blocks += [
        _date_input(ids.start, cat.text("custom.start"), form.entered_from, optional=False),
        _date_input(ids.end, cat.text("custom.end"), form.entered_to, optional=True),
        _note_input(ids.note, view.viewer, form.entered_note),
    ]
    return {"type": "modal", "callback_id": CUSTOM_CALLBACK, "private_metadata": token,
            "title": _plain(cat.text("custom.title"), limits.SLACK_MODAL_TITLE),
            "submit": _plain(cat.text("custom.submit"), limits.SLACK_MODAL_TITLE),
            "close": _plain(cat.text("custom.cancel"), limits.SLACK_MODAL_TITLE),
            "blocks": blocks}


def _date_input(block_id: str, label: str, initial: object, *, optional: bool) -> dict:
    picker: dict = {"type": "datepicker", "action_id": "value"}
    if initial is not None:
        picker["initial_date"] = initial.isoformat()  # type: ignore[attr-defined]
    return {"type": "input", "block_id": block_id, "optional": optional,
            "label": _plain(label, limits.SLACK_INPUT_LABEL), "element": picker}


def _note_input(block_id: str, viewer: Viewer, initial: str) -> dict:
    cat = text.catalog_of(viewer)
    element: dict = {"type": "plain_text_input", "action_id": "value", "multiline": True,
                     "max_length": 2000,
                     "placeholder": _plain(cat.text("custom.note_placeholder"),
                                           limits.SLACK_PLACEHOLDER)}
    if initial:
        element["initial_value"] = limits.clip(initial, 2000)
    return {"type": "input", "block_id": block_id, "optional": True,
            "label": _plain(cat.text("custom.note"), limits.SLACK_INPUT_LABEL),
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
    words = text.outcome_text(view)
    cat = text.catalog_of(view.viewer)
    blocks = [_section("outcome", esc_clip(words.headline, LINE_CHARS))]
    detail_lines = [esc_clip(line, LINE_CHARS) for line in words.details]
    detail_lines.append("📄 " + cat.text("question.source",
                                         link=link(view.document, view.viewer)))
    blocks.append(_context("outcome.details", "\n".join(detail_lines)))
    return _message(words.headline, blocks)


# ---------------------------------------------------------------- stewards


def _skip_lines(skipped: tuple, viewer: Viewer, *, room: int) -> str:
    """One bullet per skipped person, as many as fit in ``room``, then "…"."""
    lines: list[str] = []
    used = 0
    for n, line in enumerate(text.skip_texts(skipped, viewer)):
        line = esc_clip(line, LINE_CHARS) if n == 0 and not skipped else (
            f"• {esc_clip(line, LINE_CHARS)}")
        if used + limits.text_length(line) + 1 > room - 2:
            lines.append("…")
            break
        lines.append(line)
        used += limits.text_length(line) + 1
    return "\n".join(lines)


def _with_lines(heading: str, skipped: tuple, viewer: Viewer, *,
                unanswered: tuple[str, ...] = ()) -> str:
    """A heading (which may hold a link, so it is never cut) over the skip reasons that fit,
    then the "Asked, no answer" line; "No one was ranked" only when both lists are empty."""
    tail = text.unanswered_text(unanswered, viewer)
    lines = [heading]
    room = limits.SLACK_SECTION_TEXT - limits.text_length(heading) - 1
    if tail is not None:
        tail = esc_clip(tail, LINE_CHARS)
        room -= limits.text_length(tail) + 1
    if skipped or tail is None:
        lines.append(_skip_lines(skipped, viewer, room=room))
    if tail is not None:
        lines.append(tail)
    return "\n".join(lines)


def _escalation_people(view: StewardEscalationView) -> list[dict]:
    """Who was asked and did not answer, then why each other person was skipped; "No one was
    ranked" only when nobody was asked or skipped."""
    cat = text.catalog_of(view.viewer)
    blocks = []
    unanswered = text.unanswered_text(view.unanswered, view.viewer)
    if unanswered is not None:
        blocks.append(_section("escalation.unanswered", esc_clip(unanswered, LINE_CHARS)))
    if view.skipped:
        blocks.append(_section("escalation.skipped", _with_lines(
            f"*{escape(cat.text('escalation.skipped_heading'))}*", view.skipped, view.viewer)))
    elif unanswered is None:
        blocks.append(_section("escalation.nobody", escape(cat.text("escalation.nobody"))))
    return blocks


def _open_document(block_id: str, document: DocumentView, viewer: Viewer) -> list[dict]:
    """The "Open document" button, when there is a link that fits (never on a neutral one)."""
    if document.withheld or len(document.url) > limits.SLACK_BUTTON_URL:
        return []
    return [{"type": "actions", "block_id": block_id, "elements": [
        _button(text.catalog_of(viewer).text("question.open_document"),
                action_id=OPEN_DOCUMENT_ACTION, url=document.url)]}]


def render_steward_escalation(view: StewardEscalationView) -> dict:
    """The redacted question: document link, unanswered names and skip reasons, never the
    question or span."""
    cat = text.catalog_of(view.viewer)
    document = link(view.document, view.viewer)
    confirmed = text.confirmed_text(view.confirmed, view.viewer)
    blocks = [
        {"type": "header", "block_id": "escalation.title",
         "text": _plain(cat.text("escalation.title"), limits.SLACK_HEADER_TEXT)},
        _section("escalation.body", text.escalation_body(view, document=document)),
        *([_section("escalation.confirmed", esc_clip(confirmed, LINE_CHARS))]
          if confirmed else []),
        *_escalation_people(view),
        _context("escalation.next", escape(text.escalation_next_step(view))),
        *_open_document("escalation.actions", view.document, view.viewer),
    ]
    fallback = text.quoted_document(view.document, view.viewer)
    return _message(cat.text("escalation.fallback", document=fallback), blocks)


def render_steward_quorum(view: StewardQuorumView, codec: ActionCodec | None = None) -> dict:
    """A critical question cannot reach its quorum: whom it was asked, how many confirmations
    are still missing, why the others were skipped; never the question or span."""
    cat = text.catalog_of(view.viewer)
    words = text.quorum_text(view, document=link(view.document, view.viewer))
    blocks = [
        {"type": "header", "block_id": "quorum.title",
         "text": _plain(words.title, limits.SLACK_HEADER_TEXT)},
        _section("quorum.body", words.body),
        *([_section("quorum.asked", esc_clip(words.asked, LINE_CHARS))] if words.asked else []),
        _section("quorum.missing", f"*{esc_clip(words.missing, LINE_CHARS)}*"),
        _context("quorum.reference", esc_clip(cat.text(
            "steward_notice.reference", id=view.clarification_id), LINE_CHARS)),
    ]
    if view.skipped:
        blocks.append(_section("quorum.skipped", _with_lines(
            f"*{escape(cat.text('escalation.skipped_heading'))}*", view.skipped, view.viewer)))
    blocks += [_context("quorum.next", escape(words.next_step)),
               *overrides.slack_actions(view.clarification_id, view.card_ref, view.candidates,
                                        view.viewer, codec),
               *_open_document("quorum.actions", view.document, view.viewer)]
    return _message(words.fallback, blocks)


def render_steward_conflict(view: StewardConflictView, codec: ActionCodec | None = None
                            ) -> dict:
    """Who disagreed (before binding, or late against a bound date): names and the document
    link only."""
    cat = text.catalog_of(view.viewer)
    names = text.dates.names_list(view.responders, locale=view.viewer.locale)
    words = text.steward_conflict_text(
        view, document=link(view.document, view.viewer), names=esc_clip(names, LINE_CHARS))
    blocks = [
        {"type": "header", "block_id": "conflict.title",
         "text": _plain(words.title, limits.SLACK_HEADER_TEXT)},
        _section("conflict.body", words.body),
        _context("conflict.reference", esc_clip(cat.text(
            "steward_conflict.reference", id=view.clarification_id), LINE_CHARS)),
        *overrides.slack_actions(view.clarification_id, view.card_ref, view.candidates,
                                 view.viewer, codec),
    ]
    return _message(words.fallback, blocks)


def render_steward_notice(view: StewardNoticeView) -> dict:
    """High severity: the steward hears whom a direct question went to; no answer buttons."""
    cat = text.catalog_of(view.viewer)
    names = esc_clip(text.dates.names_list(view.asked, locale=view.viewer.locale), LINE_CHARS)
    blocks = [
        {"type": "header", "block_id": "notice.title",
         "text": _plain(cat.text("steward_notice.title"), limits.SLACK_HEADER_TEXT)},
        _section("notice.body", text.steward_notice_body(
            view, document=link(view.document, view.viewer), names=names)),
        _context("notice.redacted", escape(cat.text("steward_notice.redacted"))),
        _context("notice.reference", esc_clip(cat.text(
            "steward_notice.reference", id=view.clarification_id), LINE_CHARS)),
        *_open_document("notice.actions", view.document, view.viewer),
    ]
    fallback = text.quoted_document(view.document, view.viewer)
    severity = text.severity_text(view.severity, view.viewer)
    return _message(cat.text("steward_notice.fallback", severity=severity, document=fallback),
                    blocks)


def render_steward_notices(view: StewardNoticesView) -> dict:
    """A window's notices for one steward: one section per notice (document, severity, whom it
    went to, its reference); past the block budget, one "…and N more" line."""
    cat = text.catalog_of(view.viewer)
    count = len(view.notices)
    blocks = [{"type": "header", "block_id": "notices.title",
               "text": _plain(cat.text("steward_notices.title"), limits.SLACK_HEADER_TEXT)},
              _section("notices.intro", escape(cat.plural("steward_notices.intro", count))),
              _context("notices.redacted", escape(cat.text("steward_notice.redacted")))]
    budget = min(limits.SLACK_MESSAGE_BLOCKS - len(blocks) - 1, STEWARD_NOTICES_MAX)
    for n, notice in enumerate(view.notices[:budget]):
        names = esc_clip(text.dates.names_list(notice.asked, locale=view.viewer.locale),
                         LINE_CHARS)
        item = text.steward_notices_item(notice, document=link(notice.document, view.viewer),
                                         names=names)
        reference = esc_clip(cat.text("steward_notice.reference", id=notice.clarification_id),
                             TITLE_CHARS)
        blocks.append(_section(f"notices.{n}", f"{item}\n{reference}"))
    if count > budget:
        blocks.append(_context("notices.more",
                               escape(cat.plural("steward_notices.more", count - budget))))
    return _message(cat.plural("steward_notices.fallback", count), blocks)


def render_dead_letter_digest(view: DeadLetterDigestView) -> dict:
    """The steward digest; items past the block budget become one "…and N more" line."""
    cat = text.catalog_of(view.viewer)
    count = len(view.items)
    blocks = [{"type": "header", "block_id": "dead_letter.title",
               "text": _plain(cat.text("dead_letter.title"), limits.SLACK_HEADER_TEXT)},
              _section("dead_letter.intro", escape(text.dead_letter_intro(view)))]
    # One block per item, one left for the overflow line, and never more than a page.
    budget = min(limits.SLACK_MESSAGE_BLOCKS - len(blocks) - 1, DIGEST_MAX_QUESTIONS)
    shown = view.items if count <= budget else view.items[:budget]
    for n, item in enumerate(shown):
        heading = cat.text("dead_letter.item", document=link(item.document, view.viewer),
                           severity=escape(text.severity_text(item.severity, view.viewer)))
        blocks.append(_section(f"dead_letter.{n}", _with_lines(
            f"*{heading}*", item.skipped, view.viewer, unanswered=item.unanswered)))
    if len(shown) < count:
        blocks.append(_context("dead_letter.more",
                               escape(cat.plural("dead_letter.more", count - len(shown)))))
    return _message(cat.plural("dead_letter.fallback", count), blocks)


# ---------------------------------------------------------------- the digest


def render_digest(view: DigestView, *, codec: ActionCodec) -> dict:
    """Several questions, each answerable in place, at most DIGEST_MAX_QUESTIONS a message.

    Questions are added while the message stays inside the block limit with room for the
    overflow line; the rest are counted in a final section whose button asks for the next page.
    """
    cat = text.catalog_of(view.viewer)
    total = len(view.questions)
    blocks = [{"type": "header", "block_id": "digest.title",
               "text": _plain(cat.text("digest.title"), limits.SLACK_HEADER_TEXT)},
              _section("digest.intro", escape(cat.plural("digest.intro", total)))]
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
    return _message(cat.plural("digest.fallback", total), blocks)


def _digest_more(view: DigestView, *, codec: ActionCodec, shown: int) -> dict:
    cat = text.catalog_of(view.viewer)
    token = codec.encode(ActionRef(kind=ActionKind.DIGEST_NEXT, card_ref=view.digest_ref,
                                   offset=view.offset + shown))
    block = _section("digest.more", escape(cat.plural("digest.more",
                                                      len(view.questions) - shown)))
    block["accessory"] = _button(cat.text("digest.show_more"), action_id=DIGEST_NEXT_ACTION,
                                 value=token)
    return block
