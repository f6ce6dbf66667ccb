"""`clarify-bot serve` with Microsoft's identity platform stood in for on the Bot Framework side,
for process tests of reading who is away.

Run: python -m tests.teams.away_serve serve --config ... --role all

Everything after the module is the console script's own command line (``clarify_bot.cli.main``,
unchanged). The one difference: msal, which asks login.microsoftonline.com for the bot's
connector token (https only, unreachable from the tests), answers a stand-in token, so the
Teams credentials check passes. Graph's own tokens are not stood in for: the bot asks them of
``teams.login_url`` (the test's fake Graph) over real HTTP, as in production.
"""

from __future__ import annotations

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
    cli.main(argv, prog_name="clarify-bot")


if __name__ == "__main__":
    main(sys.argv[1:])
