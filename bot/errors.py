"""The root of every error the bot's own layer raises, and its tree (like httpx's ``_exceptions``)::

    BotError
    ├── ChannelError              a platform refused or failed a send (bot.channel)
    │   ├── NotReachable          nobody can reach this person there until an operator acts
    │   └── CredentialsRejected   the platform refuses the bot's own credentials
    ├── StoreError                the store failed (bot.store.errors)
    │   ├── SlotNotFound
    │   ├── SlotContended
    │   └── StoreUnavailable
    └── SettingsError             start-up settings are wrong (bot.settings.errors)

The core client's errors are the layer below and keep their own root
(``bot.core.errors.CoreError``); library errors (slack_sdk, redis, aiohttp) are translated at
each boundary with ``raise … from``.
"""

from __future__ import annotations


class BotError(Exception):
    """Anything the bot's own layer raises on purpose."""
