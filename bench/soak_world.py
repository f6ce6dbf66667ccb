"""The world of bench/soak.py: the generated scenario, and the two servers it runs in processes of
their own beside the bot, each with a side door the soak drives and reads:

- the reference core (bench/delivery_world.py's, counting its calls) with a fault middleware
  (``POST /_soak/fault``: every ``/v1`` call answers 5xx, or is held past the bot's read timeout,
  for a while), ``POST /_soak/add`` (more clarifications, the directory kept) and
  ``GET /_soak/records`` (what the core recorded: responses, deliveries, skips);
- the local Slack stand-in (devslack) and the fake Bot Connector of the tests
  (tests/teams/fakeconnector.py) with one fault window (``POST /fault``: every call answers 429
  with Retry-After, or a 5xx, for a while) and ``GET /log?after=N``: every message the bot wrote
  on either (posted, updated, ephemeral), in order.
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from delivery_world import serve_core  # noqa: E402

CLARIFY_TOKEN = "soak-clarify-token"
DEV_TOKEN = "soak-dev-token"
BOT_TOKEN = "xoxb-fake-bot-token"  # the fake Slack's
ACTION_KEY = "soak-action-signing-key-0123456789abcdef"
SECRET = "soak-signing-secret-0123456789abcdef"
TEAM = "T0SOAK"
TENANT, WORKSPACE, STEWARD = "soak", "soak-ws", "p-steward"
AAD_TENANT = "5f3c1a2b-7d4e-4c1a-9b2e-0a11ce00500a"  # the soak tenant's Entra tenant
SPAN_MARK = "SPANTEXT"  # every span text starts with it: found in a message = span text shown
WRITES = ("chat.postMessage", "chat.update", "chat.postEphemeral", "views.publish",
          "views.open", "views.update")


def reader(n: int) -> str:
    return f"p-r{n}"


def nonreader(n: int) -> str:
    return f"p-x{n}"


def slack_user(person: str) -> str:
    """The Slack user id of a person of the scenario (``p-r12`` → ``U0SR12``)."""
    return "U0S" + person.removeprefix("p-").upper()


def aad_user(person: str) -> str:
    """The AAD object id of a person of the scenario (``p-r12`` → ``…-000000000012``, ``p-x3``
    → ``…-000100000003``)."""
    kind, n = person[2], int(person[3:])
    return f"00000000-0000-4000-8000-{(n if kind == 'r' else 100_000_000 + n):012d}"


def on_teams(person: str) -> bool:
    """Every other reader and non-reader is reached on Teams, the rest (and the steward) on
    Slack."""
    return person[2] in "rx" and int(person[3:]) % 2 == 1


def escalated(deliveries: Iterable[tuple[str, str]]) -> bool:
    """Whether the steward had the escalation, from the (person, kind) of each delivery the core
    recorded: its kind says so on the full contract; the baseline's report carries no kind (the
    core records a question), and the steward, never ranked, is asked only by the escalation."""
    return any(kind == "steward_escalation" or (person == STEWARD and kind == "question")
               for person, kind in deliveries)


def span_text(n: int) -> str:
    return f"{SPAN_MARK}-{n:05d} next quarter"


@dataclass(frozen=True)
class Cast:
    """Who is in the soak: ``readers`` editors who may read every source and answer, and
    ``nonreaders`` viewers of the workspace whom the sources' ACL refuses (the gate must skip
    them with NO_READ_PERMISSION, and no span text may ever reach them)."""

    readers: int
    nonreaders: int

    def people(self) -> list[dict[str, Any]]:
        def person(pid: str, role: str) -> dict[str, Any]:
            alias: dict[str, Any] = {"teams": [{"aad_object_id": aad_user(pid),
                                                "tenant_id": AAD_TENANT}]} if on_teams(pid) \
                else {"slack": [{"user_id": slack_user(pid), "team_id": TEAM}]}
            return {"id": pid, "tenant": TENANT, "display_name": pid,
                    "memberships": [{"workspace": WORKSPACE, "role": role}], **alias}

        return ([person(reader(n), "editor") for n in range(self.readers)]
                + [person(nonreader(n), "viewer") for n in range(self.nonreaders)]
                + [person(STEWARD, "steward")])

    def ranking(self, n: int) -> list[str]:
        """Every third clarification ranks a person who may not read it first."""
        first = [nonreader(n % self.nonreaders)] if self.nonreaders and n % 3 == 0 else []
        return [*first, reader(n % self.readers)]


def clarification(n: int, cast: Cast) -> dict[str, Any]:
    text = span_text(n)
    return {
        "tenant_id": TENANT, "workspace_id": WORKSPACE, "target": f"fact-{n}",
        "question": "When does the lease renewal take effect?", "kind": "relative_date",
        "severity_hint": "high", "detector_confidence": 0.9, "applied_candidate_confidence": 0.5,
        "candidates": [{"label": "next quarter", "valid_from": "2026-07-01T00:00:00Z"},
                       {"label": "next year", "valid_from": "2027-01-01T00:00:00Z"},
                       {"label": "the year after", "valid_from": "2028-01-01T00:00:00Z"}],
        "authority": {"authored_by": cast.ranking(n)},
        "document": {"document_id": f"doc-{n}", "title": f"Lease {n}",
                     "url": f"https://docs.soak.example/{n}", "content_hash": f"sha256:{n:08x}",
                     "acl": {"workspace_id": WORKSPACE, "read_roles": ["editor", "steward"]}},
        "span": {"start": 0, "end": len(text), "text": text},
    }


def scenario(cast: Cast, numbers: range, *, window_hours: float) -> dict[str, Any]:
    """The tenant (a short escalation window, no steward notice for high severity), its
    workspace and people, and the clarifications ``numbers``."""
    return {
        "name": "soak",
        "tenants": [{"id": TENANT, "name": "Soak", "clarify": {
            "escalation_window_hours": window_hours, "max_candidates": 3,
            "severity": {"high_notifies_steward": False}}}],
        "workspaces": [{"id": WORKSPACE, "tenant": TENANT, "name": "Leases",
                        "steward": STEWARD}],
        "people": cast.people(), "dev": {"tokens": [DEV_TOKEN]},
        "tokens": [{"token": CLARIFY_TOKEN, "audience": "clarify", "tenants": [TENANT]}],
        "clarifications": [clarification(n, cast) for n in numbers],
    }


# ---------------------------------------------------------------- the core's side door


def serve_soak_core(port: int, seed: int, contract: str = "full") -> None:
    serve_core(port, extend=lambda app, core: extend_core(app, core, random.Random(seed)),
               contract=contract)


@dataclass
class Window:
    """A fault and until when it lasts (monotonic seconds)."""

    mode: str = ""
    until: float = 0.0
    hold: float = 0.0  # a timeout: how long a call is held


def extend_core(app: Any, core: Any, rng: random.Random) -> None:
    """Fault windows, additive loads and the records, on the bench core."""
    from aiohttp import web

    from devcore.scenario import parse_scenario

    fault = Window()

    @web.middleware
    async def faults(request: web.Request, handler: Any) -> web.StreamResponse:
        if not request.path.startswith("/v1") or time.monotonic() >= fault.until:
            return await handler(request)
        if fault.mode == "5xx":
            status = rng.choice((500, 502, 503))
            return web.json_response({"error": {"code": "internal", "message": "injected"}},
                                     status=status)
        # a timeout: held past the bot's read timeout, before or after the core acted on it
        if rng.random() < 0.5:
            await asyncio.sleep(fault.hold)
            return await handler(request)
        response = await handler(request)
        await asyncio.sleep(fault.hold)
        return response

    async def set_fault(request: web.Request) -> web.Response:
        body = await request.json()
        fault.mode, fault.hold = body["mode"], body.get("hold", 0.0)
        fault.until = time.monotonic() + body["seconds"]
        return web.json_response({})

    async def add(request: web.Request) -> web.Response:
        _, requests = parse_scenario(await request.json())
        for req in requests:
            core.create_clarification(req)
        return web.json_response({"clarifications": len(requests)})

    async def unsettled(_: web.Request) -> web.Response:
        """Clarifications with no response yet whose steward has not had the escalation."""
        count = sum(1 for record in core.records.values() if not record.model.responses
                    and not escalated((d.person_id, str(d.kind))
                                      for d in record.model.deliveries))
        return web.json_response({"unsettled": count})

    async def records(_: web.Request) -> web.Response:
        found = []
        for record in core.records.values():
            c = record.model
            found.append({
                "id": c.id, "target": c.target, "state": str(c.state), "ranking": c.ranking,
                "responses": [[r.responder, r.answer_index, str(r.channel),
                               r.superseded_by is not None or r.response_id in record.book.pending]
                              for r in c.responses],
                "deliveries": [[d.person_id, d.attempt, str(d.kind), str(d.channel)]
                               for d in c.deliveries],
                "skips": [[e.person_id, e.reason_code and str(e.reason_code)]
                          for e in c.events if e.type == "skipped"],
                "events": [[e.type, e.person_id, e.attempt] for e in c.events],
            })
        return web.json_response(found)

    app.middlewares.insert(0, faults)
    app.router.add_post("/_soak/fault", set_fault)
    app.router.add_post("/_soak/add", add)
    app.router.add_get("/_soak/records", records)
    app.router.add_get("/_soak/unsettled", unsettled)


# ---------------------------------------------------------------- the fake Slack


def serve_fakes(slack_port: int, connector_port: int, side_port: int,
                people: list[str]) -> None:
    """The fake Slack on ``slack_port`` and the fake Bot Connector on ``connector_port`` (a
    fault window on top of each fake's own) and their side door on ``side_port``; prints the
    two base URLs."""
    from aiohttp import web

    from devslack import Fault, LocalSlack, fault_error
    from tests.teams.fakeconnector import FakeConnector, _error

    window = Window()

    @dataclass
    class WindowedSlack(LocalSlack):
        def _inject_faults(self, method: str, args: dict[str, Any], now: float) -> None:
            if time.monotonic() < window.until:
                raise fault_error(Fault(int(window.mode), 1, None, 1))
            super()._inject_faults(method, args, now)

    class WindowedConnector(FakeConnector):
        def _refusal(self, route: str, request: web.Request, body: Any) -> web.Response | None:
            if time.monotonic() < window.until:
                status = int(window.mode)
                return self._answer(route, request, status, _error("Transient", "injected"),
                                    body, headers={"Retry-After": "1"} if status == 429 else {})
            return super()._refusal(route, request, body)

    async def main() -> None:
        async with WindowedSlack(timer=time.time, port=slack_port) as slack, \
                WindowedConnector(port=connector_port) as connector:
            for person in people:
                if on_teams(person):
                    connector.install(AAD_TENANT, aad_user(person))
                else:
                    slack.add_user(slack_user(person))
            written: list[dict[str, Any]] = []
            posted = [0, 0]  # messages and activities already matched to their calls

            def fold() -> None:
                """Successful writes move into ``written``; the fakes' call lists are emptied
                (messages and activities stay: updates and look-ups find them there)."""
                for call in slack.calls:
                    ts = None
                    if call.status == 200 and call.method == "chat.postMessage":
                        # calls and messages are appended in the same order, one handler each
                        ts = slack.messages[posted[0]].ts
                        posted[0] += 1
                    if call.status == 200 and call.method in WRITES:
                        args = call.args
                        payload = (args.get("metadata") or {}).get("event_payload") or {}
                        to = str(args.get("user") or args.get("user_id") or args.get("channel"))
                        written.append({
                            "method": call.method, "to": to.removeprefix("D"),
                            "ts": ts or args.get("ts"), "delivery": payload.get("delivery"),
                            "text": json.dumps([args.get("text"), args.get("blocks"),
                                                args.get("view")])})
                for teams in connector.calls:
                    if teams.route not in ("send", "update") or teams.status not in (200, 201):
                        continue
                    cid = teams.path.split("/conversations/")[1].split("/")[0]
                    activity = None
                    if teams.route == "send":
                        activity = connector.posted[posted[1]].activity_id
                        posted[1] += 1
                    written.append({
                        "method": f"teams.{teams.route}", "to": connector.conversations[cid][1],
                        "ts": activity, "conversation": cid, "delivery": None,
                        "text": json.dumps(teams.body)})
                slack.calls.clear()
                slack.ephemerals.clear()
                connector.calls.clear()

            async def log(request: web.Request) -> web.Response:
                fold()
                after = int(request.query.get("after", 0))
                return web.json_response({"writes": written[after:], "next": len(written)})

            async def set_fault(request: web.Request) -> web.Response:
                body = await request.json()
                window.mode = str(body["status"])
                window.until = time.monotonic() + body["seconds"]
                return web.json_response({})

            side = web.Application()
            side.router.add_get("/log", log)
            side.router.add_post("/fault", set_fault)
            runner = web.AppRunner(side, access_log=None)
            await runner.setup()
            await web.TCPSite(runner, "127.0.0.1", side_port).start()
            print(slack.url, connector.url, flush=True)
            await asyncio.Event().wait()

    asyncio.run(main())
