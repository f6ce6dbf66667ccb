"""``clarify-bot serve`` for bench/soak.py, with Teams pointed at 127.0.0.1 and every check on.

Run: soak_serve.py JWKS_URL CONNECTOR_ORIGIN serve --config FILE --role web|worker

What production takes from Microsoft comes from the soak instead: the keys that sign Bot
Framework tokens (the soak's JWKS, ``KeyDirectory``: validation is not switched off, a token must
still be signed by the key, for this app, unexpired, with the activity's serviceurl), the bot's
own connector token (a fixed one the fake connector accepts, instead of msal asking Entra), and
the connector's origin (the fake's, allowed beside Microsoft's hosts, as a local Playground's is).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from microsoft_agents.hosting.core import OutboundHostValidator  # noqa: E402

import adapters.teams.mount as mount  # noqa: E402
from adapters.teams.auth import KeyDirectory  # noqa: E402
from clarify_bot.cli import main  # noqa: E402
from tests.teams.fakeconnector import TOKEN  # noqa: E402

JWKS, ORIGIN = sys.argv[1], sys.argv[2]
del sys.argv[1:3]


class LocalTokens:
    """The bot's connector token: the fake connector's."""

    async def get_access_token(self, resource_url: str, scopes: list[str],
                               force_refresh: bool = False) -> str:
        return TOKEN


class LocalHosts(OutboundHostValidator):
    """Microsoft's hosts, and the fake connector's origin."""

    def is_allowed(self, url: str) -> bool:  # type: ignore[override]
        return url.startswith(ORIGIN) or bool(super().is_allowed(url))


_mount, _open = mount.mount, mount.open_teams_channel


def _local_mount(app: Any, parts: Any, settings: Any, **kwargs: Any) -> Any:
    return _mount(app, parts, settings, keys=KeyDirectory(lambda _: JWKS), **kwargs)


def _local_channel(*args: Any, **kwargs: Any) -> Any:
    return _open(*args, **{**kwargs, "local_connectors": (ORIGIN,)})


mount.MsalAuth = lambda _config: LocalTokens()  # type: ignore[assignment,misc,return-value]
mount.OutboundHostValidator = LocalHosts  # type: ignore[misc]
mount.open_teams_channel = _local_channel
mount.mount = _local_mount

if __name__ == "__main__":
    main()
