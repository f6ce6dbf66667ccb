"""The steward's sentences: why they are asked (who was skipped and why, who did not answer, who
confirmed so far), the unreachable-quorum and conflict notices, the notices of what was sent to
whom, and the dead-letter digest's opening and closing lines.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.core.models import ReasonCode
from cards import dates, untrusted
from cards.platform_limits import clip, text_length
from cards.text import PERSON_CHARS, catalog_of, document_run, quoted_document, severity_text
from cards.untrusted import Runs
from cards.views import (
    DeadLetterDigestView,
    SkippedCandidate,
    StewardConflictView,
    StewardEscalationView,
    StewardNoticeView,
    StewardQuorumView,
    Viewer,
)

# Rankings are short (max_candidates is 3 by default); past this many, the rest are counted.
MAX_SKIP_LINES = 12
# The "Asked, no answer: …" line fits one renderer line; names past this are counted instead.
UNANSWERED_CHARS = 1000


def skip_text(skipped: SkippedCandidate, viewer: Viewer) -> str:
    """A skip reason in plain words: "Dana Whitfield cannot read this document, …"."""
    cat = catalog_of(viewer)
    if skipped.reason is ReasonCode.PERSON_AWAY and skipped.until is not None:
        # their return, on the day it falls on where the steward is
        day = dates.full_day(dates.instant_day(skipped.until, viewer.time_zone),
                             locale=viewer.locale)
        reason = cat.text("reason.PERSON_AWAY_until", day=day)
    else:
        reason = cat.text(f"reason.{skipped.reason.value}")
    return cat.text("escalation.skip_line",
                    person=clip(untrusted.line(skipped.person), PERSON_CHARS), reason=reason)


def skip_texts(skipped: tuple[SkippedCandidate, ...], viewer: Viewer) -> list[str]:
    """The skip reasons to list, at most MAX_SKIP_LINES, then "…and N more"."""
    cat = catalog_of(viewer)
    if not skipped:
        return [cat.text("escalation.nobody")]
    lines = [skip_text(entry, viewer) for entry in skipped[:MAX_SKIP_LINES]]
    if len(skipped) > MAX_SKIP_LINES:
        lines.append(cat.plural("escalation.more_skipped", len(skipped) - MAX_SKIP_LINES))
    return lines


def unanswered_text(unanswered: tuple[str, ...], viewer: Viewer, *,
                    key: str = "escalation.unanswered") -> str | None:
    """ "Asked, no answer: Tom Becker and Jonas Weber", joined in the viewer's locale (``key``
    names another "<label>: {names}" line). Names are clipped like the skip lines; at most
    MAX_SKIP_LINES are named, and fewer when the line would pass UNANSWERED_CHARS, so the count
    of the rest ("and 3 more people") is kept."""
    if not unanswered:
        return None
    cat = catalog_of(viewer)
    names = [clip(untrusted.line(name), PERSON_CHARS) for name in unanswered]
    line = ""
    for shown in range(min(len(names), MAX_SKIP_LINES), 0, -1):
        listed = names[:shown]
        if shown < len(names):
            listed.append(cat.plural("escalation.more_unanswered", len(names) - shown))
        line = cat.text(key, names=dates.names_list(listed, locale=cat.words_locale(key)))
        if text_length(line) <= UNANSWERED_CHARS:
            break
    return line


def confirmed_text(confirmed: tuple[str, ...], viewer: Viewer) -> str | None:
    """ "Confirmed so far: Sarah Chen", clipped like the unanswered line."""
    return unanswered_text(confirmed, viewer, key="escalation.confirmed")


def escalation_body(view: StewardEscalationView) -> Runs:
    """Says truthfully why the steward is asked: the people asked did not answer in time, or
    nobody could be asked; the document as a link where there is one."""
    cat = catalog_of(view.viewer)
    document = document_run(view.document, view.viewer)
    if view.unanswered:
        return cat.runs("escalation.body_unanswered", document=document)
    if view.confirmed:
        return cat.runs("escalation.body_partial", document=document)
    return cat.runs("escalation.body", document=document)


@dataclass(frozen=True)
class QuorumText:
    fallback: str
    title: str
    body: Runs
    asked: str | None  # "Asked: Sarah Chen"
    missing: str  # "Even if everyone asked confirms, one more confirmation is still missing."
    next_step: str


def quorum_text(view: StewardQuorumView) -> QuorumText:
    """The unreachable-quorum notice's sentences."""
    cat = catalog_of(view.viewer)
    document = document_run(view.document, view.viewer)
    return QuorumText(
        fallback=cat.text("quorum.fallback",
                          document=quoted_document(view.document, view.viewer)),
        title=cat.text("quorum.title"),
        body=cat.runs("quorum.body", document=document, count=cat.count_word(view.required,
                                                                      for_key="quorum.body")),
        asked=unanswered_text(view.asked, view.viewer, key="quorum.asked"),
        missing=cat.plural("quorum.missing", view.missing),
        next_step=cat.text("quorum.next_step" if view.skipped else "quorum.next_step_unranked"))


def escalation_next_step(view: StewardEscalationView) -> str:
    """What to do next; with a neutral reference the link (when there is one) may need access
    the steward does not have yet."""
    cat = catalog_of(view.viewer)
    if view.document.withheld:
        return cat.text("escalation.next_step_link" if view.document.url
                        else "escalation.next_step_withheld")
    return cat.text("escalation.next_step")


def dead_letter_intro(view: DeadLetterDigestView) -> str:
    """The digest's opening line; it mentions unanswered people only when an item has some."""
    cat = catalog_of(view.viewer)
    if any(item.unanswered for item in view.items):
        return cat.plural("dead_letter.intro_unanswered", len(view.items))
    return cat.plural("dead_letter.intro", len(view.items))


def dead_letter_more(view: DeadLetterDigestView, shown: int) -> str | None:
    """The digest's closing line: the items past the message's room, and whether more may
    follow (a pass that did not reach the end of the core's list); None: nothing to add."""
    cat = catalog_of(view.viewer)
    hidden = len(view.items) - shown
    if view.whole:
        return cat.plural("dead_letter.more", hidden) if hidden else None
    return cat.plural("dead_letter.more_unread", hidden) if hidden else cat.text(
        "dead_letter.unread")


def steward_notice_body(view: StewardNoticeView, *, names: str) -> Runs:
    """ "A high-severity date question about <document> was sent to Sarah Chen. …"; ``names``
    come joined (and clipped) by the renderer."""
    cat = catalog_of(view.viewer)
    severity = severity_text(view.severity, view.viewer)
    document = document_run(view.document, view.viewer)
    if not view.asked:
        # Names can be missing (an erased attribution); the sentence still reads naturally.
        return cat.runs("steward_notice.body_unnamed", severity=severity, document=document)
    return cat.runs("steward_notice.body", severity=severity, document=document, names=names)


def steward_notices_item(view: StewardNoticeView, *, names: str) -> Runs:
    """One notice in a steward's list: "<document> · high, sent to Sarah Chen"; ``names``
    come joined (and clipped) by the renderer."""
    cat = catalog_of(view.viewer)
    severity = severity_text(view.severity, view.viewer)
    document = document_run(view.document, view.viewer)
    if not view.asked:
        return cat.runs("steward_notices.item_unnamed", severity=severity, document=document)
    return cat.runs("steward_notices.item", severity=severity, document=document, names=names)


@dataclass(frozen=True)
class ConflictText:
    fallback: str
    title: str
    body: Runs


def steward_conflict_text(view: StewardConflictView, *, names: str) -> ConflictText:
    """The conflict notice's sentences; ``names`` come joined (and clipped) by the renderer;
    the notification line names the document in plain text."""
    cat = catalog_of(view.viewer)
    plain = quoted_document(view.document, view.viewer)
    document = document_run(view.document, view.viewer)
    if view.bound:
        # A date is bound: saying "no correction has been made" would be false here.
        return ConflictText(
            fallback=cat.text("steward_conflict.bound_fallback", document=plain),
            title=cat.text("steward_conflict.bound_title"),
            body=cat.runs("steward_conflict.bound_body", names=names, document=document))
    return ConflictText(
        fallback=cat.text("steward_conflict.fallback", document=plain),
        title=cat.text("steward_conflict.title"),
        body=cat.runs("steward_conflict.body", names=names, document=document))
