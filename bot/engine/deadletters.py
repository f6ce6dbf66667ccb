"""The steward dead-letter digest: clarifications whose ranking ran out, with every skip reason.

Each dead-lettered clarification is listed once (its own delivery key per steward); a steward
gets one message listing all their new dead letters, so admins can repair identity, RBAC or
connector gaps (spec §6). The dead letters come from the core's job list where it offers one
(the jobs-read extension), otherwise from the clarification list in state ``dead_lettered``,
which every core offers and which also names the jobs whose last lease simply ran out (the bot
never sees those as an answer of its own).

One pass follows the list's cursors within ``PASS_BOUND``; a list that goes on past it is taken
up where it stopped at the next pass (and from its start again once its end was reached), so
every dead letter is listed however small the core's pages are, and a digest sent from a cut
pass says that more may follow.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Protocol

from bot.audit import Audit, AuditEvent, EventFacts
from bot.channel import Address
from bot.clock import Clock
from bot.core import errors as e
from bot.core.client import CoreClient
from bot.core.errors import ExtensionUnavailable
from bot.core.extensions import Extension
from bot.core.models import Clarification, ClarificationState, JobState, Person, ReasonCode
from bot.core.paging import Bound, Listing
from bot.engine import away, evidence, views
from bot.engine.delivery import Delivered, Deliverer
from bot.engine.people import display_names
from bot.engine.routing import Routing
from bot.engine.trail import pairs
from bot.engine.zones import Zones
from bot.metrics import REGISTRY
from bot.store.base import DeliveryKey, DeliveryLedger, KeyValues, SlotState
from cards.views import DeadLetterDigestView, DeadLetterItem

KIND = "dead_letter"
LISTED = "dead-letter-listed"
LISTED_TTL_SECONDS = 400 * 24 * 3600
# a dead letter that could not be listed to its steward is on record (audit, the core's trail,
# the reach record) once a day while it cannot: every pass tries it again
UNLISTED = "dead-letter-unlisted"
UNLISTED_EVERY_SECONDS = 24 * 3600
STALE_CLAIM = timedelta(minutes=10)
# how far one pass (each housekeeping) follows the dead-letter list; the rest at the next pass
PASS_BOUND = Bound(pages=20, items=5_000, seconds=10.0)

REGISTRY.preset("clarify_lists_cut_total", list=("dead_letters",))


class DeadLetterStore(DeliveryLedger, KeyValues, Protocol):
    """What the dead-letter reports use of the store: their delivery slots and markers."""


@dataclass
class DeadLetterReporter:
    core: CoreClient
    store: DeadLetterStore
    deliverer: Deliverer
    routing: Routing
    audit: Audit
    clock: Clock
    zones: Zones  # the stewards' zones (``bot.engine.zones``): the list reads in theirs
    # where the last pass stopped in each list ("jobs", "clarifications"), when it was cut
    _resume: dict[str, str] = field(default_factory=dict)

    async def report(self) -> int:
        """List new dead letters to their stewards; returns how many clarifications were listed."""
        groups: dict[str, list[Clarification]] = defaultdict(list)
        ids, whole = await self._dead_letter_ids()
        async for c in self._dead_lettered(ids):
            steward = c.workspace.steward_id
            if steward is None or evidence.standing(c) is evidence.Standing.BOUND:
                continue
            slot = await self.store.slot(_key(c, steward))
            if slot is None or slot.state is not SlotState.SENT:
                groups[steward].append(c)
        listed = 0
        for steward_id, items in groups.items():
            listed += await self._send(steward_id, items, whole=whole)
        return listed

    async def _dead_lettered(self, ids: list[str]) -> AsyncIterator[Clarification]:
        """Dead-lettered clarifications not yet listed (listed ones cost no core read)."""
        for clarification_id in ids:
            if await self.store.kv_get(LISTED, clarification_id):
                continue
            try:
                yield await self.core.get_clarification(clarification_id=clarification_id)
            except e.ClarificationNotFound:
                continue

    async def _dead_letter_ids(self) -> tuple[list[str], bool]:
        """This pass's part of the dead-letter list, and whether it reached the list's end."""
        if self.core.offers(Extension.JOBS_READ):
            try:
                jobs = await self._walk("jobs", lambda start: self.core.walk_jobs(
                    bound=PASS_BOUND, start=start, state=JobState.DEAD_LETTERED,
                    kind="clarify:"))
                return ([job.payload.clarification_id for job in jobs.items if job.payload],
                        jobs.complete)
            except ExtensionUnavailable:
                pass  # the core stopped offering it: the clarification list says the same
        found = await self._walk("clarifications", lambda start: self.core.walk_clarifications(
            bound=PASS_BOUND, start=start, state=ClarificationState.DEAD_LETTERED))
        return [item.id for item in found.items], found.complete

    async def _walk[T](self, name: str, walk: Callable[[str | None], Awaitable[Listing[T]]]
                       ) -> Listing[T]:
        """One pass over a list, from where the last one stopped; the next starts where this
        one stops (from the list's start once it reached the end)."""
        start = self._resume.pop(name, None)
        try:
            listing = await walk(start)
        except e.ValidationFailed:
            if start is None:
                raise
            listing = await walk(None)  # the core no longer knows the cursor: from the start
        if listing.next_cursor is not None:
            self._resume[name] = listing.next_cursor
        if not listing.complete:
            REGISTRY.inc("clarify_lists_cut_total", list="dead_letters")
        return listing

    async def _send(self, steward_id: str, items: list[Clarification], *, whole: bool
                    ) -> int:
        tenant_id = items[0].tenant_id
        try:
            steward = await self.core.get_person(person_id=steward_id, tenant_id=tenant_id)
        except e.PersonNotFound:
            await self._unlisted(items, steward_id, "steward_unreachable",
                                 ReasonCode.TENANT_SCOPE_MISMATCH,
                                 "the steward is not a person of this tenant")
            return 0
        address = await self.routing.route(self.core, steward, tenant_id=tenant_id)
        if not isinstance(address, Address):
            await self._unlisted(items, steward_id, "steward_unreachable", address.reason,
                                 address.why, platform=address.platform)
            return 0
        now = self.clock.now()
        fresh = []
        for c in items:
            slot, created = await self.store.reserve(
                _key(c, steward_id), worker_id=self.deliverer.worker_id, now=now
            )
            # another live worker's claim is left alone; only a stale one (a crash) is taken over
            if created or (slot.state is SlotState.RESERVED
                           and now - slot.reserved_at >= STALE_CLAIM):
                fresh.append(c)
        if not fresh:
            return 0
        zone = await self.zones.zone(tenant_id, steward, address)
        view = DeadLetterDigestView(
            items=tuple([await self._item(c, steward) for c in fresh]),
            viewer=views.viewer(steward, zone.zone),
            whole=whole,
        )
        digest_id = hashlib.sha256("|".join(sorted(c.id for c in fresh)).encode()).hexdigest()[:16]
        digest_key = DeliveryKey(f"deadletters.{digest_id}", steward_id, 0, KIND)
        result = await self.deliverer.deliver(digest_key, address, view, now=now, report=False)
        if result.status not in (Delivered.NEW, Delivered.EARLIER) or result.message_ref is None:
            for c in fresh:
                await self.store.release(_key(c, steward_id))
            why = ("a worker stopped mid-send and the platform cannot say whether the message "
                   "arrived") if result.status is Delivered.UNCERTAIN \
                else (result.why or "retries exhausted")
            await self._unlisted(fresh, steward_id, "delivery_failed", result.reason, why,
                                 platform=address.platform, cause_group=result.cause_group)
            return 0
        for c in fresh:
            await self.store.mark_sent(_key(c, steward_id), message_ref=result.message_ref)
            await self.store.kv_put(LISTED, c.id, "1", ttl_seconds=LISTED_TTL_SECONDS)
            skips = pairs(c)
            codes = sorted({s.reason_code.value for s in skips})
            await self.audit.emit(
                AuditEvent(
                    type="dead_letter_reported",
                    at=now,
                    clarification_id=c.id,
                    person_id=steward_id,
                    channel=address.platform,
                    skips=tuple(skips),
                    occurrence=None,  # once per question and steward (LISTED)
                    facts=EventFacts.of(c),
                    extra={"unanswered": ",".join(waiting)} if (
                        waiting := views.unanswered(c)) else {},
                    message="Listed in the steward's dead-letter digest; reason codes: "
                    + (", ".join(codes) or "none")
                    + ".",
                )
            )
        return len(fresh)

    async def _unlisted(self, items: list[Clarification], steward_id: str, type_: str,
                        reason: ReasonCode, why: str, *, platform: str | None = None,
                        cause_group: str | None = None) -> None:
        """Dead letters the steward's digest could not list: each on record with its reason
        (``delivery_failed``: the platform refused the digest; ``steward_unreachable``: there
        is nowhere to send it), with its facts for the reach record, once a day while it
        cannot be listed (every pass tries again)."""
        for c in items:
            if not await self.store.mark_once(UNLISTED, f"{c.id}|{type_}",
                                              ttl_seconds=UNLISTED_EVERY_SECONDS):
                continue
            await self.audit.emit(AuditEvent(
                type=type_, at=self.clock.now(), clarification_id=c.id, person_id=steward_id,
                reason_code=reason, channel=platform if type_ == "delivery_failed" else None,
                occurrence="dead-letter digest",  # not a candidate's digest, nor a notice
                facts=EventFacts.of(c, platform=platform, cause=why, cause_group=cause_group),
                message=f"The steward's dead-letter digest could not list this question "
                        f"({why}); it is tried again at the next pass."))

    async def _item(self, c: Clarification, steward: Person) -> DeadLetterItem:
        skips = pairs(c)
        waiting = views.unanswered(c)
        names = await display_names(self.core, [*(s.person_id for s in skips), *waiting],
                                    tenant_id=c.tenant_id)
        return DeadLetterItem(
            clarification_id=c.id,
            document=views.steward_document(c, steward),
            severity=c.severity,
            skipped=await away.steward_skips(self.store, c.id, skips, names),
            unanswered=tuple(names.get(p, p) for p in waiting),
        )


def _key(c: Clarification, steward_id: str) -> DeliveryKey:
    return DeliveryKey(c.id, steward_id, 0, KIND)
