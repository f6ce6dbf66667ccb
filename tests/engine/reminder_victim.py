"""A worker process for the reminder's SIGKILL test (tests/engine/test_engine_reminders.py).

Run: python -m tests.engine.reminder_victim CORE_URL REDIS_URL PREFIX NOW SENT_FILE MODE

It wires the engine as production does (``acme_engine``) on the given Redis prefix and core,
moves its clock to NOW and runs one reminders pass. Its channel writes every send to SENT_FILE
(one JSON line each) and, at the reminder's nudge, hangs so the test can kill it: MODE
``before`` hangs before the nudge reaches the "platform" (nothing written), ``after`` once the
nudge is written (the platform took it; the store never hears).
"""

from __future__ import annotations

import asyncio
import json
import sys
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from bot.audit import MemorySink
from bot.channel import Address, Message
from bot.channels.recording import RecordingChannel
from bot.clock import ManualClock
from bot.core.client import CoreClient, RetryPolicy
from bot.store.base import DeliveryKey
from bot.store.redis import RedisStore
from cards.views import ReminderView
from tests.conftest import CLARIFY_TOKEN
from tests.engine.conftest import acme_engine, clarify_settings

WINDOW_HOURS = 8


@dataclass
class FileChannel(RecordingChannel):
    """Sends written to a file shared by processes; ``find`` reads it (a platform's history)."""

    path: Path = Path("sent.jsonl")
    hang: str = ""  # "before" / "after": hang at a reminder's nudge
    ready: Path | None = None  # written when hanging

    async def send(self, address: Address, message: Message, *, key: DeliveryKey) -> str:
        reminder = isinstance(message, ReminderView)
        if reminder and self.hang == "before":
            await self._hang()
        ref = await super().send(address, message, key=key)
        with self.path.open("a", encoding="utf-8") as out:
            out.write(json.dumps({"key": key.token(), "ref": ref,
                                  "reminder": reminder}) + "\n")
        if reminder and self.hang == "after":
            await self._hang()
        return ref

    async def find(self, address: Address, key: DeliveryKey) -> str | None:
        for line in sent_lines(self.path):
            if line["key"] == key.token():
                return str(line["ref"])
        return None

    async def _hang(self) -> None:
        if self.ready is not None:
            self.ready.write_text("hanging", encoding="utf-8")
        await asyncio.sleep(3600)


def sent_lines(path: Path) -> list[dict[str, object]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


async def main(core_url: str, redis_url: str, prefix: str, now: str, sent: str,
               mode: str) -> None:
    clock = ManualClock(datetime.fromisoformat(now))
    store = RedisStore.from_url(redis_url, prefix=prefix)
    channel = FileChannel(path=Path(sent), hang=mode, ready=Path(sent + ".hanging"))
    async with CoreClient(base_url=core_url, token=CLARIFY_TOKEN,
                          retry=RetryPolicy(max_attempts=1), clock=clock) as core:
        engine = acme_engine(core=core, store=store, channel=channel, sink=MemorySink(),
                             clock=clock, worker_id="victim",
                             clarify=clarify_settings(escalation_window_hours=WINDOW_HOURS))
        await engine.reminders.flush()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:7]))
