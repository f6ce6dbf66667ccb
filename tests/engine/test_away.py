"""Never waiting on someone who is away (docs/delivery.md, "Away"), on the reference core.

The engine as production wires it, a recording channel that tells who is away (as Slack's
status or Do Not Disturb would, ``bot.channel.Absences``), on the injected clock: the tests'
start is Monday 6 July 2026, 09:00 UTC (10:00 for Sarah, in London), and the escalation window
is the default 48 hours. Each case runs against the full contract and against the baseline,
where the skip reaches the core with the spec's DAILY_CAP_EXCEEDED in place of PERSON_AWAY.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from bot.channel import Address, Away
from bot.channels.recording import RecordingChannel
from bot.core.models import AnswerRequest, ReasonCode, Role
from bot.core.models import Channel as ContractChannel
from bot.engine import away as away_module
from bot.engine.handler import JobOutcome
from bot.metrics import REGISTRY
from cards.views import QuestionView, ReminderView, StewardEscalationView
from tests.engine.conftest import Rig, clarify_settings, with_hours

MONDAY = datetime(2026, 7, 6, 9, 0, tzinfo=UTC)
STEP = timedelta(minutes=20)


def asked(rig: Rig) -> list[str]:
    """Whom a question card went to, in order."""
    return [s.address.person_id for s in rig.channel.sent if isinstance(s.message, QuestionView)]


def away_count(action: str, source: str = "slack_status") -> float:
    return REGISTRY.value("clarify_away_total", action=action, source=source)


def code_at_core(rig: Rig) -> ReasonCode:
    """What the core's trail holds for an away skip: PERSON_AWAY where the core offers the
    extension, the spec's DAILY_CAP_EXCEEDED in its place on the baseline."""
    return ReasonCode.PERSON_AWAY if rig.contract == "full" else ReasonCode.DAILY_CAP_EXCEEDED


async def test_away_beyond_the_window_is_passed_over_at_once_and_the_next_asked(
        rig: Rig) -> None:
    """Sarah's status says away for two weeks: in the same pass she is skipped with
    PERSON_AWAY (its words true on every core) and Ahmed is asked; no turn's window is spent."""
    rig.channel.away_for["p-sarah"] = Away(MONDAY + timedelta(days=14), "slack_status")
    passed = away_count("passed_over")
    cid = await rig.create(authority={"authored_by": ["p-sarah", "p-ahmed"]})
    await rig.burst()
    assert asked(rig) == ["p-ahmed"]
    [skip] = rig.events("skipped", cid)
    assert (skip.person_id, skip.reason_code) == ("p-sarah", ReasonCode.PERSON_AWAY)
    assert skip.message == ("Candidate was away until 20 July 2026 (Slack status; back after "
                            "the question would move on).")
    assert away_count("passed_over") == passed + 1
    c = await rig.bot.get_clarification(clarification_id=cid)
    [at_core] = [ev for ev in c.events if ev.type == "skipped"]
    assert (at_core.person_id, at_core.reason_code) == ("p-sarah", code_at_core(rig))
    assert "was away until 20 July 2026" in at_core.message
    [card] = [s for s in rig.channel.sent if isinstance(s.message, QuestionView)]
    assert card.key.attempt == 1  # Ahmed's own turn, at once


async def test_away_without_a_return_date_is_passed_over(rig: Rig) -> None:
    rig.channel.away_for["p-sarah"] = Away(None, "slack_dnd")
    cid = await rig.create(authority={"authored_by": ["p-sarah", "p-ahmed"]})
    await rig.burst()
    assert asked(rig) == ["p-ahmed"]
    [skip] = rig.events("skipped", cid)
    assert skip.message == ("Candidate was away with no return date (Slack Do Not Disturb; no "
                            "return date).")


async def test_an_away_that_ended_is_no_longer_away(rig: Rig) -> None:
    rig.channel.away_for["p-sarah"] = Away(MONDAY - timedelta(minutes=1), "slack_status")
    await rig.create(authority={"authored_by": ["p-sarah", "p-ahmed"]})
    await rig.burst()
    assert asked(rig) == ["p-sarah"]


@pytest.mark.full_contract  # people's zones: the baseline core names none
async def test_back_within_the_window_is_held_till_their_first_working_hour_back(
        make_rig: Callable[..., Rig]) -> None:
    """Sarah is away until Monday 21:00 in London (20:00 UTC): her question is held, nothing
    sent to anyone, and asked at her first working hour back, Tuesday 08:00 London (07:00 UTC);
    the window starts when the card goes out. Ahmed is never asked."""
    rig = make_rig(clarify=with_hours())
    rig.channel.away_for["p-sarah"] = Away(datetime(2026, 7, 6, 20, 0, tzinfo=UTC),
                                           "slack_status")
    held = away_count("held")
    cid = await rig.create(authority={"authored_by": ["p-sarah", "p-ahmed"]})
    await rig.burst()
    assert rig.engine.worker.outcomes.get(JobOutcome.HELD) == 1
    assert asked(rig) == [] and rig.events("skipped", cid) == []
    assert away_count("held") == held + 1
    back = datetime(2026, 7, 7, 7, 0, tzinfo=UTC)
    while not asked(rig):
        assert rig.clock.now() <= back, "not asked at her first working hour back"
        await rig.later(STEP)
    assert rig.clock.now() == back and asked(rig) == ["p-sarah"]
    [card] = rig.channel.sent
    assert isinstance(card.message, QuestionView) and card.key.attempt == 0
    assert card.message.moves_on_at is not None
    assert card.message.moves_on_at >= back + timedelta(hours=48)


async def test_a_critical_question_never_waits_for_anyone_away(rig: Rig) -> None:
    """Back in an hour: for a critical question Sarah is passed over all the same, and the two
    people its quorum needs are asked in the same pass."""
    rig.channel.away_for["p-sarah"] = Away(MONDAY + timedelta(hours=1), "slack_dnd")
    cid = await rig.create(authority={"authored_by": ["p-sarah", "p-ahmed", "p-priya"]},
                           severity="critical")
    await rig.burst()
    assert sorted(asked(rig)) == ["p-ahmed", "p-priya"]
    [skip] = rig.events("skipped", cid)
    assert skip.reason_code is ReasonCode.PERSON_AWAY
    assert "a critical question never waits" in skip.message


async def test_a_failed_lookup_holds_nothing(rig: Rig) -> None:
    """Slack cannot tell (a refusal, a scope the bot lacks): Sarah counts as not away, her card
    goes at once, and she is not asked again for a minute."""
    rig.channel.away_unknown.add("p-sarah")
    unknown = REGISTRY.value("clarify_away_lookups_total", outcome="unknown")
    await rig.create(authority={"authored_by": ["p-sarah", "p-ahmed"]})
    await rig.create(authority={"authored_by": ["p-sarah", "p-ahmed"]})
    await rig.burst()
    assert asked(rig) == ["p-sarah", "p-sarah"]
    assert REGISTRY.value("clarify_away_lookups_total", outcome="unknown") == unknown + 1
    assert rig.channel.away_asked.count("p-sarah") == 1


async def test_what_a_lookup_said_is_kept_on_the_engines_clock(rig: Rig) -> None:
    """Sarah was not away at her first question and sets her status since: within the
    process's keeping (``PROCESS_SECONDS`` of the engine's clock) her platform is not asked
    again; once the clock has moved past it, the next question sees her away."""
    authority = {"authored_by": ["p-sarah", "p-ahmed"]}
    await rig.create(authority=authority)
    await rig.burst()
    rig.channel.away_for["p-sarah"] = Away(MONDAY + timedelta(days=14), "slack_status")
    rig.clock.advance(timedelta(seconds=away_module.PROCESS_SECONDS - 60))
    await rig.create(authority=authority)
    await rig.burst()
    assert asked(rig) == ["p-sarah", "p-sarah"]
    assert rig.channel.away_asked.count("p-sarah") == 1
    rig.clock.advance(timedelta(seconds=120))
    await rig.create(authority=authority)
    await rig.burst()
    assert asked(rig) == ["p-sarah", "p-sarah", "p-ahmed"]
    assert rig.channel.away_asked.count("p-sarah") == 2


@pytest.mark.full_contract
async def test_a_slow_lookup_holds_nothing(make_rig: Callable[..., Rig],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A platform that does not answer within the patience (none here: no time passes) is not
    waited for: the card goes, counted as ``later``."""

    class Silent(RecordingChannel):
        async def away(self, address: Address) -> Away | None:
            await asyncio.Event().wait()  # never answers
            return None

    monkeypatch.setattr(away_module, "PATIENCE_SECONDS", 0)
    rig = make_rig(channel=Silent())
    later = REGISTRY.value("clarify_away_lookups_total", outcome="later")
    await rig.create(authority={"authored_by": ["p-sarah", "p-ahmed"]})
    await rig.burst()
    assert asked(rig) == ["p-sarah"]
    assert REGISTRY.value("clarify_away_lookups_total", outcome="later") == later + 1


async def test_the_rule_off_asks_no_platform(make_rig: Callable[..., Rig]) -> None:
    rig = make_rig(clarify=clarify_settings(away={"enabled": False}))
    rig.channel.away_for["p-sarah"] = Away(None, "slack_status")
    await rig.create(authority={"authored_by": ["p-sarah", "p-ahmed"]})
    await rig.burst()
    assert asked(rig) == ["p-sarah"] and rig.channel.away_asked == []
    assert rig.engine.away is None


async def test_the_steward_reads_who_was_away_and_until_when(rig: Rig) -> None:
    """Nobody left to ask: the escalation names Sarah as away, with her return day in the
    steward's zone (Madrid), on either contract (the bot's record of the skip, whatever code
    the core's trail holds)."""
    rig.channel.away_for["p-sarah"] = Away(datetime(2026, 7, 20, 7, 0, tzinfo=UTC),
                                           "slack_status")
    await rig.create(authority={"authored_by": ["p-sarah"]})
    await rig.burst()
    [escalation] = [s for s in rig.channel.to("p-maria")
                    if isinstance(s.message, StewardEscalationView)]
    assert isinstance(escalation.message, StewardEscalationView)
    [entry] = escalation.message.skipped
    assert (entry.reason, entry.until) == (ReasonCode.PERSON_AWAY,
                                           datetime(2026, 7, 20, 7, 0, tzinfo=UTC))
    shown = rig.rendered(escalation)
    assert "Sarah Chen was away until 20 July 2026, so the next person was asked." in shown
    assert "daily" not in shown


@pytest.mark.full_contract  # the reminder's timing is Sarah's, in London
async def test_no_reminder_while_away_until_after_it_moves_on(
        make_rig: Callable[..., Rig]) -> None:
    """Asked while present; away for two weeks from Tuesday: her reminder is skipped, counted,
    and nothing is sent or repainted."""
    rig = make_rig(clarify=with_hours())
    await rig.create(authority={"authored_by": ["p-sarah", "p-ahmed"]}, severity="high")
    await rig.burst()
    assert asked(rig) == ["p-sarah"]
    rig.channel.away_for["p-sarah"] = Away(MONDAY + timedelta(days=15), "slack_status")
    assert rig.engine.away is not None
    rig.engine.away.forget()  # the lookup kept from the send is ten minutes old by then
    skipped = REGISTRY.value("clarify_reminders_total", outcome="away")
    rig.clock.set(datetime(2026, 7, 7, 14, 5, tzinfo=UTC))  # past 75 % of her working time
    await rig.burst()
    assert [s for s in rig.channel.sent if isinstance(s.message, ReminderView)] == []
    assert rig.channel.updates == []
    assert REGISTRY.value("clarify_reminders_total", outcome="away") == skipped + 1
    [event] = rig.events("reminder_skipped")
    assert event.extra == {"outcome": "away until it moves on"}


@pytest.mark.full_contract
async def test_a_reminder_waits_for_a_return_before_it_moves_on(
        make_rig: Callable[..., Rig]) -> None:
    """Away until Tuesday 16:00 London: the reminder due at about 15:00 waits, counted, and
    goes at 16:00, when she is back and still in her hours."""
    rig = make_rig(clarify=with_hours())
    await rig.create(authority={"authored_by": ["p-sarah", "p-ahmed"]}, severity="high")
    await rig.burst()
    rig.channel.away_for["p-sarah"] = Away(datetime(2026, 7, 7, 15, 0, tzinfo=UTC), "slack_dnd")
    deferred = away_count("reminder_deferred", "slack_dnd")
    assert rig.engine.away is not None
    rig.engine.away.forget()
    rig.clock.set(datetime(2026, 7, 7, 14, 5, tzinfo=UTC))  # due: she is away
    await rig.burst()
    assert [s for s in rig.channel.sent if isinstance(s.message, ReminderView)] == []
    assert away_count("reminder_deferred", "slack_dnd") == deferred + 1
    rig.clock.set(datetime(2026, 7, 7, 15, 0, tzinfo=UTC))
    await rig.burst()
    [nudge] = [s for s in rig.channel.sent if isinstance(s.message, ReminderView)]
    assert nudge.address.person_id == "p-sarah"


async def test_a_digest_for_someone_away_passes_its_questions_over(
        make_rig: Callable[..., Rig]) -> None:
    """Sarah's second question waits for her digest; she is away for two weeks when its window
    closes: nothing is sent to her, the question is a PERSON_AWAY skip, and (where the core can
    start a turn early) Ahmed is asked at once."""
    rig = make_rig(clarify=clarify_settings(digest_threshold=1))
    await rig.create(authority={"authored_by": ["p-sarah", "p-ahmed"]})
    await rig.create(authority={"authored_by": ["p-sarah", "p-ahmed"]})
    await rig.burst()
    assert asked(rig) == ["p-sarah"]  # one as a card, the other queued
    [second] = [ev.clarification_id for ev in rig.events("digested")]
    rig.channel.away_for["p-sarah"] = Away(MONDAY + timedelta(days=14), "slack_status")
    assert rig.engine.away is not None
    rig.engine.away.forget()
    passed = away_count("digest_passed_over")
    await rig.later(timedelta(minutes=31))
    await rig.burst()
    assert len(rig.channel.to("p-sarah")) == 1  # no digest
    assert away_count("digest_passed_over") == passed + 1
    [skip] = [ev for ev in rig.events("skipped", second)]
    assert (skip.person_id, skip.reason_code) == ("p-sarah", ReasonCode.PERSON_AWAY)
    if rig.contract == "full":  # expedited: the next turn now
        assert asked(rig) == ["p-sarah", "p-ahmed"]
    else:  # the turn's window ends as usual
        assert asked(rig) == ["p-sarah"]


async def test_an_answer_before_the_digest_closes_is_not_passed_over(
        make_rig: Callable[..., Rig]) -> None:
    rig = make_rig(clarify=clarify_settings(digest_threshold=1))
    await rig.create(authority={"authored_by": ["p-sarah", "p-ahmed"]})
    await rig.create(authority={"authored_by": ["p-sarah", "p-ahmed"]})
    await rig.burst()
    [second] = [ev.clarification_id for ev in rig.events("digested")]
    await rig.bot.answer_clarification(clarification_id=second, request=AnswerRequest(
        answer_index=0, responder="p-ahmed", rights=Role.EDITOR, channel=ContractChannel.CLI))
    rig.channel.away_for["p-sarah"] = Away(None, "slack_status")
    assert rig.engine.away is not None
    rig.engine.away.forget()
    await rig.later(timedelta(minutes=31))
    assert rig.events("skipped", second) == []
