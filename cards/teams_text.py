"""Adaptive Card text for the Teams renderers (``cards.teams``, ``cards.attention``,
``cards.overrides``): the words of people and of the core go in ``RichTextBlock`` runs, which no
Adaptive Card renderer reads as markdown; only a line that holds a link is a markdown
``TextBlock``, with every text in it escaped (``cards.untrusted``).

Why not escape every ``TextBlock``: Teams' clients do not read markdown alike (a backslash
escape has been seen shown as a backslash on some mobile builds), while a ``TextRun`` is text on
every client. A link inside a ``TextRun`` (its ``selectAction``) is not reliably clickable in
Teams, so the one line with a document link stays markdown.
"""

from __future__ import annotations

from cards import platform_limits as limits
from cards import untrusted
from cards.untrusted import Code, Link, Runs

LINE_CHARS = 1000
# TextBlock styles that a TextRun carries itself; the rest (spacing, separator, id) stay on
# the RichTextBlock.
RUN_STYLE = frozenset({"weight", "size", "color", "isSubtle", "italic", "fontType"})


def rich_block(value: str | Runs, *, limit: int = LINE_CHARS, **style: object) -> dict:
    """A ``RichTextBlock`` of ``value`` (one text, or runs whose links are shown as their text),
    cut to ``limit`` characters; ``style`` as a ``TextBlock`` takes it (weight, size, color,
    isSubtle on each run; spacing on the block)."""
    runs: Runs = (value,) if isinstance(value, str) else value
    run_style = {k: v for k, v in style.items() if k in RUN_STYLE}
    inlines: list[dict] = []
    room = limit
    for run in runs:
        words = run if isinstance(run, str) else run.text
        shown = limits.clip(words, room)
        if shown:
            inline = {"type": "TextRun", "text": untrusted.literal(shown), **run_style}
            if isinstance(run, Code):
                inline["fontType"] = "Monospace"
            inlines.append(inline)
        room -= limits.text_length(shown)
        if shown != words or room <= 1:
            break
    if not inlines:  # an empty run list draws nothing at all; keep the block's place
        inlines.append({"type": "TextRun", "text": " ", **run_style})
    block = {k: v for k, v in style.items() if k not in RUN_STYLE}
    return {"type": "RichTextBlock", "inlines": inlines, **block}


def _url(link: Link) -> str:
    """A link target markdown cannot end early (parentheses and angle brackets percent-encoded;
    spaces come encoded, ``untrusted.web_url``)."""
    return (link.url.replace("(", "%28").replace(")", "%29").replace("<", "%3C")
            .replace(">", "%3E"))


def markdown_runs(runs: Runs) -> str:
    """Runs as Adaptive Card markdown: every text escaped, each link ``[text](url)``."""
    out: list[str] = []
    for run in runs:
        if isinstance(run, Link):
            out.append(f"[{untrusted.markdown(run.text)}]({_url(run)})")
        else:
            out.append(untrusted.markdown(run if isinstance(run, str) else run.text))
    return "".join(out)


def markdown_block(runs: Runs, **style: object) -> dict:
    """A ``TextBlock`` for a line that holds a link (its texts come clipped by their makers,
    so the markup is never cut)."""
    return {"type": "TextBlock", "text": markdown_runs(runs), "wrap": True, **style}


def block(runs: Runs, *, limit: int = LINE_CHARS, **style: object) -> dict:
    """The block for a line: markdown when it holds a link, rich text otherwise."""
    if any(isinstance(run, Link) for run in runs):
        return markdown_block(runs, **style)
    return rich_block(runs, limit=limit, **style)
