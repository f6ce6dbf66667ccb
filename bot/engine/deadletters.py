"""The steward dead-letter digest: clarifications whose ranking ran out, with every skip reason.

Each dead-lettered clarification is listed once (its own delivery key per steward); a steward
gets one message listing all their new dead letters, so admins can repair identity, RBAC or
connector gaps (spec §6). The dead letters come from the core's job list where it offers one
(the jobs-read extension), otherwise from the clarification list in state ``dead_lettered``,
which every core offers and which also names the jobs whose last lease simply ran out (the bot
never sees those as an answer of its own).
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import timedelta

from bot.audit import Audit, AuditEvent
from bot.channel import Address
from bot.clock import Clock
from bot.core import errors as e
from bot.core import models as m
from bot.core.client import CoreClient
from bot.core.errors import ExtensionUnavailable
from bot.core.extensions import Extension
from bot.engine import views
from bot.engine.delivery import Delivered, Deliverer
from bot.engine.people import display_names
from bot.engine.routing import Routing
from bot.engine.trail import pairs
from bot.store.base import DeliveryKey, SlotState, Store
from cards.views import DeadLetterDigestView, DeadLetterItem, SkippedCandidate

KIND = "dead_letter"
LISTED = "dead-letter-listed"
LISTED_TTL_SECONDS = 400 * 24 * 3600
STALE_CLAIM = timedelta(minutes=10)


@dataclass
class DeadLetterReporter:
    core: CoreClient
    store: Store
    deliverer: Deliverer
    routing: Routing
    audit: Audit
    clock: Clock

    async def report(self) -> int:
        """List new dead letters to their stewards; returns how many clarifications were listed."""
        groups: dict[str, list[m.Clarification]] = defaultdict(list)
        async for c in self._dead_lettered():
            steward = c.workspace.steward_id
            if steward is None or c.state is m.ClarificationState.ANSWERED:
                continue
            slot = await self.store.slot(_key(c, steward))
            if slot is None or slot.state is not SlotState.SENT:
                groups[steward].append(c)
        listed = 0
        for steward_id, items in groups.items():
            listed += await self._send(steward_id, items)
        return listed

    async def _dead_lettered(self) -> AsyncIterator[m.Clarification]:
        """Dead-lettered clarifications not yet listed (listed ones cost no core read)."""
        for clarification_id in await self._dead_letter_ids():
            if await self.store.kv_get(LISTED, clarification_id):
                continue
            try:
                yield await self.core.get_clarification(clarification_id=clarification_id)
            except e.ClarificationNotFound:
                continue

    async def _dead_letter_ids(self) -> list[str]:
        if self.core.offers(Extension.JOBS_READ):
            try:
                return await self._from_jobs()
            except ExtensionUnavailable:
                pass  # the core stopped offering it: the clarification list says the same
        ids: list[str] = []
        async for item in self.core.iter_clarifications(state=m.ClarificationState.DEAD_LETTERED):
            ids.append(item.id)
        return ids

    async def _from_jobs(self) -> list[str]:
        ids: list[str] = []
        cursor: str | None = None
        while True:
            page = await self.core.list_jobs(
                state=m.JobState.DEAD_LETTERED, kind="clarify:", cursor=cursor
            )
            ids += [job.payload.clarification_id for job in page.items if job.payload]
            cursor = page.next_cursor
            if cursor is None:
                return ids

    async def _send(self, steward_id: str, items: list[m.Clarification]) -> int:
        tenant_id = items[0].tenant_id
        try:
            steward = await self.core.get_person(person_id=steward_id, tenant_id=tenant_id)
        except e.PersonNotFound:
            return 0
        address = await self.routing.route(self.core, steward, tenant_id=tenant_id)
        if not isinstance(address, Address):
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
        view = DeadLetterDigestView(
            items=tuple([await self._item(c, steward) for c in fresh]),
            viewer=views.viewer(steward),
        )
        digest_id = hashlib.sha256("|".join(sorted(c.id for c in fresh)).encode()).hexdigest()[:16]
        digest_key = DeliveryKey(f"deadletters.{digest_id}", steward_id, 0, KIND)
        result = await self.deliverer.deliver(digest_key, address, view, now=now, report=False)
        if result.status not in (Delivered.NEW, Delivered.EARLIER) or result.message_ref is None:
            for c in fresh:
                await self.store.release(_key(c, steward_id))
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
                    extra={"unanswered": ",".join(waiting)} if (
                        waiting := views.unanswered(c)) else {},
                    message="Listed in the steward's dead-letter digest; reason codes: "
                    + (", ".join(codes) or "none")
                    + ".",
                )
            )
        return len(fresh)

    async def _item(self, c: m.Clarification, steward: m.Person) -> DeadLetterItem:
        skips = pairs(c)
        waiting = views.unanswered(c)
        names = await display_names(self.core, [*(s.person_id for s in skips), *waiting],
                                    tenant_id=c.tenant_id)
        return DeadLetterItem(
            clarification_id=c.id,
            document=views.steward_document(c, steward),
            severity=c.severity,
            skipped=tuple(SkippedCandidate(person=names.get(s.person_id, s.person_id),
                                           reason=s.reason_code) for s in skips),
            unanswered=tuple(names.get(p, p) for p in waiting),
        )


def _key(c: m.Clarification, steward_id: str) -> DeliveryKey:
    return DeliveryKey(c.id, steward_id, 0, KIND)
