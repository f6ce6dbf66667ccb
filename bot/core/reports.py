"""The core client's reports: a message sent (a delivery) or a skip, escalation or notice (an
event), one at a time or held in a job's ``JobScope`` and sent together at its end, jobs ending
side by side sharing the call (``bot.core.batching``). Without the reports or report-details
extensions each report goes on its own baseline route, and a report this process sent without
its id reaching the core is not sent again."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

import structlog

from bot.core import batching
from bot.core import errors as e
from bot.core.calls import BaseCoreClient
from bot.core.errors import ExtensionUnavailable
from bot.core.extensions import Extension
from bot.core.instruments import INSTRUMENTS
from bot.core.jobs import KEPT_ATTEMPTS
from bot.core.models import (
    ClarificationEvent,
    DeliveryKind,
    DeliveryRecord,
    DeliveryReport,
    DeliveryReportItem,
    EventReport,
    EventReportItem,
    ReportBatch,
    ReportBatchResult,
)

log = structlog.get_logger("bot.core.client")


class ReportCalls(BaseCoreClient):
    """Delivery and event reports, single or batched."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        # keyed by linger: jobs ending within the same linger share the call
        self._report_calls: batching.Gathered[float, batching.JobScope] = \
            batching.Gathered(self._send_reports)
        # the report ids sent without the report-details extension: the core cannot tell a
        # resent report from a new one, so this process does not resend one it sent
        self._reported: OrderedDict[str, None] = OrderedDict()

    async def report_delivery(
        self, *, clarification_id: str, report: DeliveryReport,
        scope: batching.JobScope | None = None,
    ) -> DeliveryRecord | None:
        """Report a message sent: the core's record (None: held in ``scope``, when one is
        given, until ``flush``; or an answer the bot cannot read). Without the report-details
        extension a steward notice is not reported as a delivery (``_send_delivery``)."""
        if scope is not None:
            scope.deliveries.append(
                DeliveryReportItem(clarification_id=clarification_id, report=report))
            return None
        return await self._send_delivery(clarification_id, report)

    async def report_event(
        self, *, clarification_id: str, report: EventReport,
        scope: batching.JobScope | None = None,
    ) -> ClarificationEvent | None:
        """Report a skip, escalation or notice: the core's event (None: held in ``scope``, when
        one is given, until ``flush``; or an answer the bot cannot read)."""
        if scope is not None:
            scope.events.append(EventReportItem(clarification_id=clarification_id,
                                                report=report))
            return None
        return await self._send_event(clarification_id, report)

    async def _send_delivery(self, clarification_id: str, report: DeliveryReport
                             ) -> DeliveryRecord | None:
        path = {"clarificationId": clarification_id}
        if self.offers(Extension.REPORT_DETAILS):
            try:  # not resent without its details by the client: a notice is no delivery then
                return await self._ack("reportDelivery", DeliveryRecord, path=path,
                                       body=report, resend_without_extensions=False)
            except e.ValidationFailed as exc:
                if self.offered.fixed or (exc.rules and "unknown_field" not in exc.rules):
                    raise
                self._lost(Extension.REPORT_DETAILS, "reportDelivery")
        if report.kind is DeliveryKind.STEWARD_NOTICE:
            # the baseline's delivery has no kind, and would count the steward as asked; the
            # notice's own audit event (steward_notified) is on the core's trail already
            return None
        if report.delivery_id in self._reported:
            return None
        record = await self._ack("reportDelivery", DeliveryRecord, path=path, body=report)
        self._sent(report.delivery_id)
        return record

    async def _send_event(self, clarification_id: str, report: EventReport
                          ) -> ClarificationEvent | None:
        path = {"clarificationId": clarification_id}
        details = self.offers(Extension.REPORT_DETAILS)
        if not details and report.event_id in self._reported:
            return None
        event = await self._ack("reportEvent", ClarificationEvent, path=path, body=report)
        if not self.offers(Extension.REPORT_DETAILS):
            self._sent(report.event_id)
        return event

    def _sent(self, report_id: str | None) -> None:
        """Remember a report sent without its id reaching the core (it cannot deduplicate)."""
        if report_id is None:
            return
        self._reported[report_id] = None
        while len(self._reported) > KEPT_ATTEMPTS:
            self._reported.popitem(last=False)

    async def report_batch(self, batch: ReportBatch) -> ReportBatchResult | None:
        """Delivery and event reports together (a job's, at its end): one call instead of one
        per report. Each item's own error comes back in its result, not as an exception; a 2xx
        the bot cannot read is the core's acknowledgement all the same (None)."""
        return await self._ack("reportBatch", ReportBatchResult, body=batch)

    async def flush(self, scope: batching.JobScope, *,
                    linger: float = batching.LINGER_SECONDS) -> None:
        """Send what the scope holds; jobs ending within ``linger`` of each other share the
        call. A report the core refuses is logged by kind and code (no values); a transport or
        auth failure raises, as the single report would have (the cards' not-yet-reported
        marks then stay: ``JobScope.reported``)."""
        if scope.deliveries or scope.events:
            taken = batching.JobScope(deliveries=scope.deliveries, events=scope.events)
            scope.deliveries, scope.events = [], []
            await self._report_calls(linger, taken, linger=linger)
            await scope.reported({item.report.delivery_id for item in taken.deliveries
                                  if item.report.delivery_id is not None})

    async def _send_reports(self, _: float, scopes: list[batching.JobScope]) -> None:
        merged = batching.JobScope(
            deliveries=[item for scope in scopes for item in scope.deliveries],
            events=[item for scope in scopes for item in scope.events])
        batched = self.offers(Extension.REPORTS) and self.offers(Extension.REPORT_DETAILS)
        for batch in merged.chunks():
            if batched:
                try:
                    result = await self.report_batch(batch)
                except ExtensionUnavailable:
                    batched = False
                else:
                    for kind, items in (() if result is None else (
                            ("delivery", result.deliveries), ("event", result.events))):
                        for item in items:
                            if not item.ok:
                                log.warning("core.report_refused", kind=kind,
                                            code=item.error_code)
                    continue
            INSTRUMENTS.fallback(Extension.REPORTS)
            await self._send_one_by_one(batch)

    async def _send_one_by_one(self, batch: ReportBatch) -> None:
        """The batch as the baseline takes it: each report on its own route, deliveries first,
        in order. A report the core refuses is logged by kind and code (as a batch's item);
        a transport or auth failure raises."""
        sends: list[tuple[str, Callable[[], Awaitable[object]]]] = [
            ("delivery", partial(self._send_delivery, d.clarification_id, d.report))
            for d in batch.deliveries]
        sends += [("event", partial(self._send_event, ev.clarification_id, ev.report))
                  for ev in batch.events]
        for kind, send in sends:
            try:
                await send()
            except (e.InvalidRequest, e.NotFound, e.PermissionDenied, e.Conflict) as exc:
                log.warning("core.report_refused", kind=kind, code=exc.code)
