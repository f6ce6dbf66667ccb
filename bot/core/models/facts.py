"""Bitemporal fact versions: what the core believed when, with the evidence that moved it."""

from __future__ import annotations

from pydantic import AwareDatetime

from bot.core.models.enums import (
    EvidenceClass,
)
from bot.core.models.wire import WireModel


class Provenance(WireModel):
    evidence_class: EvidenceClass
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
