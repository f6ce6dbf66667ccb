"""Steward cards never carry span text, and person-supplied text is never obeyed as markup."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import replace

from cards import fixtures, slack, teams
from cards.reach_views import (
    ReachCauseView,
    ReachDetailView,
    ReachReportView,
    ReachTimingView,
    ReachTotals,
    ReachWorkspaceView,
)
from cards.views import (
    DeadLetterDigestView,
    DeadLetterItem,
    StewardConflictView,
    StewardEscalationView,
    StewardNoticeView,
)
from tests.support.card_text import slack_literal, slack_markup

SPAN_FIELDS = {"question", "span", "span_excerpt", "excerpt", "candidates", "answer"}


def test_steward_views_have_nowhere_to_put_span_text() -> None:
    """The redacted views (the reach report's too) have no question, excerpt, candidate or
    answer field at all; the conflict notice has only the override's candidates (the steward
    decides from the card), which a steward who may not read the document is not offered
    (``bot.engine.views.override_candidates``, tested in tests/slack/test_slack_override.py)."""
    for view_type in (StewardEscalationView, StewardConflictView, StewardNoticeView,
                      DeadLetterDigestView, DeadLetterItem, ReachReportView, ReachDetailView,
                      ReachCauseView, ReachWorkspaceView, ReachTimingView, ReachTotals):
        names = {f.name for f in dataclasses.fields(view_type)}
        allowed = {"candidates"} if view_type is StewardConflictView else set()
        assert not names & (SPAN_FIELDS - allowed), view_type


def test_rendered_steward_cards_hold_no_question_or_dates(codec) -> None:
    """Escalations (all skipped, or asked without an answer), conflict notices (before and after
    binding), high-severity notice and dead-letter digest mention no question or candidate."""
    rendered = json.dumps([
        slack.render_steward_escalation(fixtures.ESCALATION),
        teams.render_steward_escalation(fixtures.ESCALATION),
        slack.render_steward_escalation(fixtures.ESCALATION_UNANSWERED),
        teams.render_steward_escalation(fixtures.ESCALATION_UNANSWERED),
        slack.render_steward_conflict(fixtures.CONFLICT_NOTICE),
        teams.render_steward_conflict(fixtures.CONFLICT_NOTICE),
        slack.render_steward_conflict(fixtures.LATE_CONFLICT_NOTICE),
        teams.render_steward_conflict(fixtures.LATE_CONFLICT_NOTICE),
        slack.render_dead_letter_digest(fixtures.DEAD_LETTERS),
        teams.render_dead_letter_digest(fixtures.DEAD_LETTERS),
        slack.render_steward_notice(fixtures.HIGH_NOTICE),
        teams.render_steward_notice(fixtures.HIGH_NOTICE),
    ], ensure_ascii=False)
    for withheld in (fixtures.CRITICAL.question, fixtures.QUESTION.question, "31 December",
                     "12 June", "termination clause", "signature"):
        assert withheld not in rendered
    assert fixtures.LEASE.url in rendered
    assert "cannot read this document" in rendered
    assert fixtures.MSA.url in rendered and "Sarah Chen" in rendered
    assert "Tom Becker and Jonas Weber" in rendered


def test_escalation_lists_each_skip_reason_in_plain_words() -> None:
    """Each skipped person appears with the catalog's sentence for their reason code."""
    message = json.dumps(slack.render_steward_escalation(fixtures.ESCALATION))
    for line in ("Sarah Okafor cannot read this document",
                 "Ahmed Haddad has no linked Slack or Teams account",
                 "Lena Brandt had already received today's maximum"):
        assert line in message


def _shown_as_text(message: dict, raw: str, escaped: str) -> None:
    """``raw`` is in no mrkdwn text of ``message`` (there it is ``escaped``, where it is at all)
    and is shown as it is in plain or rich text."""
    markup, literal = " ".join(slack_markup(message)), " ".join(slack_literal(message))
    assert raw not in markup
    assert raw in literal or escaped in markup


def test_mrkdwn_control_text_is_escaped(codec) -> None:
    """A title like <!channel> or a forged link is shown as text, never obeyed by Slack: in
    plain or rich text as typed, in mrkdwn (the source line, the notification) escaped."""
    document = replace(fixtures.MSA, title="<!channel> <https://evil.example|click> & co")
    message = slack.render_question(replace(fixtures.QUESTION, document=document,
                                            question="Is <@U123> right?"), codec=codec)
    _shown_as_text(message, "<@U123>", "&lt;@U123&gt;")
    assert "Is <@U123> right?" in slack_literal(message)
    assert any("&lt;!channel&gt; &lt;https:⁠//evil.example|click&gt; &amp; co" in t
               or "&lt;!channel&gt; &lt;https://evil.example|click&gt; &amp; co" in t
               for t in slack_markup(message))
    assert not any("<!channel>" in t for t in slack_markup(message))


def test_markdown_link_title_cannot_break_out(codec) -> None:
    """Brackets in a Teams link title cannot end the link and start another."""
    document = replace(fixtures.MSA, title="a](https://evil.example) [b")
    card = teams.render_question(replace(fixtures.QUESTION, document=document), codec=codec)
    assert "](https://evil.example)" not in json.dumps(card)


def test_steward_notice_escapes_names_and_title() -> None:
    """Asked names and a document title holding mrkdwn control text are shown, never obeyed."""
    notice = replace(fixtures.HIGH_NOTICE, asked=("<!here>", "Ana & Bo"),
                     document=replace(fixtures.MSA, title="<!channel> plan"))
    message = slack.render_steward_notice(notice)
    _shown_as_text(message, "<!here> and Ana & Bo", "&lt;!here&gt; and Ana &amp; Bo")
    _shown_as_text(message, "<!channel> plan", "&lt;!channel&gt; plan")


def test_unanswered_names_are_escaped() -> None:
    """Names of people asked without an answer are shown as text in Slack, never obeyed."""
    view = replace(fixtures.ESCALATION_UNANSWERED, unanswered=("<!here>", "Ana & Bo"))
    dead = replace(fixtures.DEAD_LETTERS, items=(
        replace(fixtures.DEAD_LETTERS.items[0], unanswered=("<!here>", "Ana & Bo")),))
    for message in (slack.render_steward_escalation(view), slack.render_dead_letter_digest(dead)):
        _shown_as_text(message, "<!here> and Ana & Bo", "&lt;!here&gt; and Ana &amp; Bo")
        assert any("Asked, no answer: <!here> and Ana & Bo" in t for t in slack_literal(message))


def test_late_conflict_notice_holds_names_and_link_only() -> None:
    """The after-binding notice shows the responder's name (escaped in Slack) and the document
    link, and no date, question, span, candidate label or the bound interval."""
    notice = replace(fixtures.LATE_CONFLICT_NOTICE, responders=("<!here>", "Ana & Bo"))
    rendered = slack.render_steward_conflict(notice)
    _shown_as_text(rendered, "<!here> and Ana & Bo", "&lt;!here&gt; and Ana &amp; Bo")
    message = json.dumps(rendered, ensure_ascii=False)
    card = json.dumps(teams.render_steward_conflict(notice), ensure_ascii=False)
    assert "\\<!here> and Ana & Bo" in card  # markdown: the "<" escaped
    for rendered in (message, card):
        assert fixtures.MSA.url in rendered
        for withheld in (fixtures.QUESTION.question, "12 June", "3 July", "June", "July",
                         "signature"):
            assert withheld not in rendered
