"""The world of bench/delivery.py: the servers it runs in their own processes (a reference core
that counts the calls it answers, the fake Slack Web API with a counting side door, Redis), the
generated scenario, and the raw slack_sdk poster it is compared with."""

from __future__ import annotations

import asyncio
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CLARIFY_TOKEN = "bench-clarify-token"
DEV_TOKEN = "bench-dev-token"
BOT_TOKEN = "xoxb-fake-bot-token"  # the fake Slack's
ACTION_KEY = "bench-action-signing-key-0123456789abcdef"
SECRET = "bench-signing-secret-0123456789abcdef"
TEAM = "T0BENCH"
STEWARD_USER = "U0DSTEWARD"  # the workspace steward's Slack user (high-severity notices)
# how a steward notice message's delivery token ends (batched; one per notice before that)
NOTICES = ("|steward_notices", "|steward_notice")
TIER2 = ("users.list", "dnd.teamInfo")  # answered at Slack's Tier 2 by the fake


def high(n: int, share: float) -> bool:
    """Whether question ``n`` is high severity: ``share`` of them, spread evenly."""
    return int((n + 1) * share) > int(n * share)


def user(n: int) -> str:
    return f"U0D{n:06d}"


def scenario(cards: int, people: int, *, tag: str, high_share: float = 0.0) -> dict[str, Any]:
    """``cards`` clarifications, each ranked to one person (round robin over ``people``
    verified editors), one tenant, one workspace with a steward; ``high_share`` of them high
    severity (each tells the steward), the rest normal; ``tag`` keeps targets distinct."""
    persons = [{"id": f"p-{n}", "tenant": "bench", "display_name": f"Person {n}",
                "memberships": [{"workspace": "bench-ws", "role": "editor"}],
                "slack": [{"user_id": user(n), "team_id": TEAM}]} for n in range(people)]
    persons.append({"id": "p-steward", "tenant": "bench", "display_name": "The Steward",
                    "memberships": [{"workspace": "bench-ws", "role": "steward"}],
                    "slack": [{"user_id": STEWARD_USER, "team_id": TEAM}]})
    items = [{
        "tenant_id": "bench", "workspace_id": "bench-ws", "target": f"fact-{tag}-{n}",
        "question": "When does the lease renewal take effect?", "kind": "relative_date",
        "detector_confidence": 0.9, "applied_candidate_confidence": 0.5,
        "candidates": [{"label": "next quarter", "valid_from": "2026-07-01T00:00:00Z"},
                       {"label": "next year", "valid_from": "2027-01-01T00:00:00Z"}],
        "authority": {"authored_by": [f"p-{n % people}"]},
        "document": {"document_id": f"doc-{tag}-{n}", "title": f"Lease {n}",
                     "url": f"https://docs.bench.example/{n}", "content_hash": f"sha256:{n:08x}",
                     "acl": {"workspace_id": "bench-ws",
                             "read_roles": ["viewer", "editor", "steward"]}},
        "span": {"start": 0, "end": 10, "text": "next quarter"},
        **({"severity_hint": "high"} if high(n, high_share) else {}),
    } for n in range(cards)]
    return {
        "name": "delivery", "tenants": [{"id": "bench", "name": "Bench"}],
        "workspaces": [{"id": "bench-ws", "tenant": "bench", "name": "Leases",
                        "steward": "p-steward"}],
        "people": persons, "dev": {"tokens": [DEV_TOKEN]},
        "tokens": [{"token": CLARIFY_TOKEN, "audience": "clarify", "tenants": ["bench"]}],
        "clarifications": items,
    }


# ---------------------------------------------------------------- the reference core


def serve_core(port: int, extend: Callable[[Any, Any], None] | None = None,
               contract: str = "full") -> None:
    """The reference core with a middleware that counts every call by method and route, and
    ``GET /_bench/calls`` that returns (and with ?reset=1 clears) the counts. ``extend(app,
    core)`` adds a caller's own routes and middlewares (bench/soak.py's faults and records);
    ``contract``: "baseline" serves only what every core offers (docs/core-contract.md)."""
    from aiohttp import web

    import devcore.app
    from devcore.app import create_app
    from devcore.core import Contract
    from devcore.server import build_core

    devcore.app.MAX_BODY = 1 << 30  # a whole phase's scenario is one body (bench only)

    counts: Counter[str] = Counter()

    @web.middleware
    async def count(request: web.Request, handler: Any) -> web.StreamResponse:
        if not request.path.startswith("/_bench"):
            resource = request.match_info.route.resource
            counts[f"{request.method} {resource.canonical if resource else request.path}"] += 1
        return await handler(request)

    async def load(request: web.Request) -> web.Response:
        """A scenario load whose clarification ids go on from the last load's: the bot keeps
        what it sent by clarification id, so a reused id would look delivered already."""
        from devcore.scenario import parse_scenario

        directory, requests = parse_scenario(await request.json())
        ids = core._ids
        core.reset(directory)
        core._ids = ids
        for req in requests:
            core.create_clarification(req)
        return web.json_response({"clarifications": len(requests)})

    async def reported(_: web.Request) -> web.Response:
        """Deliveries the core holds for the clarifications loaded last."""
        return web.json_response(
            {"deliveries": sum(len(r.model.deliveries) for r in core.records.values())})

    async def calls(request: web.Request) -> web.Response:
        body = dict(counts)
        if request.query.get("reset"):
            counts.clear()
        return web.json_response(body)

    from devcore.core import load_scenario

    core = build_core("acme")
    load_scenario(core, scenario(1, 1, tag="boot"))  # the bench's tokens
    app = create_app(core, contract=Contract(contract))
    app.middlewares.insert(0, count)
    app.router.add_get("/_bench/calls", calls)
    app.router.add_post("/_bench/load", load)
    app.router.add_get("/_bench/reported", reported)
    if extend is not None:
        extend(app, core)
    web.run_app(app, host="127.0.0.1", port=port, access_log=None, print=None)


# ---------------------------------------------------------------- the fake Slack


def serve_fake_slack(people: int, side_port: int, zones: tuple[str, ...] = ()) -> None:
    """The local Slack stand-in (devslack) on a port of its own (printed), and a side door on
    ``side_port``: ``GET /counts`` (calls by method, posts, duplicate cards, first and last
    post time, each person's first card's time) and ``POST /forget`` (drops what was recorded,
    so memory stays flat). Person ``n``'s zone is ``zones[n % len(zones)]`` (UTC without);
    ``users.list`` and ``dnd.teamInfo`` answer at Slack's Tier 2 (20 a minute, bursts of 4:
    more is a 429 with Retry-After)."""
    from aiohttp import web

    from devslack import LocalSlack

    async def main() -> None:
        async with LocalSlack(timer=time.time) as slack:
            for n in range(people):
                slack.add_user(user(n), tz=zones[n % len(zones)] if zones else "UTC")
            slack.add_user(STEWARD_USER)
            for method in TIER2:
                slack.rate_limit(method, per_second=20 / 60, burst=4)
            first_posts: dict[str, float] = {}
            posted: Counter[str] = Counter()
            seen = {"calls": Counter[str](), "first": 0.0, "last": 0.0, "posts": 0,
                    "notices": 0, "notices_last": 0.0}

            def fold() -> None:
                """Move recorded calls into counters (the fake keeps every call otherwise)."""
                for call in slack.calls:
                    seen["calls"][call.method] += 1  # type: ignore[index]
                    if call.method != "chat.postMessage" or call.status != 200:
                        continue
                    payload = (call.args.get("metadata") or {}).get("event_payload") or {}
                    if str(payload.get("delivery", "")).endswith(NOTICES):
                        seen["notices"] += 1  # type: ignore[operator]
                        seen["notices_last"] = call.at
                        continue
                    seen["posts"] += 1  # type: ignore[operator]
                    first_posts.setdefault(str(call.args.get("channel", "")), call.at)
                    seen["first"] = seen["first"] or call.at
                    seen["last"] = call.at
                for message in slack.messages:
                    payload = (message.metadata or {}).get("event_payload") or {}
                    posted[str(payload.get("delivery", message.ts))] += 1
                slack.calls.clear()
                slack.messages.clear()

            async def counts(_: web.Request) -> web.Response:
                fold()
                return web.json_response({
                    "calls": dict(seen["calls"]), "posts": seen["posts"],  # type: ignore[call-overload]
                    "duplicates": sum(n - 1 for n in posted.values() if n > 1),
                    "first": seen["first"], "last": seen["last"],
                    "notices": seen["notices"], "notices_last": seen["notices_last"],
                    "first_posts": first_posts})

            async def forget(_: web.Request) -> web.Response:
                fold()
                posted.clear()
                first_posts.clear()
                seen.update({"calls": Counter(), "first": 0.0, "last": 0.0, "posts": 0,
                             "notices": 0, "notices_last": 0.0})
                return web.json_response({})

            side = web.Application()
            side.router.add_get("/counts", counts)
            side.router.add_post("/forget", forget)
            runner = web.AppRunner(side, access_log=None)
            await runner.setup()
            await web.TCPSite(runner, "127.0.0.1", side_port).start()
            print(slack.url, flush=True)
            await asyncio.Event().wait()

    asyncio.run(main())


# ---------------------------------------------------------------- raw slack_sdk posting


def card_body() -> dict[str, Any]:
    """A question card as the bot renders it, for the raw side to post."""
    from adapters.slack.render import render
    from cards.actions import ActionCodec
    from cards.fixtures import QUESTION

    return render(QUESTION, codec=ActionCodec(ACTION_KEY.encode()))


async def raw_posts(slack_url: str, people: int, cards: int, concurrency: int) -> float:
    """``cards`` chat.postMessage calls through slack_sdk's AsyncWebClient (one shared aiohttp
    session), ``concurrency`` at a time, to the same fake; returns the seconds they took."""
    import aiohttp
    from slack_sdk.web.async_client import AsyncWebClient

    body = card_body()
    queue: asyncio.Queue[int] = asyncio.Queue()
    for n in range(cards):
        queue.put_nowait(n)
    async with aiohttp.ClientSession() as session:
        client = AsyncWebClient(token=BOT_TOKEN, base_url=slack_url, session=session)

        async def poster() -> None:
            while not queue.empty():
                n = queue.get_nowait()
                await client.chat_postMessage(
                    channel=user(n % people), text=body["text"], blocks=body["blocks"],
                    unfurl_links=False, unfurl_media=False,
                    metadata={"event_type": "clarify_card",
                              "event_payload": {"delivery": f"raw|{n}"}})

        started = time.perf_counter()
        await asyncio.gather(*(poster() for _ in range(concurrency)))
        return time.perf_counter() - started
