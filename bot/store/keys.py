"""Every Redis key name, prefix and TTL the store uses, in one place (the arq way).

Keys are ``{prefix}:{kind}:...``; the prefix comes from the store's constructor so that several
deployments (or tests) can share one Redis without seeing each other's state. The ids that end a
key are built here too (a delivery's token, a digest batch's id). Two Lua scripts name keys they
only learn while running (a window's batch, an entry's order key): they join a prefix taken from
``Keys`` (``batch_prefix``, ``order_prefix``, ``order_lease_prefix``) with that id, so the
layout still lives only here.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_PREFIX = "clarify"

DAY = 24 * 60 * 60
# Slots and admissions outlive any escalation (48 h per candidate over a ranking of a few people);
# the store takes the real value from its constructor, this is only the default.
SLOT_TTL_SECONDS = 8 * DAY
CAP_TTL_SECONDS = 2 * DAY  # a person's local day plus time-zone slack
WINDOW_GRACE_SECONDS = DAY  # a digest window's record outlives the window by a day
CARDS_TTL_SECONDS = 30 * DAY
# Outbox entries never expire: an answer that reached the bot is never lost.
# A person's "latest action" marker per clarification outlives any platform retry or replay
# (Slack's signatures hold for 5 minutes, its retries come within one) by far.
ORDER_TTL_SECONDS = 7 * DAY
# A Teams conversation reference lives as long as the app is installed for the person; every
# activity of theirs stores it again (and so renews this), uninstalling removes it. The TTL only
# bounds what people who left without an uninstall event leave behind.
CONVERSATION_TTL_SECONDS = 400 * DAY


def window_ttl(window_seconds: int) -> int:
    return window_seconds + WINDOW_GRACE_SECONDS


def delivery_token(clarification_id: str, person_id: str, attempt: int, kind: str) -> str:
    """One delivery's id: it ends its slot and admission keys and names its card in a hash."""
    return f"{clarification_id}|{person_id}|{attempt}|{kind}"


def batch_id(person_id: str, start_epoch: float) -> str:
    """A digest batch is named by its person and its window's start (epoch milliseconds)."""
    return f"{person_id}|{round(start_epoch * 1000)}"


@dataclass(frozen=True, slots=True)
class Keys:
    prefix: str = DEFAULT_PREFIX

    def slot(self, token: str) -> str:
        return f"{self.prefix}:slot:{token}"

    def admission(self, token: str) -> str:
        return f"{self.prefix}:adm:{token}"

    def cap(self, day: str, person_id: str) -> str:
        return f"{self.prefix}:cap:{day}:{person_id}"

    def window(self, person_id: str) -> str:
        return f"{self.prefix}:win:{person_id}"

    @property
    def batch_prefix(self) -> str:
        """The admit script names a window's batch key itself (the window holds its id)."""
        return f"{self.prefix}:batch:"

    def batch(self, batch_id: str) -> str:
        return f"{self.batch_prefix}{batch_id}"

    @property
    def batches_due(self) -> str:
        return f"{self.prefix}:batches:due"  # zset: batch id -> due (or lease end) epoch

    def cards(self, clarification_id: str) -> str:
        return f"{self.prefix}:cards:{clarification_id}"  # hash: delivery token -> card JSON

    def conversation(self, tenant_id: str, aad_object_id: str) -> str:
        # "|" never occurs in a tenant id, so no (tenant, user) pair can name another's key;
        # AAD object ids are GUIDs, compared without case
        return f"{self.prefix}:conv:{tenant_id}|{aad_object_id.lower()}"  # reference JSON

    def notices(self, tenant_id: str, steward_id: str, part: str) -> str:
        """A steward's notice list (``part``: queue, items, seen, batch); the ``{...}`` hash tag
        keeps one steward's keys in one Redis Cluster slot, so each script stays on one node."""
        return f"{self.prefix}:notices:{{{tenant_id}|{steward_id}}}:{part}"

    @property
    def notices_due(self) -> str:
        return f"{self.prefix}:notices:due"  # zset: "tenant|steward" -> due (or lease end) epoch

    def once(self, namespace: str, key: str) -> str:
        return f"{self.prefix}:once:{namespace}:{key}"

    def rate(self, bucket: str) -> str:
        return f"{self.prefix}:rate:{bucket}"

    def limit(self, bucket: str) -> str:
        # one key per script call; the tag keeps it whole on Redis Cluster all the same
        return f"{self.prefix}:limit:{{{bucket}}}"  # hash: tokens, at

    def latest(self, namespace: str, key: str) -> str:
        return f"{self.prefix}:latest:{namespace}:{key}"

    @property
    def outbox_entries(self) -> str:
        return f"{self.prefix}:outbox:entries"  # hash: entry id -> {payload, created_at} JSON

    @property
    def outbox_attempts(self) -> str:
        return f"{self.prefix}:outbox:attempts"  # hash: entry id -> claims so far

    @property
    def outbox_due(self) -> str:
        return f"{self.prefix}:outbox:due"  # zset: entry id -> due (or lease end) epoch

    @property
    def outbox_failures(self) -> str:
        return f"{self.prefix}:outbox:failures"  # hash: entry id -> failed attempts so far

    @property
    def outbox_parked(self) -> str:
        return f"{self.prefix}:outbox:parked"  # hash: entry id -> {entry, reason, parked_at} JSON

    # The claim script names each entry's order keys itself (the entry holds its order key).
    @property
    def order_prefix(self) -> str:
        return f"{self.prefix}:order:"

    @property
    def order_lease_prefix(self) -> str:
        return f"{self.prefix}:order-lease:"

    def order(self, order_key: str) -> str:
        return f"{self.order_prefix}{order_key}"  # hash: seen, settled (action times, µs)

    def order_lease(self, order_key: str) -> str:
        return f"{self.order_lease_prefix}{order_key}"  # the entry being forwarded for the key
