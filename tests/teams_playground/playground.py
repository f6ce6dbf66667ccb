"""The Microsoft 365 Agents Playground as a test double of Teams: started, driven, stopped.

It runs as a Node process from ``tests/teams_playground/npm`` (``.ci/setup-teams.sh`` installs it,
pinned), pointed at the bot's ``/api/messages``, and acts as the Bot Connector service for the
bot's replies. Three things keep it inside these tests (docs/teams.md):

- ``TEAMSAPPTESTER_BROWSER=none``: otherwise it runs ``xdg-open``, fails and exits with 1;
- ``listen-local.cjs`` is preloaded: it listens on every interface by default, this makes every
  server it opens listen on 127.0.0.1 only;
- ``--dt`` turns its telemetry off, its log goes to the test's folder, and a config file names
  the tenant and the person (``.m365agentsplayground.yml``).

It is driven through its internal routes, as its own web UI does (they may change between
versions: the version is pinned): a message from the person, an ``adaptiveCard/action`` invoke
on a card, and the WebSocket stream of what the bot posted and updated.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from tests.support.processes import free_port, port_open, wait_until

NPM_DIR = Path(__file__).resolve().parent / "npm"
CLI = NPM_DIR / "node_modules" / "@microsoft" / "m365agentsplayground" / "cli.js"
PRELOAD = NPM_DIR / "listen-local.cjs"
BOT_ID = "00000000-0000-4000-8000-0000000000b0"
CARD = "application/vnd.microsoft.card.adaptive"


@dataclass(frozen=True)
class Person:
    """A Teams user as the Playground shows them (the ``from`` of what they send)."""

    user_id: str
    name: str
    aad_object_id: str
    email: str

    def config(self) -> dict[str, str]:
        given, _, surname = self.name.partition(" ")
        return {"id": self.user_id, "name": self.name, "userPrincipleName": self.email,
                "aadObjectId": self.aad_object_id, "givenName": given, "surname": surname,
                "email": self.email}


def missing() -> str | None:
    """Why the Playground cannot run here, or None."""
    if shutil.which("node") is None:
        return "node is not installed"
    if not CLI.is_file():
        return "the Agents Playground is not installed: run .ci/setup-teams.sh"
    return None


def _config(person: Person, *, tenant_id: str, chat_id: str) -> dict[str, Any]:
    # the schema wants exactly five other users, a group chat and a team; only the person and
    # the tenant matter to these tests
    others = [Person(f"29:other-{n}", f"Other Person{n}", f"00000000-0000-4000-8000-00000000c00{n}",
                     f"other{n}@example.invalid").config() for n in range(5)]
    return {"version": "0.1.1", "tenantId": tenant_id,
            "bot": {"id": BOT_ID, "name": "Clarify"}, "currentUser": person.config(),
            "users": others, "personalChat": {"id": chat_id},
            "groupChat": {"id": f"group-{chat_id}", "name": "Group Chat"},
            "team": {"id": f"team-{chat_id}", "name": "Team", "aadGroupId":
                     "00000000-0000-4000-8000-0000000000d0", "channels": []}}


@dataclass
class Posted:
    """One message the bot posted, as the Playground holds it now (updates applied)."""

    message_id: str
    conversation_id: str
    raw: dict[str, Any]

    @property
    def cards(self) -> list[dict[str, Any]]:
        return [a["content"] for a in self.raw.get("attachments") or []
                if a.get("contentType") == CARD]

    @property
    def text(self) -> str:
        """Everything the person can read in it: its text and its cards' JSON."""
        return (self.raw.get("text") or "") + json.dumps(self.cards, ensure_ascii=False)


@dataclass
class Playground:
    """A running Playground for one person; ``messages`` follows its WebSocket stream."""

    person: Person
    port: int
    chat_id: str
    process: asyncio.subprocess.Process
    log: Path
    http: aiohttp.ClientSession
    messages: dict[str, Posted] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    _reader: asyncio.Task[None] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def until_ready(self, seconds: float = 30) -> None:
        """Its port accepts before its routes answer (a message then is reset): ready when
        its config route answers with the person it was given."""
        async def ready() -> bool:
            with contextlib.suppress(aiohttp.ClientError):
                async with self.http.get(f"{self.url}/_internal/v1/config") as got:
                    return got.status == 200 and self.person.aad_object_id in await got.text()
            return False

        await wait_until(ready, "the Playground to become ready", seconds, unless=self._exited)

    def _exited(self) -> str | None:
        return None if self.process.returncode is None else "the Playground exited"

    async def say(self, text: str) -> int:
        """The person writes to the bot in their personal chat (the bot then knows the chat)."""
        async with self.http.post(
                f"{self.url}/_conversation/v1/conversations/{self.chat_id}/messages",
                json={"type": "text", "text": text, "textFormat": "plain",
                      "from": {"id": self.person.user_id},
                      "directLineConversationId": self.chat_id}) as got:
            await got.read()
            return got.status

    async def invoke(self, message: Posted, verb: str, data: dict[str, Any]
                     ) -> tuple[int, Any]:
        """The person presses an ``Action.Execute`` button of ``message``: what Teams sends as
        an ``adaptiveCard/action`` invoke; returns the Playground's status and body."""
        body = {"name": "adaptiveCard/action", "from": {"id": self.person.user_id},
                "conversation": {"id": message.conversation_id},
                "replyToId": message.message_id,
                "value": {"action": {"type": "Action.Execute", "verb": verb, "data": data}}}
        async with self.http.post(f"{self.url}/_conversation/v1/invoke", json=body) as got:
            text = await got.text()
        try:
            answer = json.loads(text) if text else None
        except json.JSONDecodeError:
            return got.status, text
        if isinstance(answer, dict) and answer.get("type") == CARD:
            # what the Playground's UI does with the answer: the card is replaced in place
            message.raw = {**message.raw, "attachments": [{"contentType": CARD,
                                                           "content": answer.get("value")}]}
        return got.status, answer

    def posted(self, condition: Callable[[Posted], bool] = lambda _: True) -> list[Posted]:
        """The bot's messages in the person's chat that meet ``condition``, oldest first."""
        return [m for m in self.messages.values()
                if m.conversation_id == self.chat_id and condition(m)]

    async def wait_for(self, condition: Callable[[], Any], what: str,
                       seconds: float = 45) -> Any:
        """Waits for another process (bot, Playground) to make ``condition`` true; real time,
        bounded, because neither runs on the test's clock."""
        try:
            return await wait_until(condition, what, seconds, unless=self._exited)
        except AssertionError as failed:
            tail = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
            raise AssertionError(f"{failed}; playground log: {tail}") from None

    async def card_with(self, words: str, seconds: float = 45) -> Posted:
        """The newest message showing ``words``, once it arrives."""
        def found() -> Posted | None:
            hits = self.posted(lambda m: words in m.text)
            return hits[-1] if hits else None
        posted: Posted = await self.wait_for(found, f"a message with {words!r}", seconds)
        return posted

    async def _follow(self) -> None:
        url = f"ws://127.0.0.1:{self.port}/_ws_conversation/v1/conversations/stream"
        async with self.http.ws_connect(url) as ws:
            async for frame in ws:
                if frame.type is not aiohttp.WSMsgType.TEXT:
                    continue
                event = json.loads(frame.data)
                self.events.append(event)
                self._apply(event)

    def _apply(self, event: dict[str, Any]) -> None:
        message = event.get("message")
        if not isinstance(message, dict) or "messageId" not in message:
            return
        key = str(message["messageId"])
        known = self.messages.get(key)
        if known is None:
            self.messages[key] = Posted(key, str(event.get("actionConversationId")), message)
        else:
            known.raw = {**known.raw, **message}


@dataclass(frozen=True)
class _Launch:
    port: int
    chat_id: str
    log: Path
    stdout: Path
    env: dict[str, str]


def _prepare(person: Person, *, tenant_id: str, workdir: Path) -> _Launch:
    """The Playground's folder, config file and environment (no global state touched)."""
    workdir.mkdir(parents=True, exist_ok=True)
    port, chat_id = free_port(), f"a:personal-{person.user_id.split(':')[-1]}"
    config = workdir / ".m365agentsplayground.yml"
    config.write_text(json.dumps(_config(person, tenant_id=tenant_id, chat_id=chat_id),
                                 indent=2))  # YAML is a superset of JSON
    log = workdir / "playground.log"
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(workdir),
           "TEAMSAPPTESTER_BROWSER": "none", "M365_AGENTS_PLAYGROUND_LOGFILE": str(log),
           "M365_AGENTS_PLAYGROUND_CONFIG_PATH": str(config),
           "NODE_OPTIONS": f"--require {PRELOAD}"}
    return _Launch(port, chat_id, log, workdir / "stdout.txt", env)


@contextlib.asynccontextmanager
async def running(*, endpoint: str, person: Person, tenant_id: str, workdir: Path,
                  service_url: Callable[[int], str] | None = None) -> AsyncIterator[Playground]:
    """A Playground for ``person`` pointed at ``endpoint``, on a free 127.0.0.1 port; ready
    when its port answers and its stream is followed; stopped and reaped on exit.
    ``service_url(port)``: the connector URL it names in its activities (default: its own)."""
    launch = _prepare(person, tenant_id=tenant_id, workdir=workdir)
    with launch.stdout.open("wb") as stdout:
        process = await asyncio.create_subprocess_exec(
            "node", str(CLI), "-e", endpoint, "-c", "msteams", "-p", str(launch.port),
            "--su", (service_url or _own_connector)(launch.port), "--dt",
            cwd=workdir, env=launch.env, stdout=stdout, stderr=asyncio.subprocess.STDOUT)
    http = aiohttp.ClientSession()
    playground = Playground(person, launch.port, launch.chat_id, process, launch.log, http)
    try:
        await playground.wait_for(lambda: port_open(launch.port), "the Playground to listen", 30)
        await playground.until_ready()
        playground._reader = asyncio.create_task(playground._follow())
        yield playground
    finally:
        if playground._reader is not None:
            playground._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, aiohttp.ClientError):
                await playground._reader
        await http.close()
        if process.returncode is None:
            process.terminate()
            try:
                await asyncio.wait_for(process.wait(), 10)
            except TimeoutError:
                process.kill()
                await process.wait()


def _own_connector(port: int) -> str:
    return f"http://127.0.0.1:{port}/_connector"


class ConnectorFront:
    """One connector origin for several Playgrounds, as Teams has one connector host for every
    user: ``{url}/{name}/_connector/...`` is passed to that person's Playground. The bot allows
    its token (none, in an anonymous run) to exactly one local origin, teams.service_url's."""

    def __init__(self) -> None:
        self.backends: dict[str, str] = {}
        self._runner: web.AppRunner | None = None
        self._http: aiohttp.ClientSession | None = None
        self.url = ""

    def service_url(self, name: str) -> Callable[[int], str]:
        def url(port: int) -> str:
            self.backends[name] = f"http://127.0.0.1:{port}"
            return f"{self.url}/{name}/_connector"
        return url

    async def __aenter__(self) -> ConnectorFront:
        app = web.Application(client_max_size=1024 * 1024)
        app.router.add_route("*", "/{name}/{tail:.*}", self._forward)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        self.url = f"http://127.0.0.1:{self._runner.addresses[0][1]}"
        self._http = aiohttp.ClientSession()
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._http is not None:
            await self._http.close()
        if self._runner is not None:
            await self._runner.cleanup()

    async def _forward(self, request: web.Request) -> web.Response:
        backend = self.backends.get(request.match_info["name"])
        if backend is None or self._http is None:
            return web.Response(status=404)
        headers = {k: v for k, v in request.headers.items()
                   if k.lower() not in ("host", "content-length")}
        async with self._http.request(request.method, f"{backend}/{request.match_info['tail']}",
                                      params=request.query, data=await request.read(),
                                      headers=headers) as got:
            return web.Response(status=got.status, body=await got.read(),
                                content_type=got.content_type)


def listening_addresses(port: int) -> set[str]:
    """The local addresses (hex, as in /proc/net/tcp*) listening on ``port``."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError), open(table) as lines:
            for line in list(lines)[1:]:
                local, state = line.split()[1], line.split()[3]
                address, _, hex_port = local.partition(":")
                if state == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                    found.add(address)
    return found
