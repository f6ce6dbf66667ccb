"""Slack acknowledgement time under a burst of valid clicks: the full bot beside a bare bolt app.

Run: .venv/bin/python bench/ack_burst.py [--clicks 5000] [--concurrency 50]
         [--redis redis://127.0.0.1:6379/13] [--people 5] [--consumers 8] [--role split|all]
         [--workers 1] [--nice 10] [--cache-seconds 10] [--profile]

Both sides run in one run, on 127.0.0.1, every server in its own process:
(a) the bot: ``clarify-bot serve --role web`` (verifies, makes each answer durable, acknowledges)
    and ``clarify-bot serve --role worker`` (the outbox's consumers forward to the core), on the
    Redis store; the reference core (``clarify-bot devcore``) loaded with a generated scenario of
    clicks / people clarifications and ``--people`` verified people (viewers: every answer is
    recorded as an attestation, none binds, so every answer must appear once); the local Slack
    stand-in (devslack), where each person is told privately what their answer did;
(b) a bare slack-bolt AsyncApp on aiohttp whose only listener acknowledges.
Every click is a distinct (clarification, person, answer), signed like Slack (slack_sdk's
SignatureVerifier). Each side first gets a short warm-up of its own clicks (not counted). The
report: acknowledgement latency p50/p95/p99/max on both sides and the p99 ratio, then the time
from the last click's acknowledgement until the outbox is empty, and a check at the core that every
(clarification, person) has exactly one response. Redis keys live under a throw-away prefix and
are deleted afterwards; no database is flushed.
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
from dataclasses import dataclass
from pathlib import Path
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


# ---------------------------------------------------------------- measuring


@dataclass
class Burst:
    latencies: list[float]
    errors: Counter[int]
    first_sent: float
    last_acked: float

    def pct(self, p: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))] * 1000

    def row(self, name: str) -> str:
        rate = len(self.latencies) / (self.last_acked - self.first_sent)
        return (f"| {name} | {len(self.latencies)} | {self.pct(50):.1f} | {self.pct(95):.1f} | "
                f"{self.pct(99):.1f} | {max(self.latencies) * 1000:.1f} | {rate:,.0f} | "
                f"{sum(self.errors.values())} |")


async def burst(url: str, requests: list[tuple[bytes, dict[str, str]]], concurrency: int
                ) -> Burst:
    queue: asyncio.Queue[tuple[bytes, dict[str, str]]] = asyncio.Queue()
    for request in requests:
        queue.put_nowait(request)
    latencies: list[float] = []
    errors: Counter[int] = Counter()
    last = 0.0
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as http:
        async def worker() -> None:
            nonlocal last
            while not queue.empty():
                body, headers = queue.get_nowait()
                started = time.perf_counter()
                async with http.post(url, data=body, headers=headers) as response:
                    await response.read()
                    status = response.status
                done = time.perf_counter()
                latencies.append(done - started)
                last = max(last, done)
                if status != 200:
                    errors[status] += 1

        first = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
    return Burst(latencies=latencies, errors=errors, first_sent=first, last_acked=last)


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

    def start(self, name: str, command: list[str], env: dict[str, str] | None = None,
              stdout: int | None = None) -> subprocess.Popen[bytes]:
        log = open(self.logs / f"{name}.log", "wb")  # noqa: SIM115 - closed with the process
        proc = subprocess.Popen(command, cwd=ROOT, env={**os.environ, **(env or {})},
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


def bot_config(*, core: str, slack: str, redis: str, prefix: str, port: int,
               consumers: int, cache_seconds: float = 10.0) -> str:
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
[answers]
consumers = {consumers}
cache_seconds = {cache_seconds}
[limits]
# each of the few people here stands for hundreds (over 1,000 clicks each in seconds): the
# per-person bucket stays on, so its cost is measured, but is made deep enough never to refuse
user_burst = 1000000
"""


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
                        clarifications: int) -> Servers:
    """The reference core, the fake Slack, the bare app and the bot, each its own process."""
    core_port, web_port, bare_port = (_free_port() for _ in range(3))
    core_url = f"http://127.0.0.1:{core_port}"
    scenario_file = procs.logs / "scenario.toml"
    scenario_file.write_text(toml(scenario(clarifications, args.people)))
    procs.start("devcore", [str(BIN / "clarify-bot"), "devcore", "--port", str(core_port),
                            "--scenario", str(scenario_file)])
    slack_proc = procs.start("localslack", [sys.executable, __file__, "--serve", "localslack",
                                           "--people", str(args.people)], stdout=subprocess.PIPE)
    await _until_up(f"{core_url}/healthz")
    assert slack_proc.stdout is not None
    slack_url = slack_proc.stdout.readline().decode().strip()
    procs.start("bare", [sys.executable, __file__, "--serve", "bare", "--port", str(bare_port),
                         "--slack", slack_url])
    env = {"CLARIFY_BOT_CORE_TOKEN": CLARIFY_TOKEN, "SLACK_BOT_TOKEN": BOT_TOKEN,
           "SLACK_SIGNING_SECRET": SECRET, "CLARIFY_BOT_ACTION_SIGNING_KEY": ACTION_KEY}
    roles = [("web", "web", web_port)] + [
        (f"worker{n}" if n else "worker", "worker", _free_port()) for n in range(args.workers)
    ] if args.role == "split" else [("all", "all", web_port)]
    for name, role, port in roles:
        (procs.logs / f"{name}.toml").write_text(bot_config(
            core=core_url, slack=slack_url, redis=args.redis, prefix=prefix, port=port,
            consumers=args.consumers, cache_seconds=args.cache_seconds))
        command = [str(BIN / "clarify-bot"), "serve", "--config",
                   str(procs.logs / f"{name}.toml"), "--role", role]
        if args.profile:  # cProfile of each bot process, written when it stops
            command = [sys.executable, "-m", "cProfile", "-o", str(procs.logs / f"{name}.prof"),
                       *command]
        # a worker lowers its own priority by worker.nice (the bot's setting, default 10)
        nice = {} if args.nice is None else {"CLARIFY_BOT_WORKER__NICE": str(args.nice)}
        procs.start(name, command, env={**env, **nice})
    await _until_up(f"http://127.0.0.1:{web_port}/healthz")
    await _until_up(f"http://127.0.0.1:{bare_port}/slack/events", ok=(404, 405))
    return Servers(core_url=core_url, bot_url=f"http://127.0.0.1:{web_port}/slack/events",
                   bare_url=f"http://127.0.0.1:{bare_port}/slack/events")


async def run(args: argparse.Namespace) -> None:
    import logging

    import structlog

    from cards.actions import ActionCodec

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    per_person = -(-(args.clicks + WARM_UP) // args.people)
    procs = Processes(Path(tempfile.mkdtemp(prefix="ack-burst-")))
    prefix = f"bench{uuid4().hex[:8]}"
    codec = ActionCodec(ACTION_KEY.encode())

    def requests(batch: list[Click]) -> list[tuple[bytes, dict[str, str]]]:
        stamp, now = str(int(time.time())), time.time()
        return [signed(c, codec=codec, stamp=stamp, acted=now + n / 1e6)
                for n, c in enumerate(batch)]

    try:
        servers = await start_servers(args, procs, prefix=prefix, clarifications=per_person)
        ids = [f"clr-{n:05d}" for n in range(1, per_person + 1)]
        clicks = [Click(cid, user, (n + user) % 2) for n, cid in enumerate(ids)
                  for user in range(args.people)][:WARM_UP + args.clicks]
        warm, measured = clicks[:WARM_UP], clicks[WARM_UP:]
        await burst(servers.bare_url, requests(warm), args.concurrency)
        await burst(servers.bot_url, requests(warm), args.concurrency)
        await until_drained(args.redis, prefix, 120)
        load_before, cpu = os.getloadavg(), [procs.cpu()]
        bare = await burst(servers.bare_url, requests(measured), args.concurrency)
        cpu.append(procs.cpu())
        bot = await burst(servers.bot_url, requests(measured), args.concurrency)
        cpu.append(procs.cpu())
        drained, parked = await until_drained(args.redis, prefix, 300)
        cpu.append(procs.cpu())
        load = (load_before, os.getloadavg())
        counts = await count_responses(servers.core_url, ids)
        report(args, bare, bot, drained, parked, counts, clicks, load, procs.logs)
        print_cpu(cpu, args.clicks)
    finally:
        procs.stop()
        await forget(args.redis, prefix)


def report(args: argparse.Namespace, bare: Burst, bot: Burst, drained: float, parked: int,
           counts: Counter[tuple[str, str]], expected: list[Click],
           load: tuple[tuple[float, ...], tuple[float, ...]], logs: Path) -> None:
    wanted = {(c.clarification_id, f"p-{c.user}") for c in expected}
    once = all(counts[key] == 1 for key in wanted) and set(counts) == wanted
    duplicates = sum(n - 1 for n in counts.values() if n > 1)
    print(f"\n{args.clicks} clicks at concurrency {args.concurrency}; bot role {args.role}, "
          f"{args.workers} worker(s) of {args.consumers} consumers at worker.nice "
          f"{10 if args.nice is None else args.nice}, "
          f"{args.people} people, cache {args.cache_seconds:g} s; "
          f"logs in {logs}")
    print("| side | clicks | p50 ms | p95 ms | p99 ms | max ms | acks/s | non-200 |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    print(bare.row("bare bolt app (ack only)"))
    print(bot.row("clarify-bot"))
    print(f"\np99 ratio bot/bare: {bot.pct(99) / bare.pct(99):.2f}")
    print(f"last click acknowledged → outbox empty: {drained:.1f} s "
          f"(parked: {parked})")
    print(f"answers at the core: {sum(counts.values())} for {len(wanted)} "
          f"(clarification, person) pairs; exactly once: {once}; duplicates: {duplicates}")
    print(f"load average (1, 5, 15 min) before: {load[0]}, after: {load[1]}")


def print_cpu(cpu: list[dict[str, float]], clicks: int) -> None:
    """CPU milliseconds per click of each process, in each phase."""
    print("\n| process | bare burst | bot burst | bot: last ack → outbox empty |")
    print("|---|---:|---:|---:|")
    for name in cpu[0]:
        phases = [(cpu[n + 1][name] - cpu[n][name]) * 1000 / clicks for n in range(3)]
        print(f"| {name} | " + " | ".join(f"{ms:.2f} ms" for ms in phases) + " |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--clicks", type=int, default=5000)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--people", type=int, default=5)
    parser.add_argument("--consumers", type=int, default=8)
    parser.add_argument("--role", choices=["split", "all"], default="split")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/13")
    parser.add_argument("--cache-seconds", type=float, default=10.0,
                        help="answers.cache_seconds of the bot (0: read every answer's "
                             "responder and clarification from the core)")
    parser.add_argument("--workers", type=int, default=1,
                        help="worker processes (outbox consumers) beside the one web process")
    parser.add_argument("--nice", type=int, default=None,
                        help="the worker processes' worker.nice (default: the bot's own, 10; "
                             "0 keeps them at the web process's priority)")
    parser.add_argument("--profile", action="store_true",
                        help="profile each bot process with cProfile (.prof files in the logs "
                             "folder)")
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


if __name__ == "__main__":
    main()
