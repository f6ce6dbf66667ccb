"""A soak under faults: many clarifications answered through two web and two worker processes on
one Redis while the world around them fails on a schedule; then every promise is checked.

Run: .venv/bin/python bench/soak.py [--clarifications 2000] [--minutes 8] [--kills 10]
         [--seed 1] [--base-port 20500] [--redis standalone|cluster] [--smoke]

Every server runs in its own process on 127.0.0.1, on ports from ``--base-port`` up: a Redis
server (append-only file, fsync always), the reference core (bench/soak_world.py: fault windows,
records), the fake Slack Web API with a fault window and a log of every message written, and
``clarify-bot serve --role web`` twice and ``--role worker`` twice, sharing the Redis. The
clarifications are added to the core in small loads over ``--minutes``; simulated people
(bench/soak_people.py) answer the cards they receive with signed block_actions to the web
processes. Meanwhile, on a schedule drawn from ``--seed``: web-0 and worker-0 are killed with
SIGKILL ``--kills`` times each and restarted; the core answers 5xx, then holds calls past the
bot's read timeout, for a while; Redis is killed and restarted (``--redis cluster``: three
masters and three replicas, a master killed, failed over and back as a replica, see
bench/soak_redis.py); Slack answers 429 (Retry-After)
and then 5xx for a while. web-1 and worker-1 are never killed: their RSS is compared from the
first tenth of the run to the end. Afterwards (bench/soak_check.py): answers given = answers
recorded per (clarification, person), in order; no card twice for one (clarification, person,
attempt); no span text to anyone the gate refuses; every skip with its reason code. One table.
``--smoke`` is the test suite's size (tests/test_soak_smoke.py).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import uuid4

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import aiohttp  # noqa: E402
from aiohttp import web  # noqa: E402
from delivery import World, _json, _stat, _until_up  # noqa: E402
from soak_check import judge, table  # noqa: E402
from soak_people import People  # noqa: E402
from soak_redis import ClusterRedis, StandaloneRedis, redis_for  # noqa: E402
from soak_world import (  # noqa: E402
    AAD_TENANT,
    ACTION_KEY,
    BOT_TOKEN,
    CLARIFY_TOKEN,
    SECRET,
    TEAM,
    TENANT,
    Cast,
    aad_user,
    nonreader,
    reader,
    scenario,
    serve_fakes,
    serve_soak_core,
    slack_user,
)

from cards.actions import ActionCodec  # noqa: E402
from tests.teams import tokens  # noqa: E402
from tests.teams.tokens import APP_ID  # noqa: E402

SERVE = ROOT / "bench" / "soak_serve.py"
READ_TIMEOUT = 3.0  # the bot's core.read_timeout_seconds here; a held call outlasts it
ENV = {"CLARIFY_BOT_CORE_TOKEN": CLARIFY_TOKEN, "SLACK_BOT_TOKEN": BOT_TOKEN,
       "SLACK_SIGNING_SECRET": SECRET, "CLARIFY_BOT_ACTION_SIGNING_KEY": ACTION_KEY,
       "TEAMS_APP_PASSWORD": "soak-unused-msal-is-not-asked"}


def bot_config(*, core: str, slack: str, connector: str, redis: str, prefix: str,
               port: int) -> str:
    return f"""
[clarify]
enabled = true
channels = "slack,teams"
per_person_daily_cap = 1000
digest_threshold = 100
[clarify.hours]
enabled = false  # real time: the run must not wait for anyone's working hours
[clarify.severity]
high_notifies_steward = false
[core]
url = "{core}"
read_timeout_seconds = {READ_TIMEOUT}
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
[slack.rates]
paced = false
[[slack.workspaces]]
team_id = "{TEAM}"
tenant = "{TENANT}"
[teams]
app_type = "single-tenant"
app_id = "{APP_ID}"
app_tenant_id = "{AAD_TENANT}"
service_url = "{connector}"
tenant_sends_per_second = 100
[teams.rates]
paced = false
[[teams.tenants]]
aad_tenant_id = "{AAD_TENANT}"
tenant = "{TENANT}"
[worker]
concurrency = 8
lease_seconds = 10
heartbeat_seconds = 3
poll_interval_seconds = 0.5
nice = 0
[answers]
consumers = 4
lease_seconds = 10
backoff_base_seconds = 0.5
backoff_cap_seconds = 5
"""


@dataclass
class Slot:
    """One bot process that may be killed and started again under the same name."""

    name: str
    command: list[str]
    proc: subprocess.Popen[bytes] | None = None
    starts: int = 0

    def start(self, world: World) -> None:
        self.proc = world.start(self.name, self.command, env=ENV)
        self.starts += 1

    def kill(self, world: World) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        world.procs.remove(self.proc)


@dataclass
class Soak:
    args: argparse.Namespace
    world: World
    rng: random.Random
    ports: list[int]
    slots: dict[str, Slot] = field(default_factory=dict)
    faults: Counter[str] = field(default_factory=Counter)
    unexpected_exits: int = 0
    redis: StandaloneRedis | ClusterRedis | None = None
    prefix: str = field(default_factory=lambda: f"soak{uuid4().hex[:8]}")
    connector_url: str = ""
    jwks_runner: web.AppRunner | None = None

    def port(self) -> int:
        return self.ports.pop(0)

    # ------------------------------------------------------------ Redis

    def start_redis(self) -> None:
        """One server, or a cluster of three masters and three replicas (bench/soak_redis.py)."""
        self.redis = redis_for(self.args.redis, self.world, self.port, self.args.base_port)
        self.redis.start()

    async def redis_fault(self) -> None:
        """Redis killed (SIGKILL) and started again on its append-only file; on a cluster a
        master killed, its replica promoted, the killed node back as a replica."""
        assert self.redis is not None
        self.faults[await self.redis.fault(self.rng, self.prefix)] += 1

    # ------------------------------------------------------------ the world

    async def start(self) -> tuple[str, str, list[str]]:
        world, args = self.world, self.args
        self.start_redis()
        assert self.redis is not None
        core_port, slack_port, side_port = self.port(), self.port(), self.port()
        connector_port = self.port()
        world.start("core", [sys.executable, __file__, "--serve", "core", "--port",
                             str(core_port), "--seed", str(args.seed), "--contract",
                             args.contract])
        slack = world.start("localslack", [
            sys.executable, __file__, "--serve", "fakes", "--port", str(slack_port),
            "--connector", str(connector_port), "--side", str(side_port), "--readers",
            str(args.readers), "--nonreaders", str(args.nonreaders)], stdout=subprocess.PIPE)
        world.core_url = f"http://127.0.0.1:{core_port}"
        world.side_url = f"http://127.0.0.1:{side_port}"
        await _until_up(f"{world.core_url}/healthz")
        assert slack.stdout is not None
        world.slack_url, self.connector_url = slack.stdout.readline().decode().split()
        jwks = await self.serve_jwks()
        await _until_up(f"{world.side_url}/log")
        await self.redis.up()
        prefix, redis_url = self.prefix, self.redis.url
        webs = []
        for name in ("web-0", "web-1", "worker-0", "worker-1"):
            port = self.port()
            config = world.logs / f"{name}.toml"
            config.write_text(bot_config(
                core=world.core_url, slack=world.slack_url, connector=self.connector_url,
                prefix=prefix, port=port, redis=redis_url))
            role = name.split("-")[0]
            origin = self.connector_url.split("/teams/")[0]
            slot = Slot(name, [sys.executable, str(SERVE), jwks, origin, "serve", "--config",
                               str(config), "--role", role])
            slot.start(world)
            self.slots[name] = slot
            if role == "web":
                webs.append(f"http://127.0.0.1:{port}")
        for base in webs:
            await _until_up(f"{base}/healthz")
        return prefix, redis_url, webs

    async def serve_jwks(self) -> str:
        """The public key the soak signs Bot Framework tokens with, as a JWKS on 127.0.0.1."""
        async def keys(_: web.Request) -> web.Response:
            return web.json_response(tokens.jwks())

        app = web.Application()
        app.router.add_get("/keys", keys)
        self.jwks_runner = web.AppRunner(app, access_log=None)
        await self.jwks_runner.setup()
        port = self.port()
        await web.TCPSite(self.jwks_runner, "127.0.0.1", port).start()
        return f"http://127.0.0.1:{port}/keys"

    async def watch(self) -> None:
        """A bot process that exits on its own (not killed here) is counted and started again."""
        while True:
            await asyncio.sleep(0.5)
            for slot in self.slots.values():
                if slot.proc is not None and slot.proc.poll() is not None:
                    self.unexpected_exits += 1
                    self.world.procs.remove(slot.proc)
                    slot.start(self.world)

    async def kill(self, name: str) -> None:
        slot = self.slots[name]
        slot.kill(self.world)
        slot.proc = None
        await asyncio.sleep(self.rng.uniform(0.3, 1.5))
        slot.start(self.world)
        self.faults[f"{name.split('-')[0]} process killed (SIGKILL) and restarted"] += 1

    # ------------------------------------------------------------ the schedule

    def schedule(self, seconds: float) -> list[tuple[float, str, dict[str, Any]]]:
        """(at, fault, parameters), drawn from the seed: kills anywhere in the run, windows and
        Redis restarts in distinct stretches of it."""
        a = self.args
        plan: list[tuple[float, str, dict[str, Any]]] = []
        for name in ("web-0", "worker-0"):
            plan += [(self.rng.uniform(0.05, 0.95) * seconds, "kill", {"name": name})
                     for _ in range(a.kills)]
        windows = ["core 5xx", "core timeout", "slack 429", "slack 5xx", "redis"] * a.windows
        self.rng.shuffle(windows)
        stretch = 0.8 * seconds / max(len(windows), 1)
        length = max(3.0, min(10.0, stretch * 0.6))
        for n, kind in enumerate(windows):
            at = 0.1 * seconds + n * stretch + self.rng.uniform(0, stretch - length)
            plan.append((at, kind, {"seconds": length}))
        return sorted(plan, key=lambda p: p[0])

    async def inject(self, kind: str, params: dict[str, Any]) -> None:
        if kind == "kill":
            await self.kill(params["name"])
        elif kind == "redis":
            await self.redis_fault()
        elif kind.startswith("core"):
            mode = kind.split()[1]
            await _json("POST", f"{self.world.core_url}/_soak/fault", json={
                "mode": mode, "seconds": params["seconds"], "hold": READ_TIMEOUT + 1})
            self.faults[{"5xx": "core answers 5xx", "timeout": "core times out"}[mode]
                        + f" for {params['seconds']:.0f} s"] += 1
        else:
            status = 429 if kind.endswith("429") else 503
            await _json("POST", f"{self.world.side_url}/fault",
                        json={"status": status, "seconds": params["seconds"]})
            label = "Slack answers 429 (Retry-After: 1)" if status == 429 else \
                "Slack answers 503"
            self.faults[f"{label} for {params['seconds']:.0f} s"] += 1

    async def run_schedule(self, plan: list[tuple[float, str, dict[str, Any]]],
                           started: float) -> None:
        for at, kind, params in plan:
            await asyncio.sleep(max(0.0, started + at - time.monotonic()))
            await self.inject(kind, params)

    def rss(self, names: tuple[str, ...]) -> dict[str, float]:
        found = {name: _stat(self.slots[name].proc.pid)[1] / 2**20  # type: ignore[union-attr]
                 for name in names}
        return found


async def outbox_size(redis_url: str, prefix: str, *, unreported: bool = False) -> int:
    """Answers waiting in the outbox; ``unreported``: and clarifications whose cards a killed
    worker may have left unreported, waiting to be looked at (``bot.engine.unreported``)."""
    from bot.store.redis import RedisStore

    try:
        async with RedisStore.from_url(redis_url, prefix=prefix) as store:
            return await store.outbox_size() + (
                await store.unreported_waiting() if unreported else 0)
    except Exception:  # noqa: BLE001 - Redis away for a moment: not empty yet
        return -1


async def run(args: argparse.Namespace) -> bool:
    world = World(Path(tempfile.mkdtemp(prefix="soak-")))
    rng = random.Random(args.seed)
    soak = Soak(args, world, rng, ports=list(range(args.base_port, args.base_port + 100)))
    cast = Cast(args.readers, args.nonreaders)
    users = {slack_user(reader(n)): reader(n) for n in range(args.readers)} | {
        aad_user(reader(n)): reader(n) for n in range(args.readers)}
    codec = ActionCodec(ACTION_KEY.encode())
    nonreaders = {nonreader(n) for n in range(args.nonreaders)}
    seconds = args.minutes * 60
    try:
        prefix, redis_url, webs = await soak.start()
        await _json("POST", f"{world.core_url}/_bench/load",
                    json=scenario(cast, range(0), window_hours=args.window / 3600))
        people = People(webs=webs, users=users, rng=random.Random(args.seed + 1), codec=codec,
                        connector_url=soak.connector_url,
                        token=lambda: tokens.sign(tokens.claims(serviceurl=soak.connector_url)),
                        late_retry_seconds=(3.0, args.late_retry))
        watcher = asyncio.create_task(soak.watch())
        started = time.monotonic()
        faults = asyncio.create_task(soak.run_schedule(soak.schedule(seconds), started))
        rss_start: dict[str, float] = {}
        rss_middle: dict[str, float] = {}
        cursor, fed, writes = 0, 0, []
        quiet_since = time.monotonic()
        async with aiohttp.ClientSession() as http:
            answering = asyncio.create_task(people.run(http))
            deadline = started + seconds + args.settle
            while time.monotonic() < deadline:
                due = min(args.clarifications,
                          int(args.clarifications * (time.monotonic() - started) / seconds) + 1)
                if due > fed:
                    await _json("POST", f"{world.core_url}/_soak/add", json=scenario(
                        cast, range(fed, due), window_hours=args.window / 3600))
                    fed = due
                got = await _json("GET", f"{world.side_url}/log?after={cursor}")
                cursor = got["next"]
                writes += got["writes"]
                people.read(got["writes"])
                if got["writes"] or people.busy:
                    quiet_since = time.monotonic()
                if not rss_start and len(people.tally.done) >= args.clarifications // 10:
                    rss_start = soak.rss(("web-1", "worker-1"))
                if not rss_middle and len(people.tally.done) >= args.clarifications // 2:
                    rss_middle = soak.rss(("web-1", "worker-1"))
                # finished: everyone answered what they received, nothing waits in the outbox
                # (nor to be looked at for a card a killed worker left unreported),
                # and every clarification has a response or went to the steward (a card a killed
                # worker never sent escalates); or nothing moved for longer than an escalation
                if fed == args.clarifications and faults.done() and not people.busy \
                        and await outbox_size(redis_url, prefix, unreported=True) == 0:
                    open_ = (await _json("GET", f"{world.core_url}/_soak/unsettled"))["unsettled"]
                    if not open_ or time.monotonic() - quiet_since > args.window + 15:
                        break
                await asyncio.sleep(0.25)
            people.stopping = True
            answering.cancel()
            for task in list(people.tasks):  # late retries still asleep
                task.cancel()
            await asyncio.sleep(2.0)  # the last follow-ups
            got = await _json("GET", f"{world.side_url}/log?after={cursor}")
            writes += got["writes"]
        elapsed = time.monotonic() - started
        rss_end = soak.rss(("web-1", "worker-1"))
        watcher.cancel()
        faults.cancel()
        records = await _json("GET", f"{world.core_url}/_soak/records")
        verdict = judge(records, writes, people.tally, nonreaders, codec)
        tally = people.tally
        left = await outbox_size(redis_url, prefix)
        extra = {"clicks sent (retries included)": tally.clicks,
                 "clicks refused or unanswered, then sent again": tally.refused,
                 "late retries of acknowledged clicks": tally.late_retries,
                 "clicks split across reads": tally.split, "answer bursts": tally.bursts,
                 "bot processes that exited on their own": soak.unexpected_exits,
                 "outbox entries left": left,
                 "wall time (s)": f"{elapsed:.0f}"}
        rss = {name: (rss_start.get(name, 0.0), rss_middle.get(name, 0.0), rss_end[name])
               for name in rss_end}
        print(f"\nsoak: {args.clarifications} clarifications, seed {args.seed}, Redis "
              f"{args.redis}; logs in {world.logs}")
        print(table(soak.faults, verdict, rss, extra))
        for example in verdict.examples:
            print("  e.g.", example)
        failovers = soak.redis.log if isinstance(soak.redis, ClusterRedis) else []
        for line in failovers:
            print("  redis:", line)
        if args.json:
            await asyncio.to_thread(Path(args.json).write_text, json.dumps({
                "ok": verdict.ok, "faults": soak.faults, "outbox_left": left,
                "unexpected_exits": soak.unexpected_exits, "failovers": failovers,
                "verdict": {k: v for k, v in vars(verdict).items()}, "rss": rss,
                "kills": {n: s.starts - 1 for n, s in soak.slots.items()}}, default=str))
        return verdict.ok and not soak.unexpected_exits and left == 0
    finally:
        world.stop_all()
        if soak.redis is not None:
            soak.redis.stop()
        if soak.jwks_runner is not None:
            await soak.jwks_runner.cleanup()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--clarifications", type=int, default=2000)
    parser.add_argument("--readers", type=int, default=200)
    parser.add_argument("--nonreaders", type=int, default=20)
    parser.add_argument("--minutes", type=float, default=8.0,
                        help="over how long the clarifications are added (faults within it)")
    parser.add_argument("--settle", type=float, default=240.0,
                        help="seconds allowed after that for the last answers")
    parser.add_argument("--kills", type=int, default=10, help="SIGKILLs of web-0 and worker-0")
    parser.add_argument("--windows", type=int, default=2,
                        help="windows of each fault (core 5xx, core timeout, Slack 429, Slack "
                             "5xx, Redis restart)")
    parser.add_argument("--window", type=float, default=30.0,
                        help="the tenant's escalation window in seconds")
    parser.add_argument("--late-retry", type=float, default=20.0,
                        help="one acknowledged click in ten is sent again 3 s to this many "
                             "seconds later (Slack's X-Slack-Retry-Num)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--base-port", type=int, default=20500)
    parser.add_argument("--redis", choices=["standalone", "cluster"], default="standalone")
    parser.add_argument("--smoke", action="store_true",
                        help="the test suite's size: 200 clarifications in 30 s, 3 kills "
                             "each, late retries within 8 s")
    parser.add_argument("--json", help="also write the verdict to this file")
    parser.add_argument("--serve", choices=["core", "fakes"])
    parser.add_argument("--contract", choices=["full", "baseline"], default="full",
                        help="baseline: the reference core serves only what every core offers")
    parser.add_argument("--port", type=int)
    parser.add_argument("--side", type=int)
    parser.add_argument("--connector", type=int)
    args = parser.parse_args()
    if args.serve == "core":
        serve_soak_core(args.port, args.seed, args.contract)
    elif args.serve == "fakes":
        people = [reader(n) for n in range(args.readers)] + \
            [nonreader(n) for n in range(args.nonreaders)] + ["p-steward"]
        serve_fakes(args.port, args.connector, args.side, people)
    else:
        if args.smoke:
            args.clarifications, args.readers, args.nonreaders = 200, 40, 4
            args.minutes, args.kills, args.windows = 0.5, 3, 1
            args.settle, args.window, args.late_retry = 40.0, 12.0, 8.0
        sys.exit(0 if asyncio.run(run(args)) else 1)


if __name__ == "__main__":
    main()
