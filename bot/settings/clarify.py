"""The spec's [clarify] tables (§5, §8): whom to ask, how often, and when an answer binds."""

from __future__ import annotations

import re
from datetime import time, timedelta
from typing import Annotated

from pydantic import AfterValidator, BeforeValidator, StringConstraints, model_validator

from bot.core.models import AmbiguityKind, Channel, QuorumPolicy, Role, Severity
from bot.core.policy import critical_quorum_problem
from bot.settings.fields import (
    Channels,
    Int,
    MaybeSeverity,
    Num,
    Roles,
    TenantId,
    ZoneName,
    _allowed,
    _choice,
    _cross,
    _ints,
    _Table,
)


class QuorumSettings(_Table):
    enabled: bool = True
    critical_required_confirmations: Int = _ints(2, 1, 10)
    required_roles: Roles = _allowed(
        (Role.EDITOR,), "one or more of: viewer, editor, steward (comma-separated, no duplicates)")
    allow_steward_override: bool = True

    @model_validator(mode="after")
    def _critical_never_binds_on_one_answer(self) -> QuorumSettings:
        problem = critical_quorum_problem(
            enabled=self.enabled,
            critical_required_confirmations=self.critical_required_confirmations,
            allow_steward_override=self.allow_steward_override,
            override_set_explicitly="allow_steward_override" in self.model_fields_set,
        )
        if problem is not None:
            raise _cross(problem.field, getattr(self, problem.field), problem.allowed)
        return self


class Elevations(_Table):
    """Kind → minimum severity; the field names are exactly ``AmbiguityKind``'s values."""

    relative_date: MaybeSeverity = _choice(None, *Severity)
    conflicting_dates: MaybeSeverity = _choice(None, *Severity)
    undated: MaybeSeverity = _choice(None, *Severity)
    low_confidence_extraction: MaybeSeverity = _choice(None, *Severity)


class SeveritySettings(_Table):
    high_notifies_steward: bool = True
    # the steward's high-severity notices of this many seconds go out in one message, opened
    # by the first notice of a quiet period (0: each housekeeping pass sends what is queued)
    steward_notice_window_seconds: Int = _ints(60, 0, 3600)
    elevate: Elevations = Elevations()

    def minimum(self, kind: AmbiguityKind) -> Severity | None:
        minimum: Severity | None = getattr(self.elevate, kind.value)
        return minimum

    def effective(self, kind: AmbiguityKind, severity: Severity) -> Severity:
        """The severity raised to the kind's configured minimum, never lowered."""
        floor = self.minimum(kind)
        return floor if floor is not None and floor.rank > severity.rank else severity


_DAY = r"(mon|tue|wed|thu|fri|sat|sun)"
_DAYS = re.compile(rf"^{_DAY}(-{_DAY})?(,{_DAY}(-{_DAY})?)*$")


def _days(text: str) -> str:
    if not _DAYS.match(text.lower().replace(" ", "")):
        raise ValueError("not working days")
    return text


def _local_time(text: str) -> str:
    if not _HHMM.match(text):
        raise ValueError("not HH:MM")
    return text


_HHMM = re.compile(r"^([01][0-9]|2[0-3]):[0-5][0-9]$")
# each key checked on its own, so a bad one is reported under its own name
Days = Annotated[str, AfterValidator(_days)]
LocalTime = Annotated[str, AfterValidator(_local_time)]
_DAYS_ALLOWED = "days like mon-fri or mon,wed,fri"
_TIME_ALLOWED = "a local time HH:MM (00:00 to 23:59)"


def _end_problem(start: str, end: str) -> str | None:
    """Working hours must close after they open (``bot.engine.hours`` reads them)."""
    if not time.fromisoformat(start) < time.fromisoformat(end):
        return f"a local time HH:MM after start ({start})"
    return None


class TenantHours(_Table):
    """One tenant's working hours and default time zone (``[[clarify.hours.tenants]]``)."""

    tenant: TenantId
    days: Days = _allowed("mon-fri", _DAYS_ALLOWED)
    start: LocalTime = _allowed("08:00", _TIME_ALLOWED)
    end: LocalTime = _allowed("18:00", _TIME_ALLOWED + ", after start")
    time_zone: ZoneName = _allowed("UTC", "an IANA time zone such as Europe/Berlin")

    @model_validator(mode="after")
    def _valid(self) -> TenantHours:
        problem = _end_problem(self.start, self.end)
        if problem is not None:
            raise _cross("end", self.end, problem)
        return self


class HoursSettings(_Table):
    """When people are asked: their working hours in their own time zone."""

    enabled: bool = True
    days: Days = _allowed("mon-fri", _DAYS_ALLOWED)
    start: LocalTime = _allowed("08:00", _TIME_ALLOWED)
    end: LocalTime = _allowed("18:00", _TIME_ALLOWED + ", after start")
    # the zone of a person whose platform and core name none
    time_zone: ZoneName = _allowed("UTC", "an IANA time zone such as Europe/Berlin")
    tenants: tuple[TenantHours, ...] = ()

    @model_validator(mode="after")
    def _valid(self) -> HoursSettings:
        problem = _end_problem(self.start, self.end)
        if problem is not None:
            raise _cross("end", self.end, problem)
        names = [t.tenant for t in self.tenants]
        if len(set(names)) != len(names):
            raise _cross("tenants", None, "one entry per tenant")
        return self


def _words(value: object) -> object:
    """A list of words as TOML writes it, or "a,b" (an environment variable): each stripped,
    the empty ones left out, their case kept (matching ignores it)."""
    items = value.split(",") if isinstance(value, str) else value
    if isinstance(items, list | tuple):
        return tuple(i.strip() if isinstance(i, str) else i for i in items
                     if not isinstance(i, str) or i.strip())
    return value


Word = Annotated[str, StringConstraints(min_length=1, max_length=100)]
Words = Annotated[tuple[Word, ...], BeforeValidator(_words)]
_WORDS_ALLOWED = "a list of words of at most 100 characters each (comma-separated, or a list)"
# Slack's own presets ("Vacationing" 🌴, "Out sick" 🤒) and their kin. Not ✈️ (:airplane:): a
# person travelling is often reachable, and a trip without an end date would pass them over on
# every question; add it where travel means away.
AWAY_EMOJI = (":palm_tree:", "🌴", ":beach_with_umbrella:", "🏖️", ":desert_island:", "🏝️",
              ":face_with_thermometer:", "🤒", ":face_with_head_bandage:", "🤕", ":mask:", "😷")
# whole words or phrases, any case, in English, German and French
AWAY_TEXT = ("out of office", "ooo", "on holiday", "on holidays", "on vacation",
             "vacationing", "on leave", "annual leave", "parental leave", "sick",
             "urlaub", "krank", "abwesend", "elternzeit", "nicht im büro",
             "en congé", "en congés", "en vacances", "absent", "absente", "malade",
             "arrêt maladie", "hors du bureau")


class AwaySettings(_Table):
    """Whether a person their platform shows as away is passed over or waited for
    (docs/delivery.md, "Away"), and what in a Slack status says away."""

    enabled: bool = True
    # a status whose emoji is one of these (Slack's ``:name:`` or the character) says away
    status_emoji: Words = _allowed(AWAY_EMOJI, _WORDS_ALLOWED)
    # a status whose text holds one of these as whole words, in any case, says away
    status_text: Words = _allowed(AWAY_TEXT, _WORDS_ALLOWED)
    # Slack's Do Not Disturb (a snooze, or the person's quiet period now) says away until it ends
    dnd: bool = True


class ClarifySettings(_Table):
    enabled: bool = False
    escalation_window_hours: Num = _allowed(
        48.0, "a number of hours greater than 0 and at most 8760", gt=0, le=8760)
    max_candidates: Int = _ints(3, 1, 20)
    per_person_daily_cap: Int = _ints(5, 1, 1000)
    digest_threshold: Int = _ints(3, 1, 100)
    digest_window_minutes: Int = _ints(30, 1, 1440)
    redact_fallback: bool = True
    # the point of a question card's escalation window at which its person gets one reminder
    # (0: no reminder); docs/delivery.md, "Reminders"
    reminder_at_percent: Int = _ints(75, 0, 99)
    channels: Channels = _allowed((Channel.TEAMS, Channel.SLACK),
                                  "one or more of: teams, slack (comma-separated, no duplicates)")
    quorum: QuorumSettings = QuorumSettings()
    severity: SeveritySettings = SeveritySettings()
    hours: HoursSettings = HoursSettings()
    away: AwaySettings = AwaySettings()

    @property
    def escalation_window(self) -> timedelta:
        return timedelta(hours=self.escalation_window_hours)

    @property
    def digest_window(self) -> timedelta:
        return timedelta(minutes=self.digest_window_minutes)

    def quorum_policy(self, severity: Severity) -> QuorumPolicy:
        """Spec §5: critical needs the configured confirmations while quorum is on; else one."""
        quorum = self.quorum
        critical = severity is Severity.CRITICAL and quorum.enabled
        return QuorumPolicy(
            required_confirmations=quorum.critical_required_confirmations if critical else 1,
            required_roles=list(quorum.required_roles),
            allow_steward_override=quorum.allow_steward_override,
        )
