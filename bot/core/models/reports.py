"""What the bot reports to the core (deliveries, skips, events) and the records it keeps."""

from __future__ import annotations

from typing import Annotated

from pydantic import AwareDatetime, Field

from bot.core.models.enums import (
    Channel,
    DeliveryKind,
    ReasonCode,
    RecordedChannel,
)
from bot.core.models.wire import Id, RequestModel, WireModel


class DeliveryRecord(WireModel):
    delivery_id: str
    person_id: str
    channel: RecordedChannel
    kind: DeliveryKind
    attempt: int
    message_ref: str | None = None
    delivered_at: AwareDatetime


class SkipEntry(WireModel):
    """One candidate who was not asked, and the reason code why (on escalations, digests)."""

    person_id: str
    reason_code: ReasonCode


class ClarificationEvent(WireModel):
    event_id: str
    type: str
    at: AwareDatetime
    actor: str | None = None
    person_id: str | None = None
    attempt: int | None = None
    reason_code: ReasonCode | None = None
    reason_codes: list[ReasonCode] = []
    skips: list[SkipEntry] = []
    message: str = ""


class DeliveryReport(RequestModel):
    """The bot reports one message sent; idempotent on ``deliveryId``."""

    delivery_id: Id
    person_id: Id
    channel: Channel
    kind: DeliveryKind
    attempt: int = Field(ge=0)
    message_ref: str | None = Field(default=None, max_length=500)

class SkipInput(RequestModel):
    """A ``SkipEntry`` as the bot reports it."""

    person_id: Id
    reason_code: ReasonCode


class EventReport(RequestModel):
    """The bot reports a skip, escalation or notice; idempotent on ``eventId``."""

    event_id: Id
    type: Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[a-z_]+$")]
    person_id: Id | None = None
    attempt: int | None = Field(default=None, ge=0)
    reason_code: ReasonCode | None = None
    reason_codes: list[ReasonCode] = Field(
        default=[], max_length=len(ReasonCode),
        description="Every reason code the event stands for (an escalation's or a dead letter's "
        "skip reasons, a skip's own code), each once, sorted.")
    skips: list[SkipInput] = Field(
        default=[], max_length=200,
        description="The candidates the event concerns who were not asked, with the code why.")
    message: Annotated[str, Field(max_length=500)] = ""

    def wire(self) -> dict[str, object]:
        # empty lists stay off the wire: a core that predates them still takes a plain skip
        return {k: v for k, v in super().wire().items() if v != []}


class DeliveryReportItem(RequestModel):
    clarification_id: Id
    report: DeliveryReport


class EventReportItem(RequestModel):
    clarification_id: Id
    report: EventReport


class ReportBatch(RequestModel):
    """A job's delivery and event reports in one call, applied in order (deliveries first);
    each stays idempotent on its own ``deliveryId`` or ``eventId``, so a resent batch is safe."""

    deliveries: list[DeliveryReportItem] = Field(default=[], max_length=200)
    events: list[EventReportItem] = Field(default=[], max_length=200)

    def wire(self) -> dict[str, object]:
        # each report as its own route sends it (an event leaves empty lists off the wire)
        return {
            "deliveries": [{"clarificationId": d.clarification_id, "report": d.report.wire()}
                           for d in self.deliveries],
            "events": [{"clarificationId": ev.clarification_id, "report": ev.report.wire()}
                       for ev in self.events],
        }


class ReportItemResult(WireModel):
    """One report of the batch, in request order: accepted (``ok``), or the error code its own
    route would give (nothing else is echoed, so a refused item tells nothing of another
    tenant)."""

    id: str = Field(description="The report's deliveryId or eventId.")
    ok: bool
    error_code: str | None = None


class ReportBatchResult(WireModel):
    deliveries: list[ReportItemResult] = []
    events: list[ReportItemResult] = []
