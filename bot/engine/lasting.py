"""Lasting refusals: a platform that refused to reach a person is tried last for them.

A channel says whether a refusal will hold for later questions too (``ChannelError.lasting``):
which of its platform's refusals do is its adapter's knowledge (Slack: no DM can be opened with
them, a deactivated account; Teams: the person blocked the bot or removed the app, or the app is
not installed for them). A lasting refusal is remembered per chat identity for
``LASTING_TTL_SECONDS``. Later questions try the person's other platforms first
(``clarify.channels`` order among those not refused), and the refused one only when every other
refuses too. It ends when it expires or when the person is seen on that platform again (Teams:
installing the app, a conversation update, any 1:1 message; Slack: opening the App Home or
writing to the bot): ``clear``. A refusal that says nothing about later questions (a Teams 500)
falls back for this question only and is not remembered.

The store keeps the reason only (value-free), under a name that is a keyed hash of the platform
and chat user (``bot.store.keys``): nothing in it names the person.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.channel import Address
from bot.store.base import KeyValues

NAMESPACE = "blocked"  # the store's name for them (kept: refusals remembered before still count)
LASTING_TTL_SECONDS = 14 * 24 * 60 * 60  # two weeks: longer than any ranking's escalations


@dataclass
class LastingRefusals:
    store: KeyValues
    ttl_seconds: int = LASTING_TTL_SECONDS

    @staticmethod
    def _key(platform: str, user_id: str) -> str:
        return f"{platform}|{user_id.lower()}"

    async def blocked(self, address: Address) -> str | None:
        """The remembered refusal of this address, or None."""
        return await self.store.kv_get(NAMESPACE, self._key(address.platform, address.user_id))

    async def remember(self, address: Address, reason: str) -> None:
        await self.store.kv_put(NAMESPACE, self._key(address.platform, address.user_id),
                                reason[:200], ttl_seconds=self.ttl_seconds)

    async def clear(self, platform: str, user_id: str) -> bool:
        """The person was seen on ``platform`` again: it is tried in its place from now on."""
        return await self.store.kv_delete(NAMESPACE, self._key(platform, user_id))
