"""Teams card clicks under a burst: the full bot's ``/api/messages`` beside a bare Agents SDK bot.

Run: .venv/bin/python bench/teams_burst.py [--invokes 1000] [--rounds 3] [--concurrency 50]
         [--redis redis://127.0.0.1:6379/13] [--people N] [--outcome bind|attest]
         [--role split|all] [--consumers N] [--cache-seconds S] [--bot-root PATH] [--profile]

Both sides run in one run, on 127.0.0.1, every server in its own process, token validation on:
(a) the bot: ``clarify-bot serve`` (``--role web`` and ``--role worker``, or one ``all``) with its
    shipped settings (single tenant, an app id; ``[limits]``, ``[answers]`` and ``[teams.rates]``
    as they ship), started through bench/soak_serve.py, which points only what production takes
    from Microsoft at 127.0.0.1: the keys that sign Bot Framework tokens (a local JWKS carrying
    endorsements, as Microsoft's does), the bot's own connector token, and the connector's origin
    (a fake Bot Connector, tests/teams/fakeconnector.py, which counts every call); the Redis
    store (from ``--bot-root`` when given); the reference core (``clarify-bot devcore``) with one
    question and one verified person per invoke (editors, so an answer binds; ``--outcome
    attest``: viewers), each known by a Teams identity, none of them the warm-up's;
(b) a bare Agents SDK 1.9 bot: ``AgentApplication`` and ``CloudAdapter`` behind the SDK's own
    ``jwt_authorization_middleware`` (its ``JwtTokenValidator`` pointed at the same JWKS), whose
    only handler answers ``Action.Execute`` with a small card.
Every invoke is a distinct (clarification, person, answer), an ``adaptiveCard/action`` as Teams
sends it, with a Bot Framework token signed by the local key (RS256, for the app, with the
activity's serviceurl). Each side first gets a short warm-up of its own invokes (not counted);
then the sides take turns, ``--rounds`` rounds of ``--invokes`` each, so that both meet the same
background load on a shared machine.
The report (bench/ack_burst.py's table): per round and side the rate, p50, p95, p99 and max
latency, the CPU per invoke and the Redis scripts per invoke; the worst round's ratios;
what the bot's invoke responses were (the card, "being recorded", "cannot be reached"); the
calls the fake connector got (none is for a clicked card); and a check at the core that every
(clarification, person) has exactly one response. Redis keys live under a throw-away prefix and
are deleted afterwards; no database is flushed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import uuid4

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import aiohttp  # noqa: E402
from ack_burst import (  # noqa: E402
    Processes,
    _free_port,
    _until_up,
    add_shared,
    at_the_core,
    bot_command,
    bot_root,
    burst,
    count_responses,
    cpu_names,
    forget,
    print_rounds,
    roles,
    settings_line,
    take_turns,
    until_drained,
)
from ack_burst_world import ACTION_KEY, CLARIFY_TOKEN, DEV_TOKEN, toml  # noqa: E402

WARM_UP = 200
BIN = Path(sys.executable).parent
SERVE = ROOT / "bench" / "soak_serve.py"
AAD_TENANT = "5f3c1a2b-7d4e-4c1a-9b2e-0a11ce0be0c1"
CARD = "application/vnd.microsoft.card.adaptive"
UNREACHABLE = "cannot be reached"
RECORDING = "being recorded"


def aad_user(n: int) -> str:
    return f"00000000-0000-4000-8000-{n:012d}"


# ---------------------------------------------------------------- the world


def scenario(clarifications: int, people: int, *, binding: bool = True) -> dict[str, Any]:
    """One tenant, one workspace, verified people known by their Teams identity (``binding``:
    editors, whose answer settles the question; else viewers, every answer an attestation),
    and the clarifications they answer (nothing is delivered: clarify.enabled is off)."""
    role = "editor" if binding else "viewer"
    persons = [{"id": f"p-{n}", "tenant": "bench", "display_name": f"Person {n}",
                "memberships": [{"workspace": "bench-ws", "role": role}],
                "teams": [{"aad_object_id": aad_user(n), "tenant_id": AAD_TENANT}]}
               for n in range(people)]
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
        "name": "teams-burst", "tenants": [{"id": "bench", "name": "Bench"}],
        "workspaces": [{"id": "bench-ws", "tenant": "bench", "name": "Leases",
                        "steward": "p-0"}],
        "people": persons, "dev": {"tokens": [DEV_TOKEN]},
        "tokens": [{"token": CLARIFY_TOKEN, "audience": "clarify", "tenants": ["bench"]}],
        "clarifications": items,
    }


def bot_config(*, core: str, connector: str, redis: str, prefix: str, port: int) -> str:
    """The shipped settings but for where things are: only what must name this run is set."""
    from tests.teams.tokens import APP_ID

    return f"""
[clarify]
enabled = false
channels = "teams"
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
[teams]
app_type = "single-tenant"
app_id = "{APP_ID}"
app_tenant_id = "{AAD_TENANT}"
service_url = "{connector}"
[[teams.tenants]]
aad_tenant_id = "{AAD_TENANT}"
tenant = "bench"
"""


def serve_connector(people: int) -> None:
    """The fake Bot Connector, every person's app installed; GET /_calls counts its calls."""
    from aiohttp import web

    from tests.teams.fakeconnector import FakeConnector
    from tests.teams.tokens import APP_ID

    async def main() -> None:
        async with FakeConnector(bot_id=f"28:{APP_ID}") as connector:
            for n in range(people):
                connector.install(AAD_TENANT, aad_user(n))

            async def calls(_: web.Request) -> web.Response:
                return web.json_response({
                    "routes": Counter(c.route for c in connector.calls),
                    "paths": [c.path for c in connector.calls]})

            side = web.Application()
            side.router.add_get("/_calls", calls)
            runner = web.AppRunner(side, access_log=None)
            await runner.setup()
            port = _free_port()
            await web.TCPSite(runner, "127.0.0.1", port).start()
            print(connector.url, f"http://127.0.0.1:{port}/_calls", flush=True)
            await asyncio.Event().wait()

    asyncio.run(main())


async def serve_jwks(port: int) -> Any:
    """The key set, in this process: the key that signs the tokens is made here (one per
    process, tests/teams/tokens.py), and fetched once by each side (then cached)."""
    from aiohttp import web

    from tests.teams import tokens

    async def keys(_: web.Request) -> web.Response:
        return web.json_response(tokens.jwks())

    app = web.Application()
    app.router.add_get("/keys", keys)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    return runner


def serve_bare(port: int, jwks: str) -> None:
    """A bare Agents SDK 1.9 bot: the SDK's JWT middleware and CloudAdapter, one handler that
    answers ``clarify.answer`` with a small card; keys from the local JWKS (``KeyDirectory``),
    its own connector token a fixed one (it never needs to send: the invoke's response is all)."""
    from aiohttp import web
    from microsoft_agents.activity import AdaptiveCardInvokeResponse
    from microsoft_agents.hosting.aiohttp import (
        CloudAdapter,
        jwt_authorization_middleware,
        start_agent_process,
    )
    from microsoft_agents.hosting.core import (
        AgentApplication,
        AgentAuthConfiguration,
        AuthTypes,
        ConnectionManager,
        MemoryStorage,
        TurnContext,
        TurnState,
    )
    from microsoft_agents.hosting.core.authorization.jwt import JwtTokenValidator

    from adapters.teams.auth import KeyDirectory
    from tests.teams.tokens import APP_ID

    class LocalTokens:
        async def get_access_token(self, resource_url: str, scopes: list[str],
                                   force_refresh: bool = False) -> str:
            return "bare-bot-token"

    JwtTokenValidator._jwk_client_manager = KeyDirectory(lambda _: jwks)
    config = AgentAuthConfiguration(AuthTypes.client_secret, client_id=APP_ID,
                                    tenant_id=AAD_TENANT, connection_name="SERVICE_CONNECTION",
                                    anonymous_allowed=False)
    connections = ConnectionManager(provider_factory=lambda _: LocalTokens(),  # type: ignore[arg-type,return-value]
                                    connections_configurations={"SERVICE_CONNECTION": config})
    adapter = CloudAdapter(connection_manager=connections)
    agent = AgentApplication[TurnState](storage=MemoryStorage(), connection_manager=connections)
    small = {"type": "AdaptiveCard", "version": "1.5",
             "body": [{"type": "TextBlock", "text": "Thanks, recorded.", "wrap": True}]}

    @agent.adaptive_card.action_execute("clarify.answer")
    async def answer(context: TurnContext, state: TurnState, data: Any) -> Any:
        return AdaptiveCardInvokeResponse(status_code=200, type=CARD, value=small)

    async def messages(request: web.Request) -> web.Response:
        return await start_agent_process(request, agent, adapter)  # type: ignore[return-value]

    app = web.Application(middlewares=[jwt_authorization_middleware])
    app["agent_configuration"] = config
    app.router.add_post("/api/messages", messages)
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None)


# ---------------------------------------------------------------- invokes


@dataclass(frozen=True, slots=True)
class Click:
    clarification_id: str
    user: int
    candidate: int


def invoke(click: Click, *, codec: Any, service_url: str, at: datetime) -> bytes:
    """An ``adaptiveCard/action`` invoke as Teams sends it for one press on a question card."""
    from cards.actions import ActionKind, ActionRef
    from tests.teams.tokens import APP_ID

    user = aad_user(click.user)
    data = codec.teams_data(ActionRef(kind=ActionKind.ANSWER,
                                      card_ref=f"d.{click.clarification_id}",
                                      clarification_id=click.clarification_id,
                                      candidate=click.candidate))
    body = {
        "type": "invoke", "name": "adaptiveCard/action", "id": f"f:{uuid4().hex}",
        "channelId": "msteams", "serviceUrl": service_url,
        "timestamp": at.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "from": {"id": f"29:{user}", "name": f"Person {click.user}", "aadObjectId": user},
        "recipient": {"id": f"28:{APP_ID}", "name": "Clarify"},
        "conversation": {"id": f"a:{user}", "conversationType": "personal",
                         "tenantId": AAD_TENANT},
        "channelData": {"tenant": {"id": AAD_TENANT}},
        "replyToId": f"1:{click.clarification_id}:{click.user}",
        "value": {"action": {"type": "Action.Execute", "verb": "clarify.answer",
                             "data": data}},
    }
    return json.dumps(body).encode()


def _shown(raw: bytes) -> str:
    """What an invoke's response put on the card: the outcome, "being recorded", "cannot be
    reached", a message beside the card, or an error."""
    try:
        body = json.loads(raw)
    except ValueError:
        return "error"
    if not isinstance(body, dict) or body.get("statusCode") != 200:
        return "error"
    if body.get("type") != CARD:
        return "message"
    text = json.dumps(body.get("value"))
    if UNREACHABLE in text:
        return "cannot be reached"
    if RECORDING in text:
        return "being recorded"
    return "card"


# ---------------------------------------------------------------- orchestration


@dataclass
class World:
    core_url: str
    bot_url: str
    bare_url: str
    connector_url: str
    calls_url: str
    procs: Processes


async def start(args: argparse.Namespace, procs: Processes, *, prefix: str,
                clarifications: int, people: int) -> World:
    from ack_burst_world import ACTION_KEY as KEY

    core_port, jwks_port, bare_port, web_port = (_free_port() for _ in range(4))
    core_url = f"http://127.0.0.1:{core_port}"
    scenario_file = procs.logs / "scenario.toml"
    scenario_file.write_text(toml(scenario(clarifications, people,
                                           binding=args.outcome == "bind")))
    procs.start("devcore", [str(BIN / "clarify-bot"), "devcore", "--port", str(core_port),
                            "--scenario", str(scenario_file)])
    procs.extra["jwks"] = await serve_jwks(jwks_port)  # type: ignore[attr-defined]
    fake = procs.start("connector", [sys.executable, __file__, "--serve", "connector",
                                     "--people", str(people)], stdout=-1)
    jwks = f"http://127.0.0.1:{jwks_port}/keys"
    await _until_up(f"{core_url}/healthz", within=120)
    await _until_up(jwks)
    assert fake.stdout is not None
    connector_url, calls_url = fake.stdout.readline().decode().split()
    origin = connector_url.split("/teams/")[0]
    procs.start("bare", [sys.executable, __file__, "--serve", "bare", "--port", str(bare_port),
                         "--jwks", jwks])
    env = {"CLARIFY_BOT_CORE_TOKEN": CLARIFY_TOKEN, "CLARIFY_BOT_ACTION_SIGNING_KEY": KEY,
           "TEAMS_APP_PASSWORD": "bench-unused-msal-is-not-asked"}
    for name, role, port in roles(args, web_port):
        (procs.logs / f"{name}.toml").write_text(bot_config(
            core=core_url, connector=connector_url, redis=args.redis, prefix=prefix, port=port))
        command, extra, cwd = bot_command(args, procs, name, role, [
            sys.executable, str(bot_root(args) / SERVE.relative_to(ROOT)), jwks, origin])
        procs.start(name, command, env={**env, **extra}, cwd=cwd)
    await _until_up(f"http://127.0.0.1:{web_port}/healthz")
    await _until_up(f"http://127.0.0.1:{bare_port}/api/messages", ok=(401, 405))
    return World(core_url=core_url, bot_url=f"http://127.0.0.1:{web_port}/api/messages",
                 bare_url=f"http://127.0.0.1:{bare_port}/api/messages",
                 connector_url=connector_url, calls_url=calls_url, procs=procs)


async def connector_calls(url: str) -> dict[str, Any]:
    async with aiohttp.ClientSession() as http, http.get(url) as response:
        return dict(await response.json())


async def run(args: argparse.Namespace) -> None:
    import logging

    import structlog

    from cards.actions import ActionCodec
    from tests.teams import tokens

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    total = WARM_UP + args.invokes * args.rounds
    people = args.people or total
    procs = Processes(Path(tempfile.mkdtemp(prefix="teams-burst-")))
    procs.extra = {}  # type: ignore[attr-defined]
    prefix = f"bench{uuid4().hex[:8]}"
    codec = ActionCodec(ACTION_KEY.encode())
    try:
        world = await start(args, procs, prefix=prefix, clarifications=total, people=people)
        # invoke n: clarification n, person n (of --people, in turn): every (clarification,
        # person) once, and with one person per invoke nobody's identity is known beforehand
        clicks = [Click(f"clr-{n + 1:05d}", n % people, n % 2) for n in range(total)]
        base = datetime.now(UTC)
        # one Bot Framework token for the run, as the connector reuses one for about an hour
        token = tokens.sign(tokens.claims(serviceurl=world.connector_url, exp=int(time.time())
                                          + 3600))
        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}
        requests = [(invoke(c, codec=codec, service_url=world.connector_url,
                            at=base + timedelta(milliseconds=n)), headers)
                    for n, c in enumerate(clicks)]
        warm = requests[:WARM_UP]
        await burst(world.bare_url, warm, args.concurrency, _shown)
        await burst(world.bot_url, warm, args.concurrency, _shown)
        await until_drained(args.redis, prefix, 120)
        await procs.until_quiet()
        before = await connector_calls(world.calls_url)
        load_before = os.getloadavg()
        parts = [requests[WARM_UP + n * args.invokes:WARM_UP + (n + 1) * args.invokes]
                 for n in range(args.rounds)]
        sides = {"bare": lambda part: burst(world.bare_url, part, args.concurrency, _shown),
                 "bot": lambda part: burst(world.bot_url, part, args.concurrency, _shown)}
        rounds = await take_turns(sides, parts, procs, redis_url=args.redis, prefix=prefix,
                                  cpu_of=cpu_names(args))
        _, parked = await until_drained(args.redis, prefix, 300)
        await asyncio.sleep(1.0)  # the follow-ups' last background work, if any
        await procs.until_quiet()
        after = await connector_calls(world.calls_url)
        load = (load_before, os.getloadavg())
        counts = await count_responses(world.core_url, [c.clarification_id for c in clicks])
        print(f"\n{settings_line(args, people, f'{args.invokes} invokes')}; logs in {procs.logs}")
        print_rounds(rounds, bare_name="bare Agents SDK 1.9 bot (a small card)", unit="invokes")
        shown: Counter[str] = sum((r.bot.shown for r in rounds), Counter())
        print(f"bot's invoke responses: {dict(shown)}")
        print(connector_line(before, after, clicks))
        print(f"outbox parked: {parked}")
        print(at_the_core(counts, clicks))
        print(f"load average (1, 5, 15 min) before: {tuple(round(x, 2) for x in load[0])}, "
              f"after: {tuple(round(x, 2) for x in load[1])}")
    finally:
        procs.stop()
        await forget(args.redis, prefix)
        if "jwks" in procs.extra:  # type: ignore[attr-defined]
            await procs.extra["jwks"].cleanup()  # type: ignore[attr-defined]


def connector_line(before: dict[str, Any], after: dict[str, Any], clicks: list[Click]) -> str:
    """The connector calls the bursts' answers made, their follow-ups included, and how many
    updated a clicked card. An answer shown in place needs none; one answered "being recorded"
    in a burst (``answers.in_place_at_once``) has its outcome said by the follow-ups: here, with
    no card of the bench's delivered by the bot, as a message beside the clicked card (a
    ``send``; a delivered card is updated instead)."""
    new_paths = after["paths"][len(before["paths"]):]
    routes = Counter(after["routes"]) - Counter(before["routes"])
    clicked = {f"1:{c.clarification_id}:{c.user}" for c in clicks}
    own = sum(1 for path in new_paths if path.rsplit("/", 1)[-1] in clicked)
    return (f"connector calls of the bursts' answers (follow-ups included): "
            f"{dict(routes) or 'none'}; updates of a clicked card: {own}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--invokes", type=int, default=1000, help="invokes per round and side")
    parser.add_argument("--rounds", type=int, default=3,
                        help="rounds each side gets, taking turns")
    parser.add_argument("--concurrency", type=int, default=50)
    add_shared(parser)
    parser.add_argument("--serve", choices=["bare", "connector"])
    parser.add_argument("--port", type=int)
    parser.add_argument("--jwks")
    args = parser.parse_args()
    if args.serve == "bare":
        serve_bare(args.port, args.jwks)
    elif args.serve == "connector":
        serve_connector(args.people)
    else:
        asyncio.run(run(args))


if __name__ == "__main__":
    main()
