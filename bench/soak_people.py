"""The simulated people of bench/soak.py: they read the cards the fake Slack and the fake Bot
Connector received and answer them, with block_actions requests signed as Slack signs them, or
Action.Execute invokes carrying a Bot Framework token signed by the soak's key, sent to the web
processes.

Each reader answers each question card once (a button of the card, its value as the card
carries it), and half of them change their mind once the first answer was acknowledged. Answers
go out in bursts; a click that is not acknowledged with 200 (a web process killed, Redis away)
is sent again, unchanged, to the other web process until it is; some acknowledged clicks are
sent again much later (Slack's with ``X-Slack-Retry-Num``), and some are written to the socket
in pieces (one request split across several reads). What counts as given is what was
acknowledged (a Teams invoke: its body's statusCode 200), in order, per (clarification, person).
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from ack_burst_world import signed_action
from soak_world import AAD_TENANT, SECRET, TEAM

from cards.actions import ActionCodec, ActionKind

Request = tuple[bytes, dict[str, str]]


@dataclass(frozen=True)
class Card:
    platform: str  # "slack" | "teams"
    clarification_id: str
    person: str
    user: str  # Slack user id, or AAD object id
    ts: str  # Slack message ts, or Teams activity id
    buttons: dict[int, Any]  # answer index → the button's value (Slack) or data (Teams)
    conversation: str = ""  # Teams


def card_of(write: dict[str, Any], users: dict[str, str], codec: ActionCodec) -> Card | None:
    """A question card posted to a reader, or None."""
    if write["to"] not in users:
        return None
    if write["method"] == "teams.send":
        answers = {ref.candidate: (ref, data) for ref, data in teams_actions(write, codec)
                   if ref.kind is ActionKind.ANSWER and ref.candidate is not None}
        if not answers:
            return None
        cid = next(iter(answers.values()))[0].clarification_id
        return Card("teams", cid, users[write["to"]], write["to"], write["ts"],
                    {i: data for i, (_, data) in answers.items()}, write["conversation"])
    token = write.get("delivery")
    if write["method"] != "chat.postMessage" or not token:
        return None
    cid, person, _, kind = str(token).split("|")
    if kind != "question":
        return None
    _, blocks, _ = json.loads(write["text"])
    buttons = {int(e["action_id"].rsplit(".", 1)[1]): e["value"]
               for b in blocks or [] if b.get("type") == "actions"
               for e in b.get("elements", []) if str(e.get("action_id", "")).startswith(
                   "clarify.answer.")}
    return Card("slack", cid, person, write["to"], write["ts"], buttons)


def teams_actions(write: dict[str, Any], codec: ActionCodec) -> list[tuple[Any, Any]]:
    """Every Action.Execute of a Teams card: (the decoded reference, its data)."""
    found: list[tuple[Any, Any]] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("type") == "Action.Execute" and node.get("data") is not None:
                found.append((codec.decode_teams_data(node["data"]), node["data"]))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(json.loads(write["text"]))
    return found


@dataclass
class Tally:
    given: dict[tuple[str, str], list[int]] = field(default_factory=lambda: defaultdict(list))
    unacknowledged: dict[tuple[str, str], list[int]] = field(
        default_factory=lambda: defaultdict(list))
    clicks: int = 0  # requests sent, retries included
    refused: int = 0  # non-200 answers and connection errors (then sent again)
    late_retries: int = 0
    split: int = 0
    bursts: int = 0
    done: set[str] = field(default_factory=set)  # clarifications whose person finished


@dataclass
class People:
    webs: list[str]  # base URLs of the web processes
    users: dict[str, str]  # Slack user id or AAD object id → person id, of the readers
    rng: random.Random
    codec: ActionCodec
    connector_url: str  # the Teams activities' serviceUrl (the fake connector's)
    token: Any  # () → a Bot Framework token for this bot, signed by the soak's key
    give_up_seconds: float = 240.0
    late_retry_seconds: tuple[float, float] = (3.0, 20.0)  # how long after the answer
    tally: Tally = field(default_factory=Tally)
    pending: list[tuple[Card, int, bool]] = field(default_factory=list)  # card, index, second
    seen: set[str] = field(default_factory=set)  # clarifications already being answered
    tasks: set[asyncio.Task[None]] = field(default_factory=set)
    stopping: bool = False

    def read(self, writes: list[dict[str, Any]]) -> None:
        for write in writes:
            card = card_of(write, self.users, self.codec)
            if card is None or card.clarification_id in self.seen or not card.buttons:
                continue
            self.seen.add(card.clarification_id)
            self.pending.append((card, self.rng.choice(sorted(card.buttons)), False))

    @property
    def busy(self) -> bool:
        return bool(self.pending) or any(not t.done() for t in self.tasks)

    async def run(self, http: aiohttp.ClientSession) -> None:
        """Bursts: every so often, every answer waiting goes out at once."""
        while not self.stopping:
            await asyncio.sleep(self.rng.uniform(0.2, 1.5))
            batch, self.pending = self.pending, []
            if batch:
                self.tally.bursts += 1
            for card, index, second in batch:
                task = asyncio.create_task(self._answer(http, card, index, second))
                self.tasks.add(task)
                task.add_done_callback(self.tasks.discard)

    async def _answer(self, http: aiohttp.ClientSession, card: Card, index: int,
                      second: bool) -> None:
        request = self._teams(card, index) if card.platform == "teams" else signed_action(
            user=card.user, team=TEAM, secret=SECRET, value=card.buttons[index],
            action_id=f"clarify.answer.{index}", stamp=str(int(time.time())), acted=time.time(),
            message_ts=card.ts)
        key = (card.clarification_id, card.person)
        if not await self._until_acknowledged(http, request):
            self.tally.unacknowledged[key].append(index)
            self.tally.done.add(card.clarification_id)
            return
        self.tally.given[key].append(index)
        if self.rng.random() < 0.1:
            task = asyncio.create_task(self._late_retry(http, request))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)
        if not second and self.rng.random() < 0.5:
            await asyncio.sleep(self.rng.uniform(0.1, 5.0))
            other = self.rng.choice([i for i in card.buttons if i != index])
            self.pending.append((card, other, True))
        else:
            self.tally.done.add(card.clarification_id)

    def _teams(self, card: Card, index: int) -> Request:
        """An Action.Execute invoke on the card, as Teams sends it, with a valid token."""
        now = time.time()
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now % 1 * 1e6):06d}Z"
        activity = {
            "type": "invoke", "name": "adaptiveCard/action", "id": f"f:{now:.6f}",
            "channelId": "msteams", "serviceUrl": self.connector_url, "timestamp": stamp,
            "from": {"id": f"29:{card.user}", "name": card.person, "aadObjectId": card.user},
            "recipient": {"id": "28:soak-bot", "name": "Clarify"},
            "conversation": {"id": card.conversation, "conversationType": "personal",
                             "tenantId": AAD_TENANT},
            "channelData": {"tenant": {"id": AAD_TENANT}}, "replyToId": card.ts,
            "value": {"action": {"type": "Action.Execute", "verb": "clarify.answer",
                                 "data": card.buttons[index]}}}
        return json.dumps(activity).encode(), {"Content-Type": "application/json",
                                               "Authorization": f"Bearer {self.token()}"}

    async def _until_acknowledged(self, http: aiohttp.ClientSession, request: Request) -> bool:
        started = time.monotonic()
        web = self.rng.randrange(len(self.webs))
        while time.monotonic() - started < self.give_up_seconds:
            self.tally.clicks += 1
            if await self._send(http, self.webs[web], request) == 200:
                return True
            self.tally.refused += 1
            web = (web + 1) % len(self.webs)
            await asyncio.sleep(self.rng.uniform(0.3, 1.0))
        return False

    async def _late_retry(self, http: aiohttp.ClientSession, request: Request) -> None:
        """Slack's retry of a request it thinks went unanswered, long after the answer."""
        await asyncio.sleep(self.rng.uniform(*self.late_retry_seconds))
        body, headers = request
        retried = (body, {**headers, "X-Slack-Retry-Num": "1",
                          "X-Slack-Retry-Reason": "http_timeout"}
                   if "Authorization" not in headers else headers)
        self.tally.late_retries += 1
        await self._send(http, self.rng.choice(self.webs), retried)

    async def _send(self, http: aiohttp.ClientSession, base: str, request: Request) -> int:
        """200 when the click was acknowledged: for Teams, an invoke answered 200 whose
        body's statusCode is 200 too (the bot says "could not be saved" with a 503 there)."""
        body, headers = request
        teams = "Authorization" in headers
        path = "/api/messages" if teams else "/slack/events"
        try:
            if self.rng.random() < 0.2:
                self.tally.split += 1
                status, answer = await split_post(f"{base}{path}", body, headers, self.rng)
            else:
                async with http.post(f"{base}{path}", data=body, headers=headers,
                                     timeout=aiohttp.ClientTimeout(total=10)) as response:
                    status, answer = response.status, await response.read()
        except (aiohttp.ClientError, OSError, TimeoutError, ValueError, IndexError):
            return 0
        if teams and status == 200:
            try:
                return int(json.loads(answer).get("statusCode", 0))
            except (ValueError, AttributeError, TypeError):
                return 0
        return status


async def split_post(url: str, body: bytes, headers: dict[str, str],
                     rng: random.Random) -> tuple[int, bytes]:
    """One POST written to the socket in three pieces, a pause between them; the status and
    the body of the answer."""
    where, _, path = url.removeprefix("http://").partition("/")
    host, port = where.split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        raw = (f"POST /{path} HTTP/1.1\r\nHost: {host}\r\n{head}"
               f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode() + body
        cuts = sorted(rng.sample(range(1, len(raw)), 2))
        for piece in (raw[:cuts[0]], raw[cuts[0]:cuts[1]], raw[cuts[1]:]):
            writer.write(piece)
            await writer.drain()
            await asyncio.sleep(0.05)
        answer = await asyncio.wait_for(reader.read(), 10)
        status_line, _, rest = answer.partition(b"\r\n")
        return int(status_line.split()[1]), rest.partition(b"\r\n\r\n")[2]
    finally:
        writer.close()
