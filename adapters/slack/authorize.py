"""What Bolt's authorize reads: the installations as slack_sdk's installation store, each token
fresh (``Installations.fresh``) and handed over without its refresh token, so that Bolt never
rotates one itself (``adapters.slack.tokens`` does, once across every replica)."""

from __future__ import annotations

from typing import Any, Protocol

from slack_sdk.oauth.installation_store import Bot, Installation
from slack_sdk.oauth.installation_store.async_installation_store import AsyncInstallationStore

from adapters.slack.installations import QUIET, REMOVED, Installed, stripped
from bot.channel import SlackReach


class Tokens(Protocol):
    """What the store asks of the process's installations (``adapters.slack.tokens``)."""

    def resolve(self, workspace: SlackReach) -> Installed | None: ...

    async def fresh(self, installed: Installed) -> Installation | None: ...


class AuthorizeStore(AsyncInstallationStore):
    """The installation store Bolt's authorize reads: slack_sdk's SQLAlchemy store behind
    ``Installations.fresh`` (the token refreshed first when it is about to expire), handed over
    without its refresh token so that Bolt never rotates it itself."""

    def __init__(self, installations: Tokens) -> None:
        self.installations = installations

    @property
    def logger(self) -> Any:
        return QUIET

    async def async_save(self, installation: Installation) -> None:
        raise NotImplementedError("installs are saved by the OAuth flow (adapters.slack.oauth)")

    async def async_find_installation(self, *, enterprise_id: str | None, team_id: str | None,
                                      user_id: str | None = None,
                                      is_enterprise_install: bool | None = False
                                      ) -> Installation | None:
        installations = self.installations
        installed = installations.resolve(SlackReach(team_id=None if is_enterprise_install
                                                     else team_id, enterprise_id=enterprise_id))
        if installed is None or installed.state == REMOVED:
            return None
        current = await installations.fresh(installed)
        return None if current is None else stripped(current)

    async def async_find_bot(self, *, enterprise_id: str | None, team_id: str | None,
                             is_enterprise_install: bool | None = False) -> Bot | None:
        found = await self.async_find_installation(enterprise_id=enterprise_id, team_id=team_id,
                                                   is_enterprise_install=is_enterprise_install)
        return None if found is None else found.to_bot()
