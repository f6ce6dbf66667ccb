"""A week in an organisation: a simulated company's weeks of questions through the real engine,
with each of the engine's rules for people switched off in turn, side by side.

Run: .venv/bin/python bench/org.py [--people 1000] [--weeks 2] [--away-share 0.08]
         [--never-share 0.05] [--rate 0.15] [--seed 7] [--step-minutes 5] [--drain-days 3]
         [--jobs 2] [--only NAME ...] [--json PATH] [--quick] [--table JSON]

Each run: the reference core (``devcore.core.ReferenceCore``, served over HTTP in the process)
loaded with the company, a memory store, the engine as production wires it
(``bot.process.runtime.build_engine``) on a recording channel that knows the company
(``org_platform.OrgPlatform``: each person's zone and locale as their platform's profile, and
whether they are away, the ``Absences`` interface), on a manual clock moved in
``--step-minutes`` steps through ``--weeks`` of questions and ``--drain-days`` after them; at
each step the questions that arrived and the answers given meanwhile are applied at their own
simulated time, then the worker does what is due (``run_burst``: a question waits up to a
step for its first pass). Answers go through the real answer path (``engine.answers``, as
``devcore.demo.answer_now`` taps). The core's directory is indexed by chat user for the run
(``org_run.IndexedDirectory``: the same answers as its scan of every person, at a fraction of
the cost with thousands of people), and the engine's memory of away lookups (10 minutes a
person, kept by ``time.monotonic``) is counted on the simulated clock, as it passes in
production. The runs, all of one seed (the same company, questions and answers card for
card):

- ``all rules``: the shipped settings (working hours, one reminder at 75 %, digests of
  normal questions past 3 in 30 minutes, at most 5 a person and day; away-aware asking on where
  the build has ``[clarify.away]``);
- ``no hours``: ``[clarify.hours] enabled = false``;
- ``no reminder``: ``reminder_at_percent = 0``;
- ``no away``: ``[clarify.away] enabled = false`` ("n/a" on a build without that setting);
- ``no digests``: ``digest_threshold = 100`` (the setting's largest: never reached here);
- ``no caps``: ``per_person_daily_cap = 1000`` (the setting's largest).

The model's assumptions (``org_model``), each a knob or a constant there:

- People: ``--people`` in five zones (Berlin 30 %, London 20 %, New York 25 %, Los Angeles
  15 %, Tokyo 10 %), each zone with its locale; teams (workspaces) of 100, one member each
  its steward; all editors with a Slack alias. Each works Monday-Friday 08:00-18:00 local, not
  on a few fixed public holidays of their zone (the default weeks hold Tokyo's 23 November and
  the US's 26-27 November; none in Europe), not while away. The bot's hours know no holidays.
- Absences: ``--away-share`` of the people have one absence of 1-15 whole local days,
  starting between 15 days before the run and its last day (so some are away at the start); 60
  % of them say when they are back (``Away.until``), the rest are open-ended (no date).
- Answers: ``--never-share`` never answer; everyone else answers a card (or a digest's
  question) with a chance of their own, uniform in 55-95 %, after a delay counted in their own
  working time (weekends, holidays and absences do not count), lognormal: a person's median
  itself lognormal around 2 working hours (sigma 0.75), each card's delay around it (sigma 1).
  A reminder brings half of those who have not answered back to the card (after a delay around
  half their median), or sooner than the answer they were going to give. Everyone picks the
  same date (no conflicts); a person whose card already shows the question settled does not
  answer. A card sent outside a person's hours costs nothing more than one sent inside them
  (they answer it in their own working time all the same). Stewards are told of escalations
  but do not answer them here: an escalated question stays unbound, and the core dead-letters
  it when the escalation's window runs out.
- Questions: documents arrive as a Poisson stream (``--rate`` questions per person and
  weekday, a tenth of it on weekend days, at any hour), each with 1-10 ambiguous dates (half of
  the documents have one, two on average), a question each, created together; severity per
  question low 15 %, normal 60 %, high 18 %, critical 7 % (low is never asked); the document's
  1-3 ranked people of one team (2-3 with a critical date: its quorum is 2), the first its
  author, all drawn by how much each person writes (lognormal, sigma 1: a few people write
  much, and are asked much). The tenant's escalation window is 48 h.

Reported per run: time from question (creation) to bound answer, median and p90 over the bound
questions, in wall hours and in working hours (``bot.engine.hours.working_seconds``, Monday-
Friday 08:00-18:00 in the first ranked person's zone), and the share of the questions bound
within one working day (10 working hours), by severity; interruptions (every message: cards,
reminders, digests, steward messages) per person and simulated week, over all the people
(median, p95, max) and over those interrupted at all (median, p95); cards, reminders and
digests delivered while the person was away (by the model); normal cards and digests outside
the person's working hours; messages on their public holiday; steward escalations; dead
letters; skips for the daily cap and for someone away. ``--json`` keeps every figure,
``--table`` prints a kept run's table again. ``--quick`` is the test suite's size (60 people,
3 days and one of drain, 10-minute steps, an away share of at least 0.3 so that some cards
meet someone away); nothing is judged on timings.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import structlog  # noqa: E402
from org_measure import summarise, table  # noqa: E402
from org_model import Knobs, company  # noqa: E402
from org_run import run  # noqa: E402

from bot.settings import ClarifySettings  # noqa: E402

AWAY = "away" in ClarifySettings.model_fields  # the build has [clarify.away]


@dataclass(frozen=True)
class Variant:
    name: str
    clarify: dict[str, Any]
    available: bool = True


def variants() -> list[Variant]:
    """The shipped settings, then each rule switched off in turn."""
    on: dict[str, Any] = {"away": {"enabled": True}} if AWAY else {}
    return [
        Variant("all rules", on),
        Variant("no hours", {**on, "hours": {"enabled": False}}),
        Variant("no reminder", {**on, "reminder_at_percent": 0}),
        Variant("no away", {"away": {"enabled": False}} if AWAY else {}, available=AWAY),
        Variant("no digests", {**on, "digest_threshold": 100}),
        Variant("no caps", {**on, "per_person_daily_cap": 1000}),
    ]


@contextmanager
def quiet() -> Iterator[None]:
    """No log lines while a run goes (a process's logging is as it was after it)."""
    level, config = logging.root.manager.disable, structlog.get_config()
    logging.disable(logging.CRITICAL)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL))
    try:
        yield
    finally:
        logging.disable(level)
        structlog.configure(**config)


def one(knobs: Knobs, variant: Variant, step_minutes: float, drain_days: float
        ) -> dict[str, Any]:
    """One run, in a process of its own (or this one): its summary."""
    org = company(knobs)
    with quiet():
        raw = asyncio.run(run(org, variant.name, variant.clarify,
                              step=timedelta(minutes=step_minutes),
                              drain=timedelta(days=drain_days)))
    return summarise(raw, org)


def knobs_of(args: argparse.Namespace) -> Knobs:
    days = args.days if args.days is not None else args.weeks * 7
    return Knobs(people=args.people, days=days, seed=args.seed, away_share=args.away_share,
                 never_share=args.never_share, rate=args.rate)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--people", type=int, default=1000,
                        help="1,000 by default: six runs of it take about 5 minutes on two "
                             "free cores")
    parser.add_argument("--weeks", type=float, default=2.0, help="weeks of questions")
    parser.add_argument("--days", type=float, help="days of questions (instead of --weeks)")
    parser.add_argument("--drain-days", type=float, default=3.0,
                        help="days the clock runs on after the last question")
    parser.add_argument("--away-share", type=float, default=0.08)
    parser.add_argument("--never-share", type=float, default=0.05)
    parser.add_argument("--rate", type=float, default=0.15,
                        help="questions per person and weekday")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--step-minutes", type=float, default=5.0)
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1),
                        help="runs at a time, each in a process of its own (1: in this one)")
    parser.add_argument("--only", nargs="*", help="only the runs of these names")
    parser.add_argument("--json", help="also write every run's figures to this file")
    parser.add_argument("--quick", action="store_true",
                        help="the test suite's size: 60 people, 3 days and one of drain, "
                             "10-minute steps")
    parser.add_argument("--table", metavar="JSON",
                        help="print the table of a run saved with --json, and nothing else")
    args = parser.parse_args(argv)
    if args.table:
        saved: dict[str, Any] = json.loads(Path(args.table).read_text())
        print(table(list(saved["runs"]), list(saved["runs"].values())))
        return saved
    if args.quick:
        args.people, args.days, args.drain_days, args.step_minutes = 60, 3.0, 1.0, 10.0
        args.away_share = max(args.away_share, 0.3)  # some cards meet someone away
    knobs = knobs_of(args)
    chosen = [v for v in variants() if not args.only or v.name in args.only]
    started = time.perf_counter()
    runnable = [v for v in chosen if v.available]
    if args.jobs > 1 and len(runnable) > 1:
        with ProcessPoolExecutor(max_workers=args.jobs) as pool:
            futures = [pool.submit(one, knobs, v, args.step_minutes, args.drain_days)
                       for v in runnable]
            done = {v.name: f.result() for v, f in zip(runnable, futures, strict=True)}
    else:
        done = {v.name: one(knobs, v, args.step_minutes, args.drain_days) for v in runnable}
    results = [done.get(v.name) for v in chosen]
    seconds = time.perf_counter() - started
    org = company(knobs)
    print(f"\n{knobs.people:,} people, {knobs.days:g} days of questions "
          f"({len(org.questions):,}) from {knobs.start:%a %d %b %Y} and {args.drain_days:g} "
          f"after, clock steps of {args.step_minutes:g} min, seed {knobs.seed}, away share "
          f"{knobs.away_share:g}, never share {knobs.never_share:g}; "
          f"{seconds:.0f} s with {args.jobs} job(s)\n")
    print(table([v.name for v in chosen], results))
    summary = {"knobs": {"people": knobs.people, "days": knobs.days, "seed": knobs.seed,
                         "away_share": knobs.away_share, "never_share": knobs.never_share,
                         "rate": knobs.rate, "start": knobs.start.isoformat(),
                         "drain_days": args.drain_days, "step_minutes": args.step_minutes},
               "away_setting": AWAY, "seconds": seconds,
               "runs": {v.name: done.get(v.name) for v in chosen}}
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=1, default=str))
    return summary


if __name__ == "__main__":
    main()
