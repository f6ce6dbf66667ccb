"""The reach report, computed from the reach record's entries alone (pure: no I/O).

Per workspace and platform (a question's platform is that of its first card or digest, "-"
when nobody was asked): questions, asked, bound, still open, escalated, dead-lettered; the time
from a question's first card to its bound answer by severity (median, p90), in wall time and in
working hours (``hours``: those of the person the first card went to, read in the zone it was
sent in, else in the tenant's default zone; ``bot.engine.hours.working_time`` makes it from
the settings); the share bound before the first escalation. The people who could not be
reached, by cause, with the fix and the questions each cause cost; interruptions (cards,
reminders, digests) per person and ISO week. ``failed``: the people whose questions could not
be delivered. Ids, codes and counts only: no span text, no answer, no token.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime

from bot.reach.causes import FIXES, cause_of, unreached
from bot.reach.log import ASKING, NONE, Kind, ReachEntry

# the working seconds between two times for a person of a tenant in an IANA zone (None: not
# known, the tenant's default): ``bot.engine.hours.working_time(settings.clarify.hours)``
WorkingTime = Callable[[str, str | None, datetime, datetime], float]


def nearest_rank(values: list[float], percent: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(math.ceil(percent / 100 * len(ordered)) - 1, 0)]


def median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


@dataclass
class Row:
    workspace: str
    platform: str
    questions: int = 0
    asked: int = 0
    bound: int = 0
    open: int = 0
    escalated: int = 0
    dead_lettered: int = 0
    bound_before_escalation: float | None = None  # a share of those asked


@dataclass
class Timing:
    severity: str
    bound: int
    median_seconds: float | None  # wall time
    p90_seconds: float | None
    # in the working hours of the person the first card went to (None: no hours given)
    median_working_seconds: float | None = None
    p90_working_seconds: float | None = None


@dataclass
class Cause:
    cause: str
    fix: str
    people: list[str]
    questions: int


@dataclass
class Failed:
    person_id: str
    tenant: str
    workspace: str
    platform: str
    cause: str
    clarification_ids: list[str]


@dataclass
class Interruptions:
    median: float | None
    p95: float | None
    top: list[tuple[str, str, int]]  # person, ISO week, count


@dataclass
class Report:
    since: datetime | None
    tenant: str | None
    rows: list[Row] = field(default_factory=list)
    timings: list[Timing] = field(default_factory=list)
    causes: list[Cause] = field(default_factory=list)
    failed: list[Failed] = field(default_factory=list)
    interruptions: Interruptions = field(
        default_factory=lambda: Interruptions(None, None, []))


@dataclass
class _Question:
    tenant: str
    workspace: str
    severity: str
    platform: str = NONE
    first_asked: datetime | None = None
    zone: str | None = None  # the first card's (its person's), where the entry kept it
    bound_at: datetime | None = None
    escalated_at: datetime | None = None
    dead_lettered: bool = False
    # the people the question reached: asked (a card, a digest), or, stewards, told of it
    # (the escalation, the dead-letter digest)
    reached: set[str] = field(default_factory=set)


def _questions(entries: list[ReachEntry]) -> dict[str, _Question]:
    found: dict[str, _Question] = {}
    for e in entries:  # oldest first
        q = found.setdefault(e.clarification_id, _Question(e.tenant, e.workspace, e.severity))
        if e.kind in ASKING or e.kind in (Kind.ESCALATED, Kind.DEAD_LETTERED):
            q.reached.add(e.person_id)
        if e.kind in ASKING:
            if q.first_asked is None:
                q.first_asked, q.platform, q.zone = e.at, e.platform, e.zone
        elif e.kind is Kind.BOUND and q.bound_at is None:
            q.bound_at = e.at
        elif e.kind is Kind.ESCALATED and q.escalated_at is None:
            q.escalated_at = e.at
        elif e.kind is Kind.DEAD_LETTERED:
            q.dead_lettered = True
    return found


def _rows(questions: dict[str, _Question]) -> list[Row]:
    rows: dict[tuple[str, str], Row] = {}
    early: dict[tuple[str, str], int] = defaultdict(int)
    for q in questions.values():
        key = (q.workspace, q.platform)
        row = rows.setdefault(key, Row(*key))
        row.questions += 1
        row.asked += q.first_asked is not None
        row.bound += q.bound_at is not None
        row.open += q.bound_at is None and not q.dead_lettered
        row.escalated += q.escalated_at is not None
        row.dead_lettered += q.dead_lettered
        if q.first_asked is not None and q.bound_at is not None and (
                q.escalated_at is None or q.bound_at < q.escalated_at):
            early[key] += 1
    for key, row in rows.items():
        row.bound_before_escalation = early[key] / row.asked if row.asked else None
    return [rows[k] for k in sorted(rows)]


def _timings(questions: dict[str, _Question], hours: WorkingTime | None) -> list[Timing]:
    waits: dict[str, list[float]] = defaultdict(list)
    working: dict[str, list[float]] = defaultdict(list)
    for q in questions.values():
        if q.first_asked is not None and q.bound_at is not None:
            waits[q.severity].append((q.bound_at - q.first_asked).total_seconds())
            if hours is not None:
                working[q.severity].append(hours(q.tenant, q.zone, q.first_asked, q.bound_at))
    return [Timing(sev, len(w), median(w), nearest_rank(w, 90),
                   median(working[sev]), nearest_rank(working[sev], 90))
            for sev, w in sorted(waits.items())]


def _unreached(entries: list[ReachEntry], questions: dict[str, _Question]
               ) -> tuple[list[Cause], list[Failed]]:
    people = unreached(entries)
    cost: dict[str, set[str]] = defaultdict(set)
    failed: dict[str, Failed] = {}
    for e in entries:
        group = cause_of(e.reason_code, e.cause, e.cause_group) if e.kind is Kind.SKIPPED \
            else None
        if group is None:
            continue
        cost[group].add(e.clarification_id)
        if e.person_id in questions[e.clarification_id].reached:
            # reached for it after all (another platform, a later pass; a steward: the
            # escalation or the dead-letter digest reached them)
            continue
        seen = failed.setdefault(e.person_id, Failed(e.person_id, e.tenant, e.workspace,
                                                     e.platform, group, []))
        if e.clarification_id not in seen.clarification_ids:
            seen.clarification_ids.append(e.clarification_id)
    causes = [Cause(g, FIXES[g], sorted(people[g]), len(cost[g]))
              for g in sorted(people, key=lambda g: (-len(cost[g]), g))]
    return causes, [failed[p] for p in sorted(failed)]


def _interruptions(entries: list[ReachEntry]) -> Interruptions:
    counts: dict[tuple[str, str], int] = defaultdict(int)
    digests: set[tuple[str, datetime]] = set()
    for e in entries:
        if e.kind is Kind.DIGESTED:  # one digest message: its entries share their time
            if (e.person_id, e.at) in digests:
                continue
            digests.add((e.person_id, e.at))
        elif e.kind not in (Kind.ASKED, Kind.REMINDED):
            continue
        year, week, _ = e.at.isocalendar()
        counts[(e.person_id, f"{year}-W{week:02d}")] += 1
    values = [float(v) for v in counts.values()]
    top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:10]
    return Interruptions(median(values), nearest_rank(values, 95),
                         [(p, w, n) for (p, w), n in top])


def compute(entries: Iterable[ReachEntry], *, since: datetime | None = None,
            tenant: str | None = None, hours: WorkingTime | None = None) -> Report:
    """The report of the entries of ``tenant`` (None: every tenant) at or after ``since``;
    ``hours``: the working time between two times (without it, the times to bound answer are
    in wall time only)."""
    kept = sorted((e for e in entries if (tenant is None or e.tenant == tenant)
                   and (since is None or e.at >= since)), key=lambda e: (e.at, e.entry_id))
    questions = _questions(kept)
    causes, failed = _unreached(kept, questions)
    return Report(since=since, tenant=tenant, rows=_rows(questions),
                  timings=_timings(questions, hours), causes=causes, failed=failed,
                  interruptions=_interruptions(kept))
