"""The platform of bench/org.py: a recording channel whose people have zones, locales and
absences (``Profiles`` and ``Absences``, as Slack's ``users.info`` and a status would say), and
which notes each message with the simulated time it went out and how the person stood then."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from org_model import HOLIDAYS, Company, Person

from bot.channel import Address, Away, Message, Profile
from bot.channels.recording import RecordingChannel, SentMessage
from bot.clock import ManualClock
from bot.engine.hours import WorkingHours
from bot.store.base import DeliveryKey
from cards.views import DigestView, QuestionView, ReminderView, StewardEscalationView

HOURS = WorkingHours()  # the bot's default hours: Monday to Friday, 08:00-18:00
KINDS = ("card", "digest", "reminder", "escalation", "steward")


def kind_of(message: Message) -> str:
    """The message as the report counts it: a question card, a digest, a reminder, a steward
    escalation, or another steward message (notices, quorum and conflict notices, dead
    letters)."""
    if isinstance(message, QuestionView):
        return "card"
    if isinstance(message, DigestView):
        return "digest"
    if isinstance(message, ReminderView):
        return "reminder"
    if isinstance(message, StewardEscalationView):
        return "escalation"
    return "steward"


@dataclass(frozen=True)
class Logged:
    at: datetime
    person_id: str
    kind: str
    questions: tuple[str, ...]  # the clarifications it is about (a digest's several)
    away: bool  # the person was away (by the model) when it went out
    outside: bool  # outside the bot's working hours in the person's zone
    holiday: bool  # on a public holiday of the person's zone (the bot's hours know none)


@dataclass
class OrgPlatform(RecordingChannel):
    """Sends recorded; ``profile`` and ``away`` answered from the company's model."""

    org: Company | None = None
    clock: ManualClock | None = None
    log: list[Logged] = field(default_factory=list)
    on_sent: Callable[[SentMessage, Person], None] | None = None
    away_lookups: int = 0  # how often the engine asked whether someone is away

    def _person(self, address: Address) -> Person | None:
        assert self.org is not None
        return self.org.by_user.get(address.user_id)

    async def send(self, address: Address, message: Message, *, key: DeliveryKey) -> str:
        ref = await super().send(address, message, key=key)
        person = self._person(address)
        assert self.clock is not None and person is not None
        now = self.clock.now()
        kind = kind_of(message)
        if isinstance(message, DigestView):
            about: tuple[str, ...] = tuple(q.clarification_id for q in message.questions)
        else:
            about = (getattr(message, "clarification_id", ""),)
        self.log.append(Logged(
            at=now, person_id=person.person_id, kind=kind, questions=about,
            away=person.away_at(now) is not None, outside=not HOURS.open_at(now, person.tz),
            holiday=now.astimezone(person.tz).date() in HOLIDAYS[person.zone]))
        if self.on_sent is not None:
            self.on_sent(self.sent[-1], person)
        return ref

    async def profile(self, address: Address) -> Profile | None:
        person = self._person(address)
        return None if person is None else Profile(time_zone=person.zone, locale=person.locale)

    async def away(self, address: Address) -> Away | None:
        self.away_lookups += 1
        person = self._person(address)
        assert self.clock is not None
        absence = None if person is None else person.away_at(self.clock.now())
        if absence is None:
            return None
        return Away(until=absence.ends if absence.announced else None, source="slack_status")
