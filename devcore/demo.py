"""The demo: the bot's whole job on embedded defaults, with no Slack, Teams, Redis or core.

It starts the reference core in-process on 127.0.0.1 (bundled ``acme`` scenario, manual clock),
wires the real engine to an in-memory store and a recording channel, and plays a few days: the
worker leases the routing jobs and sends cards (printed as people would read them), people tap
answers that go through the real answer pipeline (identity → PERSON, rights, outbox, core), cards
update, an unanswered question escalates window by window to the steward and the dead-letter
digest, and the corrected fact keeps its history. Returns a summary that the tests check.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from bot.aio import Tasks
from bot.answering.answers import AnswerService, Receipt, Wait
from bot.audit import MemorySink
from bot.channels.recording import RecordingChannel, SentMessage
from bot.chat import Callback, ChatUser
from bot.clock import ManualClock
from bot.core.client import CoreClient, RetryPolicy
from bot.core.models import EvidenceClass, JobState
from bot.process.runtime import EngineParts, build_engine
from bot.settings import ClarifySettings, SlackSettings, SlackWorkspace
from bot.store.memory import MemoryStore
from cards import steward_text, text
from cards.outcome_text import outcome_text
from cards.untrusted import plain
from cards.views import (
    DeadLetterDigestView,
    DigestView,
    OutcomeView,
    QuestionView,
    ReminderView,
    StewardConflictView,
    StewardEscalationView,
    StewardNoticesView,
    StewardNoticeView,
    StewardQuorumView,
)
from devcore.server import build_core, serve

CLARIFY_TOKEN = "dev-clarify-token-acme"
SLACK = SlackSettings(workspaces=(SlackWorkspace(team_id="T0ACME", enterprise_id="E0ACME",
                                                 tenant="acme"),))
SLACK_USERS = {"p-sarah": "U0SARAH", "p-ahmed": "U0AHMED", "p-priya": "U0PRIYA",
               "p-maria": "U0MARIA", "p-tom": "U0TOM", "p-jonas": "U0JONAS"}
WINDOW = timedelta(hours=48, minutes=5)
# the demo store is in memory: a tap is taken, and forwarded, well inside this
DEMO_ACCEPT_SECONDS = 30.0
EVIDENCE_WORDS = {
    EvidenceClass.QUORUM_CONFIRMATION: "confirmed by two editors",
    EvidenceClass.HUMAN_CLARIFICATION: "confirmed by an editor",
    EvidenceClass.STEWARD_OVERRIDE: "decided by the steward",
}
STATE_WORDS = {
    "answered": "answered", "dead_lettered": "nobody left to ask: in the steward's digest",
    "open": "stored as pending, never asked (low severity)", "conflicted": "waits for the steward",
}
NEXT_STEPS = """
Next:
  clarify-bot preview --out preview/   every card, Slack and Teams, in preview/gallery.html
  Teams: the Microsoft 365 Agents Playground talks to `clarify-bot serve` without an Entra
         app (docs/teams.md, "Local testing with the Agents Playground")
  docs/quickstart.md                   from the Slack app manifest to a card in your own DM"""


@dataclass
class DemoSummary:
    outcomes: list[tuple[str, str, str]] = field(default_factory=list)  # (clarification, who, what)
    states: dict[str, str] = field(default_factory=dict)
    dead_letters: list[str] = field(default_factory=list)
    messages: int = 0
    fact_versions: int = 0


async def _no_sleep(_: float) -> None:
    return None


def describe(sent: SentMessage) -> str:
    """A card as the person would read it, on one or a few lines (never logged: printed)."""
    message = sent.message
    if isinstance(message, QuestionView):
        year = text.asked_year(message)
        options = " | ".join(text.candidate_text(c, message.viewer, reference_year=year)
                             for c in text.shown_candidates(message))
        notice = text.quorum_notice(message)
        lines = [f"“{message.question}”", f"[{options} | Something else…]"]
        return "\n      ".join(lines + ([notice] if notice else []))
    if isinstance(message, StewardEscalationView):
        why = [*steward_text.skip_texts(message.skipped, message.viewer)] if message.skipped else []
        if message.unanswered:
            why.insert(0, "asked, no answer: " + ", ".join(message.unanswered))
        return f"redacted escalation about “{message.document.title}”: {'; '.join(why)}"
    if isinstance(message, StewardNoticeView):
        return f"notice: a {message.severity} question went to {', '.join(message.asked)}"
    if isinstance(message, StewardNoticesView):
        return "notices: " + "; ".join(
            f"a {n.severity} question went to {', '.join(n.asked)}" for n in message.notices)
    if isinstance(message, ReminderView):
        return text.reminder_text(message)
    if isinstance(message, DeadLetterDigestView):
        return "dead-letter digest: " + ", ".join(i.document.title for i in message.items)
    if isinstance(message, StewardConflictView):
        words = steward_text.steward_conflict_text(message, names=", ".join(message.responders))
        return f"{words.title}. {plain(words.body)}"
    if isinstance(message, StewardQuorumView):
        return plain(steward_text.quorum_text(message).body)
    if isinstance(message, DigestView):
        return f"a digest of {len(message.questions)} questions"
    return "a message"  # never a class name: a new card kind still reads as words


def _day(when: datetime | None) -> str:
    return f"{when.day} {when:%B %Y}" if when is not None else "open"


async def answer_now(answers: AnswerService, cb: Callback) -> Receipt:
    """The demo's tap: taken, forwarded at once, and every follow-up shown before it returns
    (nobody waits in the demo, and its transcript reads in order)."""
    receipt = await answers.take(cb, respond_within=DEMO_ACCEPT_SECONDS,
                                 wait=Wait(tasks=Tasks("demo", counted=False),
                                           seconds=DEMO_ACCEPT_SECONDS))
    await answers.followups.drain()
    return receipt


def own_view(channel: RecordingChannel, ref: str, *, since: tuple[int, int]
             ) -> OutcomeView | None:
    """What the clicked card shows after a tap: its last update since, else the note beside it."""
    updated = [u.view for u in channel.updates[since[0]:] if u.ref == ref]
    noted = [n.view for n in channel.notes[since[1]:] if n.near == ref]
    shown = updated or noted
    view = shown[-1] if shown else None
    return view if isinstance(view, OutcomeView) else None


def outcome_line(view: OutcomeView | None) -> str:
    return outcome_text(view).headline if view is not None else "(nothing shown)"


async def run_demo(echo: Callable[[str], None] = print) -> DemoSummary:
    clock = ManualClock(datetime(2026, 7, 6, 9, 0, tzinfo=UTC))
    core = build_core("acme", clock=clock)
    summary = DemoSummary()
    channel = RecordingChannel()
    store = MemoryStore(clock=clock)
    async with serve(core) as url, CoreClient(
        base_url=url, token=CLARIFY_TOKEN, retry=RetryPolicy(max_attempts=2, base=0.05)
    ) as client:
        engine = build_engine(EngineParts(
            core=client, store=store, channels={"slack": channel},
            clarify=ClarifySettings(enabled=True, channels=("slack",), hours={"enabled": False}),
            clock=clock,
            audit_sink=MemorySink(), slack=SLACK, sleep=_no_sleep))
        answers = engine.answers
        names = {p.person_id: p.display_name for p in core.directory.people.values()}
        shown = 0

        def day(label: str) -> None:
            now = clock.now()
            echo(f"\n{now:%A} {now.day} {now:%B, %H:%M} — {label}")

        def flush(*, quiet: bool = False) -> None:
            nonlocal shown
            for sent in channel.sent[shown:]:
                who = names.get(sent.address.person_id, sent.address.person_id)
                echo(f"  → DM to {who}: {describe(sent)}")
            if len(channel.sent) == shown and not quiet:
                echo("  (nothing new was sent)")
            shown = len(channel.sent)

        async def work(label: str) -> None:
            await engine.worker.run_burst()
            day(label)
            flush()

        async def tap(person_id: str, clarification_id: str, index: int) -> None:
            card = next(s for s in reversed(channel.sent)
                        if s.address.person_id == person_id
                        and s.key.clarification_id == clarification_id)
            user = ChatUser(platform="slack", user_id=SLACK_USERS[person_id], team_id="T0ACME",
                            enterprise_id="E0ACME")
            seen = len(channel.updates), len(channel.notes)
            receipt = await answer_now(answers, Callback.from_user(
                user, tenant_id="acme", clarification_id=clarification_id,
                card_ref=card.key.token(), message_ref=card.ref, answer_index=index,
                received_at=clock.now()))
            summary.outcomes.append((clarification_id, person_id, receipt.verdict.value))
            shown_outcome = outcome_line(own_view(channel, card.ref, since=seen))
            echo(f"  {names[person_id]} taps option {index + 1}: {shown_outcome}")
            flush(quiet=True)

        echo("Acme's documents hold four dates the ingestion could not pin; the bot asks the "
             "people best placed to answer, in Slack (here: printed).")
        echo(f"(a reference core on {url} plays Telha; its clock is moved, nobody waits)")
        await work("the bot picks up the questions (a low-severity one is never asked)")

        clock.advance(timedelta(hours=2))
        day("the critical contract date needs two confirmations")
        await tap("p-sarah", "clr-00001", 1)
        await tap("p-ahmed", "clr-00001", 1)
        cards = {s.ref for s in channel.sent if s.key.clarification_id == "clr-00001"}
        updates = [u for u in channel.updates if u.ref in cards]
        for update in updates[-1:]:
            echo(f"  Sarah's card now reads: {outcome_line(update.view)}")  # type: ignore[arg-type]
        clock.advance(timedelta(hours=1))
        day("the lease renewal (normal severity): one editor's answer binds")
        await tap("p-ahmed", "clr-00002", 0)
        clock.advance(timedelta(days=1))
        day("Sarah taps a different date on her old card")
        await tap("p-sarah", "clr-00001", 0)

        clock.advance(timedelta(hours=12))  # past 75 % of Tom's window on the invoice
        await work("the invoice question is three quarters through its window: one reminder")
        for _ in range(3):
            clock.advance(WINDOW)
            await work("nobody answered the invoice question inside its window")

        history = await client.get_fact_history(logical_id="fact-northwind-msa-termination")
        summary.fact_versions = len(history.versions)
        before, after = history.versions[0], history.versions[-1]
        how = EVIDENCE_WORDS.get(after.provenance.evidence_class, "confirmed")
        echo(f"\nIn the end: the Northwind termination date, guessed as "
             f"{_day(before.valid_from)} (confidence {before.confidence:.2f}), is now "
             f"{_day(after.valid_from)}, {how}; the guess is kept as history and still "
             "answers as-of queries.\nWhere every question stands:")
        dead = await client.list_jobs(state=JobState.DEAD_LETTERED)
        summary.dead_letters = [j.payload.clarification_id for j in dead.items if j.payload]
        titles: dict[str, str] = {}
        async for item in client.iter_clarifications():
            summary.states[item.id] = item.state.value
            titles[item.id] = item.document_title
        summary.messages = len(channel.sent)
        for cid, state in sorted(summary.states.items()):
            echo(f"  {titles[cid]}: {STATE_WORDS.get(state, state)}")
        echo(NEXT_STEPS)
    return summary
