"""The demo: the whole loop on embedded defaults, with no Slack, Teams, Redis or external core.

It starts the reference core in-process on 127.0.0.1 with the bundled ``acme`` scenario and a
manual clock, then walks the spec's story through the typed client over real HTTP: lease the
routing jobs, ask, answer (quorum, attestation, conflict, steward override), move the clock past an
escalation window, and show the bitemporal correction. Returns a summary for tests.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from bot.clock import ManualClock
from bot.core import models as m
from bot.core.client import CoreClient, RetryPolicy
from devcore.server import build_core, serve

CLARIFY_TOKEN = "dev-clarify-token-acme"
STEWARD_KEY = "acme-key-maria-steward"
NAMES = {
    "p-sarah": "Sarah Chen",
    "p-ahmed": "Ahmed Karimi",
    "p-priya": "Priya Natarajan",
    "p-maria": "Maria Lopez",
    "p-tom": "Tom Becker",
    "p-jonas": "Jonas Weber",
}
RIGHTS = {
    "p-sarah": m.Role.EDITOR,
    "p-ahmed": m.Role.EDITOR,
    "p-priya": m.Role.VIEWER,
    "p-maria": m.Role.STEWARD,
}


@dataclass
class DemoSummary:
    outcomes: list[tuple[str, str, int]] = field(default_factory=list)
    states: dict[str, str] = field(default_factory=dict)
    dead_letters: list[str] = field(default_factory=list)


def _when(value: datetime | None) -> str:
    return value.strftime("%-d %b %Y") if value else "open-ended"


async def run_demo(echo: Callable[[str], None] = print) -> DemoSummary:
    clock = ManualClock(datetime(2026, 7, 6, 9, 0, tzinfo=UTC))
    core = build_core("acme", clock=clock)
    summary = DemoSummary()
    async with (
        serve(core) as url,
        CoreClient(
            base_url=url, token=CLARIFY_TOKEN, retry=RetryPolicy(max_attempts=2, base=0.05)
        ) as bot,
        CoreClient(base_url=url, token=STEWARD_KEY) as steward,
    ):
        echo(
            f"Reference core on {url} with the 'acme' scenario;"
            f" clock at {clock.now():%d %b %Y %H:%M} UTC."
        )
        leased = await bot.poll_jobs(kinds=["clarify:"], max_jobs=10, lease_seconds=120)
        echo(f"\nLeased {len(leased.jobs)} clarify: jobs (low severity is never asked).")
        for job in leased.jobs:
            c = await bot.get_clarification(clarification_id=job.payload.clarification_id)
            asked = job.payload.ranking[job.attempts]
            options = ", ".join(f"{_when(x.valid_from)} ({x.label})" for x in c.candidates)
            echo(
                f"  [{c.severity}] {c.question}\n      would ask {NAMES.get(asked, asked)}:"
                f" {options}, or something else"
            )

        async def answer(cid: str, who: str, index: int) -> None:
            request = m.AnswerRequest(
                answer_index=index, responder=who, rights=RIGHTS[who], channel=m.Channel.SLACK
            )
            receipt = await bot.answer_clarification(clarification_id=cid, request=request)
            r = receipt.result
            summary.outcomes.append((cid, r.outcome.value, receipt.http_status))
            waiting = r.outcome in (
                m.AnswerOutcome.PARTIALLY_CONFIRMED,
                m.AnswerOutcome.ATTESTATION,
            )
            extra = f", {r.quorum_remaining} more needed" if waiting else ""
            echo(
                f"  {NAMES[who]} ({RIGHTS[who]}) answers #{index} -> {receipt.http_status}"
                f" {r.outcome}{extra}"
            )

        echo("\nCritical contract date: two confirmations are required.")
        await answer("clr-00001", "p-sarah", 1)
        await answer("clr-00001", "p-ahmed", 0)
        echo("  The editors disagree; Maria, the Legal steward, overrides:")
        override = m.AnswerRequest(answer_index=1, steward_override=True, channel=m.Channel.CLI)
        receipt = await steward.answer_clarification(clarification_id="clr-00001", request=override)
        summary.outcomes.append(("clr-00001", receipt.result.outcome.value, receipt.http_status))
        echo(
            f"  Maria (steward, CLI) overrides with #1 -> {receipt.http_status}"
            f" {receipt.result.outcome}"
        )
        echo("\nRelative renewal date: a viewer attests, an editor confirms.")
        await answer("clr-00002", "p-priya", 0)
        await answer("clr-00002", "p-ahmed", 0)
        echo("  Then a late, different answer arrives after binding:")
        await answer("clr-00002", "p-sarah", 1)

        fact = await bot.get_fact(logical_id="fact-northwind-msa-termination")
        history = await bot.get_fact_history(logical_id="fact-northwind-msa-termination")
        echo(
            f"\nNorthwind termination fact: {len(history.versions)} versions; now"
            f" {_when(fact.valid_from)} at confidence {fact.confidence:.2f}"
            f" ({fact.provenance.evidence_class}); before: {_when(history.versions[0].valid_from)}"
            f" at {history.versions[0].confidence:.2f}."
        )

        echo("\nNobody answers the invoice question: the clock moves past escalation windows.")
        for _ in range(3):
            clock.advance(timedelta(hours=49))
            again = await bot.poll_jobs(kinds=["clarify:"], max_jobs=10, lease_seconds=60)
            for job in again.jobs:
                done = job.payload.clarification_id != "clr-00003"
                if done:
                    await bot.complete_job(job_id=job.id, lease_token=job.lease_token)
                else:
                    last = job.attempts == job.max_attempts - 1
                    who = (
                        "the redacted steward escalation"
                        if last
                        else NAMES.get(job.payload.ranking[job.attempts], "next candidate")
                    )
                    echo(f"  attempt {job.attempts} for {job.payload.clarification_id}: {who}")
        clock.advance(timedelta(hours=49))
        dead = await bot.list_jobs(state=m.JobState.DEAD_LETTERED)
        summary.dead_letters = [j.payload.clarification_id for j in dead.items]
        echo(f"  dead-lettered: {', '.join(summary.dead_letters) or 'none'}")
        async for item in bot.iter_clarifications():
            summary.states[item.id] = item.state.value
        echo("\nFinal states: " + ", ".join(f"{k}={v}" for k, v in sorted(summary.states.items())))
    return summary
