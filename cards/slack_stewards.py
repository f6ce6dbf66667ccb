"""Slack Block Kit for the workspace steward: the redacted escalation, the unreachable-quorum,
conflict and high-severity notices (with the override actions, ``cards.overrides``) and the
dead-letter digest. Nothing here shows span text or the question's dates.
"""

from __future__ import annotations

from cards import overrides, steward_text, text, untrusted
from cards import platform_limits as limits
from cards.actions import ActionCodec
from cards.slack_blocks import (
    DIGEST_MAX_QUESTIONS,
    LINE_CHARS,
    OPEN_DOCUMENT_ACTION,
    TITLE_CHARS,
    button,
    context,
    message,
    plain_text,
    rich,
    rich_elements,
    rich_length,
    section,
)
from cards.untrusted import Runs
from cards.views import (
    STEWARD_NOTICES_MAX,
    DeadLetterDigestView,
    DocumentView,
    StewardConflictView,
    StewardEscalationView,
    StewardNoticesView,
    StewardNoticeView,
    StewardQuorumView,
    Viewer,
)


def _skip_lines(skipped: tuple, viewer: Viewer, *, room: int) -> list[str]:
    """One bullet per skipped person, as many as fit in ``room``, then "…"."""
    lines: list[str] = []
    used = 0
    for n, line in enumerate(steward_text.skip_texts(skipped, viewer)):
        line = limits.clip(line, LINE_CHARS) if n == 0 and not skipped else (
            f"• {limits.clip(line, LINE_CHARS)}")
        if used + limits.text_length(line) + 1 > room - 2:
            lines.append("…")
            break
        lines.append(line)
        used += limits.text_length(line) + 1
    return lines


def _with_lines(block_id: str, heading: Runs, skipped: tuple, viewer: Viewer, *,
                unanswered: tuple[str, ...] = ()) -> dict:
    """A bold heading (which may hold a link, so it is never cut) over the skip reasons that
    fit, then the "Asked, no answer" line; "No one was ranked" only when both lists are
    empty. Rich text: the names in it are text, whatever marks they hold."""
    tail = steward_text.unanswered_text(unanswered, viewer)
    bold = rich_elements(heading, bold=True)
    room = limits.SLACK_SECTION_TEXT - rich_length(rich(block_id, bold)) - 1
    lines: list[str] = []
    if tail is not None:
        tail = limits.clip(tail, LINE_CHARS)
        room -= limits.text_length(tail) + 1
    if skipped or tail is None:
        lines += _skip_lines(skipped, viewer, room=room)
    if tail is not None:
        lines.append(tail)
    return rich(block_id, bold, *(rich_elements((line,)) for line in lines))


def _escalation_people(view: StewardEscalationView) -> list[dict]:
    """Who was asked and did not answer, then why each other person was skipped; "No one was
    ranked" only when nobody was asked or skipped."""
    cat = text.catalog_of(view.viewer)
    blocks = []
    unanswered = steward_text.unanswered_text(view.unanswered, view.viewer)
    if unanswered is not None:
        blocks.append(section("escalation.unanswered", limits.clip(unanswered, LINE_CHARS)))
    if view.skipped:
        blocks.append(_with_lines("escalation.skipped", (cat.text("escalation.skipped_heading"),),
                                  view.skipped, view.viewer))
    elif unanswered is None:
        blocks.append(section("escalation.nobody", cat.text("escalation.nobody")))
    return blocks


def _open_document(block_id: str, document: DocumentView, viewer: Viewer) -> list[dict]:
    """The "Open document" button, when there is a link that fits (a neutral reference has one
    only on the redacted escalation)."""
    url = untrusted.web_url(document.url)
    if not untrusted.linkable(url) or len(url) > limits.SLACK_BUTTON_URL:
        return []
    return [{"type": "actions", "block_id": block_id, "elements": [
        button(text.catalog_of(viewer).text("question.open_document"),
                action_id=OPEN_DOCUMENT_ACTION, url=url)]}]


def render_steward_escalation(view: StewardEscalationView) -> dict:
    """The redacted question: document link, unanswered names and skip reasons, never the
    question or span."""
    cat = text.catalog_of(view.viewer)
    confirmed = steward_text.confirmed_text(view.confirmed, view.viewer)
    blocks = [
        {"type": "header", "block_id": "escalation.title",
         "text": plain_text(cat.text("escalation.title"), limits.SLACK_HEADER_TEXT)},
        rich("escalation.body", rich_elements(steward_text.escalation_body(view))),
        *([section("escalation.confirmed", limits.clip(confirmed, LINE_CHARS))]
          if confirmed else []),
        *_escalation_people(view),
        context("escalation.next", steward_text.escalation_next_step(view)),
        *_open_document("escalation.actions", view.document, view.viewer),
    ]
    fallback = text.quoted_document(view.document, view.viewer)
    return message(cat.text("escalation.fallback", document=fallback), blocks)


def render_steward_quorum(view: StewardQuorumView, codec: ActionCodec | None = None) -> dict:
    """A critical question cannot reach its quorum: whom it was asked, how many confirmations
    are still missing, why the others were skipped; never the question or span."""
    cat = text.catalog_of(view.viewer)
    words = steward_text.quorum_text(view)
    blocks = [
        {"type": "header", "block_id": "quorum.title",
         "text": plain_text(words.title, limits.SLACK_HEADER_TEXT)},
        rich("quorum.body", rich_elements(words.body)),
        *([section("quorum.asked", limits.clip(words.asked, LINE_CHARS))] if words.asked else []),
        rich("quorum.missing", rich_elements((limits.clip(words.missing, LINE_CHARS),),
                                             bold=True)),
        context("quorum.reference", text.reference_text(
            view.viewer, "steward_notice.reference", view.clarification_id)),
    ]
    if view.skipped:
        blocks.append(_with_lines("quorum.skipped", (cat.text("escalation.skipped_heading"),),
                                  view.skipped, view.viewer))
    blocks += [context("quorum.next", words.next_step),
               *overrides.slack_actions(view.clarification_id, view.card_ref, view.candidates,
                                        view.viewer, codec),
               *_open_document("quorum.actions", view.document, view.viewer)]
    return message(words.fallback, blocks)


def render_steward_conflict(view: StewardConflictView, codec: ActionCodec | None = None
                            ) -> dict:
    """Who disagreed (before binding, or late against a bound date): names and the document
    link only."""
    names = text.names_for(view.responders, view.viewer, "steward_conflict.body")
    words = steward_text.steward_conflict_text(view, names=limits.clip(names, LINE_CHARS))
    blocks = [
        {"type": "header", "block_id": "conflict.title",
         "text": plain_text(words.title, limits.SLACK_HEADER_TEXT)},
        rich("conflict.body", rich_elements(words.body)),
        context("conflict.reference", text.reference_text(
            view.viewer, "steward_conflict.reference", view.clarification_id)),
        *overrides.slack_actions(view.clarification_id, view.card_ref, view.candidates,
                                 view.viewer, codec),
    ]
    return message(words.fallback, blocks)


def render_steward_notice(view: StewardNoticeView) -> dict:
    """High severity: the steward hears whom a direct question went to; no answer buttons."""
    cat = text.catalog_of(view.viewer)
    names = limits.clip(text.names_for(view.asked, view.viewer, "steward_notice.body"),
                        LINE_CHARS)
    blocks = [
        {"type": "header", "block_id": "notice.title",
         "text": plain_text(cat.text("steward_notice.title"), limits.SLACK_HEADER_TEXT)},
        rich("notice.body", rich_elements(steward_text.steward_notice_body(view, names=names))),
        context("notice.redacted", cat.text("steward_notice.redacted")),
        context("notice.reference", text.reference_text(
            view.viewer, "steward_notice.reference", view.clarification_id)),
        *_open_document("notice.actions", view.document, view.viewer),
    ]
    fallback = text.quoted_document(view.document, view.viewer)
    severity = text.severity_text(view.severity, view.viewer)
    return message(cat.text("steward_notice.fallback", severity=severity, document=fallback),
                    blocks)


def render_steward_notices(view: StewardNoticesView) -> dict:
    """A window's notices for one steward: one section per notice (document, severity, whom it
    went to, its reference); past the block budget, one "…and N more" line."""
    cat = text.catalog_of(view.viewer)
    count = len(view.notices)
    blocks = [{"type": "header", "block_id": "notices.title",
               "text": plain_text(cat.text("steward_notices.title"), limits.SLACK_HEADER_TEXT)},
              section("notices.intro", cat.plural("steward_notices.intro", count)),
              context("notices.redacted", cat.text("steward_notice.redacted"))]
    budget = min(limits.SLACK_MESSAGE_BLOCKS - len(blocks) - 1, STEWARD_NOTICES_MAX)
    for n, notice in enumerate(view.notices[:budget]):
        names = limits.clip(text.names_for(notice.asked, view.viewer, "steward_notices.item"),
                            LINE_CHARS)
        item = steward_text.steward_notices_item(notice, names=names)
        reference = limits.clip(text.reference_text(
            view.viewer, "steward_notice.reference", notice.clarification_id), TITLE_CHARS)
        blocks.append(rich(f"notices.{n}", rich_elements(item), rich_elements((reference,))))
    if count > budget:
        blocks.append(context("notices.more",
                              cat.plural("steward_notices.more", count - budget)))
    return message(cat.plural("steward_notices.fallback", count), blocks)


def render_dead_letter_digest(view: DeadLetterDigestView) -> dict:
    """The steward digest; items past the block budget become one "…and N more" line."""
    cat = text.catalog_of(view.viewer)
    count = len(view.items)
    blocks = [{"type": "header", "block_id": "dead_letter.title",
               "text": plain_text(cat.text("dead_letter.title"), limits.SLACK_HEADER_TEXT)},
              section("dead_letter.intro", steward_text.dead_letter_intro(view))]
    # One block per item, one left for the overflow line, and never more than a page.
    budget = min(limits.SLACK_MESSAGE_BLOCKS - len(blocks) - 1, DIGEST_MAX_QUESTIONS)
    shown = view.items if count <= budget else view.items[:budget]
    for n, item in enumerate(shown):
        heading = cat.runs("dead_letter.item",
                           document=text.document_run(item.document, view.viewer),
                           severity=text.severity_text(item.severity, view.viewer))
        blocks.append(_with_lines(f"dead_letter.{n}", heading, item.skipped, view.viewer,
                                  unanswered=item.unanswered))
    more = steward_text.dead_letter_more(view, len(shown))
    if more:
        blocks.append(context("dead_letter.more", more))
    return message(cat.plural("dead_letter.fallback", count), blocks)


