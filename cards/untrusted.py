"""Text from people and from the core, shown as text on both platforms: the one place that
cleans it, cuts it and escapes it for Slack's mrkdwn and Adaptive Card markdown.

A name, a document title, a question, a candidate's label, a workspace's name or a reference is
never markup (docs/cards.md, "Text from people"). The renderers put it where no markup is read
(Slack ``plain_text`` and ``rich_text``, Adaptive Card ``RichTextBlock`` runs); only a line that
holds a link is written in markup, and then every piece of text in it goes through ``mrkdwn``
(Slack) or ``markdown`` (Teams). A sentence with a link in it is built as ``Runs``: its text and
its link kept apart, so that each renderer writes the link its own way and the text as text.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import regex

# Bidirectional controls: embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069)
# reverse or reorder the rest of a line, and the marks (LRM, RLM, ALM) steer neutral characters.
BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
                          "\u200e\u200f\u061c")
# Everything that starts a new line (or jumps like a tab) becomes one space.
_BREAKS = frozenset("\n\r\t\v\f\x1c\x1d\x1e\x85\u2028\u2029")
_CONTROLS = frozenset(chr(n) for n in (*range(0x20), *range(0x7f, 0xa0)))
_TABLE = str.maketrans({**{c: None for c in BIDI_CONTROLS | (_CONTROLS - _BREAKS)},
                        **{c: " " for c in _BREAKS}})
_SURROGATE = re.compile("[\ud800-\udfff]")
_GRAPHEME = regex.compile(r"\X")
# Joins two characters without a visible mark, and is neither a space nor punctuation: a
# formatting mark with one on each side has no word boundary to open or close on.
WORD_JOINER = "\u2060"


def line(raw: str) -> str:
    """``raw`` as one line of text: bidirectional controls and control characters removed, line
    breaks and tabs as spaces, a lone surrogate (which no platform can encode) as U+FFFD, and
    trimmed."""
    text = raw.replace("\r\n", " ").translate(_TABLE)
    return _SURROGATE.sub("\ufffd", text).strip()


def text_length(text: str) -> int:
    """Length in UTF-16 code units, the stricter of the counts the vendors use."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def graphemes(text: str) -> list[str]:
    """The characters a person sees (extended grapheme clusters): a flag, an emoji with its
    skin tone and joiners, a letter with its combining marks are one each."""
    return _GRAPHEME.findall(text)


def clip(text: str, limit: int, *, escape: object = None) -> str:
    """``text`` cut to ``limit`` UTF-16 units, ending in "…" when cut, never inside a character
    a person sees. With ``escape`` (a function applied to each character on its own, as
    ``mrkdwn``), the escaped form is what must fit, and is what is returned."""
    shown = escape if callable(escape) else (lambda piece: piece)
    whole = shown(text)
    if text_length(whole) <= limit:
        return whole
    kept: list[str] = []
    used = 0
    for cluster in graphemes(text):
        piece = shown(cluster)
        width = text_length(piece)
        if used + width > limit - 1:
            break
        kept.append(piece)
        used += width
    return "".join(kept).rstrip() + "…"


# ---------------------------------------------------------------- Slack mrkdwn

_MRKDWN_MARKS = frozenset("*_~`")
# where an emoji code could start (":smile:", ":+1:"); a time like "14:00" is left alone
_SHORTCODE = re.compile(r"(?<=:)(?=[A-Za-z_+'-])")


def mrkdwn(text: str) -> str:
    """``text`` for a Slack mrkdwn field: ``&``, ``<`` and ``>`` as entities (so ``<!channel>``
    and ``<http://x|y>`` are shown, never obeyed), each ``*``, ``~``, backtick and ``_`` (but
    one inside a word, as in ``clr_7f3a9c``, which formats nothing) between two word joiners
    (mrkdwn has no escape for them; a mark with no word boundary beside it opens and closes
    nothing), and a word joiner after a ``:`` that could open an emoji code (``:smile:`` is
    shown as typed)."""
    out: list[str] = []
    for n, char in enumerate(text):
        if char == "&":
            out.append("&amp;")
        elif char == "<":
            out.append("&lt;")
        elif char == ">":
            out.append("&gt;")
        elif char in _MRKDWN_MARKS and not (char == "_" and _inside_word(text, n)):
            out.append(f"{WORD_JOINER}{char}{WORD_JOINER}")
        else:
            out.append(char)
    return _SHORTCODE.sub(WORD_JOINER, "".join(out))


# ---------------------------------------------------------------- Adaptive Cards

# Microsoft's renderers replace {{DATE(…)}} and {{TIME(…)}} in every text, TextRun or TextBlock.
_CARD_FUNCTION = re.compile(r"\{(?=\{)")


def literal(text: str) -> str:
    """``text`` for any Adaptive Card text: a word joiner between two ``{`` so that no
    ``{{DATE(…)}}`` or ``{{TIME(…)}}`` in it is replaced by a date."""
    return _CARD_FUNCTION.sub("{" + WORD_JOINER, text)


# CommonMark's inline markup (and the strikethrough and autolinks Teams adds): escaped anywhere.
_MD_ALWAYS = frozenset("\\`*~[]<")
_MD_ENTITY = re.compile(r"&(?=#[0-9]{1,7};|#[xX][0-9a-fA-F]{1,6};|[A-Za-z][A-Za-z0-9]{1,31};)")
# What turns a line into a heading, a quote, a list item or a rule, when it starts a line.
_MD_LINE_START = re.compile(r"^(?:[#>+=-]|[0-9]{1,9}(?=[.)]))")
_MD_AUTOLINK = re.compile(r"(?<=:)(?=//)|(?<=www)(?=\.)", re.IGNORECASE)


def markdown(text: str) -> str:
    """``text`` for an Adaptive Card ``TextBlock`` (markdown): CommonMark backslash escapes
    for every character that could open markup (an ``_`` inside a word cannot, and is left
    alone), ``&`` before an entity, what would make a heading, quote or list of the line, a
    word joiner inside ``://`` and ``www.`` (no autolink) and between ``{{`` (``literal``)."""
    out: list[str] = []
    for n, char in enumerate(text):
        if char in _MD_ALWAYS or (char == "_" and not _inside_word(text, n)):
            out.append("\\" + char)
        else:
            out.append(char)
    escaped = _MD_ENTITY.sub(r"\\&", "".join(out))
    start = _MD_LINE_START.match(escaped)
    if start:
        end = start.end()
        escaped = (escaped[:end] + "\\" + escaped[end:] if start.group().isdigit()
                   else "\\" + escaped)
    return literal(_MD_AUTOLINK.sub(WORD_JOINER, escaped))


def _inside_word(text: str, n: int) -> bool:
    return 0 < n < len(text) - 1 and text[n - 1].isalnum() and text[n + 1].isalnum()


# ---------------------------------------------------------------- sentences with links

@dataclass(frozen=True)
class Link:
    """A link inside a sentence: its text (already one clean line) and where it goes."""

    text: str
    url: str


@dataclass(frozen=True)
class Code:
    """A reference inside a sentence, shown in a fixed-width font where the platform has one."""

    text: str


type Run = str | Link | Code
type Runs = tuple[Run, ...]


def linkable(url: str) -> bool:
    """Only web links are offered: any other scheme (``javascript:``, ``file:``) is shown as
    the title alone."""
    return url.lower().startswith(("https://", "http://"))


def web_url(url: str) -> str:
    """A link target as both platforms can carry it: every space, control character and bidi
    control percent-encoded (a link ends at a space or a line break on either)."""
    return "".join("".join(f"%{byte:02X}" for byte in c.encode("utf-8", "surrogatepass"))
                   if c.isspace() or c in _CONTROLS or c in BIDI_CONTROLS else c for c in url)


def fill(template: str, values: Mapping[str, object]) -> Runs:
    """``template``'s ``{name}`` fields filled from ``values`` as runs: a Link or Code stays
    one, a tuple of runs is spliced in, anything else is formatted as text."""
    parts: list[Run] = []
    for literal_text, field, spec, _ in string.Formatter().parse(template):
        if literal_text:
            parts.append(literal_text)
        if field is None:
            continue
        value = values[field]
        if isinstance(value, Link | Code):
            parts.append(value)
        elif isinstance(value, tuple):
            parts.extend(value)
        else:
            parts.append(format(value, spec or ""))
    return merged(parts)


def merged(parts: Iterable[Run]) -> Runs:
    """Adjacent texts joined into one run, empty ones dropped."""
    out: list[Run] = []
    for part in parts:
        if isinstance(part, str) and out and isinstance(out[-1], str):
            out[-1] += part
        elif part != "":
            out.append(part)
    return tuple(out)


def plain(runs: Runs) -> str:
    """The runs as the words a person reads, links and references as their text."""
    return "".join(run if isinstance(run, str) else run.text for run in runs)
