"""Every user-visible string of the cards, in English, keyed: the source of the gettext catalogs.

English is written here and nowhere else: each call names a message by its key (the gettext
context, ``msgctxt``) and gives its English text (the ``msgid``; for a plural, the singular and
the plural). ``scripts/messages.py`` extracts these calls with Babel into
``cards/locales/clarify.pot``, merges them into ``cards/locales/<lang>/LC_MESSAGES/clarify.po``
and compiles the ``.mo`` files the cards read (``cards/catalog.py``).

``spec`` and ``spec_plural`` mark the texts the spec prescribes word for word (its card states:
the button label pattern, "Something else…", the quorum notice and the outcome sentences): the
cards show them in English in every locale, with the person's date format (docs/cards.md).
Placeholders are ``{name}`` fields, filled by ``cards/text.py``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Message:
    """One message: its key, its English text and, for a plural, the English plural."""

    key: str
    english: str
    plural: str | None = None
    spec: bool = False


MESSAGES: dict[str, Message] = {}


def _add(entry: Message) -> None:
    if entry.key in MESSAGES:
        raise ValueError(f"message {entry.key} declared twice")
    MESSAGES[entry.key] = entry


def message(key: str, english: str) -> None:
    _add(Message(key, english))


def plural(key: str, one: str, other: str) -> None:
    _add(Message(key, one, other))


def spec(key: str, english: str) -> None:
    _add(Message(key, english, spec=True))


def spec_plural(key: str, one: str, other: str) -> None:
    _add(Message(key, one, other, spec=True))


# The calls below are what Babel extracts (keywords in scripts/messages.py); a comment starting
# "TRANSLATORS:" right above a call reaches the translators as the message's note.

spec("candidate.label", "{date} ({origin})")
message("candidate.undated", "No date")
message("candidate.until", "until {date}")
message("candidate.from", "from {date}")
message("candidate.range", "{start} – {end}")

message("number.1", "one")
message("number.2", "two")
message("number.3", "three")
message("number.4", "four")
message("number.5", "five")
message("number.6", "six")
message("number.7", "seven")
message("number.8", "eight")
message("number.9", "nine")
message("number.10", "ten")

message("question.fallback", "A quick question about a date in “{document}”.")
spec("question.something_else", "Something else…")
message("question.source", "Source: {link}")
message("question.open_document", "Open document")
message("question.decline", "Not the right person")
message("question.why.authored_by", "You were asked because you wrote or signed this document.")
message("question.why.named", "You were asked because you are named in this document.")
message("question.why.owned_by", "You were asked because you own this document.")
message("question.why.unknown", "You were asked because you are connected to this document.")
message("question.excerpt", "From the document: “{excerpt}”")
spec("question.notice.critical",
     "This clarification affects a high-stakes date and requires {count} confirmations.")
message("question.notice.quorum", "This clarification requires {count} confirmations.")
message("question.moves_on", "Moves on to the next person on {day} at {time}.")
message("question.moves_on.steward", "Goes to the workspace steward on {day} at {time}.")
message("question.reminder", "Reminder: your answer is still needed.")
message("reminder.text",
        "Reminder: a question about a date in “{document}” is still waiting for your answer.")
message("reminder.text.withheld",
        "Reminder: a question about a date is still waiting for your answer.")

message("custom.title", "Something else")
message("custom.intro", "Which dates should this document have? Pick them from the calendar.")
# TRANSLATORS: {dates} lists the document's candidates as on the buttons ("12 June (signature)")
message("custom.found", "Dates the document gives: {dates}")
message("custom.start", "Start date")
message("custom.end", "End date (optional)")
message("custom.note", "Note (optional)")
message("custom.note_placeholder", "Where did you find this date?")
message("custom.submit", "Send answer")
message("custom.cancel", "Cancel")
message("custom.error.start_required", "Choose a start date.")
message("custom.error.end_before_start", "The end date must be on or after the start date.")
message("custom.error.unparseable", "These dates could not be read. Pick them from the calendar.")
message("custom.error.heading", "Your answer was not recorded yet: please fix the dates below.")

message("outcome.fallback", "Update on a question about “{document}”.")
message("outcome.your_answer", "Your answer: {answer}")
spec("outcome.recorded", "✓ Recorded as evidence: {answer}, confirmed by {names}, {date}.")
spec("outcome.first_confirmation", "First confirmation recorded: {answer} ({names}).")
message("outcome.confirmations_so_far", "Confirmations recorded: {answer} ({names}).")
spec_plural("outcome.remaining",
            "One more confirmation is required before the correction becomes binding.",
            "{count} more confirmations are required before the correction becomes binding.")
spec("outcome.binding", "✓ Recorded as binding evidence: {answer}, confirmed by {names}, {date}.")
spec("outcome.attestation",
     "Your answer is recorded as an attestation. A steward or editor must confirm it before "
     "the fact is corrected.")
spec("outcome.conflict",
     "A conflicting answer has been recorded. This clarification now requires steward review.")
message("outcome.conflicting_attestation",
        "Your answer differs from the date already bound. It is recorded as a conflicting "
        "attestation and the steward has been told; the bound date stays as it is.")
message("outcome.steward_override",
        "✓ Recorded as a steward decision: {answer}, by {names}, {date}. The earlier answers "
        "stay on record.")
spec("outcome.moved_on",
     "This clarification has moved on: it was settled or replaced before your answer arrived, "
     "so there is nothing more to do.")
message("outcome.moved_on.settled", "It was settled as {answer} on {date}.")
message("outcome.settled", "✓ This question has been settled and its answer recorded as "
        "evidence. There is nothing more to do.")
message("outcome.identity_unverified",
        "Your answer was not recorded: this chat account is not linked to a verified company "
        "identity. Ask your administrator to link it, then answer again.")
message("outcome.identity_shared",
        "Your answer was not recorded: this chat account is linked to more than one person in "
        "the company directory. Ask your administrator to fix the link, then answer again.")
message("outcome.identity_unknown",
        "Your answer was not recorded: this chat account is not linked to anyone in the "
        "company directory. Ask your administrator to link it, then answer again.")
message("outcome.recording",
        "Your answer ({answer}) is being recorded. The records service cannot be reached right "
        "now; this message will update once it is saved.")
message("outcome.recording.plain",
        "Your answer is being recorded. The records service cannot be reached right now; this "
        "message will update once it is saved.")
message("outcome.pending",
        "Your answer ({answer}) is being recorded; this card shows its outcome once it is saved.")
message("outcome.pending.plain",
        "Your answer is being recorded; this card shows its outcome once it is saved.")
message("outcome.passed_on",
        "Thanks, this question has been passed on to someone else. You do not need to do "
        "anything more.")
message("outcome.passed_on_later",
        "Thanks, this question will be passed on to someone else when your turn with it ends. "
        "You do not need to do anything more.")

message("decline.identity_shared",
        "This question could not be passed on: this chat account is linked to more than one "
        "person in the company directory. Ask your administrator to fix the link.")
message("decline.identity_unknown",
        "This question could not be passed on: this chat account is not linked to anyone in "
        "the company directory. Ask your administrator to link it.")
message("decline.identity_unverified",
        "This question could not be passed on: this chat account is not linked to a verified "
        "company identity. Ask your administrator to link it.")
message("decline.not_available",
        "This question was not sent to you, so it cannot be passed on from here.")
message("decline.unavailable",
        "The question could not be passed on right now. Please try again in a moment.")

message("answer.received",
        "Your answer was received; this card shows its outcome once it is saved.")
message("answer.not_available",
        "Your answer was not recorded: this question is not available to you here.")
message("answer.form_unavailable",
        "The form could not be opened right now. Please try again in a moment.")

message("digest.no_more", "There are no more open questions in this digest.")

message("outcome.question_was", "Question: {question}")

spec("banner.first_confirmation", "First confirmation recorded: {answer} ({names}). Do you agree?")
message("banner.answer_recorded", "An answer has been recorded: {answer} ({names}). Do you agree?")

message("reason.NO_READ_PERMISSION",
        "cannot read this document, so the question was not sent to them.")
message("reason.NO_DELIVERY_ALIAS",
        "has no linked Slack or Teams account, so there was no way to reach them.")
message("reason.ALIAS_AMBIGUOUS",
        "has an ambiguous chat account (more than one, or one shared with another person), so "
        "it was not clear whom to ask.")
message("reason.DELIVERY_FAILED",
        "could not be reached: the chat service did not accept the message.")
message("reason.DAILY_CAP_EXCEEDED", "had already received today's maximum number of questions.")
message("reason.DIGESTED", "will see this question in their next digest.")
message("reason.TENANT_SCOPE_MISMATCH",
        "belongs to a different organisation, so they may not be asked.")
message("reason.RESPONDER_NOT_AUTHORISED", "does not have the rights to answer for this workspace.")
message("reason.CANDIDATE_DECLINED", "said they are not the right person to answer.")
message("reason.PERSON_AWAY", "was away, so the next person was asked.")
# TRANSLATORS: {day} is the day they are back ("14 December 2026")
message("reason.PERSON_AWAY_until", "was away until {day}, so the next person was asked.")

message("escalation.fallback", "A date in {document} needs a steward.")
message("escalation.title", "A date needs a steward")
message("escalation.body",
        "A date in {document} is ambiguous, and none of the people best placed to answer could "
        "be asked. The question is not shown here because it quotes the document.")
message("escalation.body_partial",
        "A date in {document} is ambiguous and still needs more confirmations, and nobody else "
        "could be asked. The question is not shown here because it quotes the document.")
message("escalation.confirmed", "Confirmed so far: {names}")
message("escalation.body_unanswered",
        "A date in {document} is ambiguous, and the people asked have not answered in time. "
        "The question is not shown here because it quotes the document.")
message("escalation.unanswered", "Asked, no answer: {names}")
plural("escalation.more_unanswered",
       "one more person",
       "{count} more people")
message("escalation.skipped_heading", "Why each person was skipped:")
message("escalation.skip_line", "{person} {reason}")
plural("escalation.more_skipped",
       "…and one more person.",
       "…and {count} more people.")
message("escalation.nobody", "No one was ranked for this document.")
message("escalation.next_step",
        "Open the document to review it, then settle the date with the steward review tools.")
message("escalation.next_step_withheld",
        "Settle the date with the steward review tools, using the clarification reference above.")
message("escalation.next_step_link",
        "Open the document (ask for access if you cannot read it yet), then settle the date "
        "with the steward review tools, using the clarification reference above.")

message("document.quoted", "“{title}”")
message("document.untitled", "the source document")
message("document.withheld", "a document in the {workspace} workspace (clarification {reference})")

message("quorum.fallback", "A critical date in {document} cannot get enough confirmations.")
message("quorum.title", "Not enough people can confirm a date")
message("quorum.body",
        "A critical date in {document} needs {count} confirmations, and fewer people than that "
        "could be asked. The question is not shown here because it quotes the document.")
message("quorum.asked", "Asked: {names}")
plural("quorum.missing",
       "Even if everyone asked confirms, one more confirmation is still missing.",
       "Even if everyone asked confirms, {count} more confirmations are still missing.")
message("quorum.next_step",
        "Confirm or settle the date yourself with the steward review tools, or fix the reasons "
        "below so more people can be asked.")
message("quorum.next_step_unranked",
        "Confirm or settle the date yourself with the steward review tools: nobody else is "
        "ranked for this document.")

message("steward_conflict.fallback", "Conflicting answers about {document} need your review.")
message("steward_conflict.title", "Conflicting answers need review")
message("steward_conflict.body",
        "{names} answered the same clarification in {document} differently. No correction has "
        "been made; it waits for your review.")
message("steward_conflict.reference", "Clarification {id}")
message("steward_conflict.bound_fallback",
        "A late answer about {document} differs from the bound date.")
message("steward_conflict.bound_title", "A late answer differs from the bound date")
message("steward_conflict.bound_body",
        "A date is already bound for this clarification in {document}, and {names} answered "
        "differently. The answer is recorded as a conflicting attestation; the bound date "
        "stays as it is until a steward decides.")

message("steward_notice.fallback",
        "A {severity}-severity question about {document} was sent directly.")
message("steward_notice.title", "A question went out directly")
message("steward_notice.body",
        "A {severity}-severity date question about {document} was sent to {names}. You will "
        "hear again if nobody answers.")
message("steward_notice.body_unnamed",
        "A {severity}-severity date question about {document} was sent to the people best "
        "placed to answer it. You will hear again if nobody answers.")
message("steward_notice.redacted",
        "The question is not shown here because it quotes the document. There is nothing to do "
        "yet.")
message("steward_notice.reference", "Clarification {id}")

plural("steward_notices.fallback",
       "One question went out directly.",
       "{count} questions went out directly.")
message("steward_notices.title", "Questions that went out directly")
plural("steward_notices.intro",
       "One high-severity date question went out directly since my last message. You will hear "
       "again about any that nobody answers.",
       "{count} high-severity date questions went out directly since my last message. You will "
       "hear again about any that nobody answers.")
message("steward_notices.item", "{document} · {severity}, sent to {names}")
message("steward_notices.item_unnamed",
        "{document} · {severity}, sent to the people best placed to answer it")
plural("steward_notices.more",
       "…and one more. The steward queue lists it.",
       "…and {count} more. The steward queue lists them all.")

plural("dead_letter.fallback",
       "One clarification ran out of people to ask.",
       "{count} clarifications ran out of people to ask.")
message("dead_letter.title", "Clarifications nobody could answer")
plural("dead_letter.intro",
       "One clarification ran out of people to ask. Here is why each person was skipped.",
       "{count} clarifications ran out of people to ask. Here is why each person was skipped.")
plural("dead_letter.intro_unanswered",
       "One clarification ran out of people to ask. Below: who was asked and did not answer, "
       "and why anyone else was skipped.",
       "{count} clarifications ran out of people to ask. Below: who was asked and did not "
       "answer, and why anyone else was skipped.")
message("dead_letter.item", "{document} · {severity}")
plural("dead_letter.more",
       "…and one more. The steward queue lists it.",
       "…and {count} more. The steward queue lists them all.")
message("dead_letter.unread",
        "More may follow: the list of clarifications nobody could answer is longer than one "
        "pass reads, so the next messages list the rest. The steward queue lists them all.")
plural("dead_letter.more_unread",
       "…and one more, and more may follow: the list is longer than one pass reads, so the "
       "next messages list the rest. The steward queue lists them all.",
       "…and {count} more, and more may follow: the list is longer than one pass reads, so "
       "the next messages list the rest. The steward queue lists them all.")

message("severity.low", "low")
message("severity.normal", "normal")
message("severity.high", "high")
message("severity.critical", "critical")

plural("digest.fallback",
       "One question about a date in your documents.",
       "{count} questions about dates in your documents.")
message("digest.title", "Questions about dates in your documents")
plural("digest.intro",
       "One question needs a quick answer; one tap is enough.",
       "{count} questions need a quick answer; one tap each is enough.")
plural("digest.more",
       "One more question is waiting.",
       "{count} more questions are waiting.")
message("digest.show_more", "Show the next questions")

message("override.intro",
        "As the steward you may decide: pick the answer that stands. You will be asked for a note.")
message("override.button", "Decide: {answer}")
message("override.title", "Steward override")
message("override.confirm",
        "Record this answer as the steward's decision for clarification {id}: {answer}. It "
        "replaces the disagreeing answers.")
message("override.note", "Why this answer (required)")
message("override.note_required", "A note is required for a steward override.")
message("override.submit", "Record decision")
message("override.refused",
        "Only the workspace steward can record an override here; nothing was recorded.")

message("queue.title", "Needs a steward")
plural("queue.intro",
       "One clarification in the workspaces you steward needs attention.",
       "{count} clarifications in the workspaces you steward need attention.")
message("queue.empty", "Nothing needs a steward in your workspaces right now.")
plural("queue.intro_unread",
       "At least one clarification in the workspaces you steward needs attention.",
       "At least {count} clarifications in the workspaces you steward need attention.")
message("queue.empty_unread",
        "Nothing read so far needs a steward in your workspaces, but the list is longer than "
        "one view reads.")
message("queue.not_steward",
        "Nothing for you here: this lists what needs a workspace steward, and you steward no "
        "workspace.")
message("queue.unavailable", "The queue cannot be shown just now. Please try again in a minute.")
message("queue.item", "{document} · {severity} · {state}")
message("queue.reference", "Reference: {reference}")
plural("queue.more",
       "…and one more. `clarify-bot clarify queue` lists it.",
       "…and {count} more. `clarify-bot clarify queue` lists them all.")
message("queue.unread",
        "…and maybe more: the list is longer than one view reads. `clarify-bot clarify queue` "
        "lists them all.")
plural("queue.more_unread",
       "…and one more, and maybe others: the list is longer than one view reads. "
       "`clarify-bot clarify queue` lists them all.",
       "…and {count} more, and maybe others: the list is longer than one view reads. "
       "`clarify-bot clarify queue` lists them all.")
message("queue.help",
        "Send \"queue\" to see what needs a steward in the workspaces you steward. Questions "
        "for you arrive here as cards.")

message("state.open", "open")
message("state.attested", "attested")
message("state.partially_confirmed", "partly confirmed")
message("state.answered", "answered")
message("state.conflicted", "conflicting answers")
message("state.expired", "expired")
message("state.dead_lettered", "nobody left to ask")

