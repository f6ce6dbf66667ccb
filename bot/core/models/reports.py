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
from bot.core.models.wire import (
    Id,
    RequestModel,
    WireModel,
    additive,
    extension_field,
    lenient,
    lenient_list,
    tolerant_items,
)

# the extension of the reports' keys and details beyond who, where, which message and why
REPORT_DETAILS = "report-details"

ReasonRead = Annotated[ReasonCode | None, lenient(ReasonCode, None)]


class DeliveryRecord(WireModel):
    delivery_id: str
    person_id: str
    channel: Annotated[RecordedChannel, lenient(RecordedChannel, RecordedChannel.API)]
    kind: Annotated[DeliveryKind, lenient(DeliveryKind, DeliveryKind.STEWARD_NOTICE)]
    attempt: int = 0
    message_ref: str | None = None
    delivered_at: AwareDatetime | None = None


class SkipEntry(WireModel):
    """One candidate who was not asked, and the reason code why (on escalations, digests)."""

    person_id: str
    # a code the bot does not know keeps the entry (the person was not asked), with no code
    reason_code: ReasonRead


class ClarificationEvent(WireModel):
    """One entry of the core's event trail. The baseline names its type and time, and for a
    skip or escalation whom it concerns and the reason code."""

    type: str
    at: AwareDatetime
    person_id: str | None = None
    reason_code: ReasonRead = None
    message: str = ""
    event_id: str = additive("")
    actor: str | None = additive()
    attempt: int | None = additive()
    reason_codes: Annotated[list[ReasonCode], lenient_list(ReasonCode)] = additive([])
    skips: Annotated[list[SkipEntry], tolerant_items(SkipEntry)] = additive([])


class DeliveryReport(RequestModel):
    """The bot reports one message sent: to whom, on which channel, with which message
    reference. With the ``report-details`` extension it is idempotent on ``deliveryId`` and
    says what kind of message went out at which attempt."""

    person_id: Id
    channel: Channel
    message_ref: str | None = Field(default=None, max_length=500)
    delivery_id: Id | None = extension_field(REPORT_DETAILS)
    kind: DeliveryKind | None = extension_field(REPORT_DETAILS)
    attempt: int | None = extension_field(REPORT_DETAILS, ge=0)

class SkipInput(RequestModel):
    """A ``SkipEntry`` as the bot reports it."""

    person_id: Id
    reason_code: ReasonCode


class EventReport(RequestModel):
    """The bot reports a skip, escalation or notice: its type, whom it concerns, the reason
    code and a value-free message. With the ``report-details`` extension it is idempotent on
    ``eventId`` and carries the attempt and the skips behind an escalation."""

    type: Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[a-z_]+$")]
    person_id: Id | None = None
    reason_code: ReasonCode | None = None
    message: Annotated[str, Field(max_length=500)] = ""
    event_id: Id | None = extension_field(REPORT_DETAILS)
    attempt: int | None = extension_field(REPORT_DETAILS, ge=0)
    reason_codes: list[ReasonCode] = extension_field(
        REPORT_DETAILS, [], max_length=len(ReasonCode),
        description="Every reason code the event stands for (an escalation's or a dead letter's "
        "skip reasons, a skip's own code), each once, sorted.")
    skips: list[SkipInput] = extension_field(
        REPORT_DETAILS, [], max_length=200,
        description="The candidates the event concerns who were not asked, with the code why.")

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

    id: str = Field(default="", description="The report's deliveryId or eventId.")
    ok: bool
    error_code: str | None = None


class ReportBatchResult(WireModel):
    deliveries: Annotated[list[ReportItemResult], tolerant_items(ReportItemResult)] = []
    events: Annotated[list[ReportItemResult], tolerant_items(ReportItemResult)] = []
