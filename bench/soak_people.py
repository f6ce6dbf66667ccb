"""The simulated people of bench/soak.py: they read the cards the fake Slack received and answer
them with block_actions requests signed as Slack signs them, sent to the web processes.

Each reader answers each question card once (a button of the card, its value as the card
carries it), and half of them change their mind once the first answer was acknowledged. Answers
go out in bursts; a click that is not acknowledged with 200 (a web process killed, Redis away)
is sent again, unchanged, to the other web process until it is; some acknowledged clicks are
sent again much later (``X-Slack-Retry-Num``), and some are written to the socket in pieces
(one request split across several reads). What counts as given is what was acknowledged, in the
order acknowledged, per (clarification, person).
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
from soak_world import SECRET, TEAM

Request = tuple[bytes, dict[str, str]]


@dataclass(frozen=True)
class Card:
    clarification_id: str
    person: str
    user: str
    attempt: int
    ts: str
    buttons: dict[int, str]  # answer index → the button's value


def card_of(write: dict[str, Any], users: dict[str, str]) -> Card | None:
    """A question card posted to a reader, or None."""
    token = write.get("delivery")
    if write["method"] != "chat.postMessage" or not token:
        return None
    cid, person, attempt, kind = str(token).split("|")
    if kind != "question" or write["to"] not in users:
        return None
    _, blocks, _ = json.loads(write["text"])
    buttons = {int(e["action_id"].rsplit(".", 1)[1]): e["value"]
               for b in blocks or [] if b.get("type") == "actions"
               for e in b.get("elements", []) if str(e.get("action_id", "")).startswith(
                   "clarify.answer.")}
    return Card(cid, person, write["to"], int(attempt), write["ts"], buttons)


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
    users: dict[str, str]  # slack user id → person id, of the readers
    rng: random.Random
    give_up_seconds: float = 240.0
    tally: Tally = field(default_factory=Tally)
    pending: list[tuple[Card, int, bool]] = field(default_factory=list)  # card, index, second
    seen: set[str] = field(default_factory=set)  # clarifications already being answered
    tasks: set[asyncio.Task[None]] = field(default_factory=set)
    stopping: bool = False

    def read(self, writes: list[dict[str, Any]]) -> None:
        for write in writes:
            card = card_of(write, self.users)
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
        request = signed_action(
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
        await asyncio.sleep(self.rng.uniform(3.0, 20.0))
        body, headers = request
        retried = (body, {**headers, "X-Slack-Retry-Num": "1",
                          "X-Slack-Retry-Reason": "http_timeout"})
        self.tally.late_retries += 1
        await self._send(http, self.rng.choice(self.webs), retried)

    async def _send(self, http: aiohttp.ClientSession, base: str, request: Request) -> int:
        body, headers = request
        try:
            if self.rng.random() < 0.2:
                self.tally.split += 1
                return await split_post(base, body, headers, self.rng)
            async with http.post(f"{base}/slack/events", data=body, headers=headers,
                                 timeout=aiohttp.ClientTimeout(total=10)) as response:
                await response.read()
                return response.status
        except (aiohttp.ClientError, OSError, TimeoutError):
            return 0


async def split_post(base: str, body: bytes, headers: dict[str, str],
                     rng: random.Random) -> int:
    """One POST written to the socket in three pieces, a pause between them."""
    host, port = base.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        raw = (f"POST /slack/events HTTP/1.1\r\nHost: {host}\r\n{head}"
               f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode() + body
        cuts = sorted(rng.sample(range(1, len(raw)), 2))
        for piece in (raw[:cuts[0]], raw[cuts[0]:cuts[1]], raw[cuts[1]:]):
            writer.write(piece)
            await writer.drain()
            await asyncio.sleep(0.05)
        status = await asyncio.wait_for(reader.readline(), 10)
        return int(status.split()[1]) if status else 0
    finally:
        writer.close()
