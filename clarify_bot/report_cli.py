"""``clarify-bot report``: who was asked, who could not be reached and why, and what fixes it,
read from the reach record (docs/operations.md, "Reach report"). A table by default, ``--json``
or ``--csv``; ``--failed``: only the people whose questions could not be delivered."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import re
from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import click

from bot.reach.report import Report, compute


def parse_since(value: str | None, now: datetime) -> datetime | None:
    """``7d``, ``12h`` or a date (``2025-03-01``, midnight UTC)."""
    if value is None:
        return None
    if match := re.fullmatch(r"(\d{1,4})([dh])", value.strip()):
        unit = timedelta(days=1) if match[2] == "d" else timedelta(hours=1)
        return now - int(match[1]) * unit
    try:
        day = datetime.fromisoformat(value.strip())
    except ValueError:
        raise click.BadParameter("a date (2025-03-01) or a span (7d, 12h)",
                                 param_hint="--since") from None
    return day if day.tzinfo else day.replace(tzinfo=UTC)


def _hours(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds / 3600:.1f}h"


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def as_json(report: Report, *, failed: bool) -> str:
    body: dict[str, Any] = asdict(report)
    body["since"] = report.since.isoformat() if report.since else None
    if failed:
        body = {"since": body["since"], "tenant": report.tenant, "failed": body["failed"]}
    return json.dumps(body, indent=2, sort_keys=True)


def as_csv(report: Report, *, failed: bool) -> str:
    out = io.StringIO()
    rows = csv.writer(out, lineterminator="\n")
    if failed:
        rows.writerow(["person_id", "tenant", "workspace", "platform", "cause", "questions"])
        for f in report.failed:
            rows.writerow([f.person_id, f.tenant, f.workspace, f.platform, f.cause,
                           " ".join(f.clarification_ids)])
        return out.getvalue()
    rows.writerow(["section", "workspace", "platform", "subject", "metric", "value"])
    for r in report.rows:
        for metric in ("questions", "asked", "bound", "open", "escalated", "dead_lettered",
                       "bound_before_escalation"):
            rows.writerow(["questions", r.workspace, r.platform, "", metric,
                           getattr(r, metric)])
    for t in report.timings:
        for metric in ("bound", "median_seconds", "p90_seconds", "median_working_seconds",
                       "p90_working_seconds"):
            rows.writerow(["time_to_bound", "", "", t.severity, metric, getattr(t, metric)])
    for c in report.causes:
        rows.writerow(["unreached", "", "", c.cause, "people", len(c.people)])
        rows.writerow(["unreached", "", "", c.cause, "questions", c.questions])
    i = report.interruptions
    rows.writerow(["interruptions", "", "", "", "median_per_week", i.median])
    rows.writerow(["interruptions", "", "", "", "p95_per_week", i.p95])
    for person, week, count in i.top:
        rows.writerow(["interruptions", "", "", f"{person} {week}", "count", count])
    return out.getvalue()


def as_table(report: Report, *, failed: bool) -> str:
    lines: list[str] = []
    if failed:
        lines.append(f"{'person':<20} {'workspace':<14} {'platform':<8} {'cause':<24} questions")
        lines += [f"{f.person_id:<20} {f.workspace:<14} {f.platform:<8} {f.cause:<24} "
                  + " ".join(f.clarification_ids) for f in report.failed]
        return "\n".join(lines or ["nobody"]) + "\n"
    lines.append(f"{'workspace':<14} {'platform':<8} {'questions':>9} {'asked':>6} {'bound':>6} "
                 f"{'open':>5} {'escalated':>9} {'dead':>5} {'bound early':>11}")
    for r in report.rows:
        early = "-" if r.bound_before_escalation is None else f"{r.bound_before_escalation:.0%}"
        lines.append(f"{r.workspace:<14} {r.platform:<8} {r.questions:>9} {r.asked:>6} "
                     f"{r.bound:>6} {r.open:>5} {r.escalated:>9} {r.dead_lettered:>5} "
                     f"{early:>11}")
    lines.append("")
    lines.append("time from first card to bound answer (working hours of the person asked "
                 "first, and wall time):")
    lines += [f"  {t.severity:<9} {t.bound:>4} bound  working median "
              f"{_hours(t.median_working_seconds):>6}  p90 {_hours(t.p90_working_seconds):>6}  "
              f"wall median {_hours(t.median_seconds):>6}  p90 {_hours(t.p90_seconds):>6}"
              for t in report.timings] or ["  none bound"]
    lines.append("")
    lines.append("people who could not be reached:")
    for c in report.causes:
        lines.append(f"  {c.cause}: {_count(len(c.people), 'person', 'people')}, "
                     f"{_count(c.questions, 'question', 'questions')}; "
                     f"fix: {c.fix}")
        lines.append("    " + " ".join(c.people))
    if not report.causes:
        lines.append("  none")
    i = report.interruptions
    lines.append("")
    lines.append(f"interruptions per person and week (cards, reminders, digests): median "
                 f"{'-' if i.median is None else f'{i.median:g}'}, p95 "
                 f"{'-' if i.p95 is None else f'{i.p95:g}'}")
    lines += [f"  {person:<20} {week}  {count}" for person, week, count in i.top]
    return "\n".join(lines) + "\n"


@click.command()
@click.option("--config", "config", type=click.Path(path_type=Path, exists=True),
              default=None, help="The TOML settings file (default: $CLARIFY_BOT_CONFIG).")
@click.option("--tenant", default=None, help="One tenant only (default: every tenant).")
@click.option("--since", default=None, help="From a date (2025-03-01) or a span back (7d).")
@click.option("--json", "json_out", is_flag=True, help="JSON in place of the table.")
@click.option("--csv", "csv_out", is_flag=True, help="CSV in place of the table.")
@click.option("--failed", is_flag=True,
              help="Only the people whose questions could not be delivered.")
def report(config: Path | None, tenant: str | None, since: str | None, json_out: bool,
           csv_out: bool, failed: bool) -> None:
    """The reach report: questions asked and bound, who could not be reached and why."""
    from bot.engine.hours import working_time
    from bot.settings import SettingsError, load_settings
    from clarify_bot.reach_record import open_log

    if json_out and csv_out:
        raise click.UsageError("--json or --csv, not both")
    try:
        settings = load_settings(config)
    except SettingsError as exc:
        raise click.ClickException(str(exc)) from None
    now = datetime.now(UTC)
    start = parse_since(since, now)
    reach = open_log(settings, pool_size=1)
    if reach is None or not settings.secrets.value("database_url"):
        raise click.ClickException("no reach record to read: set CLARIFY_BOT_DATABASE_URL (the "
                                   "record a memory store keeps lives in serve's process only)")

    async def read() -> list[Any]:
        try:
            return await reach.read(tenant=tenant, since=start)
        finally:
            await reach.aclose()

    try:
        entries = asyncio.run(read())
    except Exception as exc:  # value-free: what failed, not the driver's text
        raise click.ClickException(f"cannot read the reach record ({type(exc).__name__}): "
                                   "check CLARIFY_BOT_DATABASE_URL and run `clarify-bot db "
                                   "upgrade`") from None
    result = compute(entries, since=start, tenant=tenant,
                     hours=working_time(settings.clarify.hours))
    render = as_json if json_out else as_csv if csv_out else as_table
    click.echo(render(result, failed=failed), nl=False)
