"""Which tenant a Slack workspace belongs to, however the deployment knows it.

A single-workspace deployment lists its workspaces in the settings (``SlackSettings.tenant_for``
over ``[[slack.workspaces]]``); a distributed app knows them from its installations, each bound
to a tenant by its install link (the Slack adapter's ``Installations.tenant_for``). Routing and
interactions take either: deny by default (None) for a workspace neither knows.
"""

from __future__ import annotations

from typing import Protocol


class SlackTenants(Protocol):
    def tenant_for(self, *, team_id: str | None, enterprise_id: str | None) -> str | None: ...
