"""One zone per person, everywhere (docs/delivery.md, "A person's zone"): the hold and the card's
"Moves on … at …" line take the same zone, their platform's first, then the core's, then the
tenant's default; a zone the platform gives that names no IANA zone counts as absent.

The reference core over HTTP (both contracts; a baseline core names no person's zone), the
engine as production wires it and a recording channel whose platform tells each user's zone and
locale, as Slack's ``users.info`` does. What a person reads is the card as Slack and Teams
receive it, checked against the local wall time written out by hand for each case.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

import pytest
from babel.dates import format_time

from adapters.slack.render import render as slack_render
from adapters.teams.render import render as teams_render
from bot.channel import Address, Profile
from bot.channels.recording import RecordingChannel, SentMessage
from bot.chat import ChatUser
from bot.clock import ManualClock
from bot.core.models import AnswerRequest, DeliveryKind, Role
from bot.core.models import Channel as ContractChannel
from bot.engine.notices import NOTICES_KIND
from bot.settings import ClarifySettings
from bot.store.keys import PROFILES, profile_key
from cards import dates
from cards.text import catalog_of
from cards.views import DigestView, QuestionView, ReminderView, StewardNoticesView, Viewer
from devcore.core import ReferenceCore, load_scenario
from devcore.scenario import read_scenario
from tests.engine.conftest import CODEC, Rig, clarify_settings

LEASE = timedelta(seconds=60)  # the worker's lease: a card moves on a window after it ends
WINDOW = timedelta(hours=48)
TUESDAY_1AM = datetime(2026, 12, 1, 1, 0, tzinfo=UTC)  # 02:00 Berlin, 20:00 (Mon) New York
LOCALES = ("en", "de", "fr", "en-US")
# the people the table asks, one per locale their platform states; their core record names
# Auckland (a zone no case is in), or no zone at all where the tenant's default is the case
READERS = {locale: f"p-{locale.lower()}" for locale in LOCALES}


@dataclass(frozen=True)
class Case:
    """One zone case: the card moves on at ``moves_on`` (UTC); the person's zone comes from
    ``source`` (``slack``: their platform names ``zone``; ``tenant``: nobody but the tenant's
    default does); they must read ``day`` at ``wall`` (written out by hand)."""

    name: str
    moves_on: datetime
    zone: str
    source: str
    day: date
    wall: time


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)  # type: ignore[misc]


CASES = [
    Case("Berlin in summer (CEST)", utc(2026, 6, 10, 8), "Europe/Berlin", "slack",
         date(2026, 6, 10), time(10, 0)),
    Case("Berlin in winter (CET)", utc(2026, 12, 10, 8), "Europe/Berlin", "slack",
         date(2026, 12, 10), time(9, 0)),
    # sent on 28 March (08:59 CET), moving on after the clocks went forward on the 29th
    Case("Berlin across the spring switch", utc(2026, 3, 30, 8), "Europe/Berlin", "slack",
         date(2026, 3, 30), time(10, 0)),
    # sent on 24 October (09:59 CEST), moving on after the clocks went back on the 25th
    Case("Berlin across the autumn switch", utc(2026, 10, 26, 8), "Europe/Berlin", "slack",
         date(2026, 10, 26), time(9, 0)),
    # sent on 7 March (07:59 EST), moving on after the clocks went forward on the 8th
    Case("New York across the spring switch", utc(2026, 3, 9, 13), "America/New_York", "slack",
         date(2026, 3, 9), time(9, 0)),
    # sent on 31 October (09:59 EDT), moving on after the clocks went back on 1 November
    Case("New York across the autumn switch", utc(2026, 11, 2, 14), "America/New_York",
         "slack", date(2026, 11, 2), time(9, 0)),
    Case("New York, the day before UTC's", utc(2026, 6, 10, 3), "America/New_York", "slack",
         date(2026, 6, 9), time(23, 0)),
    Case("Kolkata (+05:30)", utc(2026, 6, 10, 8), "Asia/Kolkata", "slack",
         date(2026, 6, 10), time(13, 30)),
    Case("Kathmandu (+05:45), the day after UTC's", utc(2026, 6, 10, 20), "Asia/Kathmandu",
         "slack", date(2026, 6, 11), time(1, 45)),
    Case("Tokyo from the tenant's default only", utc(2026, 6, 10, 8), "Asia/Tokyo", "tenant",
         date(2026, 6, 10), time(17, 0)),
    Case("Berlin from the tenant's default only, across the autumn switch",
         utc(2026, 10, 26, 8), "Europe/Berlin", "tenant", date(2026, 10, 26), time(9, 0)),
    Case("UTC, as the platform says (the core says Auckland)", utc(2026, 6, 10, 8), "UTC",
         "slack", date(2026, 6, 10), time(8, 0)),
]


@pytest.fixture
def case() -> Case | None:
    """The zone case of a table test (parametrized there); None elsewhere."""
    return None


@pytest.fixture
def clock(case: Case | None) -> ManualClock:
    """Where the table's card is sent: a lease and a window before it moves on."""
    return ManualClock(case.moves_on - WINDOW - LEASE if case else TUESDAY_1AM)


@pytest.fixture
def core(clock: ManualClock, case: Case | None) -> ReferenceCore:
    """The acme directory, with Ravi (the core says Kolkata) and a reader per locale (the core
    says Auckland, or nothing where the case is the tenant's default)."""
    data = read_scenario("acme")
    data["clarifications"] = []
    core_zone = "UTC" if case is not None and case.source == "tenant" else "Pacific/Auckland"
    data["people"] += [person("p-ravi", "U0RAVI", "Asia/Kolkata")] + [
        person(pid, f"U0{pid[2:].upper().replace('-', '')}", core_zone)
        for pid in READERS.values()]
    reference = ReferenceCore(clock=clock)
    load_scenario(reference, data)
    return reference


def person(pid: str, user_id: str, zone: str) -> dict[str, Any]:
    return {"id": pid, "tenant": "acme", "display_name": pid[2:].title(),
            "email": f"{pid[2:]}@acme.example", "locale": "en-GB", "time_zone": zone,
            "memberships": [{"workspace": "acme-legal", "role": "editor"}],
            "slack": [{"user_id": user_id, "team_id": "T0ACME", "enterprise_id": "E0ACME"}]}


@dataclass
class Platform(RecordingChannel):
    """A platform that tells each user's zone and locale (Slack's ``users.info``)."""

    zones: dict[str, str] = field(default_factory=dict)
    locales: dict[str, str] = field(default_factory=dict)

    async def profile(self, address: Address) -> Profile | None:
        return Profile(time_zone=self.zones.get(address.user_id),
                       locale=self.locales.get(address.user_id))


def settings(*, hours: bool, default: str = "Europe/Lisbon", **clarify: Any) -> ClarifySettings:
    return clarify_settings(hours={"enabled": hours,
                                   "tenants": [{"tenant": "acme", "time_zone": default}]},
                            **clarify)


def line(locale: str, day: date, wall: time, *, steward: bool = True) -> str:
    """The move-on line for a local day and wall time, in the locale's words and CLDR forms."""
    viewer = Viewer(locale=locale)
    key = "question.moves_on.steward" if steward else "question.moves_on"
    return catalog_of(viewer).text(key, day=dates.day_label(day, locale=locale),
                                   time=format_time(wall, "short",
                                                    locale=dates.resolve_locale(locale)))


def read(view: object) -> str:
    """The message as Slack and as Teams receive it: what the person could read."""
    return json.dumps([slack_render(view, codec=CODEC), teams_render(view, codec=CODEC)],
                      ensure_ascii=False)


def card_of(rig: Rig, person_id: str) -> SentMessage:
    [card] = [s for s in rig.channel.to(person_id) if isinstance(s.message, QuestionView)]
    return card


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
async def test_the_move_on_line_reads_in_the_persons_local_time_in_every_zone_and_locale(
        make_rig: Callable[..., Rig], case: Case) -> None:
    """Each of four people (en, de, fr, en-US by their platform) reads the moment their card
    moves on as the local wall time of their zone, whether the zone came from their platform
    (the core's record saying Auckland) or from the tenant's default alone."""
    platform = Platform()
    for locale, pid in READERS.items():
        user = f"U0{pid[2:].upper().replace('-', '')}"
        platform.locales[user] = locale
        if case.source == "slack":
            platform.zones[user] = case.zone
    default = case.zone if case.source == "tenant" else "Europe/Lisbon"
    rig = make_rig(clarify=settings(hours=False, default=default), channel=platform)
    for pid in READERS.values():
        await rig.create(authority={"authored_by": [pid]})
    await rig.burst()
    for locale, pid in READERS.items():
        card = card_of(rig, pid)
        assert isinstance(card.message, QuestionView)
        assert card.message.moves_on_at == case.moves_on  # the case's moment, as intended
        assert line(locale, case.day, case.wall) in read(card.message), (locale, case.name)


async def until_asked(rig: Rig, person_id: str, *, by: datetime) -> datetime:
    """Move time in 20-second steps (within every lease: a hold lives on a baseline core's
    short leases while a worker looks) until ``person_id`` has a card: when it went."""
    await rig.burst()
    while not rig.channel.to(person_id):
        assert rig.clock.now() < by, "never asked"
        await rig.later(timedelta(seconds=20))
    return rig.clock.now()


async def test_a_person_whose_platform_and_core_disagree_is_held_and_told_in_the_platforms_zone(
        make_rig: Callable[..., Rig]) -> None:
    """Slack says Berlin, the core says New York (01:50 there): Priya is held till 08:00 in
    Berlin (07:00 UTC, not 13:00) and her card says it moves on at 08:01 on Thursday, Berlin
    time."""
    platform = Platform(zones={"U0PRIYA": "Europe/Berlin"}, locales={"U0PRIYA": "en-US"})
    rig = make_rig(clarify=settings(hours=True), channel=platform)
    rig.clock.set(utc(2026, 12, 1, 6, 50))  # 07:50 in Berlin
    await rig.create(authority={"authored_by": ["p-priya"]})
    assert await until_asked(rig, "p-priya", by=utc(2026, 12, 1, 7, 20)) == utc(2026, 12, 1, 7)
    card = card_of(rig, "p-priya")
    assert isinstance(card.message, QuestionView)
    assert card.message.viewer.time_zone == "Europe/Berlin"
    # in her locale (Slack's en-US): "December 3 at 8:01 AM"
    assert line("en-US", date(2026, 12, 3), time(8, 1)) in read(card.message)


async def test_a_zone_the_platform_gives_that_is_no_zone_leaves_the_cores(
        make_rig: Callable[..., Rig], contract: str) -> None:
    """Slack says ``Mars/Olympus``; the core's record says Kolkata: at 07:50 UTC (13:20 in
    Kolkata, 07:50 in the tenant's London) Ravi is asked at once and reads Kolkata time. A
    baseline core names no zone: the tenant's default decides then (held till 08:00 London,
    and London time on the card)."""
    platform = Platform(zones={"U0RAVI": "Mars/Olympus"})
    rig = make_rig(clarify=settings(hours=True, default="Europe/London"), channel=platform)
    rig.clock.set(utc(2026, 12, 1, 7, 50))
    await rig.create(authority={"authored_by": ["p-ravi"]})
    sent = await until_asked(rig, "p-ravi", by=utc(2026, 12, 1, 8, 20))
    card = card_of(rig, "p-ravi")
    assert isinstance(card.message, QuestionView)
    if contract == "full":
        assert (sent, card.message.viewer.time_zone) == (utc(2026, 12, 1, 7, 50), "Asia/Kolkata")
        assert line("en", date(2026, 12, 3), time(13, 21)) in read(card.message)
    else:
        assert (sent, card.message.viewer.time_zone) == (utc(2026, 12, 1, 8), "Europe/London")
        assert line("en", date(2026, 12, 3), time(8, 1)) in read(card.message)


def in_berlin(view: QuestionView | ReminderView) -> bool:
    """Whether the view says Priya's card moves on on 3 December at 02:01, Berlin time (in
    the view's own locale: a repaint takes the reader's from the platform, as it goes out)."""
    return line(view.viewer.locale, date(2026, 12, 3), time(2, 1)) in read(view)


async def test_every_rebuild_of_a_card_reads_in_the_zone_it_was_sent_in(
        make_rig: Callable[..., Rig]) -> None:
    """Priya's card went out in Berlin time (Slack's zone; the core says New York). Her
    platform then says Tokyo: a new card reads in Tokyo time, while the card already sent,
    rebuilt for another's confirmation, for its reminder (and its nudge) and for the custom
    form, still reads in Berlin time, as it did."""
    platform = Platform(zones={"U0PRIYA": "Europe/Berlin"}, locales={"U0PRIYA": "en-US"})
    rig = make_rig(clarify=settings(hours=False), channel=platform)
    cid = await rig.create(authority={"named": ["p-sarah", "p-priya"]}, severity="critical")
    await rig.burst()
    card = card_of(rig, "p-priya")
    assert isinstance(card.message, QuestionView)
    # sent at 01:00 UTC: moves on at 01:01 UTC on Thursday, 02:01 in Berlin
    assert in_berlin(card.message)

    platform.zones["U0PRIYA"] = "Asia/Tokyo"  # she travels; what was known of her is stale
    await rig.store.kv_delete(PROFILES, profile_key("slack", "U0PRIYA"))
    rig.engine.zones.forget()
    await rig.create(authority={"authored_by": ["p-priya"]})
    await rig.burst()
    [fresh] = [s for s in rig.channel.to("p-priya") if s.ref != card.ref
               and isinstance(s.message, QuestionView)]
    assert isinstance(fresh.message, QuestionView) and fresh.message.moves_on_at is not None
    assert fresh.message.viewer.time_zone == "Asia/Tokyo"

    # Sarah confirms: Priya's card is repainted with the banner, in Berlin time
    await rig.bot.answer_clarification(clarification_id=cid, request=AnswerRequest(
        answer_index=0, responder="p-sarah", rights=Role.EDITOR, channel=ContractChannel.SLACK))
    await rig.engine.refresher.refresh_now(cid)
    [banner] = [u for u in rig.channel.updates if u.ref == card.ref]
    assert isinstance(banner.view, QuestionView) and banner.view.banner is not None
    assert in_berlin(banner.view)

    # the custom form opened from it
    user = ChatUser(platform="slack", user_id="U0PRIYA", team_id="T0ACME",
                    enterprise_id="E0ACME")
    form = await rig.engine.interactions.custom_form(user, clarification_id=cid,
                                                     card_ref=card.message.card_ref)
    assert form is not None and in_berlin(form)

    # its reminder, at 75 % of the window: the repainted card and the nudge under it
    rig.clock.set(card.message.moves_on_at - timedelta(hours=11, minutes=59))
    await rig.engine.reminders.flush()
    reminded = [u for u in rig.channel.updates if u.ref == card.ref][-1]
    assert isinstance(reminded.view, QuestionView) and reminded.view.reminded
    assert in_berlin(reminded.view)
    [nudge] = [s for s in rig.channel.to("p-priya") if isinstance(s.message, ReminderView)
               and s.message.near == card.ref]
    assert isinstance(nudge.message, ReminderView) and in_berlin(nudge.message)


async def test_a_digest_closes_and_reads_in_the_persons_zone_and_so_do_its_pages(
        make_rig: Callable[..., Rig]) -> None:
    """Slack says Berlin, the core says New York: Priya's questions admitted at 17:40 in Berlin
    (11:40 in New York) open a 30-minute digest window that would close at 18:10 Berlin time,
    after her hours there: it closes at 08:00 the next morning in Berlin (not at 12:10 in New
    York), reads in Berlin time, and its next page does too after her platform says Tokyo."""
    platform = Platform(zones={"U0PRIYA": "Europe/Berlin"})
    rig = make_rig(clarify=settings(hours=True, digest_threshold=1), channel=platform)
    rig.clock.set(utc(2026, 12, 1, 16, 40))
    for _ in range(3):
        await rig.create(authority={"authored_by": ["p-priya"]})
    await rig.burst()
    digests = DeliveryKind.DIGEST.value
    while not [s for s in rig.channel.to("p-priya") if s.key.kind == digests]:
        assert rig.clock.now() < utc(2026, 12, 2, 7)
        await rig.later(timedelta(minutes=20))
    assert rig.clock.now() == utc(2026, 12, 2, 7)  # 08:00 in Berlin
    [digest] = [s for s in rig.channel.to("p-priya") if s.key.kind == digests]
    assert isinstance(digest.message, DigestView)
    assert {digest.message.viewer.time_zone} | {
        q.viewer.time_zone for q in digest.message.questions} == {"Europe/Berlin"}

    platform.zones["U0PRIYA"] = "Asia/Tokyo"
    await rig.store.kv_delete(PROFILES, profile_key("slack", "U0PRIYA"))
    rig.engine.zones.forget()
    user = ChatUser(platform="slack", user_id="U0PRIYA", team_id="T0ACME",
                    enterprise_id="E0ACME")
    page = await rig.engine.interactions.digest_page(
        user, digest_ref=digest.message.digest_ref, offset=1)
    assert page is not None and page.questions
    assert {page.viewer.time_zone} | {q.viewer.time_zone for q in page.questions} == {
        "Europe/Berlin"}


async def test_the_stewards_messages_read_in_the_stewards_zone(
        make_rig: Callable[..., Rig]) -> None:
    """Slack says Los Angeles for Maria, the steward; the core says Madrid: the notice that a
    high-severity question went out, and the escalation when nobody can be asked, are written
    in Los Angeles time."""
    platform = Platform(zones={"U0MARIA": "America/Los_Angeles"})
    window = {"steward_notice_window_seconds": 0}
    rig = make_rig(clarify=settings(hours=False, severity=window), channel=platform)
    await rig.create(authority={"authored_by": ["p-ahmed"]}, severity="high")
    await rig.create(authority={"authored_by": ["p-nobody-here"]})
    await rig.burst()
    to_maria = rig.channel.to("p-maria")
    kinds = {s.key.kind for s in to_maria}
    assert {NOTICES_KIND, DeliveryKind.STEWARD_ESCALATION.value} <= kinds
    for sent in to_maria:
        viewers = [sent.message.viewer] if not isinstance(sent.message, StewardNoticesView) \
            else [sent.message.viewer, *(n.viewer for n in sent.message.notices)]
        assert {v.time_zone for v in viewers} == {"America/Los_Angeles"}, sent.key.kind
