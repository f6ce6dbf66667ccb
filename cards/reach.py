"""The steward's reach report in chat: the weekly message (Slack Block Kit, an Adaptive Card) and
its detail (the Slack App Home's Reach tab, ``cards.attention.render_slack_home``; a Teams card).

Pure like every renderer: a ``ReachReportView`` or ``ReachDetailView`` in, a message, a list of
blocks or a card out; the words are ``cards.reach_text``'s. The weekly message holds counts and
causes only; the detail also names the people each cause kept from being reached, with its
fix. Names and workspace names are text on both platforms (Slack ``plain_text`` and rich text,
Adaptive Card ``RichTextBlock`` runs). Both stay inside their platform's limits: 100 blocks for
a Home view (the tabs block included), 3,000 characters a block, 28 KB for a Teams card; what
does not fit becomes one "…and N more" line that names the CLI, which shows it all.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from cards import platform_limits as limits
from cards import reach_text as words
from cards import slack_blocks as sl
from cards import teams_card as tm
from cards import text
from cards.reach_views import (
    REACH_TOP_CAUSES,
    ReachCauseView,
    ReachDetailView,
    ReachReportView,
    ReachWorkspaceView,
)
from cards.views import Viewer

# the weekly message's one button (Slack ``action_id``, Teams ``verb``): the click is decided
# from the verified person alone, so it carries no token ("reach" as the Slack value)
REACH_OPEN_ACTION = "reach.open"
REACH_OPEN_VALUE = "reach"
REACH_VERB = "reach"
# the note's link button to the App Home (a URL button: Slack still sends the click, which is
# only acknowledged)
REACH_HOME_LINK_ACTION = "reach.home"
# Slack section fields: at most 10 a section, each at most 2,000 characters
FIELDS_MAX = 10
FIELD_CHARS = 2000
CAUSE_BLOCKS = 20  # causes the detail lists, one block (Teams: container) each
LINE_CHARS = sl.LINE_CHARS


def reach_note_text(viewer: Viewer) -> str:
    """What Slack says (ephemeral) after the weekly message's button was clicked: the detail is
    on the Reach tab of the App Home (the adapter adds the link)."""
    return text.catalog_of(viewer).text("reach.note")


def render_slack_reach_note(view: ReachDetailView, link: str | None) -> dict:
    """The ephemeral reply to the weekly message's button: for a steward, where the detail is
    and, with ``link`` (a ``slack://app`` deep link to the App Home, built by the adapter from
    the click's own workspace and app ids), a button that opens it; for anyone else, that there
    is nothing for them."""
    if not view.steward:
        words_ = text.catalog_of(view.viewer).text("reach.not_steward")
        return {"text": words_, "blocks": [sl.section("reach_note.text", words_)]}
    note = reach_note_text(view.viewer)
    blocks: list[dict] = [sl.section("reach_note.text", note)]
    if link is not None:
        blocks.append({"type": "actions", "block_id": "reach_note.actions", "elements": [{
            "type": "button", "action_id": REACH_HOME_LINK_ACTION, "url": link,
            "text": sl.plain_text(text.catalog_of(view.viewer).text("reach.open_home"),
                                  limits.SLACK_BUTTON_TEXT)}]})
    return {"text": note, "blocks": blocks}


def _top(view: ReachReportView) -> tuple[tuple[ReachCauseView, ...], int]:
    """The causes the weekly message lists (at most REACH_TOP_CAUSES) and how many more."""
    shown = view.causes[:REACH_TOP_CAUSES]
    return shown, len(view.causes) - len(shown) + max(view.more_causes, 0)


def _report_causes(view: ReachReportView) -> tuple[str | None, list[str]]:
    """The weekly message's causes: a heading and "• <cause>: N people, M questions" lines
    ("…and K more causes." last); no heading and the reassuring line when nobody was missed."""
    shown, more = _top(view)
    if not shown and not view.unreached and not more:
        return None, [text.catalog_of(view.viewer).text("reach.all_reached")]
    lines = [f"• {limits.clip(words.cause_line(cause, view.viewer), LINE_CHARS)}"
             for cause in shown]
    if more:
        lines.append(words.counted("reach.more_causes", more, view.viewer))
    return words.unreached_heading(view.unreached, view.causes, view.viewer), lines


def _fallback(view: ReachReportView) -> str:
    return words.counted("reach.fallback", view.totals.questions, view.viewer)


# ---------------------------------------------------------------- Slack


def _slack_header(block_id: str, key: str, viewer: Viewer) -> dict:
    return {"type": "header", "block_id": block_id,
            "text": sl.plain_text(text.catalog_of(viewer).text(key), limits.SLACK_HEADER_TEXT)}


def _slack_facts(block_id: str, lines: list[str]) -> dict:
    """The figures as a section's fields (two columns), plain text."""
    return {"type": "section", "block_id": block_id,
            "fields": [sl.plain_text(line, FIELD_CHARS, emoji=False)
                       for line in lines[:FIELDS_MAX]]}


def _bold_then(block_id: str, heading: str, lines: list[str]) -> dict:
    """A rich text block: a bold heading over plain lines (names in them stay text)."""
    return sl.rich(block_id, sl.rich_elements((limits.clip(heading, LINE_CHARS),), bold=True),
                   *(sl.rich_elements((limits.clip(line, LINE_CHARS),)) for line in lines))


def render_slack_reach_report(view: ReachReportView) -> dict:
    """The weekly message: the week's figures, the top causes (counts only) and the button to
    the detail (``REACH_OPEN_ACTION``)."""
    cat = text.catalog_of(view.viewer)
    blocks = [_slack_header("reach.title", "reach.title", view.viewer)]
    span = words.span_text(view.start, view.end, view.viewer)
    if span:
        blocks.append(sl.context("reach.span", span))
    blocks.append(_slack_facts("reach.totals", words.facts(view.totals, view.viewer)))
    heading, lines = _report_causes(view)
    if heading is None:
        blocks.append(sl.section("reach.causes", lines[0]))
    else:
        blocks.append(_bold_then("reach.causes", heading, lines))
    button = sl.button(cat.text("reach.open"), action_id=REACH_OPEN_ACTION,
                       value=REACH_OPEN_VALUE)
    blocks.append({"type": "actions", "block_id": "reach.actions",
                   "elements": [{**button, "style": "primary"}]})
    return sl.message(_fallback(view), blocks)


def _slack_cause(n: int, cause: ReachCauseView, viewer: Viewer) -> dict:
    """One cause of the detail: its label (bold), the fix, the counts and who."""
    lines = [line for line in (words.fix_text(cause.cause, viewer),
                               words.cause_counts(cause, viewer),
                               words.names_text(cause, viewer)) if line]
    return _bold_then(f"reach.cause.{n}", words.cause_label(cause.cause, viewer), lines)


def _workspace_elements(workspace: ReachWorkspaceView, viewer: Viewer) -> list[list[dict]]:
    """A workspace's two lines: its name and platform (bold), then its figures."""
    return [sl.rich_elements((words.workspace_heading(workspace, viewer),), bold=True),
            sl.rich_elements((limits.clip(words.workspace_facts(workspace, viewer),
                                          LINE_CHARS),))]


def _lines_length(lines: list[list[dict]]) -> int:
    return sum(limits.text_length(e["text"]) for line in lines for e in line) + len(lines)


def _slack_workspaces(view: ReachDetailView, room: int) -> list[dict]:
    """The workspaces' lines, packed into rich text blocks of at most 3,000 characters, in at
    most ``room`` blocks (one of them kept for "…and N more workspaces.")."""
    cat = text.catalog_of(view.viewer)
    heading = [sl.rich_elements((cat.text("reach.workspaces_heading"),), bold=True)]
    blocks: list[dict] = []
    lines: list[list[dict]] = list(heading)
    shown = 0
    for workspace in view.workspaces:
        entry = _workspace_elements(workspace, view.viewer)
        if _lines_length(lines + entry) > limits.SLACK_SECTION_TEXT:
            if len(blocks) + 2 >= room:  # this block, and the "more" line
                break
            blocks.append(sl.rich(f"reach.workspaces.{len(blocks)}", *lines))
            lines = []
        lines += entry
        shown += 1
    if lines:
        blocks.append(sl.rich(f"reach.workspaces.{len(blocks)}", *lines))
    hidden = len(view.workspaces) - shown
    if hidden:
        blocks.append(sl.context("reach.workspaces.more",
                                 words.counted("reach.more_workspaces", hidden, view.viewer)))
    return blocks


def render_slack_reach_detail_blocks(view: ReachDetailView, *,
                                     room: int = limits.SLACK_MODAL_BLOCKS - 1) -> list[dict]:
    """The Reach tab's blocks (at most ``room``: a Home view holds 100, the tabs block one of
    them): the week's figures, every cause with its fix and the names, the people interrupted
    most, the time to a bound answer by severity, then each workspace's line."""
    cat = text.catalog_of(view.viewer)
    blocks = [_slack_header("reach.title", "reach.detail_title", view.viewer)]
    if view.unavailable or not view.steward:
        key = "reach.unavailable" if view.unavailable else "reach.not_steward"
        return [*blocks, sl.section("reach.intro", cat.text(key))]
    span = words.span_text(view.start, view.end, view.viewer)
    if span:
        blocks.append(sl.context("reach.span", span))
    if words.is_empty(view):
        return [*blocks, sl.section("reach.intro", cat.text("reach.empty"))]
    blocks.append(_slack_facts("reach.totals", words.facts(view.totals, view.viewer)))
    blocks.append({"type": "divider", "block_id": "reach.causes.divider"})
    if view.causes:
        blocks.append(sl.rich("reach.causes", sl.rich_elements(
            (cat.text("reach.causes_heading"),), bold=True)))
        blocks += [_slack_cause(n, cause, view.viewer)
                   for n, cause in enumerate(view.causes[:CAUSE_BLOCKS])]
        if len(view.causes) > CAUSE_BLOCKS:
            blocks.append(sl.context("reach.causes.more", words.counted(
                "reach.more_causes", len(view.causes) - CAUSE_BLOCKS, view.viewer)))
    else:
        blocks.append(sl.section("reach.causes", cat.text("reach.all_reached")))
    busiest = [line for line in (words.interruptions_text(view),) if line]
    busiest += words.busiest_lines(view)
    if busiest:
        blocks.append(_bold_then("reach.busiest", cat.text("reach.busiest_heading"), busiest))
    if view.timings:
        blocks.append(_bold_then("reach.timings", cat.text("reach.timings_heading"),
                                 [f"• {words.timing_text(t, view.viewer)}"
                                  for t in view.timings]))
    if view.workspaces:
        blocks += _slack_workspaces(view, room - len(blocks))
    return blocks


# ---------------------------------------------------------------- Teams


def _teams_facts(lines: list[str]) -> list[dict]:
    return [tm.text(line, spacing="None") for line in lines]


def _teams_causes(view: ReachReportView) -> list[dict]:
    heading, lines = _report_causes(view)
    if heading is None:
        return [tm.text(lines[0])]
    return [tm.text(heading, weight="Bolder"),
            *[tm.text(line, spacing="None") for line in lines]]


def render_teams_reach_report(view: ReachReportView) -> dict:
    """The weekly message as a card: the week's figures, the top causes (counts only) and
    ``Action.Execute`` (verb ``REACH_VERB``) to the detail."""
    cat = text.catalog_of(view.viewer)
    body = [tm.text(cat.text("reach.title"), weight="Bolder", size="Medium")]
    span = words.span_text(view.start, view.end, view.viewer)
    if span:
        body.append(tm.text(span, isSubtle=True, size="Small", spacing="None"))
    body += _teams_facts(words.facts(view.totals, view.viewer))
    body += _teams_causes(view)
    return tm.card(view.viewer, body, [tm.execute(cat.text("reach.open"), REACH_VERB, {})])


def _teams_cause(cause: ReachCauseView, viewer: Viewer) -> dict:
    lines = [line for line in (words.fix_text(cause.cause, viewer),
                               words.names_text(cause, viewer)) if line]
    return {"type": "Container", "separator": True, "spacing": "Medium", "items": [
        tm.text(words.cause_label(cause.cause, viewer), weight="Bolder"),
        tm.text(words.cause_counts(cause, viewer), isSubtle=True, spacing="None"),
        *[tm.text(line, spacing="None") for line in lines]]}


def _teams_workspace(workspace: ReachWorkspaceView, viewer: Viewer) -> dict:
    return {"type": "Container", "spacing": "Small", "items": [
        tm.text(words.workspace_heading(workspace, viewer), weight="Bolder"),
        tm.text(words.workspace_facts(workspace, viewer), size="Small", spacing="None")]}


type Section = tuple[dict | None, list[dict], Callable[[int], str]]


def _fill(card: dict, sections: Iterable[Section]) -> None:
    """Appends each section (a heading, then its entries) while the card fits with room kept
    for one closing line; at the first entry that does not fit, that line says what was left
    out and nothing else follows."""
    for heading, entries, more in sections:
        if heading is not None:
            if not tm.fits_with(card, heading):
                card["body"].append(tm.text(more(len(entries)), isSubtle=True))
                return
            card["body"].append(heading)
        shown = tm.append_while_fits(card, entries)
        if shown < len(entries):
            card["body"].append(tm.text(more(len(entries) - shown), isSubtle=True))
            return


def render_teams_reach_detail(view: ReachDetailView) -> dict:
    """The detail as a card (the answer to the weekly card's button): the same as the Slack
    Reach tab, as much as fits under 28 KB, then one "…and N more" line."""
    cat = text.catalog_of(view.viewer)
    body = [tm.text(cat.text("reach.detail_title"), weight="Bolder", size="Medium")]
    card = tm.card(view.viewer, body)
    if view.unavailable or not view.steward:
        body.append(tm.text(cat.text("reach.unavailable" if view.unavailable
                                      else "reach.not_steward")))
        return card
    span = words.span_text(view.start, view.end, view.viewer)
    if span:
        body.append(tm.text(span, isSubtle=True, size="Small", spacing="None"))
    if words.is_empty(view):
        body.append(tm.text(cat.text("reach.empty")))
        return card
    body += _teams_facts(words.facts(view.totals, view.viewer))

    def cut(_: int) -> str:
        return cat.text("reach.cut")

    def bold(key: str) -> dict:
        return tm.text(cat.text(key), weight="Bolder", separator=True, spacing="Large")

    sections: list[Section] = []
    if view.causes:
        causes = [_teams_cause(c, view.viewer) for c in view.causes[:CAUSE_BLOCKS]]
        hidden = len(view.causes) - len(causes)
        if hidden:
            causes.append(tm.text(words.counted("reach.more_causes", hidden, view.viewer),
                                   isSubtle=True))
        sections.append((bold("reach.causes_heading"), causes, cut))
    else:
        sections.append((None, [tm.text(cat.text("reach.all_reached"), separator=True)], cut))
    busiest = [line for line in (words.interruptions_text(view),) if line]
    busiest += words.busiest_lines(view)
    if busiest:
        sections.append((bold("reach.busiest_heading"),
                         [tm.text(line, spacing="None") for line in busiest], cut))
    if view.timings:
        sections.append((bold("reach.timings_heading"),
                         [tm.text(f"• {words.timing_text(t, view.viewer)}", spacing="None")
                          for t in view.timings], cut))
    if view.workspaces:
        def more_workspaces(hidden: int) -> str:
            return words.counted("reach.more_workspaces", hidden, view.viewer)

        sections.append((bold("reach.workspaces_heading"),
                         [_teams_workspace(w, view.viewer) for w in view.workspaces],
                         more_workspaces))
    _fill(card, sections)
    return card
