"""The simulated company of bench/org.py: its people, their calendars, how they answer, and the
stream of questions its documents raise. Pure and deterministic: everything is drawn from the
run's seed, so every run of one seed (each rule switched off in turn) meets the same company,
the same questions and, card for card, the same people's answers.

The assumptions are listed in bench/org.py's docstring and in docs/performance.md ("A week in an
organisation").
"""

from __future__ import annotations

import bisect
import math
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

TENANT = "org"
TEAM = "T0ORG"
# the five zones and the share of the people in each, with the locale their platform names
ZONES: tuple[tuple[str, float, str], ...] = (
    ("Europe/Berlin", 0.30, "de-DE"),
    ("Europe/London", 0.20, "en-GB"),
    ("America/New_York", 0.25, "en-US"),
    ("America/Los_Angeles", 0.15, "en-US"),
    ("Asia/Tokyo", 0.10, "ja-JP"),
)
# a few fixed public holidays per zone (whole local days nobody of that zone works); the bot's
# working hours know none of them (Monday to Friday, 08:00-18:00)
HOLIDAYS: dict[str, frozenset[date]] = {
    zone: frozenset(date.fromisoformat(d) for d in days) for zone, days in {
        "Europe/Berlin": ("2026-10-03", "2026-12-24", "2026-12-25", "2026-12-31", "2027-01-01"),
        "Europe/London": ("2026-08-31", "2026-12-25", "2026-12-28", "2027-01-01"),
        "America/New_York": ("2026-09-07", "2026-11-26", "2026-11-27", "2026-12-25",
                             "2027-01-01"),
        "America/Los_Angeles": ("2026-09-07", "2026-11-26", "2026-11-27", "2026-12-25",
                                "2027-01-01"),
        "Asia/Tokyo": ("2026-11-03", "2026-11-23", "2026-12-31", "2027-01-01", "2027-01-11"),
    }.items()
}
WORK_START, WORK_END = time(8, 0), time(18, 0)  # the people's own hours, Monday to Friday
SEVERITIES = ("low", "normal", "high", "critical")
DATES_PER_DOCUMENT = 2.0  # the mean of a document's ambiguous dates (1 + geometric, p = 0.5)


@dataclass(frozen=True)
class Knobs:
    """What a run of the model is made of (bench/org.py's options)."""

    people: int = 2000
    start: datetime = datetime(2026, 11, 16, tzinfo=UTC)  # a Monday, 00:00 UTC
    days: float = 14.0  # questions arrive during these days
    seed: int = 7
    away_share: float = 0.08  # people with one absence overlapping the run
    announced_share: float = 0.6  # of those, absences whose status says when they are back
    never_share: float = 0.05  # people who never answer
    rate: float = 0.15  # questions per person and weekday (a tenth of it on weekend days)
    shares: tuple[float, float, float, float] = (0.15, 0.60, 0.18, 0.07)  # low..critical
    team_size: int = 100  # people per workspace (each with one steward)
    median_hours: float = 2.0  # the median person's median delay, in their working hours
    reminder_pull: float = 0.5  # who has not answered comes back to a reminded card

    @property
    def end(self) -> datetime:
        return self.start + timedelta(days=self.days)


@dataclass(frozen=True)
class Absence:
    """Whole local days away: from ``begins`` (local midnight) to ``ends`` (local midnight of
    the day back); ``announced``: the status says when they are back (else open-ended)."""

    begins: datetime
    ends: datetime
    announced: bool

    def covers(self, at: datetime) -> bool:
        return self.begins <= at < self.ends


@dataclass(frozen=True)
class Person:
    index: int
    person_id: str
    user_id: str
    zone: str
    locale: str
    workspace: str
    steward: bool
    activity: float  # how much of the company's documents they write or own (relative)
    answer_p: float  # the chance they answer a card at all (0: never)
    median_hours: float  # their median delay, in their own working hours
    absence: Absence | None

    @property
    def tz(self) -> ZoneInfo:
        return ZoneInfo(self.zone)

    def away_at(self, at: datetime) -> Absence | None:
        return self.absence if self.absence is not None and self.absence.covers(at) else None

    def works_on(self, day: date) -> bool:
        """A working day of theirs: Monday to Friday, not a public holiday of their zone, not a
        day of their absence."""
        if day.weekday() >= 5 or day in HOLIDAYS.get(self.zone, frozenset()):
            return False
        if self.absence is None:
            return True
        midday = datetime.combine(day, time(12), tzinfo=self.tz)
        return not self.absence.covers(midday)

    def periods(self, after: datetime, *, days: int = 90) -> Iterator[tuple[datetime, datetime]]:
        """Their working periods (UTC) from ``after`` on, the first cut to start at ``after``."""
        first = after.astimezone(self.tz).date()
        for offset in range(days):
            day = first + timedelta(days=offset)
            if not self.works_on(day):
                continue
            opens = datetime.combine(day, WORK_START, tzinfo=self.tz).astimezone(UTC)
            closes = datetime.combine(day, WORK_END, tzinfo=self.tz).astimezone(UTC)
            if closes <= after:
                continue
            yield max(opens, after), closes

    def later_by(self, at: datetime, hours: float) -> datetime | None:
        """The moment ``hours`` of their own working time after ``at`` (None: not in 90 days)."""
        left = hours * 3600.0
        for opens, closes in self.periods(at):
            span = (closes - opens).total_seconds()
            if left < span:
                return opens + timedelta(seconds=left)
            left -= span
        return None


@dataclass(frozen=True)
class Question:
    n: int
    at: datetime
    severity: str
    workspace: str
    candidates: tuple[str, ...]  # person ids, in rank order (author, named, owner)
    document: int = 0  # the document whose date it asks about (one document, several dates)


@dataclass
class Company:
    knobs: Knobs
    people: list[Person]
    by_id: dict[str, Person]
    by_user: dict[str, Person]
    workspaces: dict[str, list[Person]]  # members, the steward among them
    stewards: dict[str, str]  # workspace -> the steward's person id
    questions: list[Question] = field(default_factory=list)


def _lognormal(rng: random.Random, median: float, sigma: float) -> float:
    return median * math.exp(rng.gauss(0.0, sigma))


def company(knobs: Knobs) -> Company:
    """The people (zones, workspaces, stewards, absences, how they answer) and the questions."""
    rng = random.Random(f"org:{knobs.seed}:people")
    # absences from a stream of their own: another --away-share leaves the rest as it was
    away = random.Random(f"org:{knobs.seed}:absences")
    n = knobs.people
    spaces = max(1, round(n / knobs.team_size))
    names = [f"ws-{i:03d}" for i in range(spaces)]
    zones = [z for z, _, _ in ZONES]
    weights = [w for _, w, _ in ZONES]
    locales = {z: loc for z, _, loc in ZONES}
    horizon = (knobs.start - timedelta(days=15), knobs.end)
    people: list[Person] = []
    for i in range(n):
        zone = rng.choices(zones, weights)[0]
        never = rng.random() < knobs.never_share
        absence = _absence(away, zone, horizon, knobs) if away.random() < knobs.away_share \
            else None
        people.append(Person(
            index=i, person_id=f"p-o{i:05d}", user_id=f"U0O{i:06d}", zone=zone,
            locale=locales[zone], workspace=names[i % spaces], steward=i < spaces,
            activity=_lognormal(rng, 1.0, 1.0),
            answer_p=0.0 if never else rng.uniform(0.55, 0.95),
            median_hours=_lognormal(rng, knobs.median_hours, 0.75), absence=absence))
    members: dict[str, list[Person]] = {w: [] for w in names}
    for p in people:
        members[p.workspace].append(p)
    org = Company(knobs=knobs, people=people, by_id={p.person_id: p for p in people},
                  by_user={p.user_id: p for p in people}, workspaces=members,
                  stewards={p.workspace: p.person_id for p in people if p.steward})
    org.questions = _stream(org)
    return org


def _absence(rng: random.Random, zone: str, horizon: tuple[datetime, datetime],
             knobs: Knobs) -> Absence:
    """One absence of 1-15 days, starting on a day between 15 days before the run and its
    last day, at local midnight."""
    tz = ZoneInfo(zone)
    first, last = horizon
    span = max(1, (last - first).days)
    day = first.astimezone(tz).date() + timedelta(days=rng.randrange(span))
    length = rng.randint(1, 15)
    begins = datetime.combine(day, time(0), tzinfo=tz).astimezone(UTC)
    ends = datetime.combine(day + timedelta(days=length), time(0), tzinfo=tz).astimezone(UTC)
    return Absence(begins=begins, ends=ends, announced=rng.random() < knobs.announced_share)


class _Weighted:
    """Draws people by their activity."""

    def __init__(self, people: list[Person]) -> None:
        self.people = people
        self.total: list[float] = []
        running = 0.0
        for p in people:
            running += p.activity
            self.total.append(running)

    def draw(self, rng: random.Random) -> Person:
        return self.people[min(bisect.bisect(self.total, rng.random() * self.total[-1]),
                               len(self.people) - 1)]


def _stream(org: Company) -> list[Question]:
    """Documents arrive as a Poisson process, day by day (UTC days; weekend days at a tenth of
    the rate), each with 1 to 10 ambiguous dates (1 + a geometric count: half of the documents
    have one, a mean of two): a question each, created together, each with a severity of its
    own and all for the document's 1-3 ranked people of one workspace (a document with a
    critical date ranks 2-3: its quorum is 2), the first its author, all drawn by activity."""
    knobs = org.knobs
    rng = random.Random(f"org:{knobs.seed}:questions")
    everyone = _Weighted(org.people)
    teams = {w: _Weighted(m) for w, m in org.workspaces.items()}
    found: list[Question] = []
    at = knobs.start
    document = 0
    while True:
        day_rate = knobs.rate / DATES_PER_DOCUMENT * knobs.people \
            * (1.0 if at.weekday() < 5 else 0.1)
        at += timedelta(days=rng.expovariate(max(day_rate, 1e-9)))
        if at >= knobs.end:
            return found
        dates = 1
        while dates < 10 and rng.random() < 0.5:
            dates += 1
        severities = rng.choices(SEVERITIES, knobs.shares, k=dates)
        author = everyone.draw(rng)
        wanted = rng.choice((2, 3)) if "critical" in severities else rng.choice((1, 2, 3))
        wanted = min(wanted, len(org.workspaces[author.workspace]))
        chosen = [author.person_id]
        while len(chosen) < wanted:
            other = teams[author.workspace].draw(rng)
            if other.person_id not in chosen:
                chosen.append(other.person_id)
        for severity in severities:
            found.append(Question(n=len(found), at=at, severity=severity,
                                  workspace=author.workspace, candidates=tuple(chosen),
                                  document=document))
        document += 1


def reply(org: Company, person: Person, question: int, at: datetime, *, reminded: bool
          ) -> datetime | None:
    """When the person answers a card (or a digest's item) delivered at ``at``, or after its
    reminder (``reminded``); None: they do not. Drawn from the seed, the person and the question
    alone, so the same card meets the same answer in every run."""
    rng = random.Random(f"org:{org.knobs.seed}:{person.person_id}:{question}:{int(reminded)}")
    if person.answer_p <= 0.0:
        return None
    if reminded:
        if rng.random() >= org.knobs.reminder_pull:
            return None
        return person.later_by(at, _lognormal(rng, person.median_hours / 2, 1.0))
    if rng.random() >= person.answer_p:
        return None
    return person.later_by(at, _lognormal(rng, person.median_hours, 1.0))


def scenario(org: Company, *, clarify_token: str, dev_token: str) -> dict[str, object]:
    """The reference core's scenario: one tenant, its workspaces with their stewards, the
    people with their zones, locales and Slack aliases; no clarifications (the run creates
    them as they arrive)."""
    return {
        "name": "org",
        "tenants": [{"id": TENANT, "name": "Org", "clarify": {
            "escalation_window_hours": 48, "max_candidates": 3,
            "quorum": {"critical_required_confirmations": 2, "required_roles": ["editor"],
                       "allow_steward_override": True}}}],
        "workspaces": [{"id": w, "tenant": TENANT, "name": f"Team {w[3:]}",
                        "steward": org.stewards[w]} for w in org.workspaces],
        "people": [{
            "id": p.person_id, "tenant": TENANT, "display_name": f"Person {p.index}",
            "email": f"p{p.index}@org.example", "locale": p.locale, "time_zone": p.zone,
            "memberships": [{"workspace": p.workspace,
                             "role": "steward" if p.steward else "editor"}],
            "slack": [{"user_id": p.user_id, "team_id": TEAM}]} for p in org.people],
        "tokens": [{"token": clarify_token, "audience": "clarify", "tenants": [TENANT]}],
        "dev": {"tokens": [dev_token]},
    }


def request(q: Question) -> dict[str, object]:
    """The question as ingestion creates it (the reference core's creation request)."""
    tag, doc = f"q{q.n:06d}", f"d{q.document:06d}"
    authority: dict[str, list[str]] = {"authored_by": [q.candidates[0]],
                                       "named": list(q.candidates[1:2]),
                                       "owned_by": list(q.candidates[2:3])}
    return {
        "tenant_id": TENANT, "workspace_id": q.workspace, "target": f"fact-{tag}",
        "question": "When does the renewal take effect?", "kind": "relative_date",
        "severity_hint": q.severity, "detector_confidence": 0.88,
        "applied_candidate_confidence": 0.55,
        "candidates": [
            {"label": "next quarter after signing", "valid_from": "2026-07-01T00:00:00Z",
             "valid_to": "2026-10-01T00:00:00Z"},
            {"label": "next calendar quarter", "valid_from": "2026-10-01T00:00:00Z",
             "valid_to": "2027-01-01T00:00:00Z"}],
        "authority": authority,
        "document": {"document_id": f"doc-{doc}", "title": f"Document {q.document}",
                     "url": f"https://docs.org.example/{doc}", "content_hash": f"sha256:{doc}",
                     "acl": {"workspace_id": q.workspace,
                             "read_roles": ["viewer", "editor", "steward"]}},
        "span": {"start": 100 * q.n, "end": 100 * q.n + 43,
                 "text": "The renewed term is effective next quarter."},
    }
