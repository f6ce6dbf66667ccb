"""The batch routes added for delivery at volume answer as their single routes would."""

from __future__ import annotations

from bot.core.client import CoreClient
from bot.core.models import (
    Channel as ContractChannel,
)
from bot.core.models import (
    DeliveryKind,
    DeliveryReport,
    DeliveryReportItem,
    EventReport,
    EventReportItem,
    ReasonCode,
    ReportBatch,
)


async def test_people_batch_reads_each_person_and_resolves_each_alias_back(
    bot_client: CoreClient,
) -> None:
    batch = await bot_client.get_people(tenant_id="acme",
                                        person_ids=["p-ahmed", "p-nobody", "p-ahmed"])
    assert [entry.person_id for entry in batch.people] == ["p-ahmed", "p-nobody"]
    ahmed, nobody = batch.people
    single = await bot_client.get_person(person_id="p-ahmed", tenant_id="acme")
    assert ahmed.person == single and ahmed.error_code is None
    for found in ahmed.resolutions:
        resolved = await bot_client.resolve_person(tenant_id="acme", identity=found.identity)
        assert found.person_id == resolved.person.person_id
        assert found.verified == resolved.verified
    assert nobody.person is None and nobody.error_code == "PERSON_NOT_FOUND"


async def test_report_batch_applies_each_report_once_and_names_what_it_refused(
    bot_client: CoreClient,
) -> None:
    delivery = DeliveryReport(delivery_id="d-batch", person_id="p-ahmed",
                              channel=ContractChannel.SLACK, kind=DeliveryKind.QUESTION, attempt=0)
    event = EventReport(event_id="e-batch", type="skipped", person_id="p-sarah",
                        reason_code=ReasonCode.NO_DELIVERY_ALIAS, message="no alias")
    batch = ReportBatch(
        deliveries=[DeliveryReportItem(clarification_id="clr-00001", report=delivery),
                    DeliveryReportItem(clarification_id="clr-99999", report=delivery)],
        events=[EventReportItem(clarification_id="clr-00001", report=event)])
    first = await bot_client.report_batch(batch)
    again = await bot_client.report_batch(batch)
    assert first == again
    assert [(r.id, r.ok, r.error_code) for r in first.deliveries] == [
        ("d-batch", True, None), ("d-batch", False, "CLARIFICATION_NOT_FOUND")]
    assert [r.ok for r in first.events] == [True]
    c = await bot_client.get_clarification(clarification_id="clr-00001")
    assert [d.delivery_id for d in c.deliveries].count("d-batch") == 1
    assert [ev.event_id for ev in c.events].count("e-batch") == 1
