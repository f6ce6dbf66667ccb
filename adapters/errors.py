"""The root of every error the adapters raise on purpose, and its tree::

    AdapterError
    ├── MalformedPayload          a Slack request without the shape of an interaction the bot
    │   │                         handles; ``field`` names the field, never its value (also a
    │   │                         ValueError; adapters.slack.payloads)
    │   └── ScopeMismatch         its ids contradict each other about the Grid org (403)
    ├── InstallRefused            a Slack install the bot will not keep, ``reason`` the audit's
    │                             code: a bad install link, a state it did not issue, a
    │                             workspace of another tenant (also Bolt's ``BoltError``, which
    │                             its OAuth flow turns into its failure page;
    │                             adapters.slack.links)
    ├── RebindRefused             an operator's rebind that would make one org serve two
    │                             tenants (adapters.slack.operators)
    ├── SchemaOutdated            the installation database is behind this release
    │                             (adapters.slack.schema)
    ├── TokensInPlainText         Slack tokens in plain text to seal and no key to seal them
    │                             with (``db upgrade``; adapters.slack.schema)
    ├── TokenKeyError             a sealed Slack token none of the configured keys opens;
    │                             names key ids, never a key (adapters.slack.sealing)
    ├── TokenKeyMissing           a Slack token read or written without a token key
    │                             (adapters.slack.installations)
    ├── Ambiguous                 a Slack call that may or may not have taken effect
    │                             (adapters.slack.webapi; the channel turns it into a
    │                             ChannelError)
    ├── Unauthorized              a Teams request whose token is missing or not one the bot
    │                             accepts; ``reason`` is a word (adapters.teams.auth)
    ├── NoTenant                  a Teams activity names no AAD tenant, or two
    │                             (adapters.teams.references)
    ├── ConnectorRefused          the Teams connector's final 4xx: ``status`` and its error
    │                             ``code``, never the body (adapters.teams.connector)
    └── GraphRefused              Microsoft Graph's (or its token endpoint's) final 4xx
                                  reading who is away: ``status`` and its error ``code``,
                                  never the body (adapters.teams.graph)

What an adapter hands the bot is the bot's own: a failed send is a ``bot.channel.ChannelError``
(``bot.errors.BotError``'s tree), and a refusal by the abuse limits is the value
``bot.abuse_limits.Throttled``. These are the adapters' own, raised and caught at the
platform's edge; library errors (slack_sdk, Bolt, aiohttp, PyJWT) are translated with
``raise … from``. Messages are value-free: a reason word, a status, a field's name.
"""

from __future__ import annotations


class AdapterError(Exception):
    """Anything a chat platform's adapter raises on purpose."""
