"""Every Redis key name, prefix and TTL the store uses, in one place (the arq way).

Keys are ``{prefix}:{kind}:...``; the prefix comes from the store's constructor so that several
deployments (or tests) can share one Redis without seeing each other's state. The ids that end a
key are built here too (a delivery's token, a digest batch's id).

Redis Cluster: every key a script or transaction touches carries one hash tag (the part in
braces), so that all of them hash to one slot. One person's keys share ``{p:<person>}``: their
delivery state (one hash: delivery slots, admissions, the cap counter, the digest window) and their
digest batches; admitting a card is one script over them, two commands inside it for the usual
card. The answer outbox (entries, due times, order markers, leases) shares
``{outbox}``: its claims look across every waiting answer. Scripts name only keys passed to
them; none builds a key name from what it reads. docs/reliability.md ("Scale-out") says why these
tags.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.pseudonym import digest

DEFAULT_PREFIX = "clarify"

DAY = 24 * 60 * 60
# Slots and admissions outlive any escalation (48 h per candidate over a ranking of a few people);
# the store takes the real value from its constructor, this is only the default.
SLOT_TTL_SECONDS = 8 * DAY
CAP_TTL_SECONDS = 2 * DAY  # a person's local day plus time-zone slack
WINDOW_GRACE_SECONDS = DAY  # a digest window's record outlives the window by a day
CARDS_TTL_SECONDS = 30 * DAY
# A person's delivery state is one hash: its TTL is renewed, and its slots and admissions older
# than their TTL dropped, by the first write after this many seconds (not by every write).
PERSON_REFRESH_SECONDS = 3600
# a person's platform profile (time zone, locale), kept a day under a keyed hash of their chat
# identity (bot.engine.zones); erased with the person (bot.erasure)
PROFILES = "profile"
PROFILE_TTL_SECONDS = DAY
# Outbox entries never expire: an answer that reached the bot is never lost.
# A person's "latest action" marker per clarification outlives any platform retry or replay
# (Slack's signatures hold for 5 minutes, its retries come within one) by far.
ORDER_TTL_SECONDS = 7 * DAY
# A Teams conversation reference lives as long as the app is installed for the person; every
# activity of theirs stores it again (and so renews this), uninstalling removes it. The TTL only
# bounds what people who left without an uninstall event leave behind.
CONVERSATION_TTL_SECONDS = 400 * DAY
# Answers waiting to be forwarded, at most: past it the answer endpoints refuse (503) rather than
# let an outage of the core grow the outbox until Redis runs out of memory.
OUTBOX_MAX_ENTRIES = 100_000


@dataclass(frozen=True, slots=True)
class Ttls:
    """How long each kind of per-person state lives (seconds); from ``[store]`` settings."""

    slot: int = SLOT_TTL_SECONDS  # delivery slots, admissions, digest batches
    cap: int = CAP_TTL_SECONDS  # a person's cap counter for one local day
    cards: int = CARDS_TTL_SECONDS  # message references of a clarification's cards
    order: int = ORDER_TTL_SECONDS  # a person's latest action marker per clarification
    conversation: int = CONVERSATION_TTL_SECONDS  # a Teams conversation reference

    def window(self, window_seconds: int) -> int:
        return window_seconds + WINDOW_GRACE_SECONDS

    def person(self, window_seconds: int = 0) -> int:
        """A person's delivery-state hash: it outlives every field in it until the next renewal
        (at most ``PERSON_REFRESH_SECONDS`` later)."""
        return max(self.slot, self.cap, self.window(window_seconds)) + PERSON_REFRESH_SECONDS


def window_ttl(window_seconds: int) -> int:
    return Ttls().window(window_seconds)


def delivery_token(clarification_id: str, person_id: str, attempt: int, kind: str) -> str:
    """One delivery's id: it ends its slot and admission keys and names its card in a hash."""
    return f"{clarification_id}|{person_id}|{attempt}|{kind}"


def batch_id(person_id: str, start_epoch: float) -> str:
    """A digest batch is named by its person and its window's start (epoch milliseconds)."""
    return f"{person_id}|{round(start_epoch * 1000)}"


def batch_parts(batch: str) -> tuple[str, str]:
    """(person, window start in ms) of a batch id: the person names the key, the start the
    batch's fields in it."""
    person, _, start = batch.rpartition("|")
    return person, start


def slot_field(token: str) -> str:
    """A delivery slot's field in its person's hash (``Keys.person``)."""
    return "s:" + token


UNREPORTED = "|unreported"  # no delivery kind is named so: a token never ends this way


def unreported_field(token: str) -> str:
    """The mark beside a card in its clarification's hash (``Keys.cards``): its delivery report
    may not have reached the core yet (``bot.store.ledger``). Named by the token, so an erasure's
    match on the person finds it with the card."""
    return token + UNREPORTED


def is_unreported_field(name: str) -> bool:
    return name.endswith(UNREPORTED)


def admission_field(token: str) -> str:
    """An admission's field in its person's hash."""
    return "a:" + token


def person_tag(person_id: str) -> str:
    """The hash tag of one person's keys. It starts with ``p:``, so it is never empty, and a
    brace inside a person id can only end it early (then more people share a slot, no more)."""
    return "{p:" + person_id + "}"


OUTBOX_TAG = "{outbox}"


def hashed(name: str) -> str:
    """A key's part as its keyed hash (``bot.pseudonym``); ``*`` stays a SCAN wildcard."""
    if name == "*":
        return name
    return digest(name, purpose="key")[:32]


@dataclass(frozen=True, slots=True)
class Keys:
    prefix: str = DEFAULT_PREFIX

    # ------------------------------------------------ one person's keys: one slot
    def person(self, person_id: str) -> str:
        """hash: one person's delivery state. Fields: ``s:<token>`` a delivery slot (JSON),
        ``a:<token>`` an admission (JSON), ``c`` and ``c0`` the cap counters of the person's
        latest two local days (``<day> <used>``), ``ws wd wn wc wb wm`` the digest window
        (start, due, direct cards, charged, batch id, batch start in ms), ``x`` when its TTL
        was last renewed."""
        return f"{self.prefix}:person:{person_tag(person_id)}"

    def digest(self, person_id: str) -> str:
        """hash: one person's digest batches, fields ``<window start ms>:<name>``"""
        return f"{self.prefix}:digest:{person_tag(person_id)}"

    def person_pattern(self, person_glob: str) -> str:
        """A SCAN pattern for every per-person key of the people ``person_glob`` matches."""
        return f"{self.prefix}:*:{{p:{person_glob}}}*"

    # ------------------------------------------------ single-key state
    @property
    def batches_due(self) -> str:
        return f"{self.prefix}:batches:due"  # zset: batch id -> due (or lease end) epoch

    @property
    def unreported_due(self) -> str:
        # zset: clarification id -> when to look at its cards still marked unreported (or the
        # look's lease end) epoch
        return f"{self.prefix}:unreported:due"

    @property
    def reminders_due(self) -> str:
        # zset: "<attempt>|<moves on epoch>|<to steward 0/1>|<clarification>" -> due (or lease
        # end) epoch; no person id: the card of that attempt names them
        return f"{self.prefix}:reminders:due"

    @property
    def holds_due(self) -> str:
        return f"{self.prefix}:holds:due"  # zset: held job id -> when to look at it (epoch)

    @property
    def holds(self) -> str:
        return f"{self.prefix}:holds"  # hash: held job id -> its hold (JSON)

    @property
    def generation(self) -> str:
        # hash: id, created, origin, epoch, checked (bot.store.generation): how a process
        # tells that the store came back empty or older than it left it
        return f"{self.prefix}:generation"

    def cards(self, clarification_id: str) -> str:
        # hash: delivery token -> card JSON, and the cards' not-yet-reported marks
        return f"{self.prefix}:cards:{clarification_id}"

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

    # Markers, remembered values and rate buckets are named by a keyed hash of what they are
    # about (bot.pseudonym): their names often hold a person id or a chat user (a decline's
    # "clarification|person", a per-user abuse limit, a Slack DM's rate bucket), and a name must
    # not identify anyone (docs/operations.md, "Erasure"). Every replica shares the key.
    def once(self, namespace: str, key: str) -> str:
        return f"{self.prefix}:once:{namespace}:{hashed(key)}"

    def rate(self, bucket: str) -> str:
        return f"{self.prefix}:rate:{hashed(bucket)}"

    def limit(self, bucket: str) -> str:
        # one key per script call; the tag keeps it whole on Redis Cluster all the same
        return f"{self.prefix}:limit:{{{hashed(bucket)}}}"  # hash: tokens, at

    def latest(self, namespace: str, key: str) -> str:
        return f"{self.prefix}:latest:{namespace}:{hashed(key)}"

    def directory(self, scope: str) -> str:
        # hash: member id -> document (bot.store.directory); one key per workspace
        return f"{self.prefix}:directory:{hashed(scope)}"

    # ------------------------------------------------ the answer outbox: one slot
    def _outbox(self, name: str) -> str:
        return f"{self.prefix}:{OUTBOX_TAG}:{name}"

    @property
    def outbox_entries(self) -> str:
        return self._outbox("entries")  # hash: entry id -> {payload, created_at} JSON

    @property
    def outbox_attempts(self) -> str:
        return self._outbox("attempts")  # hash: entry id -> claims so far

    @property
    def outbox_due(self) -> str:
        return self._outbox("due")  # zset: entry id -> due (or lease end) epoch

    @property
    def outbox_failures(self) -> str:
        return self._outbox("failures")  # hash: entry id -> failed attempts so far

    @property
    def outbox_parked(self) -> str:
        return self._outbox("parked")  # hash: entry id -> {entry, reason, parked_at} JSON

    @property
    def outbox_keys(self) -> str:
        """hash: order key -> "<latest action accepted> <entries waiting>", for keys with
        entries waiting only (a claim reads it to flag superseded entries)."""
        return self._outbox("keys")

    @property
    def outbox_queue(self) -> str:
        """hash: order key -> JSON list of [action time, entry id], the key's waiting entries in
        the order the person acted: a claim takes only the first."""
        return self._outbox("queue")

    @property
    def outbox_leases(self) -> str:
        """hash: order key -> "<lease end> <entry id>": the entry being forwarded for the key."""
        return self._outbox("leases")

    def order(self, order_key: str) -> str:
        # hash: seen, settled (action times, µs), settled_id, d:<entry id> (settled or parked)
        return self._outbox(f"order:{order_key}")

    @property
    def order_pattern_prefix(self) -> str:
        return self._outbox("order:")


def profile_key(platform: str, user_id: str) -> str:
    """The store's name (kv ``PROFILES``) for one chat identity's platform profile: a keyed
    hash, so the key names nobody (``bot.pseudonym``)."""
    return digest(f"{platform}|{user_id}", purpose="profile")[:40]
