"""High-severity notices batched per steward: one message lists a window's notices, each notice
still reported to the core exactly once, and nothing lost or sent twice across a crash.

Time only moves by the injected clock (``rig.later``); the worker's housekeeping sends what is
due at the end of each burst."""

from __future__ import annotations

from datetime import timedelta

from bot.channels.recording import SentMessage
from bot.core.models import DeliveryKind
from bot.engine.notices import NOTICES_KIND
from cards.views import StewardNoticesView
from tests.engine.conftest import Rig, clarify_settings

WINDOW = timedelta(seconds=60)


def notice_messages(rig: Rig) -> list[SentMessage]:
    return [s for s in rig.channel.to("p-maria") if s.key.kind == NOTICES_KIND]


def listed(sent: SentMessage) -> list[str]:
    assert isinstance(sent.message, StewardNoticesView)
    return [n.clarification_id for n in sent.message.notices]


async def notice_reports(rig: Rig, cid: str) -> list[tuple[str, str | None]]:
    """(steward, message reference) of each notice the core recorded: a STEWARD_NOTICE
    delivery, or on a baseline core (whose deliveries have no kind, and would count the steward
    as asked) the notice's ``steward_notified`` event, which has no message reference."""
    c = await rig.bot.get_clarification(clarification_id=cid)
    if rig.contract == "baseline":
        return [(ev.person_id or "", None) for ev in c.events if ev.type == "steward_notified"]
    return [(d.person_id, d.message_ref) for d in c.deliveries
            if d.kind is DeliveryKind.STEWARD_NOTICE]


def ref(rig: Rig, sent: SentMessage) -> str | None:
    return sent.ref if rig.contract == "full" else None


async def high(rig: Rig, *people: str) -> str:
    return await rig.create(authority={"authored_by": list(people)}, severity="high")


async def test_a_windows_notices_go_in_one_message(rig: Rig) -> None:
    """Three high-severity questions to three people: the steward hears nothing until the
    window opened by the first notice ends, then one message names all three; the core has one
    STEWARD_NOTICE delivery per clarification, each pointing at that message."""
    cids = [await high(rig, person) for person in ("p-ahmed", "p-sarah", "p-priya")]
    await rig.burst()
    assert notice_messages(rig) == []
    await rig.later(WINDOW - timedelta(seconds=1))
    assert notice_messages(rig) == []
    await rig.later(timedelta(seconds=1))
    (sent,) = notice_messages(rig)
    assert sorted(listed(sent)) == sorted(cids)
    for cid in cids:
        (report,) = await notice_reports(rig, cid)
        assert report == ("p-maria", ref(rig, sent))
    assert sorted(ev.clarification_id for ev in rig.events("steward_notified")) == sorted(cids)
    text = rig.rendered(sent)
    assert "Sarah Chen" in text and "Ahmed" in text
    for question in ("When does", "renewal take effect"):
        assert question not in text  # redacted, as a single notice


async def test_a_notice_is_not_sent_again_when_its_job_comes_back(rig: Rig) -> None:
    """The job's next attempt asks the next person; the steward was told already."""
    cid = await high(rig, "p-ahmed", "p-sarah")
    await rig.burst()
    await rig.later(WINDOW)
    assert len(notice_messages(rig)) == 1
    await rig.later(timedelta(hours=49))
    await rig.later(WINDOW)
    assert len(notice_messages(rig)) == 1
    assert len(await notice_reports(rig, cid)) == 1


async def test_more_notices_than_a_message_holds_go_in_a_few(make_rig) -> None:
    rig: Rig = make_rig(clarify=clarify_settings(per_person_daily_cap=100))
    cids = [await high(rig, "p-ahmed") for _ in range(25)]
    await rig.burst()
    await rig.later(WINDOW)
    sent = notice_messages(rig)
    assert [len(listed(s)) for s in sent] == [20, 5]
    assert sorted(c for s in sent for c in listed(s)) == sorted(cids)


async def test_a_worker_killed_between_take_and_send_loses_nothing(rig: Rig) -> None:
    """A worker took the batch and died: the lease runs out and the same notices go out."""
    cids = [await high(rig, person) for person in ("p-ahmed", "p-sarah")]
    await rig.burst()
    rig.clock.advance(WINDOW)
    dead = await rig.store.notice_take("acme", "p-maria", now=rig.clock.now(),
                                       lease_seconds=300, limit=20)
    assert dead is not None and len(dead.items) == 2
    await rig.later(timedelta(seconds=299))
    assert notice_messages(rig) == []  # the dead worker's lease still holds
    await rig.later(timedelta(seconds=1))
    (sent,) = notice_messages(rig)
    assert sorted(listed(sent)) == sorted(cids)
    for cid in cids:
        assert len(await notice_reports(rig, cid)) == 1


async def test_a_crash_after_the_send_sends_no_second_message(rig: Rig) -> None:
    """The message reached the platform, then the worker died before recording it: after the
    lease the batch comes back, the message is found on the platform and recorded, and each
    notice is reported once; the steward has one message."""
    cids = [await high(rig, person) for person in ("p-ahmed", "p-sarah")]
    await rig.burst()

    def die(sent: SentMessage) -> None:
        if sent.key.kind == NOTICES_KIND:
            rig.channel.after_send = None
            raise RuntimeError("process died after the platform accepted the message")

    rig.channel.after_send = die
    await rig.later(WINDOW)
    assert len(notice_messages(rig)) == 1
    for cid in cids:
        assert await notice_reports(rig, cid) == []
    await rig.later(timedelta(seconds=300))
    (sent,) = notice_messages(rig)
    for cid in cids:
        (report,) = await notice_reports(rig, cid)
        assert report[1] == ref(rig, sent)
    assert sorted(ev.clarification_id for ev in rig.events("steward_notified")) == sorted(cids)
    await rig.later(timedelta(seconds=300))
    assert len(notice_messages(rig)) == 1


async def test_a_window_of_zero_sends_at_the_next_pass(make_rig) -> None:
    settings = clarify_settings()
    settings = settings.model_copy(update={"severity": settings.severity.model_copy(
        update={"steward_notice_window_seconds": 0})})
    rig: Rig = make_rig(clarify=settings)
    cid = await high(rig, "p-ahmed")
    await rig.burst()
    (sent,) = notice_messages(rig)
    assert listed(sent) == [cid]
