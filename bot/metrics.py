"""The bot's metrics, kept by ``prometheus_client`` and served at ``/metrics``.

Every family is declared here, up front, so that ``/metrics`` lists all of them from the first
scrape: counters whose labels are known in advance (reason codes, delivery kinds, platforms,
verdicts) start at zero for every value, and an alert on "rate of X" has a series to work with
before X first happens. Process metrics (CPU, memory, open files) come from the client's own
collectors.

Labels are codes and kinds only (reason code, delivery kind, platform, verdict, operation): never
an id, a name, span text or an answer, so a metric cannot leak what a log line may not.

Gauges that depend on the store (outbox depth, the oldest waiting answer) are read when
``/metrics`` is scraped, each within ``GAUGE_READ_SECONDS``; one that cannot be read keeps its
last value and ``clarify_metric_read_failures_total`` counts the miss.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from enum import StrEnum

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client import (
    GCCollector as _GCCollector,
)
from prometheus_client import (
    PlatformCollector as _PlatformCollector,
)
from prometheus_client import (
    ProcessCollector as _ProcessCollector,
)
from prometheus_client.metrics import MetricWrapperBase

from bot.core.extensions import Extension
from bot.core.instruments import INSTRUMENTS
from bot.core.models import DeliveryKind, ReasonCode, Severity

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
GAUGE_READ_SECONDS = 1.0
PLATFORMS = ("slack", "teams")
# seconds: an acknowledgement must stay far inside Slack's 3 s and a Teams invoke's 5 s
ACK_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 3.0, 5.0)
CALL_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
# seconds from a question's first card to its bound answer: minutes to a week
BOUND_BUCKETS = (60.0, 300.0, 900.0, 1800.0, 3600.0, 7200.0, 14400.0, 28800.0, 86400.0,
                 172800.0, 604800.0)
WAIT_BUCKETS = (0.01, 0.05, 0.1, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 300.0)


class Metrics:
    """One process's metrics; ``REGISTRY`` below is the one the bot uses."""

    def __init__(self) -> None:
        r = self.registry = CollectorRegistry()
        self._families: dict[str, MetricWrapperBase] = {}
        # each label combination's child, found once: prometheus_client's labels() checks and
        # locks on every call, and delivery records several metrics per card
        self._children: dict[tuple[str, tuple[tuple[str, str], ...]], MetricWrapperBase] = {}
        self.gauges: dict[str, Callable[[], Awaitable[float]]] = {}
        kinds = [k.value for k in DeliveryKind]
        reasons = [c.value for c in ReasonCode]
        # label values defined elsewhere (job outcomes, delivery results, verdicts) are preset
        # where they are defined, with ``preset``
        self._counter("clarify_jobs_total", "Jobs handled, by outcome.", outcome=())
        self._counter("clarify_jobs_held_total",
                      "Jobs held for a person's next working hour.")
        self._counter("clarify_holds_lost_total",
                      "Held jobs whose lease ran out before their hour (every worker down), or "
                      "that no worker could carry on after the store lost its data.")
        self._counter("clarify_unreported_cards_total",
                      "Question cards reported to the core after their job's worker died "
                      "before reporting them, found once someone answered.")
        # a store that lost its data (found by bot.process.storewatch)
        self._counter("clarify_store_data_lost_total",
                      "Times this process found the store came back without its data, by kind "
                      "(emptied, replaced, reset, rolled_back).", kind=())
        self._counter("clarify_holds_recovered_total",
                      "Held jobs given back to a store that lost its data, from the worker's "
                      "memory.")
        self._counter("clarify_reminders_lost_total",
                      "Reminders waiting in the store when it lost its data (counted once per "
                      "loss, by the first process to notice).")
        self._counter("clarify_reminders_recovered_total",
                      "Reminders made again after the store lost its data, from the core's "
                      "record of a card whose reminder was not due yet.")
        self._counter("clarify_answers_lost_total",
                      "Answers waiting in the outbox for the core when the store lost its data "
                      "(at the last check before the loss; counted once per loss).")
        self._counter("clarify_store_recovered_total",
                      "What the store had lost that was recovered from the core's record, by "
                      "what (card: a question card sent before, recorded again, not resent).",
                      what=("card",))
        self._counter("clarify_jobs_unreadable_total",
                      "Jobs an answer of the core did not read for, by what did not read (job, "
                      "clarification, person) and what was done: held (the lease kept, read "
                      "again later: no turn spent) or left (nothing named the job: its lease "
                      "runs out).", read=("job", "clarification", "person"),
                      action=("held", "left"))
        self._counter("clarify_deliveries_total",
                      "Messages sent for the first time, by kind and platform.",
                      kind=kinds, platform=PLATFORMS)
        self._counter("clarify_delivery_attempts_total",
                      "Delivery attempts, by what they ended as (new, earlier: sent before, "
                      "failed, uncertain: not resent) and platform.",
                      outcome=(), platform=PLATFORMS)
        self._counter("clarify_reminders_total",
                      "Reminders of unanswered question cards, by outcome (sent; not sent: "
                      "settled, answered, declined, moved_on, quiet_hours, away, no_card, "
                      "unreachable, failed, uncertain, already_sent; deferred: to the next "
                      "working hour).", outcome=())
        self._counter("clarify_skips_total", "Candidates skipped, by reason code.",
                      reason=reasons)
        # the actions and sources are preset by bot.engine.away, where they are defined
        self._counter("clarify_away_total",
                      "People their platform showed as away, by what the bot did (passed_over, "
                      "held, reminder_skipped, reminder_deferred, digest_held, "
                      "digest_passed_over) and where it was read (slack_status, slack_dnd, "
                      "teams_presence, teams_auto_reply, other).", action=(), source=())
        self._counter("clarify_away_lookups_total",
                      "Away lookups asked of a platform, by outcome (away, present; unknown: "
                      "refused or failed, and later: not answered in time, both counted as not "
                      "away).", outcome=())
        # the outcomes are preset by adapters.teams.installs, where they are defined
        self._counter("clarify_teams_installs_total",
                      "Teams app installs asked of Microsoft Graph for people with no "
                      "conversation, by outcome (installed, already_installed, "
                      "permission_missing, blocked_by_policy, no_licence, throttled, "
                      "unavailable, refused).", outcome=())
        self._counter("clarify_answers_total", "Callbacks handled, by verdict.", verdict=())
        self._counter("clarify_reach_write_failures_total",
                      "Writes to the reach record (and its write path's look-ups of first "
                      "cards) that failed (tried again with the next).")
        self._counter("clarify_reach_dropped_total",
                      "Reach record entries dropped because its write queue was full.")
        self._counter("clarify_reach_reports_total",
                      "Stewards' weekly reach reports, by outcome (sent, already_sent, "
                      "nothing_to_report, unroutable, failed).", outcome=())
        self._counter("clarify_reach_details_total",
                      "Reach details asked for in chat (the Home's Reach tab, the report's "
                      "button, the Teams 'reach' message), by outcome (shown, not_steward, "
                      "unavailable).", outcome=())
        # the cause groups are preset by bot.reach.gauges, where they are defined
        self._gauge("clarify_unreachable_people",
                    "People who could not be reached over the trailing window (the reach "
                    "report's cause table, recomputed every few minutes by the worker), by "
                    "cause.", cause=())
        self._histogram("clarify_time_to_bound_seconds",
                        "Time from a question's first card to its bound answer, by severity "
                        "(observed once, where the binding answer was recorded).", BOUND_BUCKETS,
                        severity=[s.value for s in Severity])
        self._counter("clarify_outbox_parked_total", "Answers parked since the process started.")
        self._counter("clarify_outbox_full_total",
                      "Answers refused (503, not acknowledged) because the outbox was full.")
        self._counter("clarify_answers_in_burst_total",
                      "Clicks answered \"being recorded\" at once rather than with their outcome "
                      "in place: answers.in_place_at_once of this process were waiting already.")
        self._counter("clarify_job_store_retries_total",
                      "Jobs handled again on their lease because the store was unavailable.")
        self._counter("clarify_outbox_unreplicated_total",
                      "Answers acknowledged before store.outbox_replicas replicas held them "
                      "(WAIT timed out).")
        extensions = [e.value for e in Extension]
        self._gauge("clarify_core_extension_offered",
                    "1 while the core offers the contract extension (docs/core-contract.md), by "
                    "extension.", extension=extensions)
        self._counter("clarify_core_extension_fallbacks_total",
                      "Calls that took an extension's fallback because the core does not offer "
                      "it (or refused it), by extension.", extension=extensions)
        self._counter("clarify_core_tolerated_total",
                      "What the bot's reader tolerated in the core's answers instead of failing: "
                      "unknown_field, absent_field (an optional one), unknown_value (an enum), "
                      "bad_entry (a list entry dropped), repeated_entry (a job a poll answer "
                      "named again, taken once; a person a job's ranking named again, asked "
                      "once), derived (a job's attempts the core left "
                      "out, derived from the clarification's trail), by kind and model or enum "
                      "name.", kind=(), model=())
        self._counter("clarify_core_unreadable_total",
                      "Core answers the bot's reader could not read at all (the call failed; "
                      "logged with the places at fault), by operation.", operation=())
        self._counter("clarify_core_errors_total",
                      "Core calls that failed, by error code (HTTP status or transport error).",
                      code=())
        self._counter("clarify_rate_limited_total",
                      "Platform answers of 429 (rate limited), by platform and method.",
                      platform=(), method=())
        self._counter("clarify_credential_failures_total",
                      "Credential checks a dependency refused, by dependency (store, core, "
                      "slack, teams).", dependency=())
        self._counter("clarify_attention_queues_total",
                      "Steward attention queues asked for (Slack App Home, Teams queue), by how "
                      "they were answered: built from the core, remembered, shared with a build "
                      "running, unavailable.", outcome=())
        self._counter("clarify_lists_cut_total",
                      "Walks of a core list that stopped at their bound (pages, items or "
                      "seconds) before the list ended, by list (attention: a chat queue said "
                      "\"and more\"; dead_letters: a digest pass, resumed at the next).",
                      list=())
        self._counter("clarify_slack_home_total",
                      "Slack App Home opens and re-publishes, by outcome (published; "
                      "not_served: a workspace mapped to no tenant, nothing published; "
                      "not_published: Slack refused).", outcome=())
        self._counter("clarify_requests_refused_total",
                      "Requests refused by an abuse limit (ip, user, body, tasks), by limit and "
                      "platform (none: health and metrics).", limit=(), platform=())
        self._counter("clarify_metric_read_failures_total",
                      "Gauges that could not be read at a scrape, by gauge.", gauge=())
        self._histogram("clarify_ack_seconds",
                        "Time from a callback's arrival to its acknowledgement, by platform.",
                        ACK_BUCKETS, platform=PLATFORMS)
        self._histogram("clarify_core_request_seconds",
                        "Duration of each core call attempt, by operation.", CALL_BUCKETS,
                        operation=())
        self._histogram("clarify_rate_limit_wait_seconds",
                        "Time a platform call waited for its rate-limit bucket, by platform.",
                        WAIT_BUCKETS, platform=PLATFORMS)
        self._histogram("clarify_job_lag_seconds",
                        "Time from a job becoming available at the core to its lease here.",
                        WAIT_BUCKETS)
        self._gauge("clarify_outbox_entries", "Answers waiting in the outbox for the core.")
        self._gauge("clarify_outbox_limit_entries",
                    "The most answers the outbox holds (store.outbox_max_entries).")
        self._gauge("clarify_outbox_parked_entries",
                    "Answers set aside in the outbox after failing too often.")
        self._gauge("clarify_outbox_oldest_due_seconds",
                    "How long the most overdue waiting answer has been due (0: none overdue).")
        self._gauge("clarify_outstanding_tasks",
                    "Tasks an adapter runs after acknowledging a callback, by platform.",
                    platform=PLATFORMS)
        self._gauge("clarify_outstanding_tasks_limit",
                    "The most such tasks a platform's adapter runs (limits.max_outstanding_tasks).")
        self._gauge("clarify_dependency_up",
                    "1 while the last readiness check of a dependency passed, else 0.",
                    dependency=())
        self._gauge("clarify_delivery_paused",
                    "1 while the worker holds delivery because a platform refuses the bot's "
                    "credentials.")
        # Slack as a distributed app (docs/slack.md, "One bot for many workspaces")
        self._gauge("clarify_slack_installations",
                    "Slack installations, by state (active; paused: Slack refuses its token, "
                    "its deliveries wait; removed: uninstalled or its tokens revoked).",
                    state=("active", "paused", "removed"))
        self._counter("clarify_slack_installs_total",
                      "Slack installs through the redirect URL, by outcome (installed, "
                      "reinstalled, refused).", outcome=("installed", "reinstalled", "refused"))
        self._counter("clarify_slack_binding_refusals_total",
                      "Slack installs refused because they would give a workspace or an org a "
                      "second tenant, by reason (workspace_of_another_tenant, "
                      "org_of_another_tenant, org_has_workspaces_of_another_tenant, "
                      "link_already_used).",
                      reason=("workspace_of_another_tenant", "org_of_another_tenant",
                              "org_has_workspaces_of_another_tenant", "link_already_used"))
        self._counter("clarify_slack_unserved_total",
                      "Slack callbacks from a workspace no installation serves (or an "
                      "uninstalled one), acknowledged and dropped, by kind (the event type, or "
                      "the interaction's type).", kind=())
        self._counter("clarify_slack_directory_reloads_total",
                      "Times a process read the Slack installations again before its periodic "
                      "read because the database had changed for a workspace it was about to "
                      "turn down (a stale view: an install moments ago).")
        self._counter("clarify_slack_token_refreshes_total",
                      "Slack bot token refreshes (token rotation), by outcome (refreshed; "
                      "failed: retried, and alerted while it keeps failing).",
                      outcome=("refreshed", "failed"))
        self._gauge("clarify_slack_token_refresh_failing",
                    "Slack installations whose last token refresh failed (retried).")
        self._gauge("clarify_build_info",
                    "Always 1; its labels say which release (version) and commit this process "
                    "runs.", version=(), commit=())
        _ProcessCollector(registry=r)
        _PlatformCollector(registry=r)
        _GCCollector(registry=r)

    # ---------------------------------------------------------------- declaring

    def _counter(self, name: str, doc: str, **labels: Iterable[str]) -> None:
        # prometheus_client adds the ``_total`` suffix itself
        family = Counter(name.removesuffix("_total"), doc, list(labels), registry=self.registry)
        self._declare(name, family, labels)

    def _histogram(self, name: str, doc: str, buckets: tuple[float, ...],
                   **labels: Iterable[str]) -> None:
        family = Histogram(name, doc, list(labels), buckets=buckets, registry=self.registry)
        self._declare(name, family, labels)

    def _gauge(self, name: str, doc: str, **labels: Iterable[str]) -> None:
        self._declare(name, Gauge(name, doc, list(labels), registry=self.registry), labels)

    def _declare(self, name: str, family: MetricWrapperBase,
                 labels: dict[str, Iterable[str]]) -> None:
        self._families[name] = family
        if labels:
            self.preset(name, **labels)

    def preset(self, name: str, **labels: Iterable[str] | type[StrEnum]) -> None:
        """Start every combination of these label values at zero (listed before first use).
        Labels left out, or given no values, appear when first used."""
        values = [[str(v) for v in vs] for vs in labels.values()]
        if not values or not all(values):
            return
        family = self._families[name]
        for combo in _product(values):
            family.labels(*combo)

    # ---------------------------------------------------------------- recording

    def inc(self, name: str, amount: float = 1, **labels: str) -> None:
        self._child(name, labels).inc(amount)  # type: ignore[attr-defined]

    def observe(self, name: str, value: float, **labels: str) -> None:
        self._child(name, labels).observe(value)  # type: ignore[attr-defined]

    def set(self, name: str, value: float, **labels: str) -> None:
        self._child(name, labels).set(value)  # type: ignore[attr-defined]

    def value(self, name: str, **labels: str) -> float:
        """A counter's or gauge's current value, 0 where nothing was recorded (tests)."""
        return self.registry.get_sample_value(name, labels) or 0

    def _child(self, name: str, labels: dict[str, str]) -> MetricWrapperBase:
        key = (name, tuple(labels.items()))
        child = self._children.get(key)
        if child is None:
            family = self._families[name]
            child = family.labels(**labels) if labels else family
            self._children[key] = child
        return child

    # ---------------------------------------------------------------- serving

    async def render(self) -> bytes:
        """The text exposition, with the store's gauges read now."""
        for name, read in list(self.gauges.items()):
            try:
                value = await asyncio.wait_for(read(), GAUGE_READ_SECONDS)
            except Exception:  # a slow or failing store: keep the last value, count the miss
                self.inc("clarify_metric_read_failures_total", gauge=name)
                continue
            self.set(name, value)
        return generate_latest(self.registry)


def _product(values: list[list[str]]) -> list[tuple[str, ...]]:
    combos: list[tuple[str, ...]] = [()]
    for options in values:
        combos = [(*c, v) for c in combos for v in options]
    return combos


disable_created_metrics()  # no ``_created`` series beside each counter: nobody here reads them
REGISTRY = Metrics()


class CoreInstruments:
    """What the core's client and reader report (``bot.core.instruments``), into ``REGISTRY``:
    ``bot.core`` imports nothing above it, so the registry is handed down to it here."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics

    def fallback(self, extension: Extension) -> None:
        self.metrics.inc("clarify_core_extension_fallbacks_total", extension=extension.value)

    def offered(self, extension: Extension, offered: bool) -> None:
        self.metrics.set("clarify_core_extension_offered", 1 if offered else 0,
                         extension=extension.value)

    def attempt(self, operation: str, seconds: float, *, failed: str | None) -> None:
        self.metrics.observe("clarify_core_request_seconds", seconds, operation=operation)
        if failed is not None:
            self.metrics.inc("clarify_core_errors_total", code=failed)

    def tolerated(self, kind: str, model: str) -> None:
        self.metrics.inc("clarify_core_tolerated_total", kind=kind, model=model)

    def unreadable(self, operation: str) -> None:
        self.metrics.inc("clarify_core_unreadable_total", operation=operation)


INSTRUMENTS.install(CoreInstruments(REGISTRY))
