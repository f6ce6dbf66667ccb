"""The core's record of each clarification, read through its API as any client would, shaped for
the sandbox's page: state, quorum, the responses as evidence, the event trail, and the fact's
versions with the one the answer bound."""

from __future__ import annotations

from typing import Any

from bot.core.client import CoreClient
from bot.core.errors import CoreError
from bot.core.models import Clarification, FactHistory


async def core_record(core: CoreClient, *, tenant: str) -> list[dict[str, Any]]:
    """Every clarification of ``tenant``, newest first, with its fact's history."""
    found = []
    async for summary in core.iter_clarifications(tenant_id=tenant):
        clarification = await core.get_clarification(clarification_id=summary.id)
        history = None
        if clarification.target:
            try:
                history = await core.get_fact_history(logical_id=clarification.target,
                                                      tenant_id=tenant)
            except CoreError:  # a fact the core does not know yet: the record without it
                history = None
        found.append(_shaped(clarification, history))
    found.sort(key=lambda c: c["createdAt"] or "", reverse=True)
    return found


def _shaped(c: Clarification, history: FactHistory | None) -> dict[str, Any]:
    labels = {candidate.index: candidate.label for candidate in c.candidates}
    doc = c.model_dump(mode="json")
    return {
        "id": c.id, "question": c.question, "title": c.document.title,
        "workspace": c.workspace.workspace_id, "severity": doc["severity"], "state": doc["state"],
        "createdAt": doc.get("created_at"),
        "quorum": {"state": doc["quorum"]["state"], "required": c.quorum.required,
                   "confirmations": c.quorum.confirmations,
                   "confirmedBy": list(c.quorum.confirmed_by)},
        "candidates": [{"label": x.label, "from": _day(x.valid_from), "to": _day(x.valid_to)}
                       for x in c.candidates],
        "asked": list(c.asked),
        "responses": [{
            "responder": r.responder, "role": doc["responses"][n]["rights_at_answer_time"],
            "answer": (labels.get(r.answer_index, f"#{r.answer_index}")
                       if r.answer_index is not None else _custom(r.answer_custom)),
            "binding": doc["responses"][n]["binding_status"],
            "channel": doc["responses"][n]["channel"],
            "at": r.response_tx.isoformat(), "supersedes": r.supersedes,
        } for n, r in enumerate(c.responses)],
        "events": [{"type": ev.type, "at": ev.at.isoformat(), "person": ev.person_id,
                    "reason": doc["events"][n].get("reason_code"), "message": ev.message}
                   for n, ev in enumerate(c.events)],
        "boundVersion": doc.get("bound_fact_version_tx"),
        "versions": [] if history is None else [{
            "versionTx": v.version_tx.isoformat(), "from": _day(v.valid_from),
            "to": _day(v.valid_to),
            "evidence": v.provenance.model_dump(mode="json")["evidence_class"],
            "clarification": v.provenance.clarification_id,
            "confirmedBy": list(v.provenance.confirmed_by), "current": v.tx_to is None,
        } for v in history.versions],
    }


def _day(when: Any) -> str | None:
    return None if when is None else when.date().isoformat()


def _custom(custom: Any) -> str:
    if custom is None:
        return "(no answer)"
    dates = " – ".join(d for d in (custom.valid_from, custom.valid_to) if d)
    return dates or "(in their own words)"
