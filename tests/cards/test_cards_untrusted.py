"""One table of hostile text, sent through every card state on both platforms and read back as
each platform shows it: Slack's Block Kit model, and Microsoft's Adaptive Cards renderer with a
CommonMark processor (cards/js/render.js). Each row names what a person typed and the one line
the card must show for it (docs/cards.md, "Text from people").
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, fields, is_dataclass, replace
from html.parser import HTMLParser

import pytest

from bot.core.models import ClarificationState, Severity
from cards import attention, fixtures, overrides, slack, teams, text, untrusted
from cards import platform_limits as limits
from cards.views import (
    AttentionItem,
    AttentionView,
    OverrideFormView,
    StewardNoticesView,
)
from tests.cards.conftest import JS_DIR
from tests.support.card_text import slack_literal, slack_markup

JOINER = "\u2060"
BIDI = set("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c")
MARK = "Qx7"  # every row's text starts with it, so each place it is shown can be found


@dataclass(frozen=True)
class Row:
    name: str
    typed: str  # what a person (or the core) wrote
    shown: str  # the one line every card must show for it


ROWS = [
    Row("slack_formatting", "Qx7 *bold* _italic_ ~strike~ `code` ```pre``` > quote",
        "Qx7 *bold* _italic_ ~strike~ `code` ```pre``` > quote"),
    Row("slack_controls", "Qx7 <!channel> <!here> <@U123> <#C1|general> <http://x|y> & &amp; &lt;",
        "Qx7 <!channel> <!here> <@U123> <#C1|general> <http://x|y> & &amp; &lt;"),
    Row("markdown", "Qx7 **strong** __under__ [a](https://evil.example) ![i](https://e.x/i.png) "
        "<b>b</b> &#42;x&#42; &copy; \\*esc\\* a_b_c | t |",
        "Qx7 **strong** __under__ [a](https://evil.example) ![i](https://e.x/i.png) "
        "<b>b</b> &#42;x&#42; &copy; \\*esc\\* a_b_c | t |"),
    Row("line_starts", "Qx7\n# heading\n- item\n1. first\n> quote\n    code\n---\n===",
        "Qx7 # heading - item 1. first > quote     code --- ==="),
    Row("breaks_and_tabs", "  Qx7 one\ntwo\r\nthree\rfour\u2028five\u2029six\tseven\vend\f ",
        "Qx7 one two three four five six seven end"),
    Row("controls", "Qx7 nul\x00bell\x07esc\x1b[31mred\x1b[0m del\x7f c1\x9b end",
        "Qx7 nulbellesc[31mred[0m del c1 end"),
    Row("bidi", "Qx7 \u202eevil\u202c \u202dltr\u202c \u202aemb\u202b \u2066a\u2067b\u2068c\u2069"
        " \u200eg\u200fh\u061ci",
        "Qx7 evil ltr emb abc ghi"),
    Row("right_to_left", "Qx7 توقيع العقد חתימה ١٢ يونيو", "Qx7 توقيع العقد חתימה ١٢ يونيو"),
    Row("card_functions",
        "Qx7 {{DATE(2026-06-12T00:00:00Z, SHORT)}} {{TIME(2026-06-12T10:00:00Z)}}",
        "Qx7 {{DATE(2026-06-12T00:00:00Z, SHORT)}} {{TIME(2026-06-12T10:00:00Z)}}"),
    Row("autolinks", "Qx7 https://evil.example/p?a=1 www.evil.example :smile: :+1: 14:00",
        "Qx7 https://evil.example/p?a=1 www.evil.example :smile: :+1: 14:00"),
    Row("lone_surrogate", "Qx7 \ud800 half", "Qx7 \ufffd half"),
]

# Characters a person sees that are several code points: a combining accent, a flag, an emoji
# with a skin tone and a zero-width joiner, a Devanagari conjunct, a rainbow flag (with its
# variation selector), a tag sequence (the flag of Scotland), a Hangul syllable in jamo.
CLUSTERS = ["e\u0301", "🇩🇪", "👩🏽\u200d💼", "\u0915\u094d\u0937", "🏳\ufe0f\u200d🌈",
            "🏴\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f", "\u1100\u1161\u11a8",
            "a"]
LONG_PIECES = [*MARK, " ", *CLUSTERS * 130]  # long enough to be cut by every limit
LONG = "".join(LONG_PIECES)
# where a cut may fall: between two of the pieces above, never inside one
BOUNDARIES = {sum(len(p) for p in LONG_PIECES[:n]) for n in range(len(LONG_PIECES) + 1)}
ROWS.append(Row("long_clusters", LONG, LONG))

# The view fields that hold what people and the core wrote. A clarification id is the core's
# too, but one that is not a plain reference ([A-Za-z0-9._:@-]) cannot be put in a button's
# signed token at all (cards.actions), so it never reaches a card; a neutral document's
# reference, shown in its place, is in the table.
UNTRUSTED = {"question", "excerpt", "title", "workspace", "reference", "label", "person",
             "confirmed_by", "unanswered", "confirmed", "asked", "responders", "names",
             # the reach report's: a cause code or a platform the bot does not know is shown as
             # it came
             "cause", "platform"}
# (name, count) pairs whose names people wrote: the reach report's people interrupted most
UNTRUSTED_PAIRS = {"busiest"}


def hostile(view: object, typed: str) -> object:
    """``view`` with every field a person or the core fills (nested views too) set to
    ``typed``; an empty one (a title left out, no workspace) stays empty."""
    if not is_dataclass(view) or isinstance(view, type):
        return view
    changes: dict[str, object] = {}
    for field in fields(view):
        value = getattr(view, field.name)
        if field.name in UNTRUSTED and isinstance(value, str) and value:
            changes[field.name] = typed
        elif field.name in UNTRUSTED and isinstance(value, tuple) and value and all(
                isinstance(v, str) for v in value):
            changes[field.name] = tuple(typed for _ in value)
        elif field.name in UNTRUSTED_PAIRS and isinstance(value, tuple):
            changes[field.name] = tuple((typed, count) for _, count in value)
        elif isinstance(value, tuple):
            changes[field.name] = tuple(hostile(item, typed) for item in value)
        elif is_dataclass(value):
            changes[field.name] = hostile(value, typed)
    return replace(view, **changes)  # type: ignore[type-var]


def _extra_states(typed: str) -> list[fixtures.State]:
    """What the product renders beside the gallery's states: a steward's batched notices, the
    attention queue (Slack Home, Teams), the override's confirmation (modal, card)."""
    def the[V](view: V) -> V:
        return hostile(view, typed)  # type: ignore[return-value]

    notices = the(StewardNoticesView(viewer=fixtures.STEWARD, notices=(
        fixtures.HIGH_NOTICE, replace(fixtures.HIGH_NOTICE, document=fixtures.WITHHELD))))
    queue = the(AttentionView(viewer=fixtures.STEWARD, steward=True, items=(
        AttentionItem(clarification_id="clr_1", document=fixtures.LEASE,
                      severity=Severity.CRITICAL, state=ClarificationState.CONFLICTED),
        AttentionItem(clarification_id="clr_2", document=fixtures.WITHHELD,
                      severity=Severity.HIGH, state=ClarificationState.OPEN))))
    form = the(OverrideFormView(clarification_id="clr_1", card_ref="dlv_1",
                                candidate=fixtures.SIGNATURE, document=fixtures.LEASE,
                                viewer=fixtures.STEWARD))
    conflict = the(replace(fixtures.CONFLICT_NOTICE, card_ref="dlv_2",
                           candidates=(fixtures.SIGNATURE,)))
    return [
        fixtures.State("steward_notices", "", lambda c: slack.render_steward_notices(notices),
                       lambda c: teams.render_steward_notices(notices)),
        fixtures.State("queue", "", lambda c: attention.render_slack_home(queue),
                       lambda c: attention.render_teams_queue(queue)),
        fixtures.State("override_form", "", lambda c: overrides.slack_modal(form, codec=c),
                       lambda c: overrides.teams_form(form, codec=c)),
        fixtures.State("conflict_with_overrides", "",
                       lambda c: slack.render_steward_conflict(conflict, c),
                       lambda c: teams.render_steward_conflict(conflict, c)),
    ]


def every_state(typed: str) -> list[fixtures.State]:
    return [*fixtures.states(alter=lambda view: hostile(view, typed)), *_extra_states(typed)]


def _nudge_text(typed: str) -> str:
    """The Teams reminder activity's own text (an activity's text is markdown too)."""
    nudge = hostile(fixtures.NUDGE, typed)
    return teams.activity_text(text.reminder_text(nudge))  # type: ignore[arg-type]


# ---------------------------------------------------------------- reading Slack


_LINK = re.compile(r"<(https?://[^|>]+)\|([^>]*)>")


def _unescaped(mrkdwn: str) -> str:
    """mrkdwn as Slack shows it: links as their text, the three entities decoded, the word
    joiners (zero-width) gone."""
    shown = _LINK.sub(lambda m: m.group(2), mrkdwn).replace(JOINER, "")
    return shown.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def _markup_problems(mrkdwn: str) -> list[str]:
    """What in a mrkdwn text Slack could read as markup that the bot did not write: a bare
    ``<``, ``>`` or ``&``, or a formatting mark with a word boundary beside it."""
    body = _LINK.sub(lambda m: m.group(2), mrkdwn)
    found = [f"bare {c!r}" for c in "<>" if c in body]
    found += ["bare '&'" for _ in re.finditer(r"&(?!amp;|lt;|gt;)", body)]
    for match in re.finditer(r"[*_~`]", body):
        n = match.start()
        before = body[n - 1] if n else ""
        after = body[n + 1] if n + 1 < len(body) else ""
        inside_word = match.group() == "_" and before.isalnum() and after.isalnum()
        if (before != JOINER or after != JOINER) and not inside_word:
            found.append(f"mark {match.group()!r} at {n}")
    return found


def slack_shown(payload: dict) -> list[str]:
    """Every text of a Slack payload as a person reads it."""
    return slack_literal(payload) + [_unescaped(t) for t in slack_markup(payload)]


# ---------------------------------------------------------------- reading Teams


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


# What markdown or HTML in a text would become: none of it may appear in a drawn card.
MARKUP_TAGS = {"strong", "em", "b", "i", "code", "pre", "s", "del", "h1", "h2", "h3", "h4", "h5",
               "h6", "blockquote", "ul", "ol", "li", "img", "table", "hr", "br", "mark"}
DOCUMENT_URLS = {fixtures.MSA.url, fixtures.LEASE.url, fixtures.POLICY.url}


def _tag_problems(html: str) -> list[str]:
    parser = _Tags()
    parser.feed(html)
    found = [f"<{tag}>" for tag, _ in parser.tags if tag in MARKUP_TAGS]
    return found + [f"<a href={attrs.get('href')!r}>" for tag, attrs in parser.tags
                    if tag == "a" and attrs.get("href") not in DOCUMENT_URLS]


def _draw(cards: dict[str, dict]) -> dict[str, dict]:
    done = subprocess.run(["node", str(JS_DIR / "render.js")], input=json.dumps(cards),
                          capture_output=True, text=True, timeout=300, check=True)
    return json.loads(done.stdout)


def teams_shown(drawn: dict) -> list[str]:
    """Every text of a drawn card as a person reads it (word joiners are zero-width)."""
    return [t.replace(JOINER, "").strip() for t in drawn["texts"]]


# ---------------------------------------------------------------- the checks


def _occurrences(texts: list[str]) -> Iterator[str]:
    """From each place the row's text is shown to the end of that text."""
    for shown in texts:
        for match in re.finditer(MARK, shown):
            yield shown[match.start():]


def _spaced(words: str) -> str:
    # the span excerpt is shown with its runs of spaces as one (docs/cards.md)
    return re.sub(" {2,}", " ", words)


def _whole(rest: str, line: str) -> bool:
    """``rest`` starts with ``line``, or with a part of it cut where a limit is, marked "…"."""
    rest, line = _spaced(rest), _spaced(line)
    if rest.startswith(line):
        return True
    cut = rest.find("…")
    return cut > len(MARK) and line.startswith(rest[:cut].rstrip())


def _line_problems(texts: list[str], row: Row) -> list[str]:
    """The row's line must be shown somewhere, and wherever it is shown, whole (or cut at a
    limit, marked "…") and on one line: a newline inside it or a bidi control left in it
    would show here."""
    found = [] if any(MARK in t for t in texts) else ["not shown"]
    found += [f"shown as {rest[:len(row.shown) + 5]!r}" for rest in _occurrences(texts)
              if not _whole(rest, row.shown)]
    found += [f"bidi control in {t[:40]!r}" for t in texts if BIDI & set(t)]
    return found


@pytest.fixture(scope="module")
def rendered() -> dict[str, dict[str, tuple[dict, dict]]]:
    """Every state for every row: {row: {state: (Slack payload, Adaptive Card)}}."""
    codec = fixtures.preview_codec()
    return {row.name: {s.name: (s.slack(codec), s.teams(codec)) for s in every_state(row.typed)}
            for row in ROWS}


@pytest.fixture(scope="module")
def drawn(rendered, adaptive_validator) -> dict[str, dict]:
    """Every card of ``rendered`` (and each row's nudge text) as Microsoft's renderer draws
    it; the cards also pass its validation."""
    cards = {f"{row}/{state}": card for row, states in rendered.items()
             for state, (_, card) in states.items()}
    problems = adaptive_validator(cards)
    assert {name: found for name, found in problems.items() if found} == {}
    cards.update({f"{row.name}/nudge_text": {"$markdown": _nudge_text(row.typed)}
                  for row in ROWS})
    return _draw(cards)


def test_the_table_reaches_every_state() -> None:
    """Every gallery state (and every renderer outside it) gets the hostile text, and each
    field a person fills is in the table's reach."""
    names = {s.name for s in every_state(ROWS[0].typed)}
    assert {s.name for s in fixtures.states()} <= names
    assert {"steward_notices", "queue", "override_form"} <= names
    assert len(names) == len(fixtures.states()) + 4
    shown = json.dumps(hostile(fixtures.DIGEST, "Qx7"), default=str)
    assert shown.count("Qx7") >= 2 * len(fixtures.DIGEST.questions)


# States that show nothing a person typed: Slack's inline errors answer a modal's submit (they
# name the field), the last turn's nudge names no document, and the weekly reach report of a
# week where everyone could be reached has no cause to name.
NO_TEXT = {"slack": {"custom_invalid", "reminder_withheld", "steward_reach_report_clear"},
           "teams": {"reminder_withheld", "steward_reach_report_clear"}}


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.name)
def test_slack_shows_people_text_as_text(row: Row, rendered, slack_validator) -> None:
    """In every state, Block Kit's model takes the message as it is; the row's text is shown
    only in plain text or rich text, or in mrkdwn with nothing in it left to format; it reads
    as the row's line, whole, on one line, with no bidirectional control."""
    problems: dict[str, list[str]] = {}
    for state, (payload, _) in rendered[row.name].items():
        slack_validator(payload)
        found = [p for t in slack_markup(payload) for p in _markup_problems(t)]
        if state not in NO_TEXT["slack"]:
            found += _line_problems(slack_shown(payload), row)
        if found:
            problems[state] = found
    assert problems == {}


@pytest.mark.slow
@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.name)
def test_teams_shows_people_text_as_text(row: Row, drawn) -> None:
    """In every state, Microsoft's renderer (markdown read as Teams reads it) draws the row's
    text as the row's line: no bold, italics, code, link, list or heading comes from it, no
    date function is run on it, and it stays whole, on one line, with no bidi control."""
    problems: dict[str, list[str]] = {}
    for name, card in drawn.items():
        if not name.startswith(f"{row.name}/"):
            continue
        found = _tag_problems(card["html"])
        if name.partition("/")[2] not in NO_TEXT["teams"]:
            found += _line_problems(teams_shown(card), row)
        if found:
            problems[name] = found
    assert problems == {}


def test_the_checks_see_markup_when_it_is_there() -> None:
    """The readers fail on what they guard against: mrkdwn with a live mark or mention, HTML
    with markup tags or a stray link, a line split or cut."""
    assert _markup_problems("*bold*") and _markup_problems("<!channel>")
    assert not _markup_problems(f"<https://x.example|{JOINER}*{JOINER}a> &amp; clr_7f3a9c")
    assert _markup_problems("_clr_") and _markup_problems("a_ b")
    assert _tag_problems("<p><strong>x</strong></p>") == ["<strong>"]
    assert _tag_problems('<a href="https://evil.example">x</a>')
    assert not _tag_problems(f'<p><a href="{fixtures.MSA.url}">x</a></p>')
    row = ROWS[0]
    assert _line_problems([row.shown], row) == []
    assert _line_problems([row.shown[:10] + "\n" + row.shown[10:]], row)
    assert _line_problems(["Qx7 \u202eevil"], Row("x", "", "Qx7 \u202eevil"))
    assert _line_problems(["nothing"], row) == ["not shown"]


def _cut_problems(texts: list[str]) -> list[str]:
    """Wherever the long text is shown, it is whole or cut between two characters a person
    sees, the cut marked "…"."""
    found = []
    for rest in _occurrences(texts):
        kept = 0
        while kept < min(len(rest), len(LONG)) and rest[kept] == LONG[kept]:
            kept += 1
        whole = kept == len(LONG)
        if not whole and (kept not in BOUNDARIES or rest[kept:kept + 1] != "…"):
            found.append(f"cut after {kept} code points: {rest[max(kept - 3, 0):kept + 2]!r}")
    return found


@pytest.mark.slow
def test_long_text_is_cut_between_characters(rendered, drawn) -> None:
    """Every limit that cuts the long text (a button's 75 characters, a name's 100, a title's
    200, a line's 1,000 …) cuts it between two characters a person sees: never inside a flag,
    an emoji's joined sequence or skin tone, a combining mark or a conjunct; and every message
    can still be encoded (no half surrogate pair)."""
    problems: dict[str, list[str]] = {}
    for state, (payload, card) in rendered["long_clusters"].items():
        json.dumps([payload, card], ensure_ascii=False).encode("utf-8")
        found = _cut_problems(slack_shown(payload))
        found += _cut_problems(teams_shown(drawn[f"long_clusters/{state}"]))
        if found:
            problems[state] = found
    assert problems == {}
    shown = [t for payload, _ in rendered["long_clusters"].values() for t in slack_shown(payload)]
    assert any(MARK in t and t.endswith("…") for t in shown)  # the limits did cut it


def test_link_targets_are_kept_as_they_are(codec) -> None:
    """Only the words are neutralised: a document link with marks in it (``_``, ``~``, ``*``)
    reaches both platforms intact, with only what would end the link early encoded (a space,
    a line break, a bidi control; ``|``, ``<``, ``>`` or parentheses where the markup needs);
    a link of another scheme than the web's is not offered at all."""
    url = "https://docs.example.com/a_b~c/*d*?x=1&y=<2>|3 4\n5\u202e"
    view = replace(fixtures.QUESTION, document=replace(fixtures.MSA, url=url))
    source = slack.render_question(view, codec=codec)["blocks"][-1]["elements"][0]["text"]
    assert ("<https://docs.example.com/a_b~c/*d*?x=1&amp;y=%3C2%3E%7C3%204%0A5%E2%80%AE|"
            in source)
    card = json.dumps(teams.render_question(view, codec=codec))
    assert "](https://docs.example.com/a_b~c/*d*?x=1&y=%3C2%3E|3%204%0A5%E2%80%AE)" in card
    script = replace(fixtures.QUESTION, document=replace(fixtures.MSA, url="javascript:alert(1)"))
    for rendered in (slack.render_question(script, codec=codec),
                     teams.render_question(script, codec=codec),
                     slack.render_steward_notice(replace(fixtures.HIGH_NOTICE,
                                                         document=script.document))):
        assert "javascript:" not in json.dumps(rendered)


@pytest.mark.parametrize(("typed", "shown"), [
    ("Ana\nBo", "Ana Bo"), (" \tAna\r\nBo\u2028", "Ana Bo"), ("a\u202eb\u2069c\u200fd", "abcd"),
    ("a\x00b\x1b\x7fc\x9bd", "abcd"), ("\ud83d", "\ufffd"), ("👩🏽\u200d💼", "👩🏽\u200d💼"),
])
def test_one_clean_line_by_example(typed: str, shown: str) -> None:
    """A single-line field loses its line breaks (as spaces), tabs, controls and bidi controls
    and is trimmed; emoji sequences and their joiners stay."""
    assert untrusted.line(typed) == shown


@pytest.mark.parametrize(("whole", "limit", "cut"), [
    ("ab🇩🇪🇫🇷", 5, "ab…"), ("ab🇩🇪🇫🇷", 7, "ab🇩🇪…"), ("e\u0301e\u0301e\u0301", 4, "e\u0301…"),
    ("x👩🏽\u200d💼", 7, "x…"), ("x👩🏽\u200d💼", 8, "x👩🏽\u200d💼"), ("क्षक्ष", 4, "क्ष…"),
])
def test_cuts_fall_between_characters_by_example(whole: str, limit: int, cut: str) -> None:
    """A cut counts UTF-16 units, keeps room for "…", and never splits a flag, an emoji
    sequence, a letter from its accent or a conjunct."""
    assert limits.clip(whole, limit) == cut


@pytest.mark.parametrize(("typed", "markdown", "mrkdwn"), [
    ("*a* _b_ c_d", "\\*a\\* \\_b\\_ c_d",
     f"{JOINER}*{JOINER}a{JOINER}*{JOINER} {JOINER}_{JOINER}b{JOINER}_{JOINER} c_d"),
    ("<!here> & &amp;", "\\<!here> & \\&amp;", "&lt;!here&gt; &amp; &amp;amp;"),
    ("# x", "\\# x", "# x"), ("12. x", "12\\. x", "12. x"), ("[a](b)", "\\[a\\](b)", "[a](b)"),
    ("{{DATE(x)}} https://e.x", f"{{{JOINER}{{DATE(x)}}}} https:{JOINER}//e.x",
     "{{DATE(x)}} https://e.x"),
    (":smile: 14:00", ":smile: 14:00", f":{JOINER}smile: 14:00"),
])
def test_escapes_by_example(typed: str, markdown: str, mrkdwn: str) -> None:
    """What each escape writes for a few typed strings (Adaptive Card markdown; Slack mrkdwn)."""
    assert untrusted.markdown(typed) == markdown
    assert untrusted.mrkdwn(typed) == mrkdwn
