"""Slack acknowledgement time under a burst of valid clicks: the full bot beside a bare bolt app.

Run: .venv/bin/python bench/ack_burst.py [--clicks 1000] [--rounds 3] [--concurrency 50]
         [--redis redis://127.0.0.1:6379/13] [--people N] [--outcome bind|attest]
         [--role split|all] [--workers 1] [--consumers N] [--cache-seconds S] [--nice N]
         [--bot-root PATH] [--profile]

Both sides run in one run, on 127.0.0.1, every server in its own process:
(a) the bot as it ships (its settings the shipped ones, but for where things are): ``clarify-bot
    serve --role web`` (verifies, makes each answer durable, acknowledges) and ``--role worker``
    (the outbox's consumers forward to the core), as the Procfile deploys them, on the Redis
    store; from ``--bot-root`` when given (another checkout: the before of a before-and-after);
    the reference core (``clarify-bot devcore``) with one question per click and one verified
    person per click (editors, so an answer binds; ``--outcome attest``: viewers), none of them
    the warm-up's, so nothing of a person or a question is known before their click; the local
    Slack stand-in (devslack), where each person is told privately what their answer did;
(b) a bare slack-bolt AsyncApp on aiohttp whose only listener acknowledges.
Every click is a distinct (clarification, person, answer), signed like Slack (slack_sdk's
SignatureVerifier). Each side first gets a short warm-up of its own clicks (not counted); then
the sides take turns, ``--rounds`` rounds of ``--clicks`` each. The report (docs/benchmarks.md,
"Clicks from distinct people"): per round and side the acknowledgement latency p50/p95/p99/max,
the rate, the CPU per click of the bare app and of the bot's web, worker and core processes,
and the Redis scripts per click; the worst round's p99 and rate ratios; and a check at the core
that every (clarification, person) has exactly one response. Redis keys live under a throw-away
prefix and are deleted afterwards; no database is flushed.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import uuid4

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import aiohttp  # noqa: E402
from ack_burst_world import (  # noqa: E402
    ACTION_KEY,
    BOT_TOKEN,
    CLARIFY_TOKEN,
    SECRET,
    TEAM,
    Click,
    scenario,
    serve_bare,
    serve_fake_slack,
    signed,
    toml,
)

WARM_UP = 200
BIN = Path(sys.executable).parent
QUIET, QUIET_STEP = 0.05, 0.25  # servers' CPU (cores) under which the machine counts as quiet


# ---------------------------------------------------------------- measuring


@dataclass
class Burst:
    """One side's requests of one round: latencies, statuses, what the responses showed (Teams)
    and the seconds from the first request sent to the last answered."""

    latencies: list[float]
    statuses: Counter[int]
    seconds: float
    shown: Counter[str] = field(default_factory=Counter)

    def pct(self, p: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))] * 1000

    @property
    def rps(self) -> float:
        return len(self.latencies) / self.seconds

    @property
    def errors(self) -> int:
        return sum(n for status, n in self.statuses.items() if status != 200)


async def burst(url: str, requests: list[tuple[bytes, dict[str, str]]], concurrency: int,
                shown: Callable[[bytes], str] | None = None) -> Burst:
    """Every request sent, ``concurrency`` at a time; ``shown`` names what a response showed."""
    queue: asyncio.Queue[tuple[bytes, dict[str, str]]] = asyncio.Queue()
    for request in requests:
        queue.put_nowait(request)
    latencies: list[float] = []
    statuses: Counter[int] = Counter()
    seen: Counter[str] = Counter()
    last = 0.0
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as http:
        async def worker() -> None:
            nonlocal last
            while not queue.empty():
                body, headers = queue.get_nowait()
                started = time.perf_counter()
                async with http.post(url, data=body, headers=headers) as response:
                    raw = await response.read()
                    status = response.status
                done = time.perf_counter()
                latencies.append(done - started)
                last = max(last, done)
                statuses[status] += 1
                if shown is not None:
                    seen[shown(raw)] += 1

        first = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
    return Burst(latencies=latencies, statuses=statuses, seconds=last - first, shown=seen)


@dataclass
class Round:
    """One round of both sides, taking turns: each side's burst, the CPU milliseconds per
    request its serving process spent meanwhile, and the Redis scripts per request of the
    bot's burst (every bot process's, until its outbox was empty)."""

    bare: Burst
    bot: Burst
    bare_cpu: float
    web_cpu: float
    worker_cpu: float
    core_cpu: float  # the reference core's, answering the bot (on the same cores)
    scripts: float  # Redis scripts per request, the bot's processes' (their round trips)
    script_ms: float  # the milliseconds Redis spent in them, per request

    @property
    def ratio(self) -> float:
        return self.bot.pct(99) / self.bare.pct(99)


async def take_turns(sides: Mapping[str, Callable[[Any], Awaitable[Burst]]], parts: list[Any],
                     procs: Processes, *, redis_url: str, prefix: str, cpu_of: dict[str, str],
                     ) -> list[Round]:
    """``len(parts)`` rounds: the bare side and the bot take turns on the same requests (the
    bot first in every other round), so that both meet the same load from the rest of the
    machine; after each bot burst, inside its round, the outbox drained and the bot's processes
    quiet again (their follow-ups done), so neither side's burst meets the other's leftovers."""
    rounds = []
    for n, part in enumerate(parts):
        got: dict[str, Burst] = {}
        cpu: dict[str, float] = {}
        for side in (("bare", "bot") if n % 2 == 0 else ("bot", "bare")):
            before, scripts = procs.cpu(), await redis_scripts(redis_url)
            got[side] = await sides[side](part)
            if side == "bot":
                await until_drained(redis_url, prefix, 300)
                await procs.until_quiet()  # its follow-ups too, before the next side's burst
                ran = await redis_scripts(redis_url)
                cpu["scripts"] = (ran[0] - scripts[0]) / len(part)
                cpu["script_ms"] = (ran[1] - scripts[1]) / 1000 / len(part)
            after = procs.cpu()
            for role, name in cpu_of.items():
                if role.startswith(side):
                    cpu[role] = (after[name] - before[name]) * 1000 / len(part)
        rounds.append(Round(bare=got["bare"], bot=got["bot"], bare_cpu=cpu["bare"],
                            web_cpu=cpu["bot web"], worker_cpu=cpu.get("bot worker", 0.0),
                            core_cpu=cpu["bot core"],
                            scripts=cpu["scripts"], script_ms=cpu["script_ms"]))
    return rounds


def print_rounds(rounds: list[Round], *, bare_name: str, unit: str) -> None:
    """The table docs/benchmarks.md takes: every round of both sides, then the worst."""
    print(f"| round | side | {unit} | rate/s | p50 ms | p95 ms | p99 ms | max ms | non-200 | "
          f"CPU ms per {unit[:-1]} (web; worker; core) | Redis scripts (ms) per {unit[:-1]} |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n, r in enumerate(rounds, 1):
        for name, b, cpu, redis in ((bare_name, r.bare, f"{r.bare_cpu:.2f}", "-"),
                                    ("clarify-bot", r.bot,
                                     f"{r.web_cpu:.2f}; {r.worker_cpu:.2f}; {r.core_cpu:.2f}",
                                     f"{r.scripts:.2f} ({r.script_ms:.3f})")):
            print(f"| {n} | {name} | {len(b.latencies)} | {b.rps:,.0f} | {b.pct(50):.1f} | "
                  f"{b.pct(95):.1f} | {b.pct(99):.1f} | {max(b.latencies) * 1000:.1f} | "
                  f"{b.errors} | {cpu} | {redis} |")
    worst = max(rounds, key=lambda r: r.ratio)
    slowest = min(rounds, key=lambda r: r.bot.rps / r.bare.rps)
    print(f"\np99 ratio bot/bare by round: {', '.join(f'{r.ratio:.2f}' for r in rounds)}; "
          f"worst: {worst.ratio:.2f}")
    print("rate ratio bot/bare by round: "
          f"{', '.join(f'{r.bot.rps / r.bare.rps:.2f}' for r in rounds)}; "
          f"worst: {slowest.bot.rps / slowest.bare.rps:.2f}")
    print(f"worst p99: bot {max(r.bot.pct(99) for r in rounds):.1f} ms, "
          f"bare {max(r.bare.pct(99) for r in rounds):.1f} ms")


async def redis_scripts(url: str) -> tuple[int, float]:
    """Scripts the Redis server has run so far, and their microseconds (INFO commandstats,
    every client's). Every store step of a click is a script; the commands inside one are
    counted by Redis as well, so scripts are what stands for round trips here."""
    import redis.asyncio as aioredis

    client = aioredis.from_url(url)
    try:
        stats = await client.info("commandstats")
    finally:
        await client.aclose()
    scripts = [stats.get(f"cmdstat_{name}", {}) for name in ("evalsha", "eval")]
    return (sum(int(s.get("calls", 0)) for s in scripts),
            sum(float(s.get("usec", 0)) for s in scripts))


# ---------------------------------------------------------------- orchestration


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _until_up(url: str, *, ok: tuple[int, ...] = (200,), within: float = 60) -> None:
    deadline = time.monotonic() + within
    async with aiohttp.ClientSession() as http:
        while time.monotonic() < deadline:
            try:
                async with http.get(url) as response:
                    if response.status in ok:
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.1)
    raise RuntimeError(f"{url} did not come up")


def _cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Processes:
    def __init__(self, logs: Path) -> None:
        self.running: list[subprocess.Popen[bytes]] = []
        self.names: list[str] = []
        self.logs = logs

    def cpu(self) -> dict[str, float]:
        """CPU seconds so far per process (this one included, as "load generator")."""
        used = {name: _cpu_seconds(proc.pid) for name, proc in zip(self.names, self.running,
                                                                 strict=True)}
        used["load generator"] = _cpu_seconds(os.getpid())
        return used

    async def until_quiet(self, within: float = 120.0) -> float:
        """Seconds until the servers (not this load generator) have used under ``QUIET`` of a
        core for a whole second: what a burst left behind (an outbox's follow-ups, a
        collection) is done before the next burst starts."""
        started = time.perf_counter()
        last = self.cpu()
        quiet_since = time.perf_counter()
        while time.perf_counter() - started < within:
            await asyncio.sleep(QUIET_STEP)
            now = self.cpu()
            busy = sum(now[name] - last[name] for name in self.names) / QUIET_STEP
            last = now
            if busy > QUIET:
                quiet_since = time.perf_counter()
            elif time.perf_counter() - quiet_since >= 1.0:
                break
        return time.perf_counter() - started

    def start(self, name: str, command: list[str], env: dict[str, str] | None = None,
              stdout: int | None = None, cwd: Path = ROOT) -> subprocess.Popen[bytes]:
        log = open(self.logs / f"{name}.log", "wb")  # noqa: SIM115 - closed with the process
        proc = subprocess.Popen(command, cwd=cwd, env={**os.environ, **(env or {})},
                                stdout=stdout if stdout is not None else log, stderr=log)
        self.running.append(proc)
        self.names.append(name)
        return proc

    def stop(self) -> None:
        """Newest first (the bot before the core it calls); SIGINT, which py-spy forwards after
        writing its profile and every server here treats as "stop"."""
        for proc in reversed(self.running):
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()


def bot_config(*, core: str, slack: str, redis: str, prefix: str, port: int) -> str:
    """The shipped settings but for where things are: only what must name this run is set
    (``[answers]``, ``[limits]`` and ``[worker]`` as they ship, or as the options say)."""
    return f"""
[clarify]
enabled = false
channels = "slack"
[core]
url = "{core}"
[server]
host = "127.0.0.1"
port = {port}
[store]
backend = "redis"
[redis]
url = "{redis}"
key_prefix = "{prefix}"
[slack]
api_url = "{slack}"
[[slack.workspaces]]
team_id = "{TEAM}"
tenant = "bench"
"""


def shipped_overrides(args: argparse.Namespace) -> dict[str, str]:
    """What the options change from the shipped settings, as the bot reads its environment."""
    env = {"CLARIFY_BOT_ANSWERS__CONSUMERS": args.consumers,
           "CLARIFY_BOT_ANSWERS__CACHE_SECONDS": args.cache_seconds,
           "CLARIFY_BOT_WORKER__NICE": args.nice}
    return {name: str(value) for name, value in env.items() if value is not None}


def bot_command(args: argparse.Namespace, procs: Processes, name: str, role: str,
                serve: list[str]) -> tuple[list[str], dict[str, str], Path]:
    """How one bot process starts: ``serve`` (the program and its leading arguments) with the
    config and role, from ``--bot-root`` when given (its own code on the path), under py-spy
    with ``--profile``; and its working folder."""
    root = bot_root(args)
    command = [*serve, "serve", "--config", str(procs.logs / f"{name}.toml"), "--role", role]
    if args.profile:  # py-spy's raw samples, written when the process stops
        command = [str(BIN / "py-spy"), "record", "--format", "raw", "--rate", "200",
                   "--output", str(procs.logs / f"{name}.pyspy.txt"), "--", *command]
    env = {"PYTHONPATH": str(root)} if args.bot_root else {}
    return command, {**env, **shipped_overrides(args)}, root


def bot_root(args: argparse.Namespace) -> Path:
    """The checkout the bot's processes run from."""
    return Path(args.bot_root).resolve() if args.bot_root else ROOT


def roles(args: argparse.Namespace, web_port: int) -> list[tuple[str, str, int]]:
    """(name, role, port) of each bot process: a web process and the workers beside it, as
    the Procfile deploys them, or one ``all``."""
    if args.role == "all":
        return [("all", "all", web_port)]
    return [("web", "web", web_port)] + [
        (f"worker{n}" if n else "worker", "worker", _free_port()) for n in range(args.workers)]


def cpu_names(args: argparse.Namespace) -> dict[str, str]:
    """The processes whose CPU each side's row reports."""
    if args.role == "all":
        return {"bare": "bare", "bot web": "all", "bot core": "devcore"}
    return {"bare": "bare", "bot web": "web", "bot worker": "worker", "bot core": "devcore"}


async def count_responses(core_url: str, ids: list[str]) -> Counter[tuple[str, str]]:
    from bot.core.client import CoreClient

    counts: Counter[tuple[str, str]] = Counter()
    async with CoreClient(base_url=core_url, token=CLARIFY_TOKEN) as core:
        for cid in ids:
            c = await core.get_clarification(clarification_id=cid)
            counts.update((cid, r.responder) for r in c.responses)
    return counts


async def until_drained(redis_url: str, prefix: str, within: float) -> tuple[float, int]:
    """Seconds until the outbox is empty (looked at every 20 ms), and how many are parked."""
    from bot.store.redis import RedisStore

    started = time.perf_counter()
    async with RedisStore.from_url(redis_url, prefix=prefix) as store:
        while time.perf_counter() - started < within:  # noqa: ASYNC110 - another process's work
            if not await store.outbox_size():
                break
            await asyncio.sleep(0.02)
        return time.perf_counter() - started, await store.outbox_parked()


async def forget(redis_url: str, prefix: str) -> None:
    import redis.asyncio as aioredis

    client = aioredis.from_url(redis_url, decode_responses=True)
    async for name in client.scan_iter(f"{prefix}:*"):
        await client.delete(name)
    await client.aclose()


@dataclass(frozen=True, slots=True)
class Servers:
    core_url: str
    bot_url: str
    bare_url: str


async def start_servers(args: argparse.Namespace, procs: Processes, *, prefix: str,
                        clicks: int) -> Servers:
    """The reference core, the fake Slack, the bare app and the bot, each its own process."""
    core_port, web_port, bare_port = (_free_port() for _ in range(3))
    core_url = f"http://127.0.0.1:{core_port}"
    scenario_file = procs.logs / "scenario.toml"
    scenario_file.write_text(toml(scenario(clicks, people_of(args, clicks),
                                           binding=args.outcome == "bind")))
    procs.start("devcore", [str(BIN / "clarify-bot"), "devcore", "--port", str(core_port),
                            "--scenario", str(scenario_file)])
    slack_proc = procs.start("localslack", [sys.executable, __file__, "--serve", "localslack",
                                           "--people", str(people_of(args, clicks))],
                             stdout=subprocess.PIPE)
    await _until_up(f"{core_url}/healthz", within=120)
    assert slack_proc.stdout is not None
    slack_url = slack_proc.stdout.readline().decode().strip()
    procs.start("bare", [sys.executable, __file__, "--serve", "bare", "--port", str(bare_port),
                         "--slack", slack_url])
    env = {"CLARIFY_BOT_CORE_TOKEN": CLARIFY_TOKEN, "SLACK_BOT_TOKEN": BOT_TOKEN,
           "SLACK_SIGNING_SECRET": SECRET, "CLARIFY_BOT_ACTION_SIGNING_KEY": ACTION_KEY}
    for name, role, port in roles(args, web_port):
        (procs.logs / f"{name}.toml").write_text(bot_config(
            core=core_url, slack=slack_url, redis=args.redis, prefix=prefix, port=port))
        command, extra, cwd = bot_command(args, procs, name, role, [
            sys.executable, "-c", "from clarify_bot.cli import main; main()"])
        procs.start(name, command, env={**env, **extra}, cwd=cwd)
    await _until_up(f"http://127.0.0.1:{web_port}/healthz")
    await _until_up(f"http://127.0.0.1:{bare_port}/slack/events", ok=(404, 405))
    return Servers(core_url=core_url, bot_url=f"http://127.0.0.1:{web_port}/slack/events",
                   bare_url=f"http://127.0.0.1:{bare_port}/slack/events")


def people_of(args: argparse.Namespace, clicks: int) -> int:
    """``--people``, else one person per click (none clicks twice, none of the warm-up's)."""
    return args.people or clicks


async def run(args: argparse.Namespace) -> None:
    import logging

    import structlog

    from cards.actions import ActionCodec

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    total = WARM_UP + args.clicks * args.rounds
    people = people_of(args, total)
    procs = Processes(Path(tempfile.mkdtemp(prefix="ack-burst-")))
    prefix = f"bench{uuid4().hex[:8]}"
    codec = ActionCodec(ACTION_KEY.encode())

    def requests(batch: list[Click]) -> list[tuple[bytes, dict[str, str]]]:
        stamp, now = str(int(time.time())), time.time()
        return [signed(c, codec=codec, stamp=stamp, acted=now + n / 1e6)
                for n, c in enumerate(batch)]

    try:
        servers = await start_servers(args, procs, prefix=prefix, clicks=total)
        # click n: clarification n, person n (of --people, in turn): every (clarification,
        # person) once, and with one person per click nobody's identity is known beforehand
        clicks = [Click(f"clr-{n + 1:05d}", n % people, n % 2) for n in range(total)]
        warm = clicks[:WARM_UP]
        await burst(servers.bare_url, requests(warm), args.concurrency)
        await burst(servers.bot_url, requests(warm), args.concurrency)
        await until_drained(args.redis, prefix, 120)
        await procs.until_quiet()
        load_before = os.getloadavg()
        parts = [clicks[WARM_UP + n * args.clicks:WARM_UP + (n + 1) * args.clicks]
                 for n in range(args.rounds)]
        sides = {"bare": lambda part: burst(servers.bare_url, requests(part), args.concurrency),
                 "bot": lambda part: burst(servers.bot_url, requests(part), args.concurrency)}
        rounds = await take_turns(sides, parts, procs, redis_url=args.redis, prefix=prefix,
                                  cpu_of=cpu_names(args))
        drained, parked = await until_drained(args.redis, prefix, 300)
        load = (load_before, os.getloadavg())
        counts = await count_responses(servers.core_url, [c.clarification_id for c in clicks])
        report(args, rounds, parked, counts, clicks, load, procs.logs)
    finally:
        procs.stop()
        await forget(args.redis, prefix)


def at_the_core(counts: Counter[tuple[str, str]], expected: list[Any]) -> str:
    """Whether every (clarification, person) of the run is at the core exactly once."""
    wanted = {(c.clarification_id, f"p-{c.user}") for c in expected}
    once = all(counts[key] == 1 for key in wanted) and set(counts) == wanted
    duplicates = sum(n - 1 for n in counts.values() if n > 1)
    return (f"answers at the core: {sum(counts.values())} for {len(wanted)} "
            f"(clarification, person) pairs; exactly once: {once}; duplicates: {duplicates}")


def settings_line(args: argparse.Namespace, people: int, unit: str) -> str:
    overrides = shipped_overrides(args)
    return (f"bot role {args.role}" + (f", {args.workers} worker(s)" if args.role == "split"
                                       else "")
            + f"; from {args.bot_root or ROOT}; {people} people, outcome {args.outcome}; "
            + f"{args.concurrency} at once; {args.rounds} rounds of {unit} a side, taking "
            + "turns; settings: " + (", ".join(f"{k}={v}" for k, v in overrides.items())
                                     or "as shipped"))


def report(args: argparse.Namespace, rounds: list[Round], parked: int,
           counts: Counter[tuple[str, str]], expected: list[Click],
           load: tuple[tuple[float, ...], tuple[float, ...]], logs: Path) -> None:
    print(f"\n{settings_line(args, people_of(args, len(expected)), f'{args.clicks} clicks')}; "
          f"logs in {logs}")
    print_rounds(rounds, bare_name="bare bolt app (ack only)", unit="clicks")
    print(f"outbox parked: {parked}")
    print(at_the_core(counts, expected))
    print(f"load average (1, 5, 15 min) before: {tuple(round(x, 2) for x in load[0])}, "
          f"after: {tuple(round(x, 2) for x in load[1])}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--clicks", type=int, default=1000, help="clicks per round and side")
    parser.add_argument("--rounds", type=int, default=3,
                        help="rounds each side gets, taking turns")
    parser.add_argument("--concurrency", type=int, default=50)
    add_shared(parser)
    parser.add_argument("--serve", choices=["bare", "localslack"])
    parser.add_argument("--port", type=int)
    parser.add_argument("--slack")
    args = parser.parse_args()
    if args.serve == "bare":
        serve_bare(args.port, args.slack)
    elif args.serve == "localslack":
        serve_fake_slack(args.people)
    else:
        asyncio.run(run(args))


def add_shared(parser: argparse.ArgumentParser) -> None:
    """The options both click benchmarks take (bench/teams_burst.py too)."""
    parser.add_argument("--people", type=int, default=None,
                        help="verified people, clicking in turn (default: one per click)")
    parser.add_argument("--outcome", choices=["bind", "attest"], default="bind",
                        help="bind: each person may settle the question (an editor), so the "
                             "core's outcome is a binding; attest: viewers, every answer an "
                             "attestation")
    parser.add_argument("--role", choices=["split", "all"], default="split")
    parser.add_argument("--workers", type=int, default=1,
                        help="worker processes (outbox consumers) beside the one web process")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/13")
    parser.add_argument("--consumers", type=int, default=None,
                        help="answers.consumers (default: as shipped)")
    parser.add_argument("--cache-seconds", type=float, default=None,
                        help="answers.cache_seconds (default: as shipped)")
    parser.add_argument("--nice", type=int, default=None,
                        help="worker.nice of the worker processes (default: as shipped)")
    parser.add_argument("--bot-root", default=None,
                        help="run the bot's processes from this checkout (a git worktree of "
                             "another commit: the before of a before-and-after)")
    parser.add_argument("--profile", action="store_true",
                        help="record each bot process with py-spy (raw samples in the logs "
                             "folder; bench/profile_summary.py summarises them)")


if __name__ == "__main__":
    main()
