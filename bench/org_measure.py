"""What bench/org.py reports of a run, and the side-by-side table of its runs."""

from __future__ import annotations

from collections import Counter
from typing import Any
from zoneinfo import ZoneInfo

from org_model import Company
from org_platform import KINDS
from org_run import Raw

from bot.engine.hours import WorkingHours, working_seconds
from bot.reach.report import median, nearest_rank

HOURS = WorkingHours()  # the bot's default: Monday to Friday, 08:00-18:00
WORKING_DAY = 10 * 3600  # one working day of those hours, in seconds
STATUSES = ("bound", "open", "escalated", "dead_lettered", "conflicted", "not_asked")
TIMED = ("normal", "high", "critical", "all")


def summarise(raw: Raw, org: Company) -> dict[str, Any]:
    """One run's figures (JSON-ready)."""
    weeks = raw.simulated_days / 7
    severity = {cid: org.questions[n].severity for cid, n in raw.numbers.items()}
    log = raw.platform.log
    per_person = Counter(entry.person_id for entry in log)
    weekly = sorted(per_person.get(p.person_id, 0) / weeks for p in org.people)
    timing: dict[str, dict[str, Any]] = {}
    for sev in TIMED:
        chosen = [o for o in raw.outcomes if o.status != "not_asked"
                  and (sev == "all" or o.severity == sev)]
        bound = [o for o in chosen if o.bound_at is not None]
        wall = [(o.bound_at - o.created).total_seconds() / 3600 for o in bound
                if o.bound_at is not None]
        work = [working_seconds(HOURS, ZoneInfo(o.zone), o.created, o.bound_at) / 3600
                for o in bound if o.bound_at is not None]
        timing[sev] = {
            "questions": len(chosen), "bound": len(bound),
            "wall_median_h": median(wall), "wall_p90_h": nearest_rank(wall, 90),
            "working_median_h": median(work), "working_p90_h": nearest_rank(work, 90),
            "within_working_day": (sum(1 for w in work if w * 3600 <= WORKING_DAY)
                                   / len(chosen)) if chosen else None,
        }
    by_kind = Counter(entry.kind for entry in log)
    away = Counter(entry.kind for entry in log if entry.away)
    normal_outside = sum(1 for e in log if e.outside and (
        e.kind == "digest" or (e.kind == "card" and severity.get(e.questions[0]) == "normal")))
    holiday = sum(1 for e in log if e.holiday and e.kind in ("card", "digest", "reminder"))
    return {
        "name": raw.name, "seconds": round(raw.seconds, 1),
        "simulated_days": raw.simulated_days,
        "questions": len(raw.outcomes),
        "status": {s: sum(1 for o in raw.outcomes if o.status == s) for s in STATUSES},
        "timing": timing,
        "interruptions": {
            "median": median(weekly), "p95": nearest_rank(weekly, 95), "max": max(weekly),
            "people_reached": sum(1 for w in weekly if w > 0) / len(weekly),
            "reached_median": median([w for w in weekly if w > 0]),
            "reached_p95": nearest_rank([w for w in weekly if w > 0], 95),
        },
        "messages": {k: by_kind.get(k, 0) for k in KINDS},
        "to_someone_away": {k: away.get(k, 0) for k in KINDS},
        "normal_outside_hours": normal_outside,
        "reminders_outside_hours": sum(1 for e in log if e.kind == "reminder" and e.outside),
        "on_public_holiday": holiday,
        "escalations": by_kind.get("escalation", 0),
        "dead_letters": sum(1 for o in raw.outcomes if o.status == "dead_lettered"),
        "skips": dict(sorted(raw.skips.items())),
        "digested": raw.digested,
        "answers": dict(sorted(raw.taps.items())),
        "away_asked": raw.away_asked,
        "per_person": dict(per_person),
        "recorded_per_person": dict(Counter(s.address.person_id for s in raw.platform.sent)),
    }


def _h(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f}"


def _pair(a: float | None, b: float | None) -> str:
    return f"{_h(a)} / {_h(b)}"


def _share(value: float | None) -> str:
    return "–" if value is None else f"{value:.0%}"


def rows(results: list[dict[str, Any] | None]) -> list[tuple[str, list[str]]]:
    """The table's rows: a measure and one cell per run (None: the run is not available)."""

    def cells(get: Any) -> list[str]:
        return ["n/a" if r is None else get(r) for r in results]

    out: list[tuple[str, list[str]]] = [
        ("questions (low: never asked)",
         cells(lambda r: f"{r['questions']:,} ({r['status']['not_asked']:,})")),
        ("bound / open / escalated / dead-lettered", cells(lambda r: " / ".join(
            f"{r['status'][s]:,}" for s in ("bound", "open", "escalated", "dead_lettered")))),
    ]
    for sev in TIMED:
        out.append((f"{sev}: to bound, wall h, median / p90", cells(
            lambda r, s=sev: _pair(r["timing"][s]["wall_median_h"],
                                   r["timing"][s]["wall_p90_h"]))))
        out.append((f"{sev}: to bound, working h, median / p90", cells(
            lambda r, s=sev: _pair(r["timing"][s]["working_median_h"],
                                   r["timing"][s]["working_p90_h"]))))
        out.append((f"{sev}: bound within one working day", cells(
            lambda r, s=sev: _share(r["timing"][s]["within_working_day"]))))
    out += [
        ("interruptions per person and week: median / p95 / max", cells(
            lambda r: f"{r['interruptions']['median']:.1f} / {r['interruptions']['p95']:.1f} / "
                      f"{r['interruptions']['max']:.1f}")),
        ("people interrupted at least once", cells(
            lambda r: _share(r["interruptions"]["people_reached"]))),
        ("interruptions per week of those: median / p95", cells(
            lambda r: _pair(r["interruptions"]["reached_median"],
                            r["interruptions"]["reached_p95"]))),
        ("cards / reminders / digests / steward messages", cells(lambda r: " / ".join(
            f"{r['messages'][k]:,}" for k in ("card", "reminder", "digest"))
            + f" / {r['messages']['escalation'] + r['messages']['steward']:,}")),
        ("cards / reminders / digests to someone away", cells(lambda r: " / ".join(
            f"{r['to_someone_away'][k]:,}" for k in ("card", "reminder", "digest")))),
        ("normal cards and digests outside working hours", cells(
            lambda r: f"{r['normal_outside_hours']:,}")),
        ("cards, reminders, digests on a public holiday", cells(
            lambda r: f"{r['on_public_holiday']:,}")),
        ("steward escalations", cells(lambda r: f"{r['escalations']:,}")),
        ("dead letters", cells(lambda r: f"{r['dead_letters']:,}")),
        ("skips: daily cap / away", cells(
            lambda r: f"{r['skips'].get('DAILY_CAP_EXCEEDED', 0):,} / "
                      f"{r['skips'].get('PERSON_AWAY', 0):,}")),
        ("wall time of the run, s", cells(lambda r: f"{r['seconds']:.0f}")),
    ]
    return out


def table(names: list[str], results: list[dict[str, Any] | None]) -> str:
    body = rows(results)
    out = ["| measure | " + " | ".join(names) + " |",
           "|---|" + "---:|" * len(names)]
    out += [f"| {measure} | " + " | ".join(cells) + " |" for measure, cells in body]
    return "\n".join(out)
