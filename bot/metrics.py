"""Counters and gauges in the Prometheus text format, served at ``/metrics``.

Labels are codes and kinds only (reason code, delivery kind, verdict, outcome): never an id, a
name, span text or an answer, so a metric cannot leak what a log line may not.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

_HELP = {
    "clarify_jobs_total": "Jobs handled, by outcome.",
    "clarify_deliveries_total": "Messages sent, by kind and platform.",
    "clarify_skips_total": "Candidates skipped, by reason code.",
    "clarify_answers_total": "Callbacks handled, by verdict.",
    "clarify_outbox_entries": "Answers waiting in the outbox for the core.",
    "clarify_outbox_parked": "Answers set aside in the outbox after failing too often.",
    "clarify_outbox_parked_total": "Answers parked since the process started.",
}


@dataclass
class Registry:
    counters: Counter[tuple[str, tuple[tuple[str, str], ...]]] = field(default_factory=Counter)
    gauges: dict[str, Callable[[], Awaitable[float]]] = field(default_factory=dict)

    def inc(self, name: str, **labels: str) -> None:
        self.counters[(name, tuple(sorted(labels.items())))] += 1

    def value(self, name: str, **labels: str) -> int:
        return self.counters[(name, tuple(sorted(labels.items())))]

    async def render(self) -> str:
        lines: list[str] = []
        names = sorted({n for n, _ in self.counters} | set(self.gauges))
        for name in names:
            kind = "gauge" if name in self.gauges else "counter"
            lines += [f"# HELP {name} {_HELP.get(name, name)}", f"# TYPE {name} {kind}"]
            if name in self.gauges:
                lines.append(f"{name} {await self.gauges[name]()}")
                continue
            for (counter, labels), count in sorted(self.counters.items()):
                if counter == name:
                    shown = ",".join(f'{k}="{v}"' for k, v in labels)
                    lines.append(f"{name}{{{shown}}} {count}")
        return "\n".join(lines) + "\n"


REGISTRY = Registry()
