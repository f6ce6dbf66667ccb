"""`clarify-bot serve` with Microsoft's identity platform stood in for on the Bot Framework side,
for process tests of reading who is away.

Run: python -m tests.teams.away_serve serve --config ... --role all

Everything after the module is the console script's own command line (``clarify_bot.cli.main``,
unchanged). The one difference: msal, which asks login.microsoftonline.com for the bot's
connector token (https only, unreachable from the tests), answers a stand-in token, so the
Teams credentials check passes. Graph's own tokens are not stood in for: the bot asks them of
``teams.login_url`` (the test's fake Graph) over real HTTP, as in production. With
``CLARIFY_TEST_CONNECTOR`` set (a fake connector's origin on 127.0.0.1), that origin is allowed
beside Microsoft's connector hosts, as a local Playground's is.
"""

from __future__ import annotations

import os
import sys
from typing import Any

CONNECTOR_TOKEN = "connector-token-stood-in"


def main(argv: list[str]) -> None:
    from microsoft_agents.authentication.msal import MsalAuth

    from clarify_bot import cli

    async def connector_token(self: Any, resource_url: str, scopes: list[str],
                              force_refresh: bool = False) -> str:
        return CONNECTOR_TOKEN

    MsalAuth.get_access_token = connector_token  # type: ignore[method-assign]
    origin = os.environ.get("CLARIFY_TEST_CONNECTOR")
    if origin:
        import adapters.teams.mount as mount

        opened = mount.open_teams_channel

        def local_channel(*args: Any, **kwargs: Any) -> Any:
            return opened(*args, **{**kwargs, "local_connectors": (origin,)})

        mount.open_teams_channel = local_channel
    cli.main(argv, prog_name="clarify-bot")


if __name__ == "__main__":
    main(sys.argv[1:])
