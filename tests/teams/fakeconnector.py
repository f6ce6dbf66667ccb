"""A fake Bot Connector on 127.0.0.1, serving the REST routes the Agents SDK's ConnectorClient
calls: create a conversation, send to a conversation, update an activity.

It keeps conversations and their activities in memory, answers as the Teams connector does (1:1
conversations open only for users the app is installed for; a blocked bot gets 403
``MessageWritesBlocked``), checks the bearer token, records every call with the headers it came
with, and can be told to fail the next calls of a route (429, 412, 502, 504, 403 … with
Retry-After).
"""

from __future__ import annotations

import itertools
import json
from collections import defaultdict, deque
from dataclasses import dataclass, field
from typing import Any, Self

from aiohttp import web

TOKEN = "fake-connector-token"
PREFIX = "/teams/"  # the service URL's path, as Teams' regional ones have


@dataclass(frozen=True)
class Call:
    route: str  # "create" | "send" | "reply" | "update" | "members"
    method: str
    path: str
    authorization: str | None
    status: int
    body: Any = None


@dataclass
class Fault:
    status: int
    retry_after: str | None = None
    body: Any = None


@dataclass
class Posted:
    conversation_id: str
    activity_id: str
    activity: dict[str, Any]
    versions: list[dict[str, Any]] = field(default_factory=list)

    @property
    def card(self) -> dict[str, Any] | None:
        attachments = self.activity.get("attachments") or []
        return attachments[0]["content"] if attachments else None


class FakeConnector:
    def __init__(self, *, token: str = TOKEN, bot_id: str | None = None, port: int = 0) -> None:
        self.token = token
        self.port = port  # where it listens (0: any free port)
        self.bot_id = bot_id
        self.installed: set[tuple[str, str]] = set()  # (tenant, AAD object id)
        self.blocked: set[str] = set()  # conversation ids whose person blocked the bot
        self.conversations: dict[str, tuple[str, str]] = {}  # id → (tenant, user)
        self.posted: list[Posted] = []
        self.calls: list[Call] = []
        self.faults: dict[str, deque[Fault]] = defaultdict(deque)
        self.not_installed_status = 403
        self._ids = itertools.count(1_700_000_000_001)
        self._runner: web.AppRunner | None = None
        self.url = ""

    async def __aenter__(self) -> Self:
        app = web.Application()
        app.router.add_post(PREFIX + "v3/conversations", self._create)
        app.router.add_post(PREFIX + "v3/conversations/{cid}/activities", self._send)
        app.router.add_put(PREFIX + "v3/conversations/{cid}/activities/{aid}", self._update)
        app.router.add_get(PREFIX + "v3/conversations/{cid}/members", self._members)
        # a reply to an activity (the SDK's typing indicator replies to the one it is handling)
        app.router.add_post(PREFIX + "v3/conversations/{cid}/activities/{aid}", self._reply)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self.port)
        await site.start()
        port = self._runner.addresses[0][1]
        self.origin = f"http://127.0.0.1:{port}"
        self.url = self.origin + PREFIX
        return self

    async def __aexit__(self, *_: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    # ---------------------------------------------------------------- set-up by tests

    def install(self, tenant: str, user: str) -> None:
        self.installed.add((tenant.lower(), user.lower()))

    def conversation_of(self, tenant: str, user: str) -> str:
        return f"a:1{tenant.lower()[:8]}{user.lower()}"

    def open(self, tenant: str, user: str) -> str:
        """The 1:1 conversation exists already (the person installed the app and wrote)."""
        cid = self.conversation_of(tenant, user)
        self.conversations[cid] = (tenant.lower(), user.lower())
        return cid

    def fail(self, route: str, status: int, *, times: int = 1, retry_after: str | None = None,
             body: Any = None) -> None:
        for _ in range(times):
            self.faults[route].append(Fault(status, retry_after, body))

    def to(self, user: str) -> list[Posted]:
        return [p for p in self.posted if self.conversations[p.conversation_id][1] == user.lower()]

    def of(self, route: str) -> list[Call]:
        return [c for c in self.calls if c.route == route]

    # ---------------------------------------------------------------- routes

    async def _create(self, request: web.Request) -> web.Response:
        body = await request.json()
        refused = self._refusal("create", request, body)
        if refused is not None:
            return refused
        tenant = (body.get("tenantId") or "").lower()
        members = body.get("members") or []
        if body.get("isGroup") or len(members) != 1 or not tenant:
            return self._answer("create", request, 400, _error("BadArgument", "1:1 only"), body)
        if self.bot_id is not None and (body.get("bot") or {}).get("id") != self.bot_id:
            return self._answer("create", request, 400, _error("BadArgument", "wrong bot"), body)
        user = members[0]["id"].lower()
        if (tenant, user) not in self.installed:
            return self._answer("create", request, self.not_installed_status,
                                _error("Forbidden", "The bot is not part of the roster"), body)
        cid = self.open(tenant, user)
        return self._answer("create", request, 201, {"id": cid}, body)

    async def _send(self, request: web.Request) -> web.Response:
        body = await request.json()
        cid = request.match_info["cid"]
        refused = self._refusal("send", request, body)
        if refused is not None:
            return refused
        if cid not in self.conversations:
            return self._answer("send", request, 404,
                                _error("ConversationNotFound", "Conversation not found."), body)
        if cid in self.blocked:
            return self._answer("send", request, 403, {
                "error": {"code": "Forbidden", "message": "User blocked the conversation.",
                          "subCode": "MessageWritesBlocked"}}, body)
        activity_id = str(next(self._ids))
        self.posted.append(Posted(cid, activity_id, body))
        return self._answer("send", request, 201, {"id": activity_id}, body)

    async def _reply(self, request: web.Request) -> web.Response:
        """Recorded as route "reply" (kept apart from "send": nothing the bot sends replies)."""
        body = await request.json()
        refused = self._refusal("reply", request, body)
        if refused is not None:
            return refused
        return self._answer("reply", request, 201, {"id": str(next(self._ids))}, body)

    async def _update(self, request: web.Request) -> web.Response:
        body = await request.json()
        refused = self._refusal("update", request, body)
        if refused is not None:
            return refused
        cid, aid = request.match_info["cid"], request.match_info["aid"]
        found = next((p for p in self.posted
                      if p.conversation_id == cid and p.activity_id == aid), None)
        if found is None:
            return self._answer("update", request, 404,
                                _error("ActivityNotFound", "Unknown activity."), body)
        found.versions.append(found.activity)
        found.activity = body
        return self._answer("update", request, 200, {"id": aid}, body)

    async def _members(self, request: web.Request) -> web.Response:
        """A 1:1 conversation's members as Teams lists them: the person (the bot is not
        listed)."""
        refused = self._refusal("members", request, None)
        if refused is not None:
            return refused
        cid = request.match_info["cid"]
        if cid not in self.conversations:
            return self._answer("members", request, 404,
                                _error("ConversationNotFound", "Conversation not found."))
        _, user = self.conversations[cid]
        return self._answer("members", request, 200, [{"id": f"29:{user}", "name": user,
                                                       "aadObjectId": user}])

    # ---------------------------------------------------------------- helpers

    def _refusal(self, route: str, request: web.Request, body: Any) -> web.Response | None:
        if request.headers.get("Authorization") != f"Bearer {self.token}":
            return self._answer(route, request, 401, _error("Unauthorized", "bad token"), body)
        if self.faults[route]:
            fault = self.faults[route].popleft()
            headers = {"Retry-After": fault.retry_after} if fault.retry_after else {}
            return self._answer(route, request, fault.status,
                                fault.body or _error("Transient", "injected"), body,
                                headers=headers)
        return None

    def _answer(self, route: str, request: web.Request, status: int, payload: Any,
                body: Any = None, *, headers: dict[str, str] | None = None) -> web.Response:
        self.calls.append(Call(route, request.method, request.path,
                               request.headers.get("Authorization"), status, body))
        return web.Response(status=status, text=json.dumps(payload),
                            content_type="application/json", headers=headers)


def _error(code: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message}}
