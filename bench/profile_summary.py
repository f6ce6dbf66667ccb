"""Summarise a py-spy raw profile (collapsed stacks): where the samples' innermost frames are,
by library, and how often each library is on the stack (bench/delivery.py --profile). Samples
of the event loop waiting in ``select`` are left out: they are idle time, not work; so are the
imports at start-up."""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path

GROUPS = [("httpx/httpcore", ("httpx/", "httpcore/", "h11/", "anyio/")),
          ("aiohttp", ("aiohttp/", "multidict/", "yarl/")),
          ("slack_sdk", ("slack_sdk/",)), ("redis-py", ("redis/",)),
          ("pydantic", ("pydantic", )), ("structlog/logging", ("structlog/", "logging/")),
          ("json", ("json/",)), ("asyncio", ("asyncio/",)), ("ssl/socket", ("ssl.py", "socket")),
          ("prometheus", ("prometheus_client/",)),
          ("bot: engine", ("bot/engine/",)), ("bot: core client", ("bot/core/",)),
          ("bot: store", ("bot/store/",)), ("cards (rendering)", ("cards/",)),
          ("adapters/slack", ("adapters/slack/",)), ("bot: other", ("bot/",))]
FRAME = re.compile(r"^(?P<func>.*?) \((?P<file>[^:)]*)(?::\d+)?\)$")


def group(file: str) -> str:
    for name, needles in GROUPS:
        if any(n in file for n in needles):
            return name
    return "other"


def summarise(path: Path, top: int = 15) -> str:
    own: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = 0
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        n = int(count)
        frames = [f for f in stack.split(";") if f]
        if not frames or "process " in frames[0] and len(frames) == 1:
            continue
        if "EpollSelector.select" in frames[-1]:
            continue  # the event loop waiting for I/O: idle, not work
        if any("<frozen importlib._bootstrap>" in f for f in frames):
            continue  # importing modules at start-up, not delivering
        total += n
        inner = FRAME.match(frames[-1].strip())
        own[group(inner.group("file") if inner else frames[-1])] += n
        for name in {group((FRAME.match(f.strip()) or re.match("(.*)", f)).group(0))
                     for f in frames}:
            inclusive[name] += n
    lines = [f"{total} samples", "| where | self % | on stack % |", "|---|---:|---:|"]
    for name, n in own.most_common(top):
        lines.append(f"| {name} | {100 * n / total:.1f} | {100 * inclusive[name] / total:.1f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        print(arg)
        print(summarise(Path(arg)))
