"""What every in-process rig of the engine offers a test: create a clarification as ingestion
would (``new_clarification``), run the worker's due work once (``burst``), move the rig's clock
and then run it (``later``). The engine, Slack and Teams rigs take these by inheritance."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import TYPE_CHECKING, Any
from uuid import uuid4

from bot.core.models import CreateClarificationRequest
from devcore.scenario import read_scenario

if TYPE_CHECKING:
    from bot.clock import ManualClock
    from bot.process.runtime import Engine
    from devcore.client import DevCoreClient


async def new_clarification(
    dev: DevCoreClient, *, authority: dict[str, list[str]], severity: str | None = None,
    workspace: str = "acme-legal", read_roles: list[str] | None = None, tag: str | None = None,
    kind: str = "relative_date", tenant: str | None = None,
) -> str:
    """Create a clarification as ingestion would: the acme lease question, with its own ids."""
    spec: dict[str, Any] = json.loads(json.dumps(read_scenario("acme")["clarifications"][1]))
    tag = tag or uuid4().hex[:10]
    spec["workspace_id"] = workspace
    if tenant is not None:
        spec["tenant_id"] = tenant
    spec["kind"] = kind
    spec["target"] = f"fact-{tag}"
    spec["document"]["document_id"] = f"doc-{tag}"
    spec["document"]["content_hash"] = f"sha256:{tag}"
    spec["document"]["acl"] = {"workspace_id": workspace,
                               "read_roles": read_roles or ["viewer", "editor", "steward"]}
    spec["authority"] = {"authored_by": authority.get("authored_by", []),
                         "named": authority.get("named", []),
                         "owned_by": authority.get("owned_by", [])}
    if severity:
        spec["severity_hint"] = severity
    created = await dev.create_clarification(
        request=CreateClarificationRequest.model_validate(spec))
    return created.clarification.id


class Creates:
    """``create(**kwargs)``: ``new_clarification`` through the rig's development client."""

    dev: DevCoreClient

    async def create(self, **kwargs: Any) -> str:
        return await new_clarification(self.dev, **kwargs)


class Drives(Creates):
    """``burst()`` and ``later(delta)`` for a rig whose engine runs on its manual clock."""

    engine: Engine
    clock: ManualClock

    async def burst(self) -> None:
        await self.engine.worker.run_burst()

    async def later(self, delta: timedelta) -> None:
        """Move time forward, then let the worker do whatever is due."""
        self.clock.advance(delta)
        await self.burst()
