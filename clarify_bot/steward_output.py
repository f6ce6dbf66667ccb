"""What `clarify-bot clarify` prints: tables for people, JSON for scripts, and the JSON's schema.

Every ``--json`` output is one ``CliOutput`` object (``command`` says which shape); its JSON
Schema is committed as ``clarify_bot/schemas/clarify-cli.schema.json`` and
``python -m clarify_bot.steward_output --write`` regenerates it (a test keeps it current and
validates real outputs against it). Human output names states and outcomes in words, never a
class name, and prints only what the core returned (a redacted record stays redacted).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, TypeAdapter

from bot.core.models import (
    AnswerResult,
    Clarification,
    ClarificationSummary,
    DeliveryHistory,
    ErasureReport,
    Interval,
)
from cards.untrusted import line

SCHEMA_PATH = Path(__file__).parent / "schemas" / "clarify-cli.schema.json"


class CliError(BaseModel):
    code: str
    status: int
    message: str


class ListOutput(BaseModel):
    command: Literal["ls", "queue"]
    items: list[ClarificationSummary]
    next_cursor: str | None = Field(default=None, alias="nextCursor", description=(
        "ls: where the list goes on (give it to --cursor with the same filters)."))
    complete: bool = Field(default=True, description=(
        "False: the core's list goes on past what the command read (ls: past --limit, or "
        "its cursor repeated; queue: past its bound of pages or seconds)."))


class ShowOutput(BaseModel):
    command: Literal["show", "review"]
    clarification: Clarification
    history: DeliveryHistory | None = Field(default=None, description=(
        "None: the core does not offer the delivery history (the history extension)."))


class AnswerOutput(BaseModel):
    command: Literal["answer", "override"]
    result: AnswerResult
    http_status: int = Field(alias="httpStatus")
    attestation: bool
    note_kept: bool | None = Field(default=None, alias="noteKept", description=(
        "With --note: whether the core kept it (a core without the answer-note extension "
        "records the answer without it)."))


class ErasureOutput(BaseModel):
    command: Literal["erase-attribution"]
    person_id: str = Field(alias="personId")
    core: ErasureReport | None = Field(default=None, description=(
        "None: the core does not offer erase-attribution (the erasure extension); its part is "
        "done with the core's own tooling."))
    aliases_found: bool = Field(default=True, alias="aliasesFound", description=(
        "Whether the person's chat identities were known, so the bot's data kept under them was "
        "found too."))
    store: dict[str, int] | None = Field(description="None: the store is in memory (one process).")
    audit_lines: int | None = Field(alias="auditLines", description="None: not a jsonl sink.")


class ErrorOutput(BaseModel):
    command: str
    error: CliError


CliOutput = Annotated[
    ListOutput | ShowOutput | AnswerOutput | ErasureOutput | ErrorOutput, Field()]


def dump(model: BaseModel) -> str:
    """The JSON text of an output, camelCase, absent optionals left out (as the core does)."""
    return json.dumps(model.model_dump(mode="json", by_alias=True, exclude_none=True),
                      indent=2, sort_keys=True)


def schema() -> dict[str, Any]:
    doc = TypeAdapter(CliOutput).json_schema(mode="serialization", by_alias=True)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "clarify-bot clarify --json output", **doc}


# ---------------------------------------------------------------- words for people

STATE_WORDS = {
    "open": "open", "attested": "attested (waits for an editor)",
    "partially_confirmed": "partially confirmed", "answered": "answered",
    "conflicted": "conflicted (steward review)", "expired": "expired (window ran out)",
    "dead_lettered": "dead-lettered (nobody left to ask)",
}
OUTCOME_WORDS = {
    "answered": "answered", "delivered": "asked, waiting", "expired": "asked, no answer in time",
    "skipped": "skipped", "pending": "next", "not_reached": "not reached",
}
RESULT_WORDS = {
    "bound": "Recorded and binding: the fact is corrected.",
    "partially_confirmed": "Recorded: more confirmations are needed before it binds.",
    "attestation": "Recorded as an attestation, not a confirmation: this key's role is viewer, "
                   "so a steward or editor must confirm it before the fact is corrected.",
    "conflicted": "Recorded; the answers disagree, so the clarification needs steward review.",
    "conflicting_attestation": "Recorded as a conflicting attestation; the binding stands and "
                               "the steward is told.",
    "steward_override": "Steward override recorded: the fact is corrected (history kept).",
}


def shown(value: object) -> str:
    """A value from the core (or a person) as one line of terminal text: no control character
    (an ESC sequence drives the terminal), no bidirectional override, no line break
    (``cards.untrusted.line``)."""
    return line(str(value))


def table(rows: list[list[str]], header: list[str]) -> str:
    rows = [[shown(cell) for cell in row] for row in rows]
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
             for r in [header, *rows]]
    return "\n".join(lines)


def when(value: Any) -> str:
    return value.strftime("%Y-%m-%d %H:%M") if value is not None else "-"


def day(value: Any) -> str:
    return value.strftime("%d %b %Y") if value is not None else "open"


def interval(i: Interval | None) -> str:
    if i is None:
        return "-"
    if i.valid_to is None:
        return f"from {day(i.valid_from)}"
    return f"{day(i.valid_from)} to {day(i.valid_to)} (exclusive)"


def list_text(items: list[ClarificationSummary], *, empty: str) -> str:
    if not items:
        return empty
    rows = [[c.id, c.severity.value, STATE_WORDS.get(c.state.value, c.state.value),
             c.document_id or "-", "(withheld)" if c.redacted else c.document_title,
             when(c.updated_at)] for c in items]
    return table(rows, ["ID", "SEVERITY", "STATE", "DOCUMENT", "TITLE", "UPDATED"])


QUEUE_CUT = (
    "…and more: the core's list did not end within what one command reads ({bound}). List "
    "each state page by page with `clarify-bot clarify ls --state STATE` and its --cursor: "
    "conflicted, expired, dead_lettered; open, attested and partially_confirmed with "
    "--severity high and with --severity critical.")
CURSOR_REPEATED = ("…and maybe more: the core repeated a page's cursor, so its list cannot be "
                   "followed further.")


def show_text(c: Clarification, h: DeliveryHistory | None) -> str:
    out = [f"{c.id}  {c.severity.value}  {STATE_WORDS.get(c.state.value, c.state.value)}"]
    if c.redacted:
        out.append("(your key may not read this document: its text is withheld)")
    else:
        out += [f"question: {shown(c.question)}", f"document: {shown(c.document.title)}"]
    out.append(f"link: {shown(c.document.url)}")
    q = c.quorum
    out.append(f"quorum: {q.confirmations} of {q.required} ({q.state.value})"
               + (f"; bound {interval(c.bound_interval)}" if c.bound_interval else ""))
    out.append("\ncandidates:")
    out += [f"  [{x.index}] {shown(x.label or '(withheld)')}: "
            f"{interval(Interval(valid_from=x.valid_from, valid_to=x.valid_to))}"
            for x in c.candidates]
    if c.responses:
        out.append("\nresponses:")
        out.append(table([[r.responder, r.rights_at_answer_time.value, interval(r.interval),
                           r.binding_status.value, r.channel.value, when(r.response_tx)]
                          for r in c.responses],
                         ["PERSON", "RIGHTS", "ANSWER", "STATUS", "CHANNEL", "AT"]))
    out.append("\ndelivery history:")
    if h is None:
        out.append("  not offered by this core (the history extension); the events below are "
                   "the clarification's own trail")
    elif h.attempts:
        out.append(table([[str(a.attempt), (a.person_id or "-") + (" (steward)" if a.steward
                                                                    else ""),
                           OUTCOME_WORDS.get(a.outcome.value, a.outcome.value),
                           a.reason_code.value if a.reason_code else "-",
                           a.channel.value if a.channel else "-", when(a.delivered_at)]
                          for a in h.attempts],
                         ["ATTEMPT", "CANDIDATE", "OUTCOME", "REASON", "CHANNEL", "ASKED AT"]))
    else:
        out.append("  no job: low severity is stored pending and never asked")
    out.append("\nevents:")
    out += [f"  {when(ev.at)}  {shown(ev.type)}"
            + (f" [{ev.reason_code.value}]" if ev.reason_code else "")
            + (f" {shown(ev.person_id)}" if ev.person_id else "") + f": {shown(ev.message)}"
            for ev in (h.events if h is not None else c.events)]
    return "\n".join(out)


def erasure_text(out: ErasureOutput) -> str:
    core = out.core
    if core is None:
        lines = [f"Erased what the bot holds about {out.person_id}.",
                 "core: this core does not offer erase-attribution (the erasure extension): "
                 "tombstone the person's attribution with the core's own tooling."]
    else:
        lines = [f"Erased the attribution of {core.person_id} in tenant {core.tenant_id}.",
                 f"core: {core.clarifications} clarifications changed ({core.asked} asked "
                 f"entries, {core.responses} responses, {core.deliveries} deliveries, "
                 f"{core.events} events, {core.jobs} job rankings, {core.fact_versions} fact "
                 "versions); answer values, rights at answer time and bindings kept."]
    if not out.aliases_found:
        lines.append("bot store: the person's chat identities could not be read (set "
                     "CLARIFY_BOT_CORE_TOKEN to read them through the core); only what is kept "
                     "under the person id was found.")
    if out.store is None:
        lines.append("bot store: in memory (one process), nothing kept here to erase.")
    else:
        kept = out.store.get("answers_waiting_kept", 0)
        shown = ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in out.store.items()
                          if k != "answers_waiting_kept")
        lines.append(f"bot store: removed {shown}.")
        if kept:
            lines.append(f"bot store: kept {kept} answers still waiting to reach the core; run "
                         "this again once they are forwarded.")
    lines.append("audit: " + ("stdout sink, nothing on disk to rewrite." if out.audit_lines
                              is None else f"{out.audit_lines} lines rewritten."))
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover - regeneration
    text = json.dumps(schema(), indent=2, sort_keys=True) + "\n"
    if "--write" in sys.argv:
        SCHEMA_PATH.write_text(text, encoding="utf-8")
        print(f"wrote {SCHEMA_PATH}")
    else:
        sys.exit(0 if SCHEMA_PATH.read_text(encoding="utf-8") == text else 1)
