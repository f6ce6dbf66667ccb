"""The root of every error the bot's own layer raises, and its tree (like httpx's ``_exceptions``)::

    BotError
    ├── ChannelError              a platform refused or failed a send (bot.channel)
    │   ├── NotReachable          nobody can reach this person there until an operator acts
    │   ├── NotYet                not yet reachable there (the Teams app being installed)
    │   └── CredentialsRejected   the platform (or, in a readiness check, the core) refuses the
    │                             bot's own credentials: ``setting`` names what to fix
    ├── NotDurable                an answer not made durable within the platform's time: the
    │                             click is refused (503), never acknowledged (bot.answering)
    ├── StoreError                the store failed (bot.store.errors)
    │   ├── SlotNotFound
    │   ├── SlotContended
    │   ├── StoreUnavailable
    │   └── OutboxFull
    ├── SettingsError             start-up settings are wrong (bot.settings.errors)
    ├── BadRedisUrl               a Redis URL the store cannot use (bot.store.connect; also a
    │                             ValueError, reported as a SettingsError's problem)
    ├── CannotListen              the web server's address cannot be bound (bot.process.service)
    ├── OutOfHours                the next candidate is outside their working hours: the job is
    │                             held, never failed (bot.engine.asking; never leaves the handler)
    └── Connecting                a readiness check's dependency is still being connected to, not
                                  failed (bot.process.health)

Outside this tree: the core client's errors keep their own root
(``bot.core.errors.CoreError``), the layer the bot calls; the adapters' errors theirs
(``adapters.errors.AdapterError``), the layer that calls the bot. A refusal by the abuse limits
is a value, not an exception (``bot.abuse_limits.Throttled``). Library errors (slack_sdk, redis,
aiohttp) are translated at each boundary with ``raise … from``.
"""

from __future__ import annotations


class BotError(Exception):
    """Anything the bot's own layer raises on purpose."""
