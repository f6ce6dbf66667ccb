"""Bitemporal fact versions: append-only, each version closed (txTo) when a newer belief arrives.

Facts are stored per tenant: a logical id is the tenant's own name for a fact, so two tenants
using the same id have two unrelated histories. Two time axes: transaction time (when the core
believed a version: ``versionTx`` up to ``txTo``) and valid time (when the fact holds in the world:
``[validFrom, validTo)``, half-open, ``null`` meaning open-ended on that side).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from bot.core.errors import ErrorCode
from bot.core.models import FactVersion, Provenance
from devcore.faults import CoreFault

FactKey = tuple[str, str]  # (tenant id, logical id)


def holds_at(version: FactVersion, instant: datetime) -> bool:
    """Whether the version's validity interval contains ``instant`` (half-open, validTo out)."""
    starts = version.valid_from is None or version.valid_from <= instant
    ends = version.valid_to is None or instant < version.valid_to
    return starts and ends


@dataclass(slots=True)
class FactStore:
    facts: dict[FactKey, list[FactVersion]] = field(default_factory=dict)

    def append(
        self,
        key: FactKey,
        *,
        now: datetime,
        valid_from: datetime | None,
        valid_to: datetime | None,
        confidence: float,
        provenance: Provenance,
        pending_clarification_id: str | None = None,
    ) -> FactVersion:
        versions = self.facts.setdefault(key, [])
        tx = now
        if versions and versions[-1].version_tx >= tx:
            # transaction times are strictly increasing even when the clock has not moved
            tx = versions[-1].version_tx + timedelta(microseconds=1)
        if versions:
            versions[-1].tx_to = tx
        version = FactVersion(
            logical_id=key[1],
            version_tx=tx,
            valid_from=valid_from,
            valid_to=valid_to,
            confidence=confidence,
            pending_clarification_id=pending_clarification_id,
            provenance=provenance,
        )
        versions.append(version)
        return version

    def tenants_of(self, logical_id: str) -> set[str]:
        return {tenant for tenant, lid in self.facts if lid == logical_id}

    def history(self, key: FactKey, *, valid_at: datetime | None = None) -> list[FactVersion]:
        """Every version, oldest first; with ``valid_at`` only those valid at that instant."""
        try:
            versions = self.facts[key]
        except KeyError:
            raise CoreFault(ErrorCode.FACT_NOT_FOUND) from None
        return [v for v in versions if valid_at is None or holds_at(v, valid_at)]

    def as_of(
        self, key: FactKey, *, tx: datetime | None, valid_at: datetime | None
    ) -> FactVersion:
        """The version believed at ``tx`` (default: the latest), if it holds at ``valid_at``."""
        believed = next(
            (v for v in reversed(self.history(key)) if tx is None or v.version_tx <= tx), None
        )
        if believed is None:
            raise CoreFault(ErrorCode.FACT_NOT_FOUND, "The fact did not exist at that time.")
        if valid_at is not None and not holds_at(believed, valid_at):
            raise CoreFault(ErrorCode.FACT_NOT_FOUND, "The fact did not hold at that valid time.")
        return believed
