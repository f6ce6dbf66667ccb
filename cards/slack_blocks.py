"""Block Kit's building blocks for the Slack renderers (``cards.slack``,
``cards.slack_stewards``): texts clipped to their limits, person-supplied strings escaped for
mrkdwn (so a title like ``<!channel>`` is shown, never obeyed), document links."""

from __future__ import annotations

from cards import limits, text
from cards.views import DocumentView, Viewer

OPEN_DOCUMENT_ACTION = "clarify.open_document"
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
    and a neutral reference (a steward who may not read it) is plain text, linked only where it
    carries the link (the redacted escalation)."""
    if document.withheld and not document.url:
        return esc_clip(text.document_name(document, viewer), LINE_CHARS)
    title = esc_clip(text.document_name(document, viewer),
                     LINE_CHARS if document.withheld else TITLE_CHARS)
    if len(document.url) > LINK_URL_CHARS:
        return title
    url = escape(document.url.replace("|", "%7C").replace(" ", "%20"))
    return f"<{url}|{title}>"


def plain_text(value: str, limit: int) -> dict:
    return {"type": "plain_text", "text": limits.clip(value, limit), "emoji": True}


def mrkdwn_text(value: str, limit: int) -> dict:
    return {"type": "mrkdwn", "text": limits.clip(value, limit)}


def section(block_id: str, mrkdwn: str) -> dict:
    return {"type": "section", "block_id": block_id,
            "text": mrkdwn_text(mrkdwn, limits.SLACK_SECTION_TEXT)}


def context(block_id: str, mrkdwn: str) -> dict:
    return {"type": "context", "block_id": block_id,
            "elements": [mrkdwn_text(mrkdwn, limits.SLACK_CONTEXT_TEXT)]}


def button(label: str, *, action_id: str, value: str | None = None,
            url: str | None = None) -> dict:
    made = {"type": "button", "action_id": action_id,
            "text": plain_text(label, limits.SLACK_BUTTON_TEXT)}
    if value is not None:
        made["value"] = value
    if url is not None:
        made["url"] = url
    return made


def message(fallback: str, blocks: list[dict]) -> dict:
    # The notification text is mrkdwn too, so it is escaped like every block text.
    return {"text": esc_clip(fallback, limits.SLACK_FALLBACK_TEXT), "blocks": blocks}


