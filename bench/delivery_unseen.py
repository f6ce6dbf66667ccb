"""The ``--unseen`` phase of bench/delivery.py: first cards to people the bot has not seen, in
six time zones, with working hours on. Each person's zone comes from the fake Slack only (the
reference core names none), so until the bot has read it a question waits (held a minute,
docs/delivery.md, "Working hours"). The zones are chosen when the bench starts among those
whose working hours (08:00-18:00, every day of the week, so that a weekend run measures too)
are open now and stay open for the next hour: every card is due at once, and how long after
its question it went out is the delay the profiles cost.

Reported: the cards' time against the bound the postMessage buckets imply, each card's delay
after its question was created (the bench creates the questions in loads of ``--chunk``, the
next when the last one's cards are out; the first load before the worker starts, so its
start-up is in the first load's delays), cards posted outside the person's hours (must be 0),
and the Slack calls the profiles took (users.info, users.list, dnd.info, dnd.teamInfo)."""

from __future__ import annotations

import statistics
from datetime import UTC, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

UNSEEN = "bot as shipped, unseen people"
START, END = time(8, 0), time(18, 0)
MARGIN = timedelta(hours=1)  # a chosen zone stays open this long after the bench starts
CANDIDATES = ("Pacific/Honolulu", "America/Anchorage", "America/Los_Angeles", "America/Denver",
              "America/Chicago", "America/New_York", "America/Sao_Paulo", "Atlantic/Azores",
              "Europe/London", "Europe/Berlin", "Europe/Athens", "Europe/Moscow", "Asia/Dubai",
              "Asia/Karachi", "Asia/Kolkata", "Asia/Dhaka", "Asia/Bangkok", "Asia/Shanghai",
              "Asia/Tokyo", "Australia/Sydney", "Pacific/Noumea", "Pacific/Auckland",
              "Pacific/Tongatapu", "Pacific/Kiritimati")


def _open(zone: str, at: datetime) -> bool:
    local = at.astimezone(ZoneInfo(zone))
    return START <= local.time() < END


def zones_open_now(now: datetime | None = None) -> tuple[str, ...]:
    """Six zones (fewer if fewer are) whose working hours are open now and in an hour."""
    now = now or datetime.now(UTC)
    found = [z for z in CANDIDATES if _open(z, now) and _open(z, now + MARGIN)]
    if not found:
        raise SystemExit("no candidate zone is in its working hours now")
    step = max(1, len(found) // 6)
    return tuple(found[::step][:6])


def open_hours() -> str:
    """The workers' ``[clarify.hours]``: on, every day, 08:00-18:00."""
    return f'enabled = true\ndays = "mon-sun"\nstart = "{START:%H:%M}"\nend = "{END:%H:%M}"\n'


def unseen_report(row: Any, zones: tuple[str, ...], rate: float, burst: int) -> str:
    """The phase's lines under the table."""
    bound = (row.cards - burst) / rate
    delays: list[float] = []
    beyond: list[float] = []  # past the moment the postMessage buckets would have let it go
    outside = 0
    for channel, at in row.first_posts.items():
        n = int(channel.removeprefix("U0D"))  # bench users are U0D<n>, question n to user n
        delays.append(at - row.loads[min(n // row.chunk, len(row.loads) - 1)])
        beyond.append(delays[-1] - max(0.0, (n % row.chunk - burst) / rate))
        if not _open(zones[n % len(zones)], datetime.fromtimestamp(at, UTC)):
            outside += 1
    delays.sort()
    beyond.sort()
    calls = row.slack_calls
    lines = [
        f"unseen people: {row.cards:,} cards to as many people in {', '.join(zones)}; "
        f"{row.seconds:.1f} s, the buckets allow no less than {bound:.1f} s ((cards - {burst}) / "
        f"{rate:g} per second): ratio {row.seconds / bound:.2f}" if bound > 0 else "",
        f"  each card after its question: median {statistics.median(delays):.1f} s, "
        f"95th {delays[int(len(delays) * 0.95) - 1]:.1f} s, max {delays[-1]:.1f} s; "
        f"outside the person's working hours: {outside}" if delays else "  no card",
        f"  and past the moment the postMessage buckets would let it go (its place in its "
        f"load): median {statistics.median(beyond):.1f} s, 95th "
        f"{beyond[int(len(beyond) * 0.95) - 1]:.1f} s, max {beyond[-1]:.1f} s" if beyond else "",
        "  Slack calls: " + ", ".join(f"{m} {calls.get(m, 0):,}" for m in (
            "users.info", "users.list", "dnd.info", "dnd.teamInfo", "chat.postMessage")),
        f"  Redis commands per card {row.redis_per_card:.1f} (EVALSHA "
        f"{row.evalsha_per_card:.1f}); by command: " + ", ".join(
            f"{k} {v / max(1, row.cards):.2f}" for k, v in sorted(
                row.redis_calls.items(), key=lambda kv: -kv[1])[:10]),
    ]
    return "\n".join(line for line in lines if line)
