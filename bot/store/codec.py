"""How the Redis store writes its values: JSON documents, times as epoch seconds.

Aware UTC datetimes outside, epoch floats inside; the conversions live here so that every
value round-trips exactly (to the microsecond).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

from bot.store.records import (
    CardRecord,
    DeliveryKey,
    DeliverySlot,
    DigestBatch,
    DigestItem,
    OutboxEntry,
    SlotState,
)


def epoch(when: datetime) -> float:
    if when.tzinfo is None:
        raise ValueError("the store needs timezone-aware times")
    return when.timestamp()


def num(value: float) -> str:
    """A float as the shortest string that reads back exactly (Lua would drop digits)."""
    return repr(float(value))


def when(seconds: float | str) -> datetime:
    return datetime.fromtimestamp(float(seconds), UTC)


def slot_json(slot: DeliverySlot) -> str:
    return json.dumps({
        "state": slot.state.value, "worker_id": slot.worker_id,
        "reserved_at": epoch(slot.reserved_at), "message_ref": slot.message_ref,
        "batch_id": slot.batch_id,
    })


def slot_from(key: DeliveryKey, raw: str | bytes) -> DeliverySlot:
    doc = json.loads(raw)
    return DeliverySlot(
        key=key, state=SlotState(doc["state"]), worker_id=doc["worker_id"],
        reserved_at=when(doc["reserved_at"]), message_ref=doc["message_ref"],
        batch_id=doc["batch_id"],
    )


def item_json(item: DigestItem) -> str:
    return json.dumps({"clarification_id": item.clarification_id, "person_id": item.person_id,
                       "attempt": item.attempt, "job_id": item.job_id})


def batch_from(batch_id: str, fields: dict[str, str]) -> DigestBatch:
    entries = []
    for name, value in fields.items():
        if name.startswith("i:"):
            seq, _, doc = value.partition("|")
            entries.append((int(seq), DigestItem(**json.loads(doc))))
    items = tuple(item for _, item in sorted(entries, key=lambda entry: entry[0]))
    return DigestBatch(batch_id=batch_id, person_id=fields["person"],
                       due_at=when(fields["due"]), items=items)


def card_json(card: CardRecord) -> str:
    """The card as stored; what it said of its move-on time only when it said anything."""
    d = card.delivery
    doc: dict[str, object] = {"delivery": [d.clarification_id, d.person_id, d.attempt, d.kind],
                              "platform": card.platform, "message_ref": card.message_ref}
    if card.moves_on_at is not None:
        doc["moves_on"] = epoch(card.moves_on_at)
        doc["to_steward"] = card.moves_on_to_steward
    if card.reminded:
        doc["reminded"] = True
    if card.time_zone is not None:
        doc["tz"] = card.time_zone
    return json.dumps(doc)


def card_from(raw: str | bytes) -> CardRecord:
    """A stored card; a record written before the move-on fields were kept (or with one that
    does not read as a time) reads with none: its rebuilds show no move-on line. One written
    before zones were kept reads with none: its rebuilds take the person's zone as known then."""
    doc = json.loads(raw)
    clarification_id, person_id, attempt, kind = doc["delivery"]
    delivery = DeliveryKey(clarification_id, person_id, attempt, kind)
    moves_on = doc.get("moves_on")
    try:
        moves_on_at = None if moves_on is None else when(moves_on)
    except (TypeError, ValueError, OverflowError, OSError):
        moves_on_at = None
    return CardRecord(delivery=delivery, platform=doc["platform"], message_ref=doc["message_ref"],
                      moves_on_at=moves_on_at,
                      moves_on_to_steward=moves_on_at is not None and doc.get("to_steward") is True,
                      reminded=doc.get("reminded") is True, time_zone=_zone(doc.get("tz")))


def _zone(name: object) -> str | None:
    """A stored card's zone: a name (it is checked where it is read), else none."""
    return name if isinstance(name, str) and name else None


def card_order(card: CardRecord) -> tuple[int, str, str]:
    """Cards list in attempt order, then by person and kind: the same order in every store."""
    return (card.delivery.attempt, card.delivery.person_id, card.delivery.kind)


def outbox_json(payload: str, *, created_at: datetime, order_key: str, acted_at: int,
                answer: str = "") -> str:
    """The entry as stored; the claim script reads ``key``, ``acted`` and ``answer`` from it."""
    return json.dumps({"payload": payload, "created_at": epoch(created_at), "key": order_key,
                       "acted": acted_at, "answer": answer})


def outbox_from(entry_id: str, raw: str, *, attempts: int, failures: int = 0,
                superseded: bool = False) -> OutboxEntry:
    doc = json.loads(raw)
    answer = doc.get("answer")  # (entries stored before answers were kept: unknown)
    return OutboxEntry(entry_id=entry_id, payload=doc["payload"], attempts=attempts,
                       created_at=when(doc["created_at"]), order_key=doc["key"],
                       acted_at=int(doc["acted"]), failures=failures,
                       superseded=superseded, answer=answer if isinstance(answer, str) else "")


def queued_times(raw: str | None) -> list[int]:
    """The action times of a key's waiting entries, from the outbox queue's JSON list of
    [action time, entry id] (unreadable: none)."""
    try:
        rows = json.loads(raw) if raw else []
        return [int(row[0]) for row in rows]
    except (ValueError, TypeError, IndexError, KeyError):
        return []
