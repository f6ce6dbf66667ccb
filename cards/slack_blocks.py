"""Block Kit's building blocks for the Slack renderers (``cards.slack``,
``cards.slack_stewards``, ``cards.attention``): texts clipped to their limits, and the words of
people and of the core only ever in ``plain_text``, in rich text, or neutralised in the one
mrkdwn line that holds a link (``cards.untrusted``); document links."""

from __future__ import annotations

from cards import platform_limits as limits
from cards import text, untrusted
from cards.untrusted import Code, Link, Run, Runs
from cards.views import DocumentView, Viewer

OPEN_DOCUMENT_ACTION = "clarify.open_document"
QUESTION_CHARS = 1000
LINE_CHARS = 1000
TITLE_CHARS = 200
LINK_URL_CHARS = 1500
EXCERPT_CHARS = 300  # a sentence or two, as on Teams (where it keeps cards under 28 KB)
DIGEST_MAX_QUESTIONS = 10


def escape(raw: str) -> str:
    """``raw`` for a mrkdwn field (``cards.untrusted.mrkdwn``): shown as text, never obeyed."""
    return untrusted.mrkdwn(raw)


def esc_clip(raw: str, limit: int) -> str:
    """``raw`` escaped and clipped so that the escaped form fits ``limit`` (no cut entities)."""
    return untrusted.clip(raw, limit, escape=untrusted.mrkdwn)


def _link_target(run: Run) -> Link | None:
    """A link Slack can carry: a web link short enough to leave room for its text."""
    if isinstance(run, Link) and len(run.url) <= LINK_URL_CHARS:
        return run
    return None


def mrkdwn_runs(runs: Runs) -> str:
    """Runs as mrkdwn, for a context line that holds a link (a context block has no rich
    text): every text neutralised (``escape``), the link as ``<url|text>``."""
    out: list[str] = []
    for run in runs:
        target = _link_target(run)
        if target is None:
            out.append(escape(run if isinstance(run, str) else run.text))
            continue
        # a link target is not text: only what would end it early is encoded
        url = (target.url.replace("&", "&amp;").replace("<", "%3C").replace(">", "%3E")
               .replace("|", "%7C"))
        out.append(f"<{url}|{escape(target.text)}>")
    return "".join(out)


def rich_elements(runs: Runs, *, bold: bool = False) -> list[dict]:
    """Runs as rich text elements: text is taken as it is (no markup is read in it), links are
    link elements, references fixed-width; ``bold`` styles them all."""
    elements: list[dict] = []
    for run in runs:
        style = {"bold": True} if bold else {}
        target = _link_target(run)
        element: dict[str, object]
        if target is not None:
            element = {"type": "link", "url": target.url, "text": target.text}
        elif isinstance(run, Code):
            element, style = {"type": "text", "text": run.text}, {**style, "code": True}
        else:
            element = {"type": "text", "text": run if isinstance(run, str) else run.text}
        if style:
            element["style"] = style
        elements.append(element)
    return elements


def rich(block_id: str, *lines: list[dict], limit: int = limits.SLACK_SECTION_TEXT) -> dict:
    """A rich text block of ``lines`` (each from ``rich_elements``), one under the other; the
    texts are cut so that the block holds at most ``limit`` characters, as a section would."""
    elements: list[dict] = []
    for n, parts in enumerate(lines):
        if n:
            elements.append({"type": "text", "text": "\n"})
        elements += parts
    return {"type": "rich_text", "block_id": block_id, "elements": [
        {"type": "rich_text_section", "elements": _fitted(elements, limit)}]}


def _fitted(elements: list[dict], limit: int) -> list[dict]:
    kept: list[dict] = []
    room = limit
    for element in elements:
        if room <= 1:
            break
        text = limits.clip(element["text"], room)
        if text:
            kept.append({**element, "text": text})
        if text != element["text"]:
            break
        room -= limits.text_length(text)
    return kept


def rich_length(block: dict) -> int:
    return sum(limits.text_length(e["text"]) for s in block["elements"] for e in s["elements"])


def plain_text(value: str, limit: int, *, emoji: bool = True) -> dict:
    """A plain_text object: nothing in it is read as markup. ``emoji=False`` for text that
    comes from people, so that a ``:name:`` in it is not turned into an emoji."""
    return {"type": "plain_text", "text": limits.clip(value, limit), "emoji": emoji}


def mrkdwn_text(value: str, limit: int) -> dict:
    # verbatim: no URL, channel name or mention in it is turned into a link by Slack
    return {"type": "mrkdwn", "text": limits.clip(value, limit), "verbatim": True}


def section(block_id: str, value: str) -> dict:
    """A section of plain text (people's words in it are shown as they are)."""
    return {"type": "section", "block_id": block_id,
            "text": plain_text(value, limits.SLACK_SECTION_TEXT, emoji=False)}


def context(block_id: str, value: str) -> dict:
    """A context line of plain text."""
    return {"type": "context", "block_id": block_id,
            "elements": [plain_text(value, limits.SLACK_CONTEXT_TEXT, emoji=False)]}


def link_context(block_id: str, runs: Runs) -> dict:
    """A context line that holds a link: mrkdwn, every text in it neutralised."""
    return {"type": "context", "block_id": block_id,
            "elements": [mrkdwn_text(mrkdwn_runs(runs), limits.SLACK_CONTEXT_TEXT)]}


def source_runs(document: DocumentView, viewer: Viewer) -> Runs:
    """ "Source: <the document>", the document linked where it can be."""
    return text.catalog_of(viewer).runs("question.source",
                                        link=text.document_run(document, viewer))


def button(label: str, *, action_id: str, value: str | None = None,
            url: str | None = None, emoji: bool = True) -> dict:
    made = {"type": "button", "action_id": action_id,
            "text": plain_text(label, limits.SLACK_BUTTON_TEXT, emoji=emoji)}
    if value is not None:
        made["value"] = value
    if url is not None:
        made["url"] = url
    return made


def message(fallback: str, blocks: list[dict]) -> dict:
    # The notification text is mrkdwn, so it is neutralised like every mrkdwn text.
    return {"text": esc_clip(fallback, limits.SLACK_FALLBACK_TEXT), "blocks": blocks}
