"""Parts for the engine's crash and multi-worker tests: worker nodes on a shared store, an audit
sink that also writes JSON lines, channels that die around a send, and clarifications whose span
and question carry marks a leak check can grep for."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import uuid4

from bot.audit import AuditEvent, JsonLinesSink, MemorySink
from bot.channel import Address, Message
from bot.channels.recording import RecordingChannel, SentMessage
from bot.clock import ManualClock
from bot.core.client import CoreClient
from bot.core.http import WireResponse
from bot.core.models import CreateClarificationRequest
from bot.process.runtime import Engine
from bot.process.worker import Worker, WorkerConfig
from bot.settings import ClarifySettings
from bot.store.base import DeliveryKey, Store
from bot.store.redis import RedisStore
from devcore.client import DevCoreClient
from devcore.scenario import read_scenario
from tests.conftest import CLARIFY_TOKEN
from tests.engine.conftest import acme_engine

SPAN_MARK, QUESTION_MARK = "zqspan", "zqquestion"  # in every span / question, nowhere else


def crash_after(channel: RecordingChannel, target: DeliveryKey) -> None:
    """The send for ``target`` reaches the platform, then the process dies (before the store
    records it)."""
    def hook(sent: SentMessage) -> None:
        if sent.key == target:
            channel.after_send = None
            raise RuntimeError("process died after the platform accepted the message")

    channel.after_send = hook


@dataclass
class DiesBeforeSend(RecordingChannel):
    """The first send for ``key`` dies before reaching the platform (not a ChannelError):
    by default a RuntimeError; ``cancel`` raises CancelledError (a BaseException, as when the
    task is cancelled or the process stopped mid-send)."""

    key: DeliveryKey | None = None
    died: bool = False
    cancel: bool = False

    async def send(self, address: Address, message: Message, *, key: DeliveryKey) -> str:
        if key == self.key and not self.died:
            self.died = True
            if self.cancel:
                raise asyncio.CancelledError
            raise RuntimeError("process died before the send")
        return await super().send(address, message, key=key)


class TeeSink:
    """Audit events kept in memory and written as JSON lines to a file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.memory = MemorySink()
        self._lines = JsonLinesSink(path)

    def write(self, event: AuditEvent) -> None:
        self.memory.write(event)
        self._lines.write(event)

    def of(self, type_: str) -> list[AuditEvent]:
        return self.memory.of(type_)


@dataclass
class Node:
    """One worker process: its own core client and store client; leases counted."""

    engine: Engine
    leased: int = 0

    @property
    def worker(self) -> Worker:
        return self.engine.worker


def node(
    *,
    core: CoreClient,
    store: Store,
    channel: RecordingChannel,
    sink: TeeSink | MemorySink,
    clock: ManualClock,
    worker_id: str,
    clarify: ClarifySettings | None = None,
    config: WorkerConfig | None = None,
) -> Node:
    engine = acme_engine(core=core, store=store, channel=channel, sink=sink, clock=clock,
                         worker_id=worker_id, clarify=clarify, worker=config)
    made = Node(engine)
    poll = engine.worker.poll_iteration

    async def counted() -> int:
        leased = await poll()
        made.leased += leased
        return leased

    engine.worker.poll_iteration = counted  # type: ignore[method-assign]
    return made


async def create(
    dev: DevCoreClient,
    *,
    authority: dict[str, list[str]],
    severity: str | None = None,
    workspace: str = "acme-legal",
    read_roles: tuple[str, ...] = ("viewer", "editor", "steward"),
) -> str:
    """As the rig's helper, with a span and a question of its own (so leaks can be grepped)."""
    tag = uuid4().hex[:10]
    spec: dict[str, Any] = json.loads(json.dumps(read_scenario("acme")["clarifications"][1]))
    span = f"The renewed term ({SPAN_MARK}-{tag}) is effective next quarter."
    spec["workspace_id"] = workspace
    spec["target"] = f"fact-{tag}"
    spec["question"] = f"When does renewal {QUESTION_MARK}-{tag} take effect?"
    spec["span"] = {"start": 220, "end": 220 + len(span), "text": span}
    spec["document"]["document_id"] = f"doc-{tag}"
    spec["document"]["content_hash"] = f"sha256:{tag}"
    spec["document"]["acl"] = {
        "workspace_id": workspace,
        "read_roles": list(read_roles),
    }
    spec["authority"] = {
        part: authority.get(part, []) for part in ("authored_by", "named", "owned_by")
    }
    if severity:
        spec["severity_hint"] = severity
    created = await dev.create_clarification(
        request=CreateClarificationRequest.model_validate(spec)
    )
    return created.clarification.id


def read_lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


@dataclass
class Restart:
    """A crashing worker, then a fresh one on the same store prefix, core and channel."""

    clock: ManualClock
    make_store: Callable[[], RedisStore]
    client_for: Callable[[str], CoreClient]
    channel: RecordingChannel
    sink: TeeSink
    stores: list[RedisStore] = field(default_factory=list)

    def worker(self, name: str, *, clarify: ClarifySettings | None = None) -> Node:
        store = self.make_store()
        self.stores.append(store)
        return node(
            core=self.client_for(CLARIFY_TOKEN),
            store=store,
            channel=self.channel,
            sink=self.sink,
            clock=self.clock,
            worker_id=name,
            clarify=clarify,
        )


def counted(core: CoreClient) -> Counter[str]:
    """Every call the client sends from now on, by method and path."""
    calls: Counter[str] = Counter()
    send = core._http.send

    async def count(method: str, path: str, **kwargs: Any) -> WireResponse:
        calls[f"{method} {path}"] += 1
        return await send(method, path, **kwargs)

    core._http.send = count  # type: ignore[method-assign]
    return calls
