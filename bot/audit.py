"""Audit: every delivery, skip, escalation, digest, steward notice and dead letter, as an event.

Each event goes to the bot's audit sink (JSON lines by default) and to the core's event trail with
its reason code and a human-readable, value-free message. Events never carry span text, answers,
tokens or secrets: their fields are ids, codes and fixed sentences.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import IO, Protocol

import structlog

from bot.core import errors as e
from bot.core.batching import JobScope
from bot.core.client import CoreClient
from bot.core.models import Clarification, EventReport, ReasonCode, SkipInput
from bot.pseudonym import digest

log = structlog.get_logger("clarify.audit")

# what each reason code means, in words an admin can act on
REASON_TEXT: dict[ReasonCode, str] = {
    ReasonCode.NO_READ_PERMISSION: "may not read the source, so was not shown its text",
    ReasonCode.NO_DELIVERY_ALIAS: "cannot be reached on any configured chat platform",
    ReasonCode.ALIAS_AMBIGUOUS: "has an ambiguous chat identity in this tenant (several "
                                  "users on one platform, or one shared with another person)",
    ReasonCode.DELIVERY_FAILED: "could not be reached: the chat platform refused the message",
    ReasonCode.DAILY_CAP_EXCEEDED: "has reached the daily limit of questions",
    ReasonCode.DIGESTED: "will receive this question in their next digest",
    ReasonCode.TENANT_SCOPE_MISMATCH: "is outside this tenant's workspaces",
    ReasonCode.RESPONDER_NOT_AUTHORISED: "answered from an identity that is not verified",
    ReasonCode.CANDIDATE_DECLINED: "said they are not the right person to answer",
    ReasonCode.PERSON_AWAY: "was away, so the next person was asked",
}


@dataclass(frozen=True, slots=True)
class SkipPair:
    """A candidate who was not asked and the reason code why: a structured field of an
    escalation, a quorum notice or a dead letter, not only words in its message."""

    person_id: str
    reason_code: ReasonCode


@dataclass(frozen=True, slots=True)
class EventFacts:
    """What the reach record keeps of an event besides its own fields (``bot.reach``): the
    question's tenant, workspace and severity, the platform tried where the event has no
    channel, the platform's value-free cause of a refusal (``cause``, words) and its cause group
    where the platform's adapter classified it (``cause_group``: ``bot.channel.ChannelError``'s
    ``cause``, a code of ``bot.reach.causes.FIXES``), the IANA zone a card or digest entry was
    sent in (``zone``: the person's, for the report's working hours), and whether an answer
    bound the question. Not part of the event's line or id."""

    tenant: str
    workspace: str
    severity: str
    platform: str | None = None
    cause: str | None = None
    bound: bool = False
    zone: str | None = None
    cause_group: str | None = None

    @classmethod
    def of(cls, c: Clarification, *, platform: str | None = None, cause: str | None = None,
           bound: bool = False, zone: str | None = None, cause_group: str | None = None
           ) -> EventFacts:
        return cls(tenant=c.tenant_id, workspace=c.workspace.workspace_id,
                   severity=c.severity.value, platform=platform, cause=cause, bound=bound,
                   zone=zone, cause_group=cause_group)


@dataclass(frozen=True, slots=True)
class AuditEvent:
    """One event. Its ``event_id`` is derived from its identity: type, clarification, person
    (by a keyed hash), attempt, reason code and ``occurrence``, the discriminator of events
    that share the rest (a request, a batch, an OAuth state, a callback's digest). A replay of
    the same event (a retried job, a resent callback) has the same id; two events have two.
    Events outside any clarification (``clarification_id`` "-": installs, refused callbacks)
    have nothing else to tell them apart and must name their occurrence."""

    type: str
    at: datetime
    clarification_id: str
    message: str
    person_id: str | None = None
    attempt: int | None = None
    reason_code: ReasonCode | None = None
    job_id: str | None = None
    channel: str | None = None
    extra: dict[str, str] = field(default_factory=dict)
    skips: tuple[SkipPair, ...] = ()
    occurrence: str | None = None
    facts: EventFacts | None = None

    def __post_init__(self) -> None:
        if self.clarification_id == "-" and not self.occurrence:
            raise ValueError(f"an audit event outside a clarification ({self.type}) names its "
                             "occurrence")

    @property
    def reason_codes(self) -> list[ReasonCode]:
        """Every code the event stands for, each once, sorted: its own and its skips'."""
        codes = {pair.reason_code for pair in self.skips}
        if self.reason_code is not None:
            codes.add(self.reason_code)
        return sorted(codes)

    @property
    def event_id(self) -> str:
        # deterministic, so that a retried job reports the same event once (core idempotency)
        # the person only by a keyed hash (bot.pseudonym): the id stays on the core's trail
        # after an erasure, so it must not name anyone
        parts = [self.type, self.clarification_id, self.person_id or "-", str(self.attempt)]
        if self.reason_code:
            parts.append(self.reason_code.value)
        if self.occurrence:
            parts.append(f"occurrence={self.occurrence}")
        if not self.clarification_id:  # an event about the bot itself (a store that lost its
            # data): what it is about is in ``extra`` (value-free ids and counts)
            parts.extend(f"{k}={v}" for k, v in sorted(self.extra.items()))
        return f"bot.{self.type[:60]}.{digest('|'.join(parts), purpose='event')[:40]}"

    def line(self) -> str:
        body = asdict(self)
        del body["facts"]
        body["at"] = self.at.isoformat()
        body["event_id"] = self.event_id
        body["reason_codes"] = [code.value for code in self.reason_codes]
        return json.dumps({k: v for k, v in body.items() if v not in (None, {}, [], ())},
                          sort_keys=True)


def occurrence_of(*parts: object) -> str:
    """An occurrence discriminator from what tells one event from another (a callback's facts,
    a request's state): a keyed hash, so it names no one and quotes nothing."""
    return digest("|".join(str(p) for p in parts), purpose="occurrence")[:24]


class AuditSink(Protocol):
    def write(self, event: AuditEvent) -> None: ...


class JsonLinesSink:
    """One JSON object a line, to a file (appended) or a stream (stdout by default)."""

    def __init__(self, path: Path | None = None, stream: IO[str] | None = None) -> None:
        self._path = path
        self._stream = stream or sys.stdout

    def write(self, event: AuditEvent) -> None:
        if self._path is not None:
            with self._path.open("a", encoding="utf-8") as out:
                out.write(event.line() + "\n")
        else:
            self._stream.write(event.line() + "\n")
            self._stream.flush()


def erase_from_lines(path: Path, names: set[str], *, tombstone: str) -> int:
    """Rewrite a JSON-lines audit file with every id in ``names`` (a person id, their chat user
    ids; alone, in a list or inside an event id) replaced by ``tombstone``; returns
    how many lines changed. Written to a sibling file, then moved over the original."""
    if not path.exists():
        return 0
    changed = 0
    out = path.with_name(path.name + ".erasing")
    with path.open(encoding="utf-8") as lines, out.open("w", encoding="utf-8") as rewritten:
        for line in lines:
            try:
                doc = json.loads(line)
            except ValueError:
                rewritten.write(line)
                continue
            scrubbed = _scrub(doc, names, tombstone)
            if scrubbed != doc:
                changed += 1
                line = json.dumps(scrubbed, sort_keys=True) + "\n"
            rewritten.write(line)
    out.replace(path)
    return changed


def _scrub(node: object, names: set[str], tombstone: str) -> object:
    if isinstance(node, str):
        for name in names:  # whole ids only, wherever they stand (event ids embed them)
            node = re.sub(rf"(?<![A-Za-z0-9_@-]){re.escape(name)}(?![A-Za-z0-9_@-])",
                          tombstone, node)
        return node
    if isinstance(node, dict):
        return {k: _scrub(v, names, tombstone) for k, v in node.items()}
    if isinstance(node, list):
        return [_scrub(v, names, tombstone) for v in node]
    return node


@dataclass
class MemorySink:
    events: list[AuditEvent] = field(default_factory=list)

    def write(self, event: AuditEvent) -> None:
        self.events.append(event)

    def of(self, type_: str) -> list[AuditEvent]:
        return [ev for ev in self.events if ev.type == type_]


class AuditObserver(Protocol):
    """Sees each event after the sink (the reach record, ``bot.reach.recording``); it never
    raises and never waits on I/O."""

    def seen(self, event: AuditEvent) -> None: ...


class Audit:
    """Writes each event to the sink, then reports it to the core's trail (best effort)."""

    def __init__(self, *, sink: AuditSink, core: CoreClient,
                 observer: AuditObserver | None = None) -> None:
        self._sink = sink
        self._core = core
        self._observer = observer

    async def emit(self, event: AuditEvent, *, to_core: bool = True,
                   scope: JobScope | None = None) -> None:
        """``scope``: the job's, whose reports go to the core together when it ends."""
        self._sink.write(event)
        if self._observer is not None:
            self._observer.seen(event)
        # the sink is the record (stdout by default): at info this line would print each event
        # a second time; at debug it puts the events among the other lines when tracing
        log.debug(
            "audit",
            type=event.type,
            clarification_id=event.clarification_id,
            reason_code=event.reason_code,
            reason_codes=[code.value for code in event.reason_codes] or None,
            attempt=event.attempt,
        )
        if not to_core:
            return
        report = EventReport(
            event_id=event.event_id,
            type=event.type,
            person_id=event.person_id,
            attempt=event.attempt,
            reason_code=event.reason_code,
            reason_codes=event.reason_codes,
            skips=[SkipInput(person_id=pair.person_id, reason_code=pair.reason_code)
                   for pair in event.skips[:200]],
            message=event.message[:500],
        )
        try:
            await self._core.report_event(clarification_id=event.clarification_id, report=report,
                                          scope=scope)
        except e.CoreError as exc:
            log.warning("audit.core_report_failed", type=event.type, error=type(exc).__name__)
