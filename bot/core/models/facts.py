"""Bitemporal fact versions: what the core believed when, with the evidence that moved it."""

from __future__ import annotations

from typing import Annotated

from pydantic import AwareDatetime

from bot.core.models.enums import (
    EvidenceClass,
)
from bot.core.models.wire import WireModel, lenient


class Provenance(WireModel):
    # a class the bot does not know reads as what the core surely derived it from: extraction
    evidence_class: Annotated[EvidenceClass, lenient(EvidenceClass,
                                                     EvidenceClass.SYSTEM_EXTRACTION)]
    clarification_id: str | None = None
    source_version_tx: AwareDatetime | None = None
    confirmed_by: list[str] = []


class FactVersion(WireModel):
    logical_id: str
    version_tx: AwareDatetime
    tx_to: AwareDatetime | None = None
    valid_from: AwareDatetime | None = None
    valid_to: AwareDatetime | None = None
    confidence: float
    pending_clarification_id: str | None = None
    provenance: Provenance


class FactHistory(WireModel):
    logical_id: str
    versions: list[FactVersion]
