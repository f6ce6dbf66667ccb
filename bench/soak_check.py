"""The verdict of bench/soak.py: what the people gave against what the core recorded, what the
fake Slack received, and the one table printed at the end."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from soak_people import Tally, teams_actions
from soak_world import SPAN_MARK, aad_user, escalated, slack_user

from cards.actions import ActionCodec


@dataclass
class Verdict:
    clarifications: int = 0
    answered: int = 0  # clarifications with at least one acknowledged answer
    escalated_unanswered: int = 0  # no answer; the steward got the escalation instead
    given: int = 0
    recorded: int = 0  # responses at the core from the readers who answered
    # recorded as superseded by the person's later answer (every answer reaches the core)
    superseded: int = 0
    lost: int = 0
    doubled: int = 0
    reordered: int = 0
    unacknowledged: int = 0  # clicks never acknowledged (allowed to be recorded or not)
    cards: int = 0
    cards_by_kind: Counter[str] = field(default_factory=Counter)
    duplicated: int = 0
    leaks: int = 0
    skips: Counter[str] = field(default_factory=Counter)
    skips_without_reason: int = 0
    passed_over: int = 0  # ranked people with neither a card nor a skip on the core's trail
    gate_refusals: int = 0  # ranked people the gate refused (NO_READ_PERMISSION)
    cards_to_refused: int = 0  # question cards delivered to someone the gate refuses
    examples: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.lost or self.doubled or self.reordered or self.duplicated
                    or self.leaks or self.skips_without_reason or self.cards_to_refused
                    or self.passed_over)


def judge(records: list[dict[str, Any]], writes: list[dict[str, Any]], tally: Tally,
          nonreaders: set[str], codec: ActionCodec) -> Verdict:
    v = Verdict(clarifications=len(records))
    by_id = {r["id"]: r for r in records}
    for (cid, person), given in tally.given.items():
        mine = [r for r in by_id[cid]["responses"] if r[0] == person]
        recorded = [index for _, index, *_ in mine]
        v.superseded += sum(1 for r in mine if len(r) > 3 and r[3])
        maybe = Counter(tally.unacknowledged.get((cid, person), []))
        v.given += len(given)
        v.recorded += len(recorded)
        missing = Counter(given) - Counter(recorded)
        extra = Counter(recorded) - Counter(given) - maybe
        v.doubled += sum(extra.values())
        in_order = _subsequence(recorded, given)
        # every answer given reaches the core, in the person's order (docs/delivery.md, "Every
        # answer, in the person's order"): given equals recorded
        v.lost += sum(missing.values())
        v.reordered += not missing and not extra and not in_order
        if (missing or extra or not in_order) and len(v.examples) < 5:
            v.examples.append(f"{cid} {person}: given {given}, recorded {recorded}")
    answered = {cid for cid, _ in tally.given}
    v.answered = len(answered)
    v.escalated_unanswered = sum(
        1 for r in records if r["id"] not in answered
        and escalated((person, kind) for person, _, kind, _ in r["deliveries"]))
    v.unacknowledged = sum(len(x) for x in tally.unacknowledged.values())
    cards = Counter(w["delivery"] for w in writes
                    if w["method"] == "chat.postMessage" and w["delivery"])
    # a Teams card names its delivery only by the reference its buttons carry (a hash of the
    # (clarification, person, attempt, kind) key)
    teams = Counter(refs.pop() for w in writes if w["method"] == "teams.send"
                    and len(refs := {ref.card_ref for ref, _ in teams_actions(w, codec)}) == 1)
    v.cards = sum(cards.values()) + sum(1 for w in writes if w["method"] == "teams.send")
    v.cards_by_kind = Counter(token.rsplit("|", 1)[1] for token in cards.elements())
    v.cards_by_kind["on Teams"] = sum(1 for w in writes if w["method"] == "teams.send")
    v.duplicated = sum(n - 1 for n in (cards + teams).values() if n > 1)
    refused_users = {slack_user(p) for p in nonreaders} | {aad_user(p) for p in nonreaders}
    v.leaks = sum(1 for w in writes if w["to"] in refused_users and SPAN_MARK in w["text"])
    v.cards_to_refused = sum(
        1 for w in writes if w["to"] in refused_users
        and (str(w["delivery"] or "").endswith("|question") or "clarify.answer" in w["text"]))
    for r in records:
        traced = {d[0] for d in r["deliveries"] if d[2] == "question"} | {
            person for person, _ in r["skips"]}
        for person in r.get("ranking", []):
            if person not in traced:
                v.passed_over += 1
                if len(v.examples) < 10:
                    v.examples.append(f"{r['id']} {person} passed over: state {r.get('state')}, "
                                      f"deliveries {r['deliveries']}, events {r.get('events')}")
        for person, reason in r["skips"]:
            v.skips[reason or "(none)"] += 1
            v.skips_without_reason += not reason
            v.gate_refusals += person in nonreaders and reason == "NO_READ_PERMISSION"
    return v


def _subsequence(part: list[int], whole: list[int]) -> bool:
    """``part`` is ``whole`` with some items left out, the rest in the same order."""
    rest = iter(whole)
    return all(item in rest for item in part)


def table(faults: Counter[str], v: Verdict, rss: dict[str, tuple[float, float, float]],
          extra: dict[str, Any]) -> str:
    """One markdown table: the faults injected (and survived), then the counts."""
    rows = [("fault injected", "times", "")]
    rows += [(name, str(n), "") for name, n in faults.items()]
    rows += [
        ("**result**", "**count**", "**must be**"),
        ("clarifications", str(v.clarifications), ""),
        ("clarifications answered", str(v.answered), ""),
        ("clarifications unanswered, escalated to the steward", str(v.escalated_unanswered), ""),
        ("answers given (acknowledged)", str(v.given), ""),
        ("answers recorded by the core", str(v.recorded), "= given"),
        ("of them recorded as superseded by the person's later answer", str(v.superseded), ""),
        ("answers lost", str(v.lost), "0"),
        ("answers doubled", str(v.doubled), "0"),
        ("(clarification, person) reordered", str(v.reordered), "0"),
        ("clicks never acknowledged", str(v.unacknowledged), ""),
        ("cards sent", str(v.cards), ""),
        ("cards sent by kind", ", ".join(f"{k} {n}" for k, n in sorted(v.cards_by_kind.items())),
         ""),
        ("cards duplicated (clarification, person, attempt)", str(v.duplicated), "0"),
        ("span text to someone the gate refuses", str(v.leaks), "0"),
        ("question cards to someone the gate refuses", str(v.cards_to_refused), "0"),
        ("skips (by reason code)", ", ".join(f"{k} {n}" for k, n in sorted(v.skips.items()))
         or "0", "each with a code"),
        ("skips without a reason code", str(v.skips_without_reason), "0"),
        ("ranked people with neither a card nor a skip", str(v.passed_over), "0"),
    ]
    rows += [(k, str(val), "") for k, val in extra.items()]
    rows += [(f"RSS {name} (MB: a tenth, half, all answered)", f"{a:.0f} → {b:.0f} → {c:.0f}",
              "flat") for name, (a, b, c) in rss.items()]
    lines = ["| what | count | must be |", "|---|---:|---|"]
    lines += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    return "\n".join(lines)
