"""Asking at each person's own hour: 1,000 people in five time zones, an ingestion
burst at one moment, the clock moved through two days.

A fresh reference core on 127.0.0.1 (the acme tenant with 1,000 extra editors of acme-legal,
200 per zone, each with a Slack alias), one question per person created at the same moment
(Tuesday 1 December 2026, 01:00 UTC: night in Berlin, Tokyo's morning, New York's and Los
Angeles' evening; 70 % normal, 20 % high, 10 % critical, a critical one naming a second
person of the same zone, as it needs two confirmations), the engine as production wires it
with a recording channel whose platform names each person's zone (as Slack's ``users.info``
does), and a manual clock moved in 10-minute steps through 48 hours, the worker doing whatever
is due after each step. What is counted afterwards, from the cards as sent:

- question cards sent outside the person's working hours (Mon-Fri 08:00-18:00 local), for
  normal and high questions: must be 0;
- critical cards' delay after the burst: must be 0 (sent in the burst's own pass);
- the steward's (Madrid) high-severity notices sent outside her hours: must be 0;
- each question's first card's delay after the opening of the person's next working hour;
- reminders: how many questions got more than one (one card, one reminder).

Run: .venv/bin/python bench/hours.py [--people 1000] [--step-minutes 10]
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import logging
import statistics
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import structlog

from bot.audit import MemorySink
from bot.channel import Address, Message, Profile
from bot.channels.recording import RecordingChannel
from bot.clock import ManualClock
from bot.core.client import CoreClient, RetryPolicy
from bot.core.models import CreateClarificationRequest, DeliveryKind
from bot.engine.hours import WorkingHours
from bot.engine.notices import NOTICES_KIND
from bot.engine.reminders import REMINDER_KIND
from bot.process.runtime import EngineParts, build_engine
from bot.process.worker import WorkerConfig
from bot.settings import ClarifySettings, SlackSettings, SlackWorkspace
from bot.store.base import DeliveryKey
from bot.store.memory import MemoryStore
from devcore.client import DevCoreClient
from devcore.core import ReferenceCore, load_scenario
from devcore.scenario import read_scenario
from devcore.server import serve

CLARIFY_TOKEN = "dev-clarify-token-acme"
DEV_TOKEN = "dev-admin-token-local"
T0 = datetime(2026, 12, 1, 1, 0, tzinfo=UTC)  # a Tuesday
ZONES = ("Europe/Berlin", "America/New_York", "Asia/Tokyo", "Asia/Kolkata",
         "America/Los_Angeles")
SLACK = SlackSettings(workspaces=(SlackWorkspace(team_id="T0ACME", enterprise_id="E0ACME",
                                                 tenant="acme"),))
HOURS = WorkingHours()
QUESTION = DeliveryKind.QUESTION.value
REMINDER_KINDS = frozenset({REMINDER_KIND})  # the reminder's own delivery kind


@dataclass
class Sent:
    at: datetime
    person_id: str
    user_id: str
    kind: str
    clarification_id: str


@dataclass
class Platform(RecordingChannel):
    """Records when each message went out; its platform names each user's zone."""

    clock: ManualClock | None = None
    zones: dict[str, str] = field(default_factory=dict)
    log: list[Sent] = field(default_factory=list)

    async def send(self, address: Address, message: Message, *, key: DeliveryKey) -> str:
        ref = await super().send(address, message, key=key)
        assert self.clock is not None
        self.log.append(Sent(self.clock.now(), address.person_id, address.user_id, key.kind,
                             key.clarification_id))
        return ref

    async def profile(self, address: Address) -> Profile | None:
        return Profile(time_zone=self.zones.get(address.user_id))


async def _no_sleep(_: float) -> None:
    return None


def _people(n: int) -> list[dict[str, Any]]:
    return [{"id": f"p-h{i:04d}", "tenant": "acme", "display_name": f"Person {i}",
             "email": f"h{i}@acme.example", "time_zone": "UTC",  # the platform knows better
             "memberships": [{"workspace": "acme-legal", "role": "editor"}],
             "slack": [{"user_id": f"U0H{i:05d}", "team_id": "T0ACME",
                        "enterprise_id": "E0ACME"}]}
            for i in range(n)]


def _spec(i: int, n: int, severity: str) -> CreateClarificationRequest:
    spec = copy.deepcopy(read_scenario("acme")["clarifications"][1])
    tag = f"h{i:05d}"
    spec["target"] = f"fact-{tag}"
    spec["document"]["document_id"] = f"doc-{tag}"
    spec["document"]["content_hash"] = f"sha256:{tag}"
    spec["document"]["acl"] = {"workspace_id": "acme-legal",
                               "read_roles": ["viewer", "editor", "steward"]}
    second = (i + len(ZONES)) % n  # the same zone
    people = [f"p-h{i:04d}", f"p-h{second:04d}"] if severity == "critical" \
        else [f"p-h{i:04d}"]
    spec["authority"] = {"authored_by": people, "named": [], "owned_by": []}
    spec["severity_hint"] = severity
    return CreateClarificationRequest.model_validate(spec)


def _severity(i: int) -> str:
    roll = (i * 37) % 100  # a fixed spread: 70 normal, 20 high, 10 critical of each 100
    return "critical" if roll < 10 else "high" if roll < 30 else "normal"


async def run(people: int, step: timedelta) -> dict[str, Any]:
    clock = ManualClock(T0)
    data = read_scenario("acme")
    data["clarifications"] = []
    data["people"] = [*data["people"], *_people(people)]
    core = ReferenceCore(clock=clock)
    load_scenario(core, data)
    zone_of_user = {f"U0H{i:05d}": ZONES[i % len(ZONES)] for i in range(people)}
    zone_of_user["U0MARIA"] = "Europe/Madrid"
    channel = Platform(clock=clock, zones=zone_of_user)
    severity: dict[str, str] = {}
    started = time.perf_counter()
    async with serve(core) as url:
        async with DevCoreClient(base_url=url, token=DEV_TOKEN) as dev:
            for i in range(people):
                created = await dev.create_clarification(request=_spec(i, people, _severity(i)))
                severity[created.clarification.id] = _severity(i)
        async with CoreClient(base_url=url, token=CLARIFY_TOKEN,
                              retry=RetryPolicy(max_attempts=1), clock=clock) as client:
            engine = build_engine(EngineParts(
                core=client, store=MemoryStore(clock=clock), channels={"slack": channel},
                clarify=ClarifySettings(channels=("slack",), per_person_daily_cap=1000),
                clock=clock, audit_sink=MemorySink(), slack=SLACK, sleep=_no_sleep,
                worker=WorkerConfig(concurrency=8, heartbeat_seconds=3600)))
            end = T0 + timedelta(days=2)
            await engine.worker.run_burst()
            while clock.now() < end:
                clock.advance(step)
                await engine.worker.run_burst()
            outcomes = dict(engine.worker.outcomes)
    return _measure(channel.log, severity, zone_of_user, outcomes,
                    time.perf_counter() - started, people)


def _zone(zones: dict[str, str], sent: Sent) -> ZoneInfo:
    """The zone the platform names for the person a message went to (every one names one)."""
    return ZoneInfo(zones.get(sent.user_id, "UTC"))


def _measure(log: list[Sent], severity: dict[str, str], zones: dict[str, str],
             outcomes: dict[Any, int], seconds: float, people: int) -> dict[str, Any]:
    questions = [s for s in log if s.kind == QUESTION]
    outside = [s for s in questions if severity[s.clarification_id] != "critical"
               and not HOURS.open_at(s.at, _zone(zones, s))]
    critical = [s for s in questions if severity[s.clarification_id] == "critical"]
    critical_delay = max(((s.at - T0).total_seconds() for s in critical), default=0.0)
    notices = [s for s in log if s.kind == NOTICES_KIND]
    notices_outside = [s for s in notices
                       if not HOURS.open_at(s.at, _zone(zones, s))]
    first: dict[str, Sent] = {}
    for s in questions:
        first.setdefault(s.clarification_id, s)
    after_open = [(s.at - HOURS.next_open(T0, _zone(zones, s))).total_seconds()
                  / 60 for s in first.values() if severity[s.clarification_id] != "critical"]
    # one reminder per card: per question and person (a question's next candidate, or the
    # several people of a critical one, each have a card and may each be reminded once)
    reminded = [s for s in log if s.kind in REMINDER_KINDS]
    reminders = Counter((s.clarification_id, s.user_id) for s in reminded)
    reminders_outside = [s for s in reminded
                         if not HOURS.open_at(s.at, _zone(zones, s))]
    by_zone: dict[str, int] = defaultdict(int)
    for s in first.values():
        by_zone[zones.get(s.user_id, "?")] += 1
    return {
        "people": people, "questions": len(severity),
        "asked": len(first), "cards": len(questions),
        "outside": len(outside), "critical_cards": len(critical),
        "critical_delay": critical_delay, "notices": len(notices),
        "notices_outside": len(notices_outside),
        "median_after_open": statistics.median(after_open) if after_open else 0.0,
        "max_after_open": max(after_open, default=0.0),
        "reminded": len(reminders), "reminded_twice": sum(1 for c in reminders.values() if c > 1),
        "reminders_outside": len(reminders_outside),
        "by_zone": dict(by_zone), "held": outcomes.get("held", 0), "seconds": seconds,
    }


def table(r: dict[str, Any], step: timedelta) -> str:
    minutes = int(step.total_seconds() // 60)
    reminders = (f"{r['reminded']} cards reminded, {r['reminded_twice']} more than once, "
                 f"{r['reminders_outside']} outside working hours"
                 if r["reminded"] else "none sent (no reminders in this build)")
    rows = [
        (f"people (five zones, {r['people'] // 5:,} each)", f"{r['people']:,}"),
        ("questions created at one moment", f"{r['questions']:,}"),
        ("questions asked within the two days", f"{r['asked']:,}"),
        ("question cards sent", f"{r['cards']:,}"),
        ("jobs held for working hours", f"{r['held']:,}"),
        ("normal/high cards outside the person's working hours", f"{r['outside']}"),
        ("critical cards / latest critical delay", f"{r['critical_cards']} / "
                                                   f"{r['critical_delay']:.0f} s"),
        ("steward notices / outside the steward's hours",
         f"{r['notices']} / {r['notices_outside']}"),
        (f"first card after the hour opened, median / max ({minutes}-min clock steps)",
         f"{r['median_after_open']:.0f} / {r['max_after_open']:.0f} min"),
        ("reminders", reminders),
        ("wall time", f"{r['seconds']:.0f} s"),
    ]
    width = max(len(k) for k, _ in rows)
    out = [f"| {'measure':<{width}} | value |", f"|{'-' * (width + 2)}|-------|"]
    out += [f"| {k:<{width}} | {v} |" for k, v in rows]
    zones = ", ".join(f"{z}: {c}" for z, c in sorted(r["by_zone"].items()))
    return "\n".join(out) + f"\n\nasked per zone: {zones}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--people", type=int, default=1000)
    parser.add_argument("--step-minutes", type=int, default=10)
    args = parser.parse_args()
    logging.disable(logging.CRITICAL)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL))
    step = timedelta(minutes=args.step_minutes)
    result = asyncio.run(run(args.people, step))
    print(table(result, step))
    failed = result["outside"] or result["critical_delay"] or result["notices_outside"] \
        or result["reminded_twice"] or result.get("reminders_outside")
    raise SystemExit(1 if failed else 0)


if __name__ == "__main__":
    main()
