"""Bitemporal fact versions: append-only, each version closed (txTo) when a newer belief arrives."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from bot.core import models as m
from bot.core.errors import ErrorCode
from devcore.faults import CoreFault


@dataclass(slots=True)
class FactStore:
    facts: dict[str, list[m.FactVersion]] = field(default_factory=dict)

    def append(
        self,
        *,
        logical_id: str,
        now: datetime,
        valid_from: datetime | None,
        valid_to: datetime | None,
        confidence: float,
        provenance: m.Provenance,
        pending_clarification_id: str | None = None,
    ) -> m.FactVersion:
        versions = self.facts.setdefault(logical_id, [])
        tx = now
        if versions and versions[-1].version_tx >= tx:
            # transaction times are strictly increasing even when the clock has not moved
            tx = versions[-1].version_tx + timedelta(microseconds=1)
        if versions:
            versions[-1].tx_to = tx
        version = m.FactVersion(
            logical_id=logical_id,
            version_tx=tx,
            valid_from=valid_from,
            valid_to=valid_to,
            confidence=confidence,
            pending_clarification_id=pending_clarification_id,
            provenance=provenance,
        )
        versions.append(version)
        return version

    def history(self, logical_id: str) -> list[m.FactVersion]:
        try:
            return self.facts[logical_id]
        except KeyError:
            raise CoreFault(ErrorCode.FACT_NOT_FOUND) from None

    def as_of(self, logical_id: str, tx: datetime) -> m.FactVersion:
        for version in reversed(self.history(logical_id)):
            if version.version_tx <= tx:
                return version
        raise CoreFault(ErrorCode.FACT_NOT_FOUND, "The fact did not exist at that time.")
