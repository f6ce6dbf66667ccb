"""What a rendered card says, read the way each platform shows it: the text of Block Kit blocks
(``plain_text``, mrkdwn, rich text) and of Adaptive Card text elements (``TextBlock``,
``RichTextBlock``), for tests that look for a sentence wherever the renderer put it."""

from __future__ import annotations

from cards.platform_limits import walk


def slack_block_text(block: dict) -> str:
    """A block's words: a section's or header's text, a context's elements side by side, rich
    text's elements one after the other (its line breaks kept)."""
    kind = block.get("type")
    if kind in ("section", "header"):
        return block.get("text", {}).get("text", "")
    if kind == "context":
        return " ".join(e.get("text", "") for e in block.get("elements", []))
    if kind == "rich_text":
        return "".join(e.get("text", e.get("url", "")) for section in block.get("elements", [])
                       for e in section.get("elements", []))
    return ""


def slack_texts(payload: dict) -> list[str]:
    """The words of each block of a message, modal or home view, in order."""
    return [slack_block_text(block) for block in payload.get("blocks", [])]


def teams_block_text(element: dict) -> str:
    """A text element's words: a TextBlock's text, a RichTextBlock's runs one after the other."""
    if element.get("type") == "TextBlock":
        return element.get("text", "")
    if element.get("type") == "RichTextBlock":
        return "".join(run if isinstance(run, str) else run.get("text", "")
                       for run in element.get("inlines", []))
    return ""


def slack_markup(payload: dict) -> list[str]:
    """Every text of a Slack payload that Slack reads as mrkdwn: the notification ``text`` and
    each mrkdwn object."""
    found = [payload["text"]] if isinstance(payload.get("text"), str) else []
    return found + [node["text"] for node in walk(payload.get("blocks", []))
                    if node.get("type") == "mrkdwn"]


def slack_literal(payload: dict) -> list[str]:
    """Every text of a Slack payload that Slack shows as it is: plain_text objects and rich
    text's text and link elements."""
    return [node["text"] for node in walk(payload.get("blocks", []))
            if node.get("type") in ("plain_text", "text", "link") and "text" in node]
