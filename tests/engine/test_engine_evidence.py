"""Evidence before words: whether a returning job asks anyone is decided from the record's
evidence (bound responses, a bound interval, the quorum) as well as its state word, and how many
are asked from the quorum still needed, not the severity word.

Each row of ``TABLE`` is a row of docs/delivery.md's decision table ("Evidence before words"):
a clarification answered through the core as the row says, read by the bot through a proxy that
rewrites what the core answers (a state word, a binding status, a quorum state the bot does not
know; a bound interval left out or added), then its job leased again after the escalation
window. What the bot then does (asks whom, tells the steward, completes the job, repaints the
cards) is checked against the core over real HTTP, on both contracts and both stores.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

import pytest

from adapters.slack.render import render
from bot.channels.recording import SentMessage, Updated
from bot.core.models import AnswerRequest, DeliveryKind, JobState, Role
from bot.core.models import Channel as ContractChannel
from bot.engine.handler import JobOutcome
from cards.views import OutcomeKind, OutcomeView
from tests.engine.conftest import CODEC, Rig
from tests.support.rewriting_proxy import (  # noqa: F401 (the fixtures)
    Body,
    RewritingProxy,
    core_url_fixture,
    proxy_fixture,
    truth_url_fixture,
)

WINDOW = timedelta(hours=48, minutes=2)  # past the escalation window: the job comes back
SPAN = "The renewed term is effective next quarter."


# ---------------------------------------------------------------- what the proxy rewrites

def unknown_state(body: Body) -> None:
    body["state"] = "under_review"


def unknown_statuses(body: Body) -> None:
    """Every binding status the bot knows to confirm or bind becomes a word it does not know."""
    for response in body.get("responses", []):
        if response["bindingStatus"] in ("bound", "binding_candidate", "steward_override"):
            response["bindingStatus"] = "ratified"


def unknown_quorum_state(body: Body) -> None:
    body["quorum"]["state"] = "contested"


def no_bound_interval(body: Body) -> None:
    body.pop("boundInterval", None)
    body.pop("boundFactVersionTx", None)


def first_candidate_bound(body: Body) -> None:
    """The core names the bound interval (the first candidate's), whatever its contract."""
    first = body["candidates"][0]
    body["boundInterval"] = {"validFrom": first.get("validFrom"), "validTo": first.get("validTo")}


def severity(word: str) -> Callable[[Body], None]:
    def rewrite(body: Body) -> None:
        body["severity"] = word
    return rewrite


def all_of(*rewrites: Callable[[Body], None]) -> Callable[[Body], None]:
    def rewrite(body: Body) -> None:
        for one in rewrites:
            one(body)
    return rewrite


# ---------------------------------------------------------------- the decision table

@dataclass(frozen=True)
class Given:
    """An answer recorded at the core between the first pass and the job's return."""

    person: str
    index: int
    rights: Role = Role.EDITOR
    override: bool = False


@dataclass(frozen=True)
class Row:
    name: str
    severity: str
    answers: tuple[Given, ...]
    rewrite: Callable[[Body], None] | None
    asks: int  # question cards the returning job sends
    steward: bool = False  # the steward gets the conflict notice
    painted: OutcomeKind | None = None  # what Sarah's card is repainted with (None: nothing)
    says: str = ""  # a sentence Sarah's repainted card shows
    completed: bool = False  # the job is completed (nobody asked)


SARAH_0 = Given("p-sarah", 0)
AHMED_0, AHMED_1 = Given("p-ahmed", 0), Given("p-ahmed", 1)
OVERRIDE = Given("p-maria", 0, rights=Role.STEWARD, override=True)
SETTLED = "This question has been settled and its answer recorded as evidence."

TABLE = [
    Row("answered with a bound response: completed, the cards show what bound",
        "normal", (SARAH_0,), None, asks=0, painted=OutcomeKind.RECORDED,
        says="Recorded as evidence", completed=True),
    Row("an unknown state word over a bound response: never asked again",
        "normal", (SARAH_0,), unknown_state, asks=0, painted=OutcomeKind.RECORDED,
        says="Recorded as evidence", completed=True),
    Row("an unknown state word and binding status, a bound interval: never asked again",
        "normal", (SARAH_0,), all_of(unknown_state, unknown_statuses, first_candidate_bound),
        asks=0, painted=OutcomeKind.RECORDED, says="Recorded as evidence", completed=True),
    Row("an unknown state word over a steward's override: the steward's decision shows",
        "critical", (SARAH_0, AHMED_1, OVERRIDE), all_of(unknown_state, unknown_quorum_state),
        asks=0, painted=OutcomeKind.STEWARD_OVERRIDE, says="Recorded as a steward decision",
        completed=True),
    Row("answered with no bound response or interval: completed, a neutral settled line",
        "normal", (SARAH_0,), all_of(unknown_statuses, no_bound_interval), asks=0,
        painted=OutcomeKind.RECORDED, says=SETTLED, completed=True),
    Row("a satisfied quorum under an unknown state word: completed",
        "critical", (SARAH_0, AHMED_0),
        all_of(unknown_state, unknown_statuses, no_bound_interval), asks=0,
        painted=OutcomeKind.BINDING, says=SETTLED, completed=True),
    Row("conflicted: the steward is told, the job completed",
        "critical", (SARAH_0, AHMED_1), None, asks=0, steward=True,
        painted=OutcomeKind.CONFLICT, completed=True),
    Row("disagreeing binding-capable answers under unknown words: the steward is told",
        "critical", (SARAH_0, AHMED_1), all_of(unknown_state, unknown_quorum_state), asks=0,
        steward=True, painted=OutcomeKind.CONFLICT, completed=True),
    Row("conflicted by its word alone (statuses and quorum state unknown): the steward is told",
        "critical", (SARAH_0, AHMED_1), all_of(unknown_statuses, unknown_quorum_state),
        asks=0, steward=True, painted=OutcomeKind.CONFLICT, completed=True),
    Row("an unknown state word with no evidence: the next person is asked",
        "normal", (), unknown_state, asks=1),
    Row("an attestation only, under an unknown state word: the next person is asked",
        "normal", (Given("p-sarah", 0, rights=Role.VIEWER),), unknown_state, asks=1),
]


def shown(item: SentMessage | Updated) -> str:
    view = item.message if isinstance(item, SentMessage) else item.view
    return json.dumps(render(view, codec=CODEC), ensure_ascii=False)


async def given(rig: Rig, cid: str, answer: Given) -> None:
    await rig.bot.answer_clarification(clarification_id=cid, request=AnswerRequest(
        answer_index=answer.index, responder=answer.person, rights=answer.rights,
        channel=ContractChannel.CLI, steward_override=answer.override))


@pytest.mark.parametrize("row", TABLE, ids=[row.name for row in TABLE])
async def test_a_returning_job_follows_the_evidence(rig: Rig, proxy: RewritingProxy,
                                                   row: Row) -> None:
    """A returning job asks, tells the steward, completes and repaints as the record's evidence
    says, whatever state word, binding status or quorum state the core names."""
    cid = await rig.create(authority={"named": ["p-sarah", "p-ahmed", "p-priya"]},
                           severity=row.severity)
    await rig.burst()
    [sarah] = rig.channel.to("p-sarah")
    for answer in row.answers:
        await given(rig, cid, answer)
    proxy.clarification = row.rewrite
    before = len(rig.channel.sent)

    await rig.later(WINDOW)

    later = rig.channel.sent[before:]
    questions = [s for s in later if s.key.kind == DeliveryKind.QUESTION.value]
    assert len(questions) == row.asks
    assert all(s.address.person_id != "p-sarah" for s in questions)
    told = [s for s in rig.channel.to("p-maria") if s.key.kind == "steward_conflict"]
    assert bool(told) is row.steward
    job = await rig.bot.get_job(job_id=(await rig.bot.get_clarification(
        clarification_id=cid)).job_id or "")
    assert (job.state is JobState.COMPLETED) is row.completed
    assert (JobOutcome.COMPLETED in rig.engine.worker.outcomes) is row.completed
    repainted = [u for u in rig.channel.updates if u.ref == sarah.ref]
    if row.painted is None:
        assert repainted == []
        return
    view = repainted[-1].view
    assert isinstance(view, OutcomeView) and view.kind is row.painted
    assert row.says in shown(repainted[-1])
    if row.rewrite is not None:
        assert proxy.rewritten > 0  # the bot read the rewritten record


async def test_a_settled_question_shows_no_span_to_the_next_person(
        rig: Rig, proxy: RewritingProxy) -> None:
    """The reported case: answered at the core, its state word unknown to the bot; when its
    job comes back nobody else gets the question card or its span text."""
    cid = await rig.create(authority={"named": ["p-sarah", "p-ahmed"]})
    await rig.burst()
    await given(rig, cid, SARAH_0)
    proxy.clarification = unknown_state
    await rig.later(WINDOW)
    await rig.later(WINDOW)  # and again: the job is gone, nothing more happens
    assert rig.channel.to("p-ahmed") == []
    assert not any(SPAN in shown(s) for s in rig.channel.sent[1:])
    assert rig.engine.worker.outcomes.get(JobOutcome.ASKED) == 1


# ---------------------------------------------------------------- how many are asked


@pytest.mark.parametrize("word", ["severe", "normal"])
async def test_a_quorum_of_two_asks_two_at_once_whatever_the_severity_word(
        rig: Rig, proxy: RewritingProxy, word: str) -> None:
    """A critical question whose severity reads as another word (unknown, or normal) still
    asks as many people at once as its quorum needs, counting only those who can confirm, and
    its card says how many confirmations it needs."""
    proxy.clarification = severity(word)
    cid = await rig.create(authority={"named": ["p-lee", "p-sarah", "p-ahmed"]},
                           severity="critical")
    await rig.burst()
    asked = [s.address.person_id for s in rig.channel.sent if s.key.kind == "question"]
    # Lee (unverified) cannot confirm: asked too, and not counted toward the two
    assert asked == ["p-lee", "p-sarah", "p-ahmed"]
    assert "requires two confirmations" in shown(rig.channel.to("p-sarah")[0])
    c = await rig.bot.get_clarification(clarification_id=cid)
    job = await rig.bot.get_job(job_id=c.job_id or "")
    assert job.attempts == 2


def one_confirmation_needed(body: Body) -> None:
    """The first pass reads a question that needs one confirmation (a core that said so then)."""
    body["severity"] = "normal"
    body["quorumPolicy"]["requiredConfirmations"] = 1
    body["quorum"] = {"state": "not_required"}


async def test_one_confirmation_still_needed_asks_one_more(
        rig: Rig, proxy: RewritingProxy) -> None:
    """With one of two confirmations in, under an unknown state word and severity, the next
    pass asks one more person who can confirm (the quorum's remaining count), not two."""
    proxy.clarification = one_confirmation_needed
    cid = await rig.create(authority={"named": ["p-sarah", "p-ahmed", "p-priya"]},
                           severity="critical")
    await rig.burst()
    assert [s.address.person_id for s in rig.channel.sent] == ["p-sarah"]
    await given(rig, cid, SARAH_0)  # the core's policy needs two: one more
    proxy.clarification = all_of(severity("severe"), unknown_state)
    await rig.later(WINDOW)
    asked = [s.address.person_id for s in rig.channel.sent if s.key.kind == "question"]
    assert asked == ["p-sarah", "p-ahmed"]


async def test_a_known_low_severity_is_never_asked(rig: Rig, proxy: RewritingProxy) -> None:
    """A clarification whose severity the core names ``low`` is completed, nobody asked."""
    proxy.clarification = severity("low")
    cid = await rig.create(authority={"named": ["p-sarah"]})
    await rig.burst()
    assert rig.channel.sent == []
    c = await rig.bot.get_clarification(clarification_id=cid)
    job = await rig.bot.get_job(job_id=c.job_id or "")
    assert job.state is JobState.COMPLETED
