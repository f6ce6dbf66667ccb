"""Slack acknowledgement time under a burst of valid clicks: the full bot beside a bare bolt app.

Run: .venv/bin/python bench/ack_burst.py [--clicks 5000] [--concurrency 50]
         [--redis redis://127.0.0.1:6379/13] [--people 5] [--consumers 8] [--role split|all]
         [--workers 1] [--nice 10] [--profile]

Both sides run in one run, on 127.0.0.1, every server in its own process:
(a) the bot: ``clarify-bot serve --role web`` (verifies, makes each answer durable, acknowledges)
    and ``clarify-bot serve --role worker`` (the outbox's consumers forward to the core), on the
    Redis store; the reference core (``clarify-bot devcore``) loaded with a generated scenario of
    clicks / people clarifications and ``--people`` verified people (viewers: every answer is
    recorded as an attestation, none binds, so every answer must appear once); a fake Slack Web
    API (tests/slack/fakeslack.py), where each person is told privately what their answer did;
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
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode
from uuid import uuid4

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import aiohttp  # noqa: E402
from slack_sdk.signature import SignatureVerifier  # noqa: E402

SECRET = "bench-signing-secret-0123456789abcdef"
ACTION_KEY = "bench-action-signing-key-0123456789abcdef"
CLARIFY_TOKEN = "bench-clarify-token"
DEV_TOKEN = "bench-dev-token"
ACME_DEV_TOKEN = "dev-admin-token-local"
BOT_TOKEN = "xoxb-fake-bot-token"  # the fake Slack's  # the bundled scenario's, replaced by the bench's own
TEAM = "T0BENCH"
WARM_UP = 200
BIN = Path(sys.executable).parent


# ---------------------------------------------------------------- the servers' own processes


def serve_bare(port: int, slack_url: str) -> None:
    """(b): a bolt AsyncApp on aiohttp whose only listener acknowledges (bolt's defaults; its
    Web API client, like the bot's, points at the fake Slack for bolt's one auth.test)."""
    from aiohttp import web
    from slack_bolt.async_app import AsyncApp
    from slack_sdk.web.async_client import AsyncWebClient

    client = AsyncWebClient(token=BOT_TOKEN, base_url=slack_url)
    app = AsyncApp(signing_secret=SECRET, client=client)

    @app.action(re.compile(".*"))
    async def ack_only(ack: Any) -> None:
        await ack()

    web.run_app(app.web_app(path="/slack/events"), host="127.0.0.1", port=port,
                access_log=None, print=None)


def serve_fake_slack(people: int) -> None:
    from tests.slack.fakeslack import FakeSlack

    async def main() -> None:
        async with FakeSlack() as slack:
            for n in range(people):
                slack.add_user(_user(n))
            print(slack.url, flush=True)
            await asyncio.Event().wait()

    asyncio.run(main())


# ---------------------------------------------------------------- the scenario


def _user(n: int) -> str:
    return f"U0B{n:05d}"


def scenario(clarifications: int, people: int) -> dict[str, Any]:
    """One tenant, one workspace, verified viewers, and the clarifications they answer."""
    persons = [{"id": f"p-{n}", "tenant": "bench", "display_name": f"Person {n}",
                "memberships": [{"workspace": "bench-ws", "role": "viewer"}],
                "slack": [{"user_id": _user(n), "team_id": TEAM}]} for n in range(people)]
    items = [{
        "tenant_id": "bench", "workspace_id": "bench-ws", "target": f"fact-{n}",
        "question": "When does the lease renewal take effect?", "kind": "relative_date",
        "detector_confidence": 0.9, "applied_candidate_confidence": 0.5,
        "candidates": [{"label": "next quarter", "valid_from": "2026-07-01T00:00:00Z"},
                       {"label": "next year", "valid_from": "2027-01-01T00:00:00Z"}],
        "authority": {"authored_by": ["p-0"]},
        "document": {"document_id": f"doc-{n}", "title": f"Lease {n}",
                     "url": f"https://docs.bench.example/{n}", "content_hash": f"sha256:{n:08x}",
                     "acl": {"workspace_id": "bench-ws",
                             "read_roles": ["viewer", "editor", "steward"]}},
        "span": {"start": 0, "end": 10, "text": "next quarter"},
    } for n in range(clarifications)]
    return {
        "name": "ack-burst", "tenants": [{"id": "bench", "name": "Bench"}],
        "workspaces": [{"id": "bench-ws", "tenant": "bench", "name": "Leases",
                        "steward": "p-0"}],
        "people": persons, "dev": {"tokens": [DEV_TOKEN]},
        "tokens": [{"token": CLARIFY_TOKEN, "audience": "clarify", "tenants": ["bench"]}],
        "clarifications": items,
    }


def toml(data: dict[str, Any]) -> str:
    """The scenario as TOML (inline tables on one line each; strings as JSON writes them)."""
    def value(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        if isinstance(v, dict):
            return "{ " + ", ".join(f"{k} = {value(x)}" for k, x in v.items()) + " }"
        return json.dumps(v)

    return "".join(f"{key} = {value(v)}\n" for key, v in data.items())


# ---------------------------------------------------------------- clicks


@dataclass(frozen=True, slots=True)
class Click:
    clarification_id: str
    user: int
    candidate: int


def signed(click: Click, *, codec: Any, stamp: str, acted: float) -> tuple[bytes, dict[str, str]]:
    from cards.actions import ActionKind, ActionRef

    value = codec.encode(ActionRef(kind=ActionKind.ANSWER, card_ref=f"d.{click.clarification_id}",
                                   clarification_id=click.clarification_id,
                                   candidate=click.candidate))
    user = _user(click.user)
    payload = {
        "type": "block_actions", "user": {"id": user, "team_id": TEAM}, "team": {"id": TEAM},
        "api_app_id": "A0BENCH", "trigger_id": "1.2.3",
        "container": {"type": "message", "channel_id": f"D{user}", "message_ts": "1.000100"},
        "channel": {"id": f"D{user}"},
        "actions": [{"type": "button", "action_id": f"clarify.answer.{click.candidate}",
                     "block_id": "answers", "value": value, "action_ts": f"{acted:.6f}"}],
    }
    body = urlencode({"payload": json.dumps(payload)}).encode()
    signature = SignatureVerifier(SECRET).generate_signature(timestamp=stamp, body=body)
    return body, {"Content-Type": "application/x-www-form-urlencoded",
                  "X-Slack-Request-Timestamp": stamp, "X-Slack-Signature": signature or ""}


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


async def _until_up(url: str, *, ok: tuple[int, ...] = (200,), timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
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
              stdout: int | None = None, nice: int = 0) -> subprocess.Popen[bytes]:
        log = open(self.logs / f"{name}.log", "wb")  # noqa: SIM115 - closed with the process
        proc = subprocess.Popen(command, cwd=ROOT, env={**os.environ, **(env or {})},
                                stdout=stdout if stdout is not None else log, stderr=log,
                                preexec_fn=(lambda: os.nice(nice)) if nice else None)
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
               consumers: int) -> str:
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
"""


async def count_responses(core_url: str, ids: list[str]) -> Counter[tuple[str, str]]:
    from bot.core.client import CoreClient

    counts: Counter[tuple[str, str]] = Counter()
    async with CoreClient(base_url=core_url, token=CLARIFY_TOKEN) as core:
        for cid in ids:
            c = await core.get_clarification(clarification_id=cid)
            counts.update((cid, r.responder) for r in c.responses)
    return counts


async def until_drained(redis_url: str, prefix: str, timeout: float) -> tuple[float, int]:
    """Seconds until the outbox is empty (polled every 20 ms), and how many are parked."""
    from bot.store.redis import RedisStore

    started = time.perf_counter()
    async with RedisStore.from_url(redis_url, prefix=prefix) as store:
        while await store.outbox_size() and time.perf_counter() - started < timeout:
            await asyncio.sleep(0.02)
        return time.perf_counter() - started, await store.outbox_parked()


async def forget(redis_url: str, prefix: str) -> None:
    import redis.asyncio as aioredis

    client = aioredis.from_url(redis_url, decode_responses=True)
    async for name in client.scan_iter(f"{prefix}:*"):
        await client.delete(name)
    await client.aclose()


async def run(args: argparse.Namespace) -> None:
    import logging

    import structlog

    from cards.actions import ActionCodec

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))

    per_person = -(-(args.clicks + WARM_UP) // args.people)
    logs = Path(tempfile.mkdtemp(prefix="ack-burst-"))
    procs = Processes(logs)
    prefix = f"bench{uuid4().hex[:8]}"
    try:
        core_port, web_port, bare_port = (_free_port() for _ in range(3))
        core_url = f"http://127.0.0.1:{core_port}"
        scenario_file = logs / "scenario.toml"
        scenario_file.write_text(toml(scenario(per_person, args.people)))
        procs.start("devcore", [str(BIN / "clarify-bot"), "devcore", "--port", str(core_port),
                                "--scenario", str(scenario_file)])
        slack_proc = procs.start("fakeslack", [sys.executable, __file__, "--serve", "fakeslack",
                                               "--people", str(args.people)],
                                 stdout=subprocess.PIPE)
        await _until_up(f"{core_url}/healthz")
        assert slack_proc.stdout is not None
        slack_url = slack_proc.stdout.readline().decode().strip()
        procs.start("bare", [sys.executable, __file__, "--serve", "bare", "--port",
                             str(bare_port), "--slack", slack_url])
        env = {"CLARIFY_BOT_CORE_TOKEN": CLARIFY_TOKEN, "SLACK_BOT_TOKEN": BOT_TOKEN,
               "SLACK_SIGNING_SECRET": SECRET, "CLARIFY_BOT_ACTION_SIGNING_KEY": ACTION_KEY}
        roles = [("web", "web", web_port)] + [
            (f"worker{n}" if n else "worker", "worker", _free_port()) for n in range(args.workers)
        ] if args.role == "split" else [("all", "all", web_port)]
        for name, role, port in roles:
            (logs / f"{name}.toml").write_text(bot_config(
                core=core_url, slack=slack_url, redis=args.redis, prefix=prefix, port=port,
                consumers=args.consumers))
            command = [str(BIN / "clarify-bot"), "serve", "--config",
                       str(logs / f"{name}.toml"), "--role", role]
            if args.profile:  # cProfile of each bot process, written when it stops
                command = [sys.executable, "-m", "cProfile", "-o", str(logs / f"{name}.prof"),
                           *command]
            procs.start(name, command, env=env, nice=args.nice if role == "worker" else 0)
        await _until_up(f"http://127.0.0.1:{web_port}/healthz")
        await _until_up(f"http://127.0.0.1:{bare_port}/slack/events", ok=(404, 405))

        ids = [f"clr-{n:05d}" for n in range(1, per_person + 1)]
        clicks = [Click(cid, user, (n + user) % 2) for n, cid in enumerate(ids)
                  for user in range(args.people)]
        warm, measured = clicks[:WARM_UP], clicks[WARM_UP:WARM_UP + args.clicks]
        codec = ActionCodec(ACTION_KEY.encode())

        def requests(batch: list[Click]) -> list[tuple[bytes, dict[str, str]]]:
            stamp, now = str(int(time.time())), time.time()
            return [signed(c, codec=codec, stamp=stamp, acted=now + n / 1e6)
                    for n, c in enumerate(batch)]

        bare_url = f"http://127.0.0.1:{bare_port}/slack/events"
        bot_url = f"http://127.0.0.1:{web_port}/slack/events"
        await burst(bare_url, requests(warm), args.concurrency)
        await burst(bot_url, requests(warm), args.concurrency)
        await until_drained(args.redis, prefix, 120)
        load_before = os.getloadavg()
        cpu = [procs.cpu()]
        bare = await burst(bare_url, requests(measured), args.concurrency)
        cpu.append(procs.cpu())
        bot = await burst(bot_url, requests(measured), args.concurrency)
        cpu.append(procs.cpu())
        drained, parked = await until_drained(args.redis, prefix, 300)
        cpu.append(procs.cpu())
        load_after = os.getloadavg()
        counts = await count_responses(core_url, ids)
        report(args, bare, bot, drained, parked, counts, clicks[:WARM_UP + args.clicks],
               (load_before, load_after), logs)
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
          f"{args.workers} worker(s) of {args.consumers} consumers at nice {args.nice}; "
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
    parser.add_argument("--workers", type=int, default=1,
                        help="worker processes (outbox consumers) beside the one web process")
    parser.add_argument("--nice", type=int, default=0,
                        help="run the worker processes at this nice level (background work "
                             "beside the web process on one host; everything else keeps 0)")
    parser.add_argument("--profile", action="store_true",
                        help="profile each bot process with cProfile (.prof files in the logs folder)")
    parser.add_argument("--serve", choices=["bare", "fakeslack"])
    parser.add_argument("--port", type=int)
    parser.add_argument("--slack")
    args = parser.parse_args()
    if args.serve == "bare":
        serve_bare(args.port, args.slack)
    elif args.serve == "fakeslack":
        serve_fake_slack(args.people)
    else:
        asyncio.run(run(args))


if __name__ == "__main__":
    main()
