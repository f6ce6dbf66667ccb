"""Delivery throughput: the bot's worker processes beside raw slack_sdk posting, one table.

Run: .venv/bin/python bench/delivery.py [--cards 3000] [--concurrency 16] [--people 1000]
         [--shipped 1000] [--rss 20000] [--profile] [--bot-root PATH] [--smoke]

Everything runs in its own process on 127.0.0.1: a Redis server started for the run, the
reference core (devcore, counting the calls it answers), the local Slack stand-in
(devslack, with a side door that counts calls and duplicate cards), and
``clarify-bot serve --role worker`` processes. Phases, one after the other, each on a freshly
loaded scenario (one normal-severity question per card, each ranked to one verified editor):

1. raw: ``--cards`` chat.postMessage calls through slack_sdk's AsyncWebClient at
   ``--concurrency`` (one shared session), the rendered question card as body;
2. bot, pacing lifted (``[slack.rates] paced = false``), one worker at ``worker.concurrency =
   --concurrency``: ``--cards`` cards; then the same with two workers;
3. bot as shipped (default rates and concurrency): ``--shipped`` cards to as many people, against
   the bound the buckets imply, (cards - burst) / rate; with ``--high-share`` that share of them
   high severity, each telling the workspace steward (batched: a few messages, counted apart);
4. bot, pacing lifted, one worker: ``--rss`` cards; the worker's RSS after 1,000 and at the end.

Measured per bot phase: cards per second (first to last post at the fake), worker CPU ms per card
(/proc, from the first post to the last), core calls per job (all routes, the polls included),
Redis commands per card (INFO commandstats after CONFIG RESETSTAT: every command the server
ran, those inside Lua scripts included; EVALSHA counted apart), duplicate cards at the fake, and
the CPU ms per card of the processes the workers share (the core, the fake, Redis).
``--profile`` runs each bot phase's first worker under py-spy (raw samples in the log folder,
summarised by where the time goes). ``--bot-root`` runs the workers from another checkout (a
``git worktree`` of an earlier commit) for a before/after comparison. The load average is printed
with every row. ``--smoke`` is the test suite's size: a few hundred cards, no timings judged.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from uuid import uuid4

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import aiohttp  # noqa: E402
from delivery_reach import (  # noqa: E402
    RecorderCost,
    count_rows,
    drop_database,
    reach_database,
    recorder_cost,
)
from delivery_unseen import UNSEEN, open_hours, unseen_report, zones_open_now  # noqa: E402
from delivery_world import (  # noqa: E402
    ACTION_KEY,
    BOT_TOKEN,
    CLARIFY_TOKEN,
    SECRET,
    TEAM,
    high,
    raw_posts,
    scenario,
    serve_core,
    serve_fake_slack,
)

BIN = Path(sys.executable).parent
SHIPPED_RATE, SHIPPED_BURST = 5.0, 20  # [slack.rates] post_per_second, post_burst defaults
IDLE_POLL_SECONDS = 0.1  # the workers' poll interval when nothing is due (between loads)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _stat(pid: int) -> tuple[float, int]:
    """CPU seconds (user + system) and RSS bytes of a process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return cpu, int(fields[21]) * os.sysconf("SC_PAGE_SIZE")


def _knows_paced(root: Path) -> bool:
    """Whether a checkout's settings have ``[slack.rates] paced`` (else bench/lifted.py)."""
    settings = root / "bot" / "settings"  # one module once, a package of modules since
    files = [settings / "models.py", *sorted(settings.glob("*.py"))]
    return any(f.exists() and "paced" in f.read_text() for f in files)


@dataclass
class World:
    logs: Path
    redis_port: int = 0
    core_url: str = ""
    slack_url: str = ""
    side_url: str = ""
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    services: dict[str, int] = field(default_factory=dict)  # name: pid of Redis, core, fake
    reach_url: str = ""  # the workers' reach record (--reach-db), or none kept

    def start(self, name: str, command: list[str], *, env: dict[str, str] | None = None,
              stdout: int | None = None, cwd: Path = ROOT) -> subprocess.Popen[bytes]:
        log = open(self.logs / f"{name}.log", "ab")  # noqa: SIM115 - closed with the process
        proc = subprocess.Popen(command, cwd=cwd, env={**os.environ, **(env or {})},
                                stdout=stdout if stdout is not None else log, stderr=log)
        self.procs.append(proc)
        if name in ("redis", "devcore", "localslack"):
            self.services[name] = proc.pid
        return proc

    def stop(self, proc: subprocess.Popen[bytes]) -> None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        self.procs.remove(proc)

    def stop_all(self) -> None:
        for proc in reversed(list(self.procs)):
            self.stop(proc)


async def _json(method: str, url: str, **kwargs: Any) -> Any:
    async with aiohttp.ClientSession() as http, http.request(method, url, **kwargs) as r:
        r.raise_for_status()
        return await r.json()


async def _until_up(url: str, within: float = 60) -> None:
    deadline = time.monotonic() + within
    async with aiohttp.ClientSession() as http:
        while time.monotonic() < deadline:
            try:
                async with http.get(url) as response:
                    if response.status < 500:
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.1)
    raise RuntimeError(f"{url} did not come up")


async def _redis(port: int, *command: str) -> str:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"*{len(command)}\r\n".encode()
                 + b"".join(f"${len(c)}\r\n{c}\r\n".encode() for c in command))
    await writer.drain()
    head = await reader.readline()
    if head.startswith(b"$"):
        body = await reader.readexactly(int(head[1:]) + 2)
        text = body[:-2].decode()
    else:
        text = head.decode().strip()
    writer.close()
    return text


async def commandstats(port: int) -> dict[str, int]:
    found: dict[str, int] = {}
    for line in (await _redis(port, "INFO", "commandstats")).splitlines():
        if line.startswith("cmdstat_"):
            name, _, rest = line.removeprefix("cmdstat_").partition(":")
            found[name] = int(rest.split(",")[0].removeprefix("calls="))
    return found


async def start_world(args: argparse.Namespace, world: World) -> None:
    if args.reach_db:
        world.reach_url = await reach_database(args.reach_db)
    world.redis_port = _free_port()
    world.start("redis", ["redis-server", "--port", str(world.redis_port), "--bind", "127.0.0.1",
                          "--save", "", "--appendonly", "no"])
    core_port, side_port = _free_port(), _free_port()
    world.start("devcore", [sys.executable, __file__, "--serve", "core", "--port",
                            str(core_port), "--contract", args.contract])
    people = max(args.people, args.shipped, args.unseen)
    slack = world.start("localslack", [sys.executable, __file__, "--serve", "localslack",
                                      "--people", str(people), "--port", str(side_port),
                                      *(["--zones", ",".join(args.zones)] if args.zones else [])],
                        stdout=subprocess.PIPE)
    world.core_url = f"http://127.0.0.1:{core_port}"
    world.side_url = f"http://127.0.0.1:{side_port}"
    await _until_up(f"{world.core_url}/healthz")
    assert slack.stdout is not None
    world.slack_url = slack.stdout.readline().decode().strip()
    await _until_up(f"{world.side_url}/counts")
    for _ in range(100):
        if (await _redis(world.redis_port, "PING")) == "+PONG":
            break
        await asyncio.sleep(0.1)


HOURS_OFF = "enabled = false  # real time: the run must not wait for anyone's working hours\n"


def worker_config(world: World, *, prefix: str, port: int, paced: bool,
                  concurrency: int | None, hours: str = HOURS_OFF,
                  post_rate: float | None = None) -> str:
    rates = "" if paced else "[slack.rates]\npaced = false\n"
    if paced and post_rate:
        rates = f"[slack.rates]\npost_per_second = {post_rate}\n"
    # the core is fed in loads (``--chunk``): a worker that polls between two loads finds nothing
    # due and would sleep the default poll interval (2 s), which the rate would count; the bench
    # measures delivery, so the workers poll again after IDLE_POLL_SECONDS
    idle = f"poll_interval_seconds = {IDLE_POLL_SECONDS}\n"
    workers = f"[worker]\nconcurrency = {concurrency}\nnice = 0\n{idle}" if concurrency else \
        f"[worker]\nnice = 0\n{idle}"
    return f"""
[clarify]
enabled = true
channels = "slack"
per_person_daily_cap = 1000
digest_threshold = 100
[clarify.hours]
{hours}[core]
url = "{world.core_url}"
[server]
host = "127.0.0.1"
port = {port}
[store]
backend = "redis"
[redis]
url = "redis://127.0.0.1:{world.redis_port}/0"
key_prefix = "{prefix}"
[slack]
api_url = "{world.slack_url}"
{rates}[[slack.workspaces]]
team_id = "{TEAM}"
tenant = "bench"
{workers}"""


@dataclass
class Row:
    name: str
    cards: int
    seconds: float
    cpu_ms: float | None = None
    core_per_job: float | None = None
    redis_per_card: float | None = None
    evalsha_per_card: float | None = None
    duplicates: int = 0
    load: float = 0.0
    rss_mb: tuple[float, float] | None = None
    # CPU ms per card of the processes the workers share: the reference core, the fake, Redis
    services_ms: dict[str, float] = field(default_factory=dict)
    note: str = ""
    high: int = 0  # high-severity questions among the cards (each a notice to the steward)
    notices: int = 0  # steward notice messages the fake received
    notices_after: float = 0.0  # the last notice message, seconds after the first card
    reach_rows_per_card: float | None = None  # reach record rows the workers wrote
    core_calls: dict[str, int] = field(default_factory=dict)
    redis_calls: dict[str, int] = field(default_factory=dict)
    slack_calls: dict[str, int] = field(default_factory=dict)
    # when each load's questions were created (the questions of load i: i * chunk onwards)
    loads: list[float] = field(default_factory=list)
    chunk: int = 0
    first_posts: dict[str, float] = field(default_factory=dict)  # user: their first card

    @property
    def rate(self) -> float:
        return (self.cards - 1) / self.seconds if self.seconds > 0 else 0.0


async def _reported(world: World, size: int, *, within: float = 10) -> None:
    """Until the core holds a delivery for each card of the last load (reports follow cards)
    and for each steward notice."""
    for _ in range(int(within / 0.05)):
        found = await _json("GET", f"{world.core_url}/_bench/reported")
        if found["deliveries"] >= size:
            return
        await asyncio.sleep(0.05)


async def _load(world: World, data: dict[str, Any]) -> None:
    await _json("POST", f"{world.core_url}/_bench/load", json=data)


async def bot_phase(args: argparse.Namespace, world: World, *, name: str, cards: int,
                    people: int, workers: int, paced: bool, concurrency: int | None,
                    rss_at: int | None = None, high_share: float = 0.0,
                    hours: str = HOURS_OFF, post_rate: float | None = None) -> Row:
    tag = uuid4().hex[:8]
    # the reference core scans every job on each poll: a long run is fed in loads of `chunk`
    chunk = min(cards, args.chunk)
    loaded = size = chunk
    await _load(world, scenario(chunk, people, tag=f"{tag}0", high_share=high_share))
    loads = [time.time()]  # the questions exist from here
    await _json("GET", f"{world.core_url}/_bench/calls?reset=1")
    await _json("POST", f"{world.side_url}/forget")
    await _redis(world.redis_port, "CONFIG", "RESETSTAT")
    load = os.getloadavg()[0]
    env = {"CLARIFY_BOT_CORE_TOKEN": CLARIFY_TOKEN, "SLACK_BOT_TOKEN": BOT_TOKEN,
           "SLACK_SIGNING_SECRET": SECRET, "CLARIFY_BOT_ACTION_SIGNING_KEY": ACTION_KEY,
           **({"CLARIFY_BOT_DATABASE_URL": world.reach_url} if world.reach_url else {})}
    rows_before = await count_rows(world.reach_url) if world.reach_url else 0
    procs = []
    for n in range(workers):
        config = world.logs / f"{name}-{n}.toml"
        config.write_text(worker_config(world, prefix=f"bench{tag}", port=_free_port(),
                                         paced=paced, concurrency=concurrency, hours=hours,
                                         post_rate=post_rate))
        root = Path(args.bot_root) if args.bot_root else ROOT
        command = [sys.executable, "-c", "from clarify_bot.cli import main; main()", "serve",
                   "--config", str(config), "--role", "worker"]
        if args.bot_root and not paced and not _knows_paced(root):  # no [slack.rates] paced
            command = [sys.executable, str(ROOT / "bench" / "lifted.py"), "serve", "--config",
                       str(config), "--role", "worker"]
            config.write_text(config.read_text().replace("[slack.rates]\npaced = false\n", ""))
        if args.profile and n == 0:
            command = [str(BIN / "py-spy"), "record", "--format", "raw", "--rate", "200",
                       "-o", str(world.logs / f"{name}.pyspy.txt"), "--", *command]
        extra = {"PYTHONPATH": str(root)} if args.bot_root else {}
        procs.append(world.start(f"{name}-{n}", command, env={**env, **extra}, cwd=root))
    measured = [p.pid for p in procs] if not args.profile else []
    first_cpu = 0.0
    first_services: dict[str, float] = {}
    first_count = 0
    rss_first = 0.0
    counts: dict[str, Any] = {}
    deadline = time.monotonic() + args.timeout
    while time.monotonic() < deadline:
        counts = await _json("GET", f"{world.side_url}/counts")
        posts = counts["posts"]
        if posts and not first_count:
            first_count = posts
            first_cpu = sum(_stat(pid)[0] for pid in measured)
            first_services = {name: _stat(pid)[0] for name, pid in world.services.items()}
        if rss_at and posts >= rss_at and not rss_first and measured:
            rss_first = _stat(measured[0])[1] / 2**20
        if posts >= cards:
            break
        if posts >= loaded and loaded < cards:  # the previous load is done: the next one
            await _reported(world, size)
            size = min(chunk, cards - loaded)
            await _load(world, scenario(size, people, tag=f"{tag}{loaded}",
                                        high_share=high_share))
            loads.append(time.time())
            loaded += size
        await asyncio.sleep(0.05)
    last_cpu = sum(_stat(pid)[0] for pid in measured)
    last_services = {name: _stat(pid)[0] for name, pid in world.services.items()}
    rss_last = _stat(measured[0])[1] / 2**20 if measured else 0.0
    highs = sum(high(n, high_share) for n in range(size))  # of the last load
    await _reported(world, size + highs, within=180 if highs else 10)  # the last notices too
    counts = await _json("GET", f"{world.side_url}/counts")
    calls = await _json("GET", f"{world.core_url}/_bench/calls")
    stats = await commandstats(world.redis_port)
    for proc in procs:
        world.stop(proc)  # a stopped worker writes what its recorder still queues
    posts = counts["posts"]
    reach_rows = await count_rows(world.reach_url) - rows_before if world.reach_url else None
    seconds = counts["last"] - counts["first"]
    core_calls = sum(calls.values())
    row = Row(name=name, cards=posts, seconds=seconds, load=load,
              duplicates=counts["duplicates"],
              core_per_job=core_calls / max(1, posts),
              redis_per_card=(sum(stats.values()) - stats.get("config|resetstat", 0))
              / max(1, posts),
              evalsha_per_card=stats.get("evalsha", 0) / max(1, posts),
              core_calls=dict(calls), redis_calls=stats, slack_calls=counts["calls"],
              high=sum(high(n, high_share) for n in range(cards)), notices=counts["notices"],
              notices_after=max(0.0, counts["notices_last"] - counts["first"]),
              loads=loads, chunk=chunk, first_posts=counts.get("first_posts", {}),
              reach_rows_per_card=None if reach_rows is None else reach_rows / max(1, posts))
    if measured and posts > first_count:
        row.cpu_ms = (last_cpu - first_cpu) * 1000 / (posts - first_count)
    if first_services and posts > first_count:
        row.services_ms = {name: (last_services[name] - cpu) * 1000 / (posts - first_count)
                           for name, cpu in first_services.items()}
    if rss_at and measured:
        row.rss_mb = (rss_first, rss_last)
    if posts < cards:
        row.note = f"only {posts} of {cards} within {args.timeout:.0f} s"
    (world.logs / f"{name}.calls.txt").write_text(
        "\n".join(f"{k}: {v}" for k, v in sorted(calls.items())) + "\n\n"
        + "\n".join(f"{k}: {v}" for k, v in sorted(stats.items(), key=lambda kv: -kv[1])) + "\n")
    return row


async def run(args: argparse.Namespace) -> list[Row]:
    world = World(Path(tempfile.mkdtemp(prefix="delivery-")))
    rows: list[Row] = []
    costs: list[RecorderCost] = []
    try:
        await start_world(args, world)
        await _json("POST", f"{world.side_url}/forget")
        load = os.getloadavg()[0]
        seconds = await raw_posts(world.slack_url, args.people, args.cards, args.concurrency) \
            if args.cards else 0.0
        counts = await _json("GET", f"{world.side_url}/counts")
        rows.append(Row(name=f"raw slack_sdk, concurrency {args.concurrency}",
                        cards=counts["posts"], seconds=seconds, load=load,
                        duplicates=counts["duplicates"], slack_calls=counts["calls"]))
        for workers in (1, 2) if args.cards else ():
            rows.append(await bot_phase(
                args, world, name=f"bot lifted, {workers} worker{'s' if workers > 1 else ''}",
                cards=args.cards, people=args.people, workers=workers, paced=False,
                concurrency=args.concurrency))
        if args.shipped:
            rows.append(await bot_phase(args, world, name="bot as shipped", cards=args.shipped,
                                        people=args.shipped, workers=1, paced=True,
                                        concurrency=None, high_share=args.high_share))
        if args.unseen:
            rows.append(await bot_phase(
                args, world, name=UNSEEN, cards=args.unseen, people=args.unseen, workers=1,
                paced=True, concurrency=None, hours=open_hours(), post_rate=args.unseen_rate))
        if args.rss:
            rows.append(await bot_phase(args, world, name="bot lifted, RSS run", cards=args.rss,
                                        people=args.people, workers=1, paced=False,
                                        concurrency=args.concurrency, rss_at=1000))
        costs = await recorder_cost(args.reach_cards, world.reach_url or None) \
            if args.reach_cards else []
    finally:
        world.stop_all()
        if world.reach_url:
            await drop_database(args.reach_db, world.reach_url)
    report(args, rows, world.logs)
    for cost in costs:
        print(f"reach recorder alone, {cost.log} log: {cost.cards:,} cards, "
              f"{cost.cpu_ms_per_card:.3f} CPU ms per card, {cost.rows_per_card:.2f} rows per "
              "card")
    return rows


def report(args: argparse.Namespace, rows: list[Row], logs: Path) -> None:
    print(f"\n{args.cards} cards to {args.people} people at concurrency {args.concurrency}; "
          f"logs in {logs}")
    print("| run | cards | seconds | cards/s | worker CPU ms/card | core calls/job | "
          "Redis cmds/card (EVALSHA) | duplicates | load avg |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")

    def num(value: float | None, fmt: str = "{:.2f}") -> str:
        return "–" if value is None else fmt.format(value)

    for r in rows:
        redis = "–" if r.redis_per_card is None else \
            f"{r.redis_per_card:.1f} ({r.evalsha_per_card:.1f})"
        print(f"| {r.name} | {r.cards:,} | {r.seconds:.1f} | {r.rate:,.1f} | {num(r.cpu_ms)} | "
              f"{num(r.core_per_job)} | {redis} | {r.duplicates} | {r.load:.2f} |"
              + (f" {r.note}" if r.note else ""))
    for r in rows:
        if r.reach_rows_per_card is not None:
            print(f"{r.name}: reach record rows per card {r.reach_rows_per_card:.2f}")
    for r in rows:
        if r.services_ms:
            print(f"{r.name}: CPU ms per card of the shared processes: " + ", ".join(
                f"{name} {ms:.2f}" for name, ms in sorted(r.services_ms.items())))
    raw = rows[0]
    one = next((r for r in rows if r.name == "bot lifted, 1 worker"), None)
    two = next((r for r in rows if r.name == "bot lifted, 2 workers"), None)
    if one and raw.rate:
        print(f"\nbot (1 worker, lifted) / raw posting: {one.rate / raw.rate:.1%}")
    if one and two and one.rate:
        print(f"2 workers / 1 worker: {two.rate / one.rate:.2f}x")
    shipped = next((r for r in rows if r.name == "bot as shipped"), None)
    if shipped:
        bound = (shipped.cards - SHIPPED_BURST) / SHIPPED_RATE
        print(f"as shipped: {shipped.cards} cards in {shipped.seconds:.1f} s; the buckets allow "
              f"no less than {bound:.1f} s ((cards - {SHIPPED_BURST}) / {SHIPPED_RATE:g} per "
              f"second): ratio {shipped.seconds / bound:.2f}")
        if shipped.high:
            print(f"  with {args.high_share:.0%} high severity: {shipped.high} notices to the "
                  f"steward in {shipped.notices} messages (the last {shipped.notices_after:.0f} "
                  f"s after the first card); questions and notices together "
                  f"{shipped.cards + shipped.notices} posts")
    unseen = next((r for r in rows if r.name == UNSEEN), None)
    if unseen:
        print(unseen_report(unseen, args.zones, args.unseen_rate, SHIPPED_BURST))
    rss = next((r for r in rows if r.rss_mb), None)
    if rss and rss.rss_mb:
        first, last = rss.rss_mb
        print(f"worker RSS after 1,000 cards {first:.0f} MB, after {rss.cards:,}: {last:.0f} MB "
              f"(ratio {last / first:.2f})" if first else "RSS not sampled")
    print(f"load average at the end: {os.getloadavg()}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cards", type=int, default=3000)
    parser.add_argument("--people", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--shipped", type=int, default=1000,
                        help="cards to as many people with the shipped pacing (0: skip)")
    parser.add_argument("--rss", type=int, default=20000, help="cards of the RSS run (0: skip)")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per phase")
    parser.add_argument("--chunk", type=int, default=2500,
                        help="clarifications loaded into the reference core at a time")
    parser.add_argument("--high-share", type=float, default=0.0,
                        help="share of the shipped phase's questions at high severity, each "
                             "telling the workspace steward (e.g. 0.13)")
    parser.add_argument("--unseen", type=int, default=0,
                        help="a phase of this many people the bot has not seen, with the "
                        "shipped pacing (posting at --unseen-rate), working hours on, each "
                        "person in one of six zones open now (0: skip)")
    parser.add_argument("--unseen-rate", type=float, default=50.0,
                        help="chat.postMessage per second in the --unseen phase")
    parser.add_argument("--zones", type=lambda text: tuple(text.split(",")), default=(),
                        help=argparse.SUPPRESS)  # the fake's zones, chosen by the bench
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--bot-root", help="run the workers from this checkout instead")
    parser.add_argument("--smoke", action="store_true",
                        help="a few hundred cards, no shipped or RSS run (the test suite's)")
    parser.add_argument("--json", help="also write the rows to this file")
    parser.add_argument("--reach-db", help="a PostgreSQL admin URL: the workers keep the reach "
                        "record in a database of the run's own (rows per card counted), and "
                        "the recorder alone is measured on it too")
    parser.add_argument("--reach-cards", type=int, default=0,
                        help="cards of the recorder-alone measure (memory log; PostgreSQL too "
                        "with --reach-db; 0: skip)")
    parser.add_argument("--serve", choices=["core", "localslack"])
    parser.add_argument("--port", type=int)
    parser.add_argument("--contract", choices=["full", "baseline"], default="full",
                        help="baseline: the reference core serves only what every core offers; "
                        "the bot finds out (its probes) and uses the fallbacks")
    args = parser.parse_args()
    if args.serve == "core":
        serve_core(args.port, contract=args.contract)
    elif args.serve == "localslack":
        serve_fake_slack(args.people, args.port, args.zones)
    else:
        if args.smoke:
            args.cards, args.people, args.shipped, args.rss = 300, 100, 0, 0
        if args.unseen:
            args.zones = zones_open_now()
        rows = asyncio.run(run(args))
        if args.json:
            Path(args.json).write_text(json.dumps([asdict(r) for r in rows], indent=1))


if __name__ == "__main__":
    main()
