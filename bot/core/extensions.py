"""The contract's extensions: what a core may offer beyond the baseline, and what the bot does
without each.

The baseline (docs/core-contract.md, "The baseline") is what every Telha core offers: the spec's
routes and the design outline's (jobs poll, heartbeat, advance, complete and fail; clarifications
list, read, answer, deliveries and events; people resolve and read) with the fields they name.
Everything else is an extension, named here once: a route, or a request field the client sends
only while the core offers it. ``Offered`` holds what the bot currently believes the core offers;
``bot.core.discovery`` finds out and keeps it true while the bot runs.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum


class Extension(StrEnum):
    PEOPLE_BATCH = "people-batch"
    REPORTS = "reports"
    EXPEDITE = "expedite"
    JOBS_READ = "jobs-read"
    ATTENTION = "attention"
    HISTORY = "history"
    ERASURE = "erasure"
    FACTS = "facts"
    ANSWER_REQUEST_ID = "answer-request-id"
    ANSWER_NOTE = "answer-note"
    ANSWER_ORDER = "answer-order"
    HEARTBEAT_LEASE = "heartbeat-lease"
    ADVANCE_ATTEMPT = "advance-attempt"
    REPORT_DETAILS = "report-details"
    PERSON_AWAY = "person-away"


@dataclass(frozen=True, slots=True)
class About:
    """One extension's entry: what it is for and what the bot does without it (the docs' table
    is checked against these, so the two cannot drift)."""

    purpose: str
    without: str
    routes: tuple[str, ...] = ()  # operation ids it adds; none for a field extension
    # the enum values it adds to requests (``bot.core.models.enums.EXTENSION_CODES``): a value
    # extension, detected by its values in the document's enum or by a probe that sends one
    values: tuple[str, ...] = ()


ABOUT: dict[Extension, About] = {
    Extension.PEOPLE_BATCH: About(
        "a job's candidates and steward read in one call, each chat alias resolved back",
        "each person read on its own when first needed (GET /v1/people/{id}), each alias "
        "resolved back with POST /v1/people/resolve unless the clarification's askedAliases "
        "vouch for it", ("getPeople",)),
    Extension.REPORTS: About(
        "a job's delivery and event reports in one call",
        "each report sent on its own route (deliveries, events)", ("reportBatch",)),
    Extension.EXPEDITE: About(
        "\"Not the right person\" starts the next turn at once",
        "the decline is recorded; while this bot still holds the job's lease the next "
        "candidate is asked at once (heartbeat, advance, then the ranking walk), otherwise the "
        "next candidate is asked when the window ends and the card says when",
        ("expediteJob",)),
    Extension.JOBS_READ: About(
        "dead-lettered jobs listed for the steward digest",
        "the digest lists clarifications in state dead_lettered from the clarification list",
        ("getJob", "listJobs")),
    Extension.ATTENTION: About(
        "the steward's attention queue in one list",
        "the queue is put together from the clarification list with the spec's filters "
        "(conflicted, expired, dead_lettered of any severity; open, attested, "
        "partially_confirmed at high and critical)", ("listAttention",)),
    Extension.HISTORY: About(
        "the delivery history in `clarify show` and `review`",
        "left out of `clarify show`, which says so", ("getDeliveryHistory",)),
    Extension.ERASURE: About(
        "the core tombstones a person's attribution (spec OQ-5)",
        "`clarify erase-attribution` erases the bot's own data, found from the person's "
        "aliases (GET /v1/people/{id}), and says that the core's part must be done with the "
        "core's own tooling", ("eraseAttribution",)),
    Extension.FACTS: About(
        "bitemporal fact reads", "not used by the bot", ("getFact", "getFactHistory")),
    Extension.ANSWER_REQUEST_ID: About(
        "an idempotency key per outbox entry on answers",
        "answers go without it: the spec's (responder, answer) idempotency holds, and the "
        "outbox forwards a person's answers one at a time in order, so a resend is always of "
        "the newest one not yet recorded"),
    Extension.ANSWER_NOTE: About(
        "a steward's note kept with an answer",
        "the CLI refuses --note (and --override, which needs a note) with a clear message"),
    Extension.ANSWER_ORDER: About(
        "answers carry the platform's time of the action (respondedAt) and whether a later "
        "answer of the same person follows (superseded): the core orders a responder's "
        "answers by when they were given and counts only the latest",
        "answers go in the person's order without them; the core orders them by arrival, so an "
        "earlier answer forwarded after a later one (another platform, an old card) becomes "
        "the active one, and a superseded answer that binds first makes the later one a "
        "post-binding conflict"),
    Extension.HEARTBEAT_LEASE: About(
        "a heartbeat names the lease's new duration",
        "heartbeats extend by the lease's own duration (the leaseSeconds it was polled with, "
        "the same value)"),
    Extension.ADVANCE_ATTEMPT: About(
        "an advance names the attempt it skips to (idempotent) and the reason",
        "each advance raises attempts by one; the client never resends one blindly, and a "
        "skip forward of several candidates is several advances"),
    Extension.REPORT_DETAILS: About(
        "reports carry their own ids (idempotent), the delivery's kind and attempt, and an "
        "escalation's skips",
        "reports name the person, channel, message and reason code; a steward notice is not "
        "reported as a delivery (the steward would count as asked): its steward_notified "
        "event says it went out"),
    Extension.PERSON_AWAY: About(
        "the reason code PERSON_AWAY: a candidate passed over because their platform says "
        "they are away (on holiday, ill, out of office, not to be disturbed)",
        "the skip, an advance and an escalation's skips carry the spec's DAILY_CAP_EXCEEDED "
        "(not to be messaged now, nothing to repair, the next candidate asked); the event's "
        "message says \"was away until …\", and the steward's cards read the bot's own record "
        "of the skip, so they say away, with the return date",
        values=("PERSON_AWAY",)),
}

ROUTE_EXTENSION: dict[str, Extension] = {
    op: ext for ext, about in ABOUT.items() for op in about.routes
}
FIELD_EXTENSIONS = frozenset(ext for ext, about in ABOUT.items()
                             if not about.routes and not about.values)
VALUE_EXTENSIONS = frozenset(ext for ext, about in ABOUT.items() if about.values)


class Offered:
    """What the bot believes the core offers now: a set of extensions that the discovery
    changes (``set``), and that a 404/405 or a refused field takes one out of (``lose``).
    Reading it is synchronous and cheap: every call the client makes asks it."""

    def __init__(self, extensions: frozenset[Extension] = frozenset(),
                 *, fixed: bool = False) -> None:
        self._offered = frozenset(extensions)
        self.fixed = fixed  # set by the operator: never changed by discovery or a failure

    def __contains__(self, ext: object) -> bool:
        return ext in self._offered

    def __iter__(self) -> Iterator[Extension]:
        return iter(sorted(self._offered))

    @property
    def names(self) -> list[str]:
        return sorted(str(e) for e in self._offered)

    def set(self, extensions: frozenset[Extension]) -> tuple[set[Extension], set[Extension]]:
        """Take the discovery's answer; returns (switched on, switched off)."""
        if self.fixed:
            return set(), set()
        on, off = set(extensions - self._offered), set(self._offered - extensions)
        self._offered = frozenset(extensions)
        return on, off

    def lose(self, ext: Extension) -> bool:
        """The core refused the extension (a 404 or 405, a refused field): True when it was
        believed offered until now."""
        if self.fixed or ext not in self._offered:
            return False
        self._offered = self._offered - {ext}
        return True


ALL = frozenset(Extension)


def parse_setting(value: str | list[str]) -> frozenset[Extension] | None:
    """``[core] extensions``: "auto" (None: discover), "none", "all", or a list of names."""
    if isinstance(value, str):
        word = value.strip().lower()
        if word == "auto":
            return None
        if word == "none":
            return frozenset()
        if word == "all":
            return ALL
        value = [v for v in word.replace(",", " ").split() if v]
    return frozenset(Extension(v) for v in value)
